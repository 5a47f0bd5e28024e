"""Item 8 of :mod:`ui.streamlit_private` (Streamlit's private parts, checked on the versions it pins): widget values
a browser sends, checked before Streamlit keeps them.

``SessionState.on_script_will_rerun`` and ``SessionState.register_widget`` (``streamlit.runtime.state.session_state``),
with ``WStates.states`` holding ``Serialized`` values as a browser sent them, ``WidgetMetadata.value_type`` and
``.deserializer`` and ``unpack_widget_state_value``: a browser sends every widget's value with each rerun, and a value
of the wrong kind (a forged message: text for a number) made Streamlit's deserializer raise before the page ran, on
that rerun and every later one. :func:`guard_widget_states` wraps both methods so that such a value is dropped before
Streamlit keeps it (the widget keeps the value it had) and reported once. An option widget's label it does not offer
is one too, found in the serde behind ``.deserializer`` (``formatted_option_to_option_index``): dropped before any
``on_change`` callback reads it (:func:`option_problem`). A text longer than its widget takes is one too
(:func:`text_problem`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

_TRIGGERS = {"trigger_value", "string_trigger_value", "json_trigger_value", "chat_input_value"}
#: kinds of value a browser may send for one another (a number input holds a double_value, and chromium sends an
#: int_value for an integer one); any other kind than the widget's is never one it can take (a slider's numbers
#: sent to a select slider, which holds its options' labels, broke the page on the next run)
_FAMILIES = {"int_value": "number", "double_value": "number", **{kind: "trigger" for kind in _TRIGGERS}}
_GUARDED: list[Callable[[str, str], None]] = []


#: characters any text a browser sends may hold (its widget's max_chars when smaller): set by guard_widget_states
_LARGEST_TEXT: list[int] = [100_000]


def text_bound(metadata) -> int:
    """8. The characters a text widget takes: its ``max_chars`` (kept by Streamlit's text serde, the deserializer's
    object), else the largest text the guard allows."""
    max_chars = getattr(getattr(metadata.deserializer, "__self__", None), "max_chars", None)
    return min(max_chars, _LARGEST_TEXT[0]) if isinstance(max_chars, int) and max_chars > 0 else _LARGEST_TEXT[0]


def text_problem(widget_state, sent: str, metadata) -> str | None:
    """8. A text longer than its widget takes (a browser never sends one: its box stops at ``max_chars``; a forged
    message of 20 MB was tokenized in the server's script thread): refused before anything reads it."""
    if sent == "string_value":
        length, bound = len(widget_state.string_value), text_bound(metadata)
    elif sent == "string_array_value":
        length, bound = sum(len(text) for text in widget_state.string_array_value.data), _LARGEST_TEXT[0]
    else:
        return None
    if length > bound:
        return f"a text of {length:,} characters for a widget that takes at most {bound:,}"
    return None


def option_problem(widget_state, sent: str, metadata) -> str | None:
    """8. A label that the option widget drawn (a selectbox, radio, multiselect, select slider) does not offer:
    Streamlit's deserializer passes an unknown label on as it came (for ``accept_new_options``, which llmviz never
    uses), so the widget's ``on_change`` callback read it before the widget put its default back (Tokens ›
    Example: a ``KeyError`` and a traceback per forged message). The labels are those of Streamlit's serde, the
    deserializer's object (``formatted_option_to_option_index``, a select slider's ``formatted_option_to_index``)."""
    serde = getattr(metadata.deserializer, "__self__", None)
    labels = getattr(serde, "formatted_option_to_option_index", getattr(serde, "formatted_option_to_index", None))
    if not isinstance(labels, dict):
        return None
    if sent == "string_value":
        sent_labels = [widget_state.string_value]
    elif sent == "string_array_value":
        sent_labels = list(widget_state.string_array_value.data)
    else:
        return None
    unknown = sum(label not in labels for label in sent_labels)
    return f"{unknown} option(s) its widget does not offer" if unknown else None


def widget_value_problem(widget_state, metadata, drawn: bool = False) -> str | None:
    """8. Why a widget value a browser sent cannot be used by its widget (None: it can): a value of another kind
    than the widget holds, or one its deserializer refuses; with ``drawn`` (the widget as the browser was shown it,
    before its callback may run), also an option it does not offer (:func:`option_problem`; a widget drawn again
    may offer other options, and Streamlit then puts its default back itself). Triggers and uploads are checked by
    kind only (their deserializers consume what they read)."""
    from streamlit.runtime.state.common import is_element_id, unpack_widget_state_value

    if not is_element_id(widget_state.id):  # a bare name ("steer_token"): Streamlit's KeyError broke the page
        return "a value for no widget (a widget's id starts with $$ID-)"
    sent = widget_state.WhichOneof("value")
    if sent is None or metadata is None:
        return None  # a cleared value, or a widget not drawn yet (register_widget checks it then)
    too_long = text_problem(widget_state, sent, metadata)
    if too_long is not None:
        return too_long
    if _FAMILIES.get(sent, sent) != _FAMILIES.get(metadata.value_type, metadata.value_type):
        return f"a {sent} for a widget that holds a {metadata.value_type}"
    if sent in _TRIGGERS or sent == "file_uploader_state_value":
        return None
    unknown = option_problem(widget_state, sent, metadata) if drawn else None
    if unknown is not None:
        return unknown
    try:
        metadata.deserializer(unpack_widget_state_value(widget_state))
    except Exception as error:  # noqa: BLE001 - any refusal of the deserializer is a value the widget cannot take
        logger.debug("%s: the deserializer refused the value sent", widget_state.id, exc_info=error)
        return f"a {sent} its widget refuses ({type(error).__name__})"
    return None


def guard_widget_states(refused: Callable[[str, str], None], largest_text: int | None = None) -> bool:
    """8. Once per server process: drop every widget value a browser sends that its widget cannot take, calling
    ``refused(widget_id, why)`` for each (in the script run that received it); a text longer than its widget's
    ``max_chars`` or ``largest_text`` characters is one. Returns whether the guard is in place (False, with a
    warning in the log, should an upgrade have changed what it wraps)."""
    if largest_text is not None:
        _LARGEST_TEXT[0] = largest_text
    if _GUARDED:
        _GUARDED[0] = refused
        return True
    try:
        from streamlit.proto.WidgetStates_pb2 import WidgetStates
        from streamlit.runtime.state.common import unpack_widget_state_value  # noqa: F401 - used by the check
        from streamlit.runtime.state.session_state import Serialized, SessionState, WStates

        original_rerun = SessionState.on_script_will_rerun
        original_register = SessionState.register_widget
        WStates.states, Serialized.value  # noqa: B018 - what the wrappers use: fail here, not in a run
    except (ImportError, AttributeError) as error:
        logger.warning(
            "Widget values sent by browsers are not checked (see ui/streamlit_private.py, item 8): %s", error
        )
        return False

    @functools.wraps(original_rerun)
    def on_script_will_rerun(self, fresh_widget_states, *args, **kwargs):
        if fresh_widget_states is not None:
            known = self._new_widget_state.widget_metadata
            kept = WidgetStates()
            for widget_state in fresh_widget_states.widgets:
                why = widget_value_problem(widget_state, known.get(widget_state.id), drawn=True)
                if why is None:
                    kept.widgets.append(widget_state)
                else:
                    _GUARDED[0](widget_state.id, why)
            if len(kept.widgets) != len(fresh_widget_states.widgets):
                fresh_widget_states = kept
        return original_rerun(self, fresh_widget_states, *args, **kwargs)

    @functools.wraps(original_register)
    def register_widget(self, metadata, user_key):
        stored = self._new_widget_state.states.get(metadata.id)
        if isinstance(stored, Serialized):  # as a browser sent it, not yet read by its widget
            why = widget_value_problem(stored.value, metadata)
            if why is not None:
                self._new_widget_state.states.pop(metadata.id, None)
                _GUARDED[0](metadata.id, why)
        return original_register(self, metadata, user_key)

    SessionState.on_script_will_rerun = on_script_will_rerun
    SessionState.register_widget = register_widget
    _GUARDED.append(refused)
    return True
