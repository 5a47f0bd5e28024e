"""The one module where llmviz relies on Streamlit's and Plotly's private parts, and the versions it was checked on.

Nothing public does these jobs in the pinned versions, so each is kept here, named, and checked by
``tests/app/test_streamlit_private.py``, which fails with a message naming the item when an upgrade breaks it:

1. ``QueryParams._initial_query_params`` (``streamlit.runtime.state.query_params``): the copy of the address as it
   was loaded, from which Streamlit seeds widgets bound to query parameters. When a shared link carries a value
   a page cannot use, :func:`reseed_widget_from_link` corrects that copy too, or the widget would start from it.
2. Streamlit's DOM: the ``data-testid`` values in :data:`STREAMLIT_TEST_IDS`, which presenter mode's CSS and
   script (:data:`PRESENTER_CSS`, :data:`PRESENTER_SCRIPT`) use to find the page's blocks.
3. Plotly's DOM and a private field: the modebar classes and ``gd._context.toImageButtonOptions`` in
   :data:`PLOTLY_PRIVATE`, which the SVG button (:data:`SVG_BUTTON_SCRIPT`) uses to reuse Plotly's own download.
4. ``streamlit.runtime`` (not in Streamlit's API reference, stable for years): the script run's context
   (:func:`script_run_context`: the browser session's id, the main script's path), whether a session is still
   connected (:func:`session_is_connected`, ``Runtime.is_active_session``), and the exception ``st.stop()``
   raises (:func:`stop_exception`).
5. ``QueryParams.set_corrected_value`` (reached through the private ``get_session_state``): Streamlit's own path
   for writing a corrected value of a bound widget into the address; :func:`write_link_value` uses it to cap a
   long text in the link.
6. ``SessionState._key_id_mapper`` and ``_new_widget_state.widget_metadata``: a widget's serializer, which
   :func:`as_in_link` uses to write an option widget's value as its label, as the address holds it.
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

# The versions every item below was checked on (requirements.txt pins the same). Plotly's JavaScript is the
# plotly.js that Streamlit bundles in its frontend (streamlit/static/static/js/PlotlyChart.*.js).
PINNED = {"streamlit": "1.67.0", "plotly": "7.1.0"}

# 2. what presenter mode's CSS and script look for in Streamlit's page
STREAMLIT_TEST_IDS = (
    "stMainBlockContainer",
    "stVerticalBlock",
    "stElementContainer",
    "stLayoutWrapper",
    "stHeading",
    "stCaptionContainer",
    "stMarkdownContainer",
    "stPlotlyChart",
    "stDataFrame",
)
# 3. what the SVG button looks for in Plotly's chart (classes, attributes, the private config field)
PLOTLY_PRIVATE = (
    "js-plotly-plot",
    "modebar-group",
    "modebar-btn",
    "data-title",
    "Download plot",
    "_context",
    "toImageButtonOptions",
)


def replace_initial_value(params, name: str, kept: list[str] | None) -> None:
    """1. In Streamlit's ``QueryParams``, make widgets bound to ``name`` start from ``kept`` (``None``: from
    their own default) instead of the value the address was loaded with."""
    initial = params._initial_query_params
    if kept is None:
        initial.pop(name, None)
    else:
        initial[name] = list(kept)


def reseed_widget_from_link(name: str, kept: list[str] | None) -> None:
    """1. :func:`replace_initial_value` for this session. Should an upgrade move the field, the link's value is
    still corrected in the address (by the caller); the widget may then start from the old value, and the
    server's log says why."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            replace_initial_value(params, name, kept)
    except Exception as error:  # noqa: BLE001 - a link must never break a page; the log tells the maintainer
        logger.warning(
            "Could not reseed the widget bound to %r from the link (Streamlit's private "
            "QueryParams._initial_query_params changed? see ui/streamlit_private.py): %s",
            name,
            error,
        )


def script_run_context():
    """4. The current script run's context (``.session_id``, ``.main_script_path``), or None outside a run."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return get_script_run_ctx()


def session_is_connected(session_id: str) -> bool | None:
    """4. Is this browser session still connected to the server? None when no Streamlit server runs (tests)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    return Runtime.instance().is_active_session(session_id)


def stop_exception() -> type[BaseException]:
    """4. The exception ``st.stop()`` raises (a page that stops has ended normally)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    return StopException


def write_link_value(name: str, value: str) -> None:
    """5. Write a bound widget's parameter into the address, as Streamlit does for a value it corrected."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            if params.has_param(name) and params.get_all(name) == [value]:
                return
            params.set_corrected_value(name, value, "string_value")
    except Exception as error:  # noqa: BLE001 - the page goes on; the address keeps the longer text
        logger.warning(
            "Could not shorten %r in the address (Streamlit's QueryParams.set_corrected_value "
            "changed? see ui/streamlit_private.py): %s",
            name,
            error,
        )


def as_in_link(name: str, value):
    """6. A bound widget's value as the address writes it: an option widget (selectbox, radio, multiselect) its
    label ("GPT micro (2 layers, d 64)"), a slider its number; the value itself when that cannot be found."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        internal = get_session_state()._state
        widget_id = internal._key_id_mapper.get_id_from_key(name)
        metadata = internal._new_widget_state.widget_metadata.get(widget_id)
        if metadata is not None and metadata.value_type in ("string_value", "string_array_value"):
            serialized = metadata.serializer(value)
            return list(serialized) if isinstance(serialized, list | tuple) else serialized
    except Exception as error:  # noqa: BLE001 - a notice then quotes the value itself
        logger.warning(
            "Could not read how the address writes %r (Streamlit's widget metadata changed? see "
            "ui/streamlit_private.py): %s",
            name,
            error,
        )
    return value


# 2. and 3. The scripts and styles themselves live in ui/static/: presenter mode's CSS and script, the SVG button.
_STATIC = Path(__file__).resolve().parent / "static"
PRESENTER_CSS = "<style>\n" + (_STATIC / "presenter.css").read_text(encoding="utf-8") + "</style>\n"
PRESENTER_SCRIPT = "<script>\n" + (_STATIC / "presenter.js").read_text(encoding="utf-8") + "</script>\n"
SVG_BUTTON_SCRIPT = "<script>\n" + (_STATIC / "svg_button.js").read_text(encoding="utf-8") + "</script>\n"
