"""Settings follow the student (issue 49 §4): every setting bound to the link, set to a value that is not its
default, is in the link the browser writes (also after a visit to another page), and the link alone — a fresh
session — opens with the same value; a page visited again opens with the last settings."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import ui
from tests.support.pages import STAGES, TIMEOUT, assert_clean, by_label
from ui import share
from ui import streamlit_private as internals

#: bound settings a page does not draw when it opens (a tab, a lazy section, another choice shows them): the walk
#: opens them with these link parameters first
OPENS_WITH = {
    "stages/model.py": {"preset": "custom"},
}


def link_of(at: AppTest) -> dict:
    """The address as the browser writes it: each bound widget's value unless it equals its default."""
    return internals.link_values(at.session_state._state._state)


def bound_widgets(at: AppTest) -> list:
    """The widgets of the page (and sidebar) bound to the link, one per parameter."""
    found = {}
    for widget in at.main + at.sidebar if False else _all_widgets(at):
        key = getattr(widget, "key", None)
        if key in share.PARAMS and key not in found:
            found[key] = widget
    return list(found.values())


def _all_widgets(at: AppTest) -> list:
    kinds = (
        "slider",
        "select_slider",
        "selectbox",
        "radio",
        "checkbox",
        "toggle",
        "text_input",
        "text_area",
        "number_input",
        "multiselect",
    )
    return [widget for kind in kinds for widget in getattr(at, kind)]


def another_value(widget):
    """A value of ``widget`` that is not the one it shows (None: it has no other)."""
    kind = type(widget).__name__
    value = widget.value
    if kind in ("Checkbox", "Toggle"):
        return not value
    if kind in ("TextInput", "TextArea"):
        return (value or "") + " cat"
    if kind == "Slider":
        if isinstance(value, tuple):
            return None
        return widget.min if value != widget.min else widget.max
    if kind == "NumberInput":
        low = widget.min if widget.min is not None else value - 1
        return low if value != low else (widget.max if widget.max is not None else value + 1)
    if kind in ("Selectbox", "Radio", "SelectSlider"):
        options = list(widget.options)
        shown = widget.format_func(value) if kind != "SelectSlider" else str(value)
        others = [option for option in options if option != shown]
        if not others:
            return None
        pick = others[-1]
        return pick if kind != "SelectSlider" else type(value)(pick) if not isinstance(value, str) else pick
    if kind == "Multiselect":
        options = list(widget.options)
        return [] if value else options[:1]
    return None


def open_page(path: str, query: dict) -> AppTest:
    at = AppTest.from_file(str(ui.ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(str(ui.ROOT / path)).run()
    return at


def shown(at: AppTest, key: str):
    return next(widget.value for widget in _all_widgets(at) if getattr(widget, "key", None) == key)


@pytest.mark.parametrize("stage", STAGES, ids=[stage.key for stage in STAGES])
def test_every_bound_setting_is_in_the_link_after_a_visit_elsewhere_and_the_link_alone_reproduces_it(stage):
    at = open_page(stage.path, OPENS_WITH.get(stage.path, {}))
    assert_clean(at)
    changed = {}
    for widget in bound_widgets(at):
        if widget.key in ("corpus", "seed"):  # the sidebar: another corpus retrains nothing here but reloads data
            continue
        new = another_value(widget)
        if new is not None:
            widget.set_value(new)
            changed[widget.key] = new
    at.run()
    assert_clean(at)
    wanted = {key: shown(at, key) for key in changed}
    other = "stages/tokens.py" if stage.path != "stages/tokens.py" else "stages/sampling.py"
    at.switch_page(str(ui.ROOT / other)).run()
    at.switch_page(str(ui.ROOT / stage.path)).run()
    assert_clean(at)
    again = {key: shown(at, key) for key in changed}
    assert again == wanted, "a page visited again opens with the student's last settings"
    link = link_of(at)
    missing = sorted(set(changed) - set(link))
    assert not missing, f"settings the link leaves out after a visit elsewhere: {missing} (link: {link})"
    fresh = open_page(stage.path, link)
    assert_clean(fresh)
    assert {key: shown(fresh, key) for key in changed} == wanted, f"the link {link} alone opens another view"


def test_sampling_keeps_top_k_0_in_the_link_after_a_visit_elsewhere():
    at = open_page("stages/sampling.py", {})
    by_label(at.slider, "Temperature").set_value(1.5)
    by_label(at.slider, "Top-k").set_value(0)
    by_label(at.slider, "Top-p").set_value(1.0)
    at.run()
    at.switch_page(str(ui.ROOT / "stages/tokens.py")).run()
    at.switch_page(str(ui.ROOT / "stages/sampling.py")).run()
    assert [by_label(at.slider, name).value for name in ("Temperature", "Top-k", "Top-p")] == [1.5, 0, 1.0]
    assert link_of(at) == {"temperature": "1.5", "top_k": "0", "top_p": "1"}
    fresh = open_page("stages/sampling.py", link_of(at))
    assert [by_label(fresh.slider, name).value for name in ("Temperature", "Top-k", "Top-p")] == [1.5, 0, 1.0]


def test_a_custom_model_is_in_the_link():
    at = open_page("stages/model.py", {"preset": "custom"})
    by_label(at.slider, "d_model (width)").set_value(144)
    by_label(at.slider, "Layers").set_value(6)
    at.run()
    assert_clean(at)
    link = link_of(at)
    assert link["preset"] == "custom" and link["d_model"] == "144" and link["n_layers"] == "6", link
    fresh = open_page("stages/model.py", link)
    assert by_label(fresh.slider, "d_model (width)").value == 144 and by_label(fresh.slider, "Layers").value == 6
    assert any(metric.value == "1,815,264" for metric in fresh.metric), [m.value for m in fresh.metric]
