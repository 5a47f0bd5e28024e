"""Settings follow the student (issue 49 §4): every setting bound to the link, set to a value that is not its
default, is in the link the browser writes (also after a visit to another page), and the link alone — a fresh
session — opens with the same value; a page visited again opens with the last settings."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from llmviz.lessons.model import PRESET_NAMES
from llmviz.lessons.training import DEFAULT_BATCH_TEXT
from tests.support.pages import STAGES, TIMEOUT, assert_clean, by_label
from ui import share, streamlit_private
from ui.stages import ROOT

#: bound settings a page does not draw when it opens (a tab, a lazy section, another choice shows them): the walk
#: opens them with these link parameters first
OPENS_WITH = {
    "stages/model.py": {"preset": "custom"},
}


#: more views walked (without their tabs): a setting only one choice draws (the beam width, a steering token)
EXTRA_WALKS = {
    "stages/sampling.py": [{"sampling_part": "Generate", "method": "beam search"}],
    "stages/training.py": [{"training_part": "The loss by hand", "by_hand": DEFAULT_BATCH_TEXT, "positions": "3"}],
    "stages/inside.py": [
        {"look": "Steer", "steer_kind": "a token's direction"},
        {"look": "Steer", "steer_kind": "the mean difference of two sets of prompts"},
    ],
}

#: texts that take one token (an empty one means "the page chooses"): the walk types this token instead
ONE_TOKEN = {"patch_answer": " the", "patch_wrong": " a", "steer_token": " the"}
#: texts the page reads as numbers (Embeddings' typed vectors): the walk types these instead
NUMBERS = {"vec_1": "1, 0, 0", "vec_2": "0, 1, 0", "vec_3": "1, 1, 0"}

#: the first word of a page's settings in ui.share.PARAMS (each one is walked, or listed in NOT_WALKED)
PAGE_PREFIX = {
    "stages/tokens.py": "Tokens:",
    "stages/embeddings.py": "Embeddings:",
    "stages/attention.py": "Attention:",
    "stages/model.py": "Model:",
    "stages/inside.py": "Inside the model:",
    "stages/training.py": "Training:",
    "stages/sampling.py": "Sampling:",
    "stages/adapting.py": "Adapting:",
    "stages/serving.py": "Serving:",
}

#: linked settings the walk cannot reach, and why
NOT_WALKED = {
    "enc_layer": "drawn only once MiniLM (a download) runs in an expander the student opens",
    "enc_head": "drawn only once MiniLM (a download) runs in an expander the student opens",
    "w2v_nn": "drawn only after Train word2vec is pressed (a lab run)",
    "lora_matrix": "drawn only once the LoRA demo's lab run has finished",
    "quant_layer": "drawn only once the quantization lab run has finished",
    "router_layer": "drawn only for a mixture-of-experts model",
    "before_prompt": "in an expander that runs only once the student opens it (ui.sections.lazy)",
    "feature_prompt": "in an expander that runs only once the student opens it (ui.sections.lazy)",
    "feature_alpha": "in an expander that runs only once the student opens it (ui.sections.lazy)",
    "feature_text": "in an expander that runs only once the student opens it (ui.sections.lazy)",
    # the Model page draws the tying toggle of the preset chosen: the walk opens custom (tie_custom); the others
    **{
        name: "drawn only for its preset: test_each_presets_tying_is_in_the_link sets each one"
        for name in share.PARAMS
        if name.startswith("tie_") and name != "tie_custom"
    },
}

#: every widget a page draws that is NOT bound to the link, with the reason (a key, a family's key ending in "_",
#: or "page: label" for a widget without a key). A widget neither linked nor listed here fails the walk.
NOT_LINKED = {
    # cannot be linked
    "picker_model_": "the model travels as ?model= (ui.picker checks it is the student's run), not as this widget",
    "picker_step_": "a run's step: runs are the student's own, the link carries the model (?model=)",
    "present_mode": "presenter mode travels as ?present=1 (ui.present)",
    "device": "the device belongs to the machine that opens the link (a link from a GPU opens on a laptop)",
    "deterministic": "a machine-wide switch for reproducible numbers, not part of a view",
    "student_name": "personal: a name must not travel in a link the student shares",
    "feature_label_": "the student's own label of a feature, kept with their session, not a view setting",
    "step_forced_": "a token forced in step mode is an action on one model's step, not a setting",
    "ablation_guess": "the student's guess is asked before the answer is shown: a link would answer it",
    "sae_pick": "may name one of the student's own autoencoder runs (runs are the student's, like ?model=)",
    "lens_start_": "its key carries the text's length: a new text opens at its start",
    "lens_follow_": "its key carries the text: a new text opens at its last position",
    "keep_runs_on_chart": "Training: its options are the student's own runs (a link carries the model, ?model=)",
    "attention_query_": "its options are the tokens of the sentence (a new sentence, other options)",
    "tuning_SFT_model": "Tuning: its options are the student's own runs (runs are the student's, like ?model=)",
    "tuning_DPO_model": "Tuning: its options are the student's own runs (runs are the student's, like ?model=)",
    "tuning_dpo_from": "Tuning: its options are the student's own SFT runs (runs are the student's, like ?model=)",
    "stages/home.py: The first lines of Python reference manual": "shows the corpus (disabled), sets nothing",
}


def unlisted(at: AppTest, path: str) -> set[str]:
    """The widgets drawn that are neither bound to the link nor listed in NOT_LINKED."""
    found = set()
    for widget in _all_widgets(at):
        key = getattr(widget, "key", None)
        if key in share.PARAMS:
            continue
        name = key if key is not None else f"{path}: {widget.label}"
        if not any(name == listed or (listed.endswith("_") and name.startswith(listed)) for listed in NOT_LINKED):
            found.add(name)
    return found


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
        typed = {**ONE_TOKEN, **NUMBERS}
        if widget.key in typed:
            return typed[widget.key] if value != typed[widget.key] else None
        return value + " cat" if value else None
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
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(str(ROOT / path)).run()
    return at


def shown(at: AppTest, key: str):
    return next(widget.value for widget in _all_widgets(at) if getattr(widget, "key", None) == key)


def walk(path: str, opens_with: dict, unlinked: set[str] | None = None) -> set[str]:
    """Open ``path`` with ``opens_with``, give every bound setting drawn another value, visit another page and come
    back (the values stay), then open the link alone in a new session (the same values). Returns the settings
    walked."""
    at = open_page(path, opens_with)
    assert_clean(at)
    if unlinked is not None:
        unlinked |= unlisted(at, path)
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
    at.switch_page(str(ROOT / other)).run()
    at.switch_page(str(ROOT / path)).run()
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
    unlinked: set[str] = set()
    walked = walk(stage.path, opens_with, unlinked)
    at = open_page(stage.path, opens_with)
    for name, labels in tabs_of(at).items():
        for label in labels:
            tab = {**opens_with, name: label}
            if open_page(stage.path, tab).session_state[name] == label:  # a label of this tab group
                walked |= walk(stage.path, tab, unlinked)
    for extra in EXTRA_WALKS.get(stage.path, []):
        walked |= walk(stage.path, extra, unlinked)
    WALKED.update(walked)
    assert not unlinked, f"widgets neither in the link (ui.share.PARAMS) nor listed in NOT_LINKED: {sorted(unlinked)}"
    prefix = PAGE_PREFIX.get(stage.path)
    tabs = set(tabs_of(at))
    page_params = {name for name, (_, what) in share.PARAMS.items() if prefix and what.startswith(prefix)}
    missed = page_params - walked - tabs - SKIPPED - set(opens_with) - set(NOT_WALKED)
    assert not missed, f"linked settings the walk never changed: {sorted(missed)}"


WALKED: set[str] = set()


def test_sampling_keeps_top_k_0_in_the_link_after_a_visit_elsewhere():
    at = open_page("stages/sampling.py", {})
    by_label(at.slider, "Temperature").set_value(1.5)
    by_label(at.slider, "Top-k").set_value(0)
    by_label(at.slider, "Top-p").set_value(1.0)
    at.run()
    at.switch_page(str(ROOT / "stages/tokens.py")).run()
    at.switch_page(str(ROOT / "stages/sampling.py")).run()
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


def test_a_preset_linked_by_its_id_opens_without_a_notice():
    """preset=gpt2-124m is GPT-2 small written the short way: the link is used as it is, nothing to tell."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["preset"] = "gpt2-124m"
    at.query_params["tie_gpt2-124m"] = "false"
    at.run()
    assert not [warning.value for warning in at.warning if "link" in warning.value]
    at.switch_page(str(ROOT / "stages/model.py")).run()
    assert shown(at, "preset") == "gpt2-124m" and shown(at, "tie_gpt2-124m") is False


