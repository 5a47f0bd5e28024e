"""Presenter mode: a page on a projector, one section at a time.

Turned on by the sidebar switch or by ``?present=1`` in the address (so a teacher can bookmark it).
It changes only how a page is shown, never what it computes:

* bigger type, in charts too (``ui.charts.show`` reads :func:`chart_scale`; chart heights stay, so that a
  slide fits a 1280×720 screen);
* the sidebar starts collapsed (app.py asks :func:`requested` before ``st.set_page_config``);
* one slide at a time, with Back / Next buttons in a bar at the top, where it covers no chart (also ← → and
  PageUp / PageDown, which is what a presentation clicker sends); within a slide the explanatory text
  (captions and paragraphs) appears one step at a time before Next moves on.

A slide is one idea: a new one starts at every ``st.header`` and ``st.subheader``, also inside a
section's ``st.fragment`` (the script opens up a container that holds a heading), and a slide with
nothing but a heading joins the next one. So a page splits an idea off by giving it a subheader, and
keeps controls on the slide of the chart they change by drawing them after the same heading.
``tests/browser/test_presenter.py`` measures every slide of every page at 1280×720.
"""

from __future__ import annotations

import streamlit as st

from ui import state
from ui.streamlit_private import PRESENTER_CSS, PRESENTER_SCRIPT

_STATE = state.widget("present_mode")


def requested() -> bool:
    """Is presenter mode asked for by the address (``?present=1``)?"""
    return st.query_params.get("present", "") in {"1", "true", "on", "yes"}


def enabled() -> bool:
    """Is presenter mode on for this session (switch or address)?"""
    if not state.has_value(_STATE):
        return requested()
    return bool(state.value(_STATE))


def _sync_url() -> None:
    if state.value(_STATE):
        st.query_params["present"] = "1"
    else:
        st.query_params.pop("present", None)


def switch() -> bool:
    """The sidebar switch; returns whether presenter mode is on."""
    if not state.has_value(_STATE):
        state.set_value(_STATE, requested())
    on = st.toggle(
        "Presenter mode",
        key=_STATE,
        on_change=_sync_url,
        help="For a projector: bigger type and charts, one section at a time (Next / Back, or the "
        "arrow keys), the explanations one step at a time. The address gets ?present=1.",
    )
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
    """How much bigger a chart's type is drawn (1 outside presenter mode): Plotly's 12 px becomes 16 px, a
    heatmap's 11 px token labels 15 px (and none smaller than 14 px)."""
    return 1.35 if enabled() else 1.0
