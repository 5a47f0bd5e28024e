"""Small widget helpers the pages share: values that survive navigation, page headers, index sliders."""

from __future__ import annotations

import streamlit as st

from ui import state


def keep(name: str, **default) -> dict:
    """Widget arguments for a value that survives navigation: ``st.multiselect(..., **keep("runs_on_chart"))``
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
    to slide (Streamlit refuses a slider from 0 to 0), so it says so and returns 0. A value kept from a larger
    range moves to the last index (see :func:`bounded_slider`)."""
    where = where or st
    if count <= 1:
        where.caption(f"{label}: 0 (the only one)")
        return 0
    return bounded_slider(label, 0, count - 1, 0, key=key, where=where, **options)


def bounded_slider(label: str, low, high, default, key: str | None = None, where=None, **options):
    """``st.slider`` whose range depends on the model or the text, for a widget with a ``key``.

    The value a student left at layer 3, head 11 or top-k 50,257 stays in the session (and in the address);
    pick a model with 2 layers, 4 heads or 27 tokens and Streamlit refuses the kept value with
    ``StreamlitValueAboveMaxError``, which broke the section. The kept value moves to the nearest end of the new
    range instead.

    The default is passed on every run, kept value or not: a widget bound to the link leaves out of the address
    the value equal to its default, so a default that changed between runs (it was left out once the widget had
    a value, and Streamlit then took the range's low end) dropped top-k 0 from the link, which a fresh browser
    then opened at top-k 10."""
    where = where or st
    default = type(default)(min(max(default, low), high)) if isinstance(default, int | float) else default
    if key is not None and state.has_value(key):
        kept = state.value(key)
        if isinstance(kept, int | float) and not isinstance(kept, bool) and not low <= kept <= high:
            state.set_value(key, type(kept)(min(max(kept, low), high)))
    return where.slider(label, low, high, default, key=key, **options)