@pytest.mark.parametrize("preset", ["picked", *PRESET_NAMES, "custom"])
def test_each_presets_tying_is_in_the_link(preset):
    """Each Preset choice has its own tying toggle (GPT-2 small opens tied): the other choice is in the link as
    tie_<preset>, and the link alone opens the same toggle and the same parameter count."""
    name = f"tie_{preset}"
    at = open_page("stages/model.py", {} if preset == "picked" else {"preset": preset})  # picked: the first choice
    toggle = next(widget for widget in at.toggle if widget.key == name)
    tied = toggle.value
    toggle.set_value(not tied).run()
    assert_clean(at)
    counts = [metric.value for metric in at.metric]
    link = link_of(at)
    assert link[name] == str(not tied).lower(), link
    fresh = open_page("stages/model.py", link)
    assert_clean(fresh)
    assert shown(fresh, name) is (not tied)
    assert [metric.value for metric in fresh.metric] == counts


@pytest.mark.parametrize(
    ("query", "shown_values"),
    [
        ({"cos_pair": "v1-v3", "vec_3": "3, 4, 0"}, {"cos_pair": ("v₁", "v₃"), "vec_3": "3, 4, 0"}),  # typed plainly
        ({"cos_pair": "v₃ and v₁"}, {"cos_pair": ("v₁", "v₂")}),  # not one of the pairs: the default
        ({"cos_pair": "('v₁', 'v₃')", "vec_1": "1, " * 300}, {"cos_pair": ("v₁", "v₂"), "vec_1": "0.2, 0.4, 0.9"}),
        ({"sin_d_model": "8", "sin_dims": ["2", "9", "300"]}, {"sin_dims": [2]}),  # beyond d_model: dropped
        ({"sin_d_model": "8", "sin_dims": ["-1", "x"]}, {"sin_dims": [0, 1, 4]}),  # none usable: the default
        ({"sentences": "x" * 5_001}, {"sentences": None}),  # longer than the box takes: the default
    ],
    ids=["pair-plain", "pair-reversed", "pair-tuple-long-vector", "dims-beyond", "dims-none", "sentences-long"],
)
def test_a_forged_or_stale_embeddings_link_falls_back_to_the_defaults(query, shown_values):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()  # the link's texts are checked on the first run (a widget checks its value where it is drawn)
    notices = [warning.value for warning in at.warning if "link" in warning.value]
    if query.get("cos_pair") == "v1-v3":
        assert not notices, "v1-v3 is a pair, written plainly: nothing to tell"
    if any(len(value) > 500 for value in query.values() if isinstance(value, str)):
        assert notices and "more than its box takes" in notices[0], notices
    at.switch_page(str(ROOT / "stages/embeddings.py")).run()
    assert_clean(at)
    for key, value in shown_values.items():
        assert shown(at, key) == value if value is not None else shown(at, key).startswith("I love programming")


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
