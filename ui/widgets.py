"""Small widget helpers the pages share: values that survive navigation, page headers, index sliders."""

from __future__ import annotations

import streamlit as st

from ui import state


def keep(name: str, **default) -> dict:
    """Widget arguments for a value that survives navigation: ``st.slider(..., **ui.keep("vocab", value=512))``
    (``name`` declared in :data:`ui.state.KEPT`).

    The default is passed only the first time (Streamlit warns when a widget gets both a default and a
    value kept in session state)."""
    key = state.kept(name)
    return {"key": key} if state.has_value(key) else {"key": key, **default}


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
