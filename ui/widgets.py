"""Small widget helpers the pages share: values that survive navigation, page headers, index sliders."""

from __future__ import annotations

import streamlit as st

KEEP = "keep_"


def keep_widget_values() -> None:
    """Widgets whose key starts with ``keep_`` keep their value when the student visits another page.

    Streamlit forgets a widget's value in any run that does not draw it; writing the value back in
    every run (app.py calls this before any page draws) keeps it.
    """
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(KEEP)]:
        st.session_state[key] = st.session_state[key]


def keep(name: str, **default) -> dict:
    """Widget arguments for a value that survives navigation: ``st.slider(..., **ui.keep("steps", value=300))``.

    The default is passed only the first time (Streamlit warns when a widget gets both a default and a
    value kept in session state)."""
    key = KEEP + name
    return {"key": key} if key in st.session_state else {"key": key, **default}


def page_header(title: str, caption: str) -> None:
    st.title(title)
    st.caption(caption)


def index_slider(label: str, count: int, key: str | None = None, where=None, **options) -> int:
    """A slider over ``0 … count - 1`` (a layer, a head, a position); with one choice there is nothing
    to slide (Streamlit refuses a slider from 0 to 0), so it says so and returns 0."""
    where = where or st
    if count <= 1:
        where.caption(f"{label}: 0 (the only one)")
        return 0
    return where.slider(label, 0, count - 1, 0, key=key, **options)
