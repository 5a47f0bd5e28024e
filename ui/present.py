"""Presenter mode: a page on a projector, one section at a time.

Turned on by the sidebar switch or by ``?present=1`` in the address (so a teacher can bookmark it).
It changes only how a page is shown, never what it computes:

* bigger type, and bigger charts (``ui.charts.show`` reads :func:`enabled`);
* the sidebar starts collapsed (app.py asks :func:`requested` before ``st.set_page_config``);
* one section (an ``st.header``) at a time, with Back / Next buttons (also ← → and PageUp /
  PageDown, which is what a presentation clicker sends); within a section the explanatory text
  (captions and paragraphs) appears one step at a time before Next moves on.

The sectioning happens in the browser, over whatever the page drew, so pages need no change and
stay the same whether their sections are ``st.fragment`` s or not.
"""

from __future__ import annotations

import streamlit as st

from ui.internals import PRESENTER_CSS, PRESENTER_SCRIPT

_STATE = "present_mode"


def requested() -> bool:
    """Is presenter mode asked for by the address (``?present=1``)?"""
    return st.query_params.get("present", "") in {"1", "true", "on", "yes"}


def enabled() -> bool:
    """Is presenter mode on for this session (switch or address)?"""
    state = st.session_state
    if _STATE not in state:
        return requested()
    return bool(state[_STATE])


def _sync_url() -> None:
    if st.session_state.get(_STATE):
        st.query_params["present"] = "1"
    else:
        st.query_params.pop("present", None)


def switch() -> bool:
    """The sidebar switch; returns whether presenter mode is on."""
    if _STATE not in st.session_state:
        st.session_state[_STATE] = requested()
    on = st.toggle("Presenter mode", key=_STATE, on_change=_sync_url,
                   help="For a projector: bigger type and charts, one section at a time (Next / Back, or the "
                        "arrow keys), the explanations one step at a time. The address gets ?present=1.")
    if on and not requested():
        st.query_params["present"] = "1"
    return on


def apply() -> None:
    """Draw presenter mode's styles and section navigation when it is on (app.py, before the page)."""
    if not enabled():
        return
    st.html(PRESENTER_CSS)
    st.html('<span data-llmviz-present-on="1"></span>' + PRESENTER_SCRIPT, unsafe_allow_javascript=True)


def chart_scale() -> float:
    """How much bigger charts are drawn (1 outside presenter mode)."""
    return 1.35 if enabled() else 1.0
