"""Settings follow the student (issue 49 §4): every setting bound to the link, set to a value that is not its
default, is in the link the browser writes (also after a visit to another page), and the link alone — a fresh
session — opens with the same value; a page visited again opens with the last settings."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import ui
from tests.support.pages import STAGES, TIMEOUT, assert_clean, by_label
from ui import share, streamlit_private

#: bound settings a page does not draw when it opens (a tab, a lazy section, another choice shows them): the walk
#: opens them with these link parameters first
OPENS_WITH = {
    "stages/model.py": {"preset": "custom"},
}


#: settings whose change rewrites another (the walk changes every setting of a page at once)
SKIPPED = {"example", "preset"}  # Tokens: an example replaces the text; Model: another preset hides the custom sizes


def link_of(at: AppTest) -> dict:
    """The address as the browser writes it: each bound widget's value unless it equals its default."""
    return streamlit_private.link_values(at.session_state._state._state)


def bound_widgets(at: AppTest) -> list:
    """The widgets of the page (and sidebar) bound to the link, one per parameter."""
    found = {}
    for widget in _all_widgets(at):
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
        return value + " cat" if value else None  # empty means "the page chooses" (patching's answer token)
    if kind == "Slider":
        if isinstance(value, tuple):
            return None
        return widget.min if value != widget.min else widget.max
    if kind == "NumberInput":
        low = widget.min if widget.min is not None else value - 1
        return low if value != low else (widget.max if widget.max is not None else value + 1)
    if kind == "Selectbox":
        others = [index for index in range(len(widget.options)) if index != widget.index]
        return ("index", others[-1]) if others else None
    if kind == "SelectSlider":
        if isinstance(value, tuple | list):
            return None
        others = [index for index, label in enumerate(widget.options) if label != widget.format_func(value)]
        return ("label", others[-1]) if others else None
    if kind == "Multiselect":
        return ("labels", widget.options[:1]) if not value else value[:1] if len(value) > 1 else None
    if kind == "Radio":
        others = [index for index in range(len(widget.options)) if index != widget.index]
        return ("radio", others[0]) if others else None
    return None


def option_value(at: AppTest, widget, label: str | list[str]):
    """The value behind an option's label (AppTest knows only the labels)."""
    metadata = at.session_state._state._state._new_widget_state.widget_metadata[widget.id]
    return metadata.deserializer(label)


def open_page(path: str, query: dict) -> AppTest:
    at = AppTest.from_file(str(ui.ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(str(ui.ROOT / path)).run()
    return at


def shown(at: AppTest, key: str):
    return next(widget.value for widget in _all_widgets(at) if getattr(widget, "key", None) == key)


def walk(path: str, opens_with: dict) -> set[str]:
    """Open ``path`` with ``opens_with``, give every bound setting drawn another value, visit another page and come
    back (the values stay), then open the link alone in a new session (the same values). Returns the settings
    walked."""
    at = open_page(path, opens_with)
    assert_clean(at)
    changed = {}
    for widget in bound_widgets(at):
        if getattr(widget, "disabled", False):
            continue  # a browser cannot change it (beam width while sampling)
        if widget.key in ("corpus", "seed") or widget.key in SKIPPED or widget.key in opens_with:
            continue  # the sidebar's corpus reloads every page's data; what the page was opened with stays
        new = another_value(widget)
        if isinstance(new, tuple):  # an option's label: the value behind it, as Streamlit reads the label
            how, which = new
            label = which if how == "labels" else widget.options[which]
            new = option_value(at, widget, [label] if how == "label" else label)
            widget.set_value(new)
        elif new is not None:
            widget.set_value(new)
        if new is not None:
            changed[widget.key] = new
    at.run()
    assert_clean(at)
    drawn = {getattr(widget, "key", None) for widget in _all_widgets(at)}
    wanted = {key: shown(at, key) for key in changed if key in drawn}  # one choice may hide another's widget
    changed = {key: changed[key] for key in wanted}
    other = "stages/tokens.py" if path != "stages/tokens.py" else "stages/sampling.py"
    at.switch_page(str(ui.ROOT / other)).run()
    at.switch_page(str(ui.ROOT / path)).run()
    assert_clean(at)
    again = {key: shown(at, key) for key in changed}
    assert again == wanted, "a page visited again opens with the student's last settings"
    link = link_of(at)  # a value equal to its default is left out (a derived default: key/value heads = heads)
    fresh = open_page(path, link)
    assert_clean(fresh)
    assert {key: shown(fresh, key) for key in changed} == wanted, f"the link {link} alone opens another view"
    return set(changed)


def tabs_of(at: AppTest) -> dict[str, list[str]]:
    """The page's lesson tabs (``ui.sections.lazy_tabs``): link parameter → the labels it may name."""
    bound = set(at.session_state._state._state.query_params._bindings_by_param) & set(share.PARAMS)
    drawn = {getattr(widget, "key", None) for widget in _all_widgets(at)}
    labels = [tab.label for tab in at.tabs]
    return {name: labels for name in sorted(bound - drawn)}


@pytest.mark.parametrize("stage", STAGES, ids=[stage.key for stage in STAGES])
def test_every_bound_setting_is_in_the_link_after_a_visit_elsewhere_and_the_link_alone_reproduces_it(stage):
    """Every tab of the page too: the settings of each lesson are walked with that tab open."""
    opens_with = OPENS_WITH.get(stage.path, {})
    walked = walk(stage.path, opens_with)
    at = open_page(stage.path, opens_with)
    for name, labels in tabs_of(at).items():
        for label in labels:
            tab = {**opens_with, name: label}
            if open_page(stage.path, tab).session_state[name] == label:  # a label of this tab group
                walked |= walk(stage.path, tab)
    WALKED.update(walked)


WALKED: set[str] = set()


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


# ------------------------------------------------------------------ every text bounded before use (issue 50 §11)
@pytest.mark.parametrize("stage", STAGES, ids=[stage.key for stage in STAGES])
def test_every_text_widget_refuses_a_forged_text_longer_than_its_bound(stage):
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    from ui import state

    at = open_page(stage.path, OPENS_WITH.get(stage.path, {}))
    texts = [w for kind in ("text_input", "text_area") for w in getattr(at, kind)]
    widget_metadata = at.session_state._state._state._new_widget_state.widget_metadata
    for widget in texts:
        metadata = widget_metadata[widget.id]
        bound = streamlit_private.text_bound(metadata)
        assert bound <= state.MAX_WIDGET_TEXT and (not widget.max_chars or bound <= widget.max_chars)
        sent = WidgetState(id=widget.id)
        sent.string_value = "x" * bound
        assert streamlit_private.widget_value_problem(sent, metadata) is None
        sent.string_value = "x" * (bound + 1)
        assert "characters" in streamlit_private.widget_value_problem(sent, metadata), widget.label


def test_a_forged_long_prompt_is_refused_before_the_page_reads_it():
    from ui import state

    at = open_page("stages/sampling.py", {})
    box = next(w for w in at.text_input if w.key == "prompt")
    before = box.value
    box.set_value("x" * (state.MAX_WIDGET_TEXT + 1)).run()
    assert next(w for w in at.text_input if w.key == "prompt").value == before
    assert any("Sampling: the prompt" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not at.exception
