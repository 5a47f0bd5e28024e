"""Shareable links: every page's main settings live in the URL, so a copied link opens the same view.

The mechanism is Streamlit's own widget binding (``bind="query-params"``): a bound widget is
seeded from the URL on load, writes its value back to the URL when it changes (inside
``st.fragment`` sections too), and drops values it cannot take (wrong type, out of range, an
unknown option). This module adds what a class needs around it:

* :data:`ui.link_params.PARAMS`: the one list of URL parameters llmviz understands, with what each one sets, and
  the checks of a link's values before any widget sees them (:mod:`ui.link_params`, no Streamlit). A page
  binds a widget with ``**share.bind("temperature")`` (the name must be declared there).
* :func:`links`: wraps the page run in app.py: a "Copy link to this view" button on every page
  (``ui.copy_link``), and a short notice when the link carried values that could not be used (they fall back to
  the defaults: never an error), or when the browser sent a widget a value it cannot take (``ui.refused``).
* the model in the URL (``?model=…``) is ``ui.link_model``'s: a run that is not one of this student's (runs belong
  to the student, in every tab of theirs) falls back to the shipped model with a notice (:func:`notice`).

Usage on a page::

    temperature = c1.slider("Temperature", 0.0, 2.5, 0.8, 0.05, **share.bind("temperature"))
"""

from __future__ import annotations

import contextlib
import re

import streamlit as st

from llmviz.errors import log_failure
from ui import copy_link, link_params, refused, state, streamlit_private

state.register_link_widgets(set(link_params.PARAMS))  # a bound widget's key is its parameter's name


def bind(name: str) -> dict:
    """Keyword arguments that bind a widget to the URL parameter ``name``.

    A text parameter also caps what the address carries (:func:`ui.link_params.link_text`) each time the text
    changes; pair the widget with :func:`carried_note` so the page says so. A text parameter in
    :data:`ui.link_params.MAX_CHARS` gives its box that ``max_chars`` too (a link checks the same bound).

    >>> bind("temperature")
    {'key': 'temperature', 'bind': 'query-params'}
    >>> bind("vec_1")["max_chars"]
    500
    """
    if name not in link_params.PARAMS or name in link_params.SPECIAL:
        raise KeyError(f"{name!r} is not a declared URL parameter: add it to ui.link_params.PARAMS")
    if link_params.PARAMS[name][0] == "text":
        limit = {"max_chars": link_params.MAX_CHARS[name]} if name in link_params.MAX_CHARS else {}
        return {"key": name, "bind": "query-params", "on_change": _cap_in_link, "args": (name,), **limit}
    return {"key": name, "bind": "query-params"}


def _cap_in_link(name: str) -> None:
    """After a text widget changed: the address carries only :func:`ui.link_params.link_text` of it (a 1 MB paste
    was written into the address in full, and a reload or the copied link was refused with HTTP 400)."""
    text = state.value(name)
    cut = state.LINK_CUT.setdefault()
    if not isinstance(text, str) or link_params.link_text(text) == text:
        cut.pop(name, None)
        return
    carried = link_params.link_text(text)
    cut[name] = (len(carried), len(text))
    streamlit_private.write_link_value(name, carried)


def carried_note(name: str, where=None, uses: int | None = None) -> None:
    """Under a text widget: a caption when the link to this view carries only the start of the text (``uses``: the
    characters the page itself uses of it, when it uses only the start: ``ui.boxes``)."""
    if name not in state.LINK_CUT.get():
        _cap_in_link(name)  # a text that came from elsewhere (an example, a link) is checked too
    cut = state.LINK_CUT.get().get(name)
    if cut is not None:
        used = "all of them" if uses is None or uses >= cut[1] else f"the first {uses:,}"
        (where or st).caption(
            f"The link to this view carries the first {cut[0]:,} of these {cut[1]:,} characters "
            f"(an address cannot hold more); the page itself uses {used}."
        )


def _snapshot() -> dict[str, list[str]]:
    return {key: list(st.query_params.get_all(key)) for key in st.query_params}


def begin() -> None:
    """First thing in app.py: check the link's parameters and remember them before any widget reads them."""
    if state.LINK_INITIAL.present():
        return
    initial = link_params.renamed(_snapshot())
    state.LINK_INITIAL.set(initial)
    for old, new in link_params.RENAMED.items():
        if old in st.query_params:
            _replace_in_link(old, None)
            _replace_in_link(new, initial[new])
    for name, values in initial.items():
        if name not in link_params.PARAMS or name in link_params.SPECIAL:
            continue
        kept, text = link_params.clean(name, values)
        if text:
            notice(text)
            initial[name] = kept if kept is not None else []  # the notice is given: no second one
        kept = link_params.aliased(name, kept)
        if kept != values:
            _replace_in_link(name, kept)
            if kept is not None:
                initial[name] = kept  # a value written the short way (preset=gpt2-124m) is that value: no notice


def _replace_in_link(name: str, kept: list[str] | None) -> None:
    """Change a parameter both in the address and in what bound widgets will be seeded with."""
    try:
        if kept is None:
            del st.query_params[name]
        else:
            st.query_params[name] = kept
    except Exception as error:  # noqa: BLE001 - a link must never break a page; the server's log says why
        log_failure(f"correcting {name!r} in the address", error)
    # Streamlit seeds bound widgets from its copy of the address as it was loaded (private: ui/streamlit_private.py)
    streamlit_private.reseed_widget_from_link(name, kept)


@contextlib.contextmanager
def links():
    """Around a page's run (app.py): the copy-link button above the page, notices about the link and about values
    a browser sent that a widget cannot take."""
    stop_exception = streamlit_private.stop_exception()
    begin()
    top = st.container()
    with top:
        copy_link.copy_button()
    refused_names = [link_params.widget_name(widget_id) for widget_id in refused.refused_widgets()]
    if refused_names:
        top.warning(
            "This browser sent a value that a setting cannot take; the page uses the value it had: "
            + ", ".join(_escape_markdown(name) for name in dict.fromkeys(refused_names))
            + ".",
            icon=":material/warning:",
        )
    notice_box = top.empty()
    finished = False
    try:
        yield
        finished = True
    except stop_exception:
        finished = True  # st.stop() ends a page normally
        raise
    finally:
        if finished:
            _said_after_the_run(notice_box)


def _said_after_the_run(notice_box) -> None:
    """What the run's widgets fitted or dropped of the link (``ui.refused``); after the first run, the rest."""
    notices, said = refused.link_sentences()
    if not state.LINK_CHECKED.get():
        state.LINK_CHECKED.set(True)
        notices += _first_run_notices(said)
    if notices:
        notice_box.warning(
            "This link's settings were partly used:\n\n" + "\n".join(f"- {_escape_markdown(n)}" for n in notices[:8]),
            icon=":material/link:",
        )


def _first_run_notices(said: set[str]) -> list[str]:
    initial = state.LINK_INITIAL.get()
    values = {name: state.value(name) for name in initial if name in link_params.PARAMS and state.has_value(name)}
    labels = {name: streamlit_private.as_in_link(name, value) for name, value in values.items()}
    unsaid = {name: raw for name, raw in initial.items() if name not in said}
    notices = list(state.LINK_NOTICES.pop(default=[])) + link_params.link_notices(unsaid, _snapshot(), values, labels)
    for name in [
        n
        for n in initial
        if n not in link_params.PARAMS and n not in link_params.STREAMLIT_OWN and n in st.query_params
    ]:
        try:
            del st.query_params[name]
        except Exception as error:  # noqa: BLE001 - the page is drawn; the log says why
            log_failure(f"removing the unknown parameter {name!r} from the address", error)
    return notices


def _escape_markdown(text: str) -> str:
    r"""Show a notice literally: no Markdown, HTML or LaTeX from a hostile link.

    >>> _escape_markdown("<b>*x*</b> $1$")
    '\\<b\\>\\*x\\*\\</b\\> \\$1\\$'
    """
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|$<>~&])", r"\\\1", text)


def notice(text: str) -> None:
    """Add a notice to the link check (for settings read outside widgets, e.g. the model)."""
    state.LINK_NOTICES.setdefault().append(text)
