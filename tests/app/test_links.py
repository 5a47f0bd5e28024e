"""A copied link reproduces a view: ui/share.py's parameters, hostile values falling back with a notice, the text
a link carries, and the architecture sections' settings (the Model page's preset, RoPE's head_dim and base θ on
Embeddings, the query heads of the grouped-query calculator on Attention)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from llmviz.data import corpus
from tests.support.pages import TIMEOUT, assert_clean, by_label
from ui import share
from ui.stages import ROOT


def open_with_link(path: str, query: dict, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(str(ROOT / path)).run()
    assert_clean(at)
    return at


def test_the_model_page_opens_on_the_linked_preset():
    at = open_with_link("stages/model.py", {"preset": "smollm2-135m-shapes"})
    assert by_label(at.selectbox, "Preset").value == "smollm2-135m-shapes"
    assert any(m.value == "134,515,008" for m in at.metric)


def test_the_rope_section_opens_on_the_linked_head_dim_and_theta():
    at = open_with_link("stages/embeddings.py", {"head_dim": "16", "rope_theta": "1,000,000"})  # as the slider shows it
    assert by_label(at.select_slider, "head_dim").value == 16
    assert by_label(at.select_slider, "Base θ").value == 1_000_000.0


@pytest.mark.parametrize("heads", ["8", "32"])
def test_the_grouped_query_calculator_opens_on_the_linked_query_heads(heads):
    at = open_with_link("stages/attention.py", {"query_heads": heads}, lazy_attention_gqa=True)
    assert by_label(at.select_slider, "Query heads").value == int(heads)
    assert not [w.value for w in at.warning if "link" in w.value]


HOSTILE = [
    "",
    "abc",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "1e308",
    "99999999999999999999999",
    "3.5",
    "0x10",
    "[]",
    "{}",
    "<script>alert(1)</script>",
    "'; DROP TABLE runs; --",
    "$\\frac{1}{0}$",
    "**bold**",
    "x" * 5000,
    "\u202e\u0000",
    "../../etc/passwd",
    "run:someone-elses-run@300",
]


def test_bind_only_declared_names():
    assert share.bind("temperature") == {"key": "temperature", "bind": "query-params"}
    with pytest.raises(KeyError):
        share.bind("tempreature")
    with pytest.raises(KeyError):
        share.bind("model")  # read by the picker, not a widget binding


def test_notice_for_each_kind_of_bad_value():
    initial = {"temperature": ["nan"], "top_k": ["3.5"], "seed": ["1337"], "zoom": ["2"], "<script>": ["x"]}
    current = {"top_k": ["3"]}
    values = {"temperature": 0.8, "top_k": 3, "seed": 1337}
    notices = share.link_notices(initial, current, values)
    assert notices[0] == "temperature = “nan” could not be used here: showing 0.8."
    assert notices[1] == "top_k = “3.5” was adjusted to what this page allows: 3."
    assert "zoom is not a setting llmviz knows: ignored." in notices
    assert "<script> is not a setting llmviz knows: ignored." in notices
    assert len(notices) == 4  # seed=1337 is the default value: tidied away without a notice


def test_notices_stay_short_for_very_long_values():
    notices = share.link_notices({"text": ["y" * 10_000], "z" * 10_000: ["1"]}, {}, {"text": "hello"})
    assert all(len(notice) < 200 for notice in notices)


def test_notices_are_shown_literally():
    escaped = share._escape_markdown("<script>alert(1)</script> **x** $1$")
    assert "*" not in escaped.replace("\\*", "") and "$" not in escaped.replace("\\$", "")


def run_home(query: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_link_sets_the_sidebar():
    at = run_home({"seed": "42", "corpus": corpus.info("names").title})  # the URL holds what the list shows
    assert at.sidebar.number_input(key="seed").value == 42
    assert at.sidebar.selectbox(key="corpus").value == "names"
    assert not [w for w in at.warning if "link" in w.value]
    assert not at.error


@pytest.mark.parametrize("bad", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_values_fall_back_with_a_notice(bad):
    at = run_home({"seed": bad, "corpus": bad, bad[:40] or "empty": "1"})
    fitted = {"3.5": 3, "-1": 0}  # 3.5: adjusted; -1: the seed takes at least 0 (said so)
    assert at.sidebar.number_input(key="seed").value == fitted.get(bad, 1337)
    assert at.sidebar.selectbox(key="corpus").value == "python-docs"
    assert not at.error
    notices = [w.value for w in at.warning if "link" in w.value]
    assert notices, "a link that could not be used says so"
    assert len(notices[0]) < 2_000


def test_presenter_mode_from_the_link():
    at = run_home({"present": "1"})
    assert at.sidebar.toggle(key="present_mode").value is True
    at = run_home({"present": "<b>"})
    assert at.sidebar.toggle(key="present_mode").value is False


def test_model_from_the_link():
    from ui import picker

    other = next(e.key for e in picker.entries() if e.available and e.key != picker.DEFAULT_KEY)
    at = run_home({"model": other})
    assert at.session_state["_picker_selected"] == other
    assert not [w for w in at.warning if "model" in w.value]


@pytest.mark.parametrize("bad", ["run:someone-elses-run@300", "hub:nope", "<script>x</script>", "y" * 5000])
def test_unknown_model_falls_back_to_the_shipped_one(bad):
    at = run_home({"model": bad})
    notices = [w.value for w in at.warning if "link" in w.value]
    assert notices and "model" in notices[0] and "not available" in notices[0]
    assert len(notices[0]) < 1_000


def test_every_chart_and_worked_example_goes_through_ui_charts():
    """Charts download as PNG 2x and SVG only when drawn by ui.charts.show / show_in."""
    offenders = []
    for path in sorted((ROOT / "stages").glob("*.py")) + sorted((ROOT / "ui").rglob("*.py")):
        if path.name == "charts.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if ".plotly_chart(" in line:
                offenders.append(f"{path.name}:{number}")
    assert not offenders, f"use ui.charts.show / show_in instead of st.plotly_chart: {offenders}"


def test_every_page_binds_its_settings_to_declared_names():
    import re

    used = set()
    for path in (ROOT / "stages").glob("*.py"):
        used |= set(re.findall(r'share\.bind\("(\w+)"\)', path.read_text()))
    for path in (ROOT / "ui").rglob("*.py"):
        used |= set(re.findall(r'share\.bind\("(\w+)"\)', path.read_text()))
    assert used <= set(share.PARAMS)
    for name in ["text", "tokenizers", "mask", "heads", "layer", "head", "temperature", "top_k", "top_p", "seed"]:
        assert name in used, f"{name} is not in the URL"


@pytest.mark.parametrize(
    "text",
    [
        "I love llamas 🦙 and 👩‍💻 codes; 👨‍👩‍👧 is one family",  # zero-width joiners build the emoji sequences
        "می‌خواهم \u200fسلام\u200f به \u200eGPT\u200e",  # Persian: a zero-width non-joiner and direction marks
        "a\u00adb \u2060 \ufeff",  # soft hyphen, word joiner, BOM-as-ZWNBSP: format characters are text too
    ],
)
def test_a_link_keeps_joiners_and_direction_marks(text):
    assert share.clean("prompt", [text]) == ([text], None)
    assert share.clean("text", ["ab\x00\x1b[31mc"]) == (["ab[31mc"], None)  # control characters still go


def test_a_link_carries_a_bounded_start_of_any_text():
    import urllib.parse

    for text in ("x" * 1_000_000, "🦙" * 100_000, "Zwölf Boxkämpfer " * 50_000, "\u200d" * 9_000):
        carried = share.link_text(text)
        assert text.startswith(carried) and 0 < len(carried) <= share.MAX_TEXT
        assert len(urllib.parse.quote_plus(carried)) <= share.MAX_TEXT_BYTES
    assert share.link_text("short text") == "short text"
    kept, message = share.clean("text", ["🦙" * 3000])
    assert kept == ["🦙" * 500] and message == "text was 3,000 characters long: shortened to 500."


def test_text_widgets_cap_the_link_whenever_their_text_changes():
    bound = share.bind("prompt")
    assert bound["bind"] == "query-params" and bound["on_change"] is share._cap_in_link and bound["args"] == ("prompt",)


def test_a_notice_names_the_label_a_link_must_use_not_the_value_behind_it():
    at = run_home({"corpus": "no-such-corpus"})
    notices = [w.value for w in at.warning if "link" in w.value]
    assert notices and "so it uses Python reference manual" in notices[0], notices
    assert "python\\-docs" not in notices[0] and "python-docs" not in notices[0]


def test_a_one_character_text_says_it_is_too_short_not_to_use_a_context_below_1():
    from llmviz.errors import ConfigError
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import prepare_data

    for text in ("a", "ab", "abc " * 3):
        with pytest.raises(ConfigError) as raised:
            prepare_data(text, TrainConfig(model="bigram-neural", tokenizer="char", context_length=8))
        message = str(raised.value)
        assert "below 1" not in message and "at most 0" not in message
        assert "longer text" in message
    with pytest.raises(ConfigError, match="a context size of at most 4"):  # 45 + 5 tokens: 4 + 1 fit in 5
        prepare_data("abcdefghij" * 5, TrainConfig(model="bigram-neural", tokenizer="char", context_length=8))
    prepare_data("abcdefghij" * 5, TrainConfig(model="bigram-neural", tokenizer="char", context_length=4))  # it does


def test_a_preset_linked_by_its_id_opens_under_its_name():
    """Issue 50 §10: the Preset box shows names ("Attention only (no MLP): 2 layers, d 64"); a link keeps naming a
    preset by its id, as the CLI does (``ui.share.aliased``)."""
    from ui.share import aliased

    assert aliased("preset", ["attn-only-2l"]) == ["Attention only (no MLP): 2 layers, d 64"]
    assert aliased("preset", ["custom"]) == ["custom"] and aliased("cos_pair", ["x"]) == ["x"]
    at = open_with_link("stages/model.py", {"preset": "attn-only-2l"})
    assert by_label(at.selectbox, "Preset").value == "attn-only-2l"


@pytest.mark.parametrize("name", ["names", "upload", "US census first names"])
def test_a_corpus_linked_by_its_name_or_its_title_opens_without_a_notice(name):
    """A link naming the corpus the way the command line does (``corpus=names``, ``corpus=upload``) opens it, as one
    with its title (what Copy link writes) does; before, it was refused ("could not be used here")."""
    at = open_with_link("stages/tokens.py", {"corpus": name})
    assert not [w.value for w in at.warning if "could not be used" in w.value]
    assert at.session_state["corpus"] == ("upload" if name == "upload" else "names")


@pytest.mark.parametrize(
    ("old", "value", "part", "label", "shown"),
    [
        ("race_model", "char · RNN", "Races", "Optimizer race: model", "rnn"),  # a link holds the option's label
        ("batch_text", "ab\ncd", "The loss by hand", "Two lines of text (one sequence each)", "ab\ncd"),
    ],
)
def test_a_link_made_with_a_renamed_parameter_still_opens_its_view(old, value, part, label, shown):
    """Links students copied before a parameter was renamed (ui.share.RENAMED) open the same view, without a notice."""
    at = open_with_link("stages/training.py", {"training_part": part, old: value})
    widget = by_label(at.selectbox, label) if old == "race_model" else by_label(at.text_area, label)
    assert widget.value == shown
    assert share.RENAMED[old] in at.query_params and old not in at.query_params
    assert not [w.value for w in at.warning if "not a setting" in w.value]


def open_on_page(path: str, query: dict) -> AppTest:
    """A link opened on ``path`` itself: the session's first run is that page's, as in a browser."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.switch_page(str(ROOT / path)).run()
    assert_clean(at)
    return at


def link_warnings(at: AppTest) -> list[str]:
    return [w.value.replace("\\", "") for w in at.warning if "link" in w.value]


@pytest.mark.parametrize("first", [True, False], ids=["the page opened", "the page reached later"])
def test_a_linked_number_beyond_its_slider_is_fitted_to_it_and_said(first):
    """Issue 72 §8: ``steps=5000`` on a slider of 10 to 2,000 became the default 300 without a word when the slider
    was not drawn on the session's first run; now it is 2,000 and the page says so, on whichever run draws it."""
    opened = open_on_page if first else open_with_link
    at = opened("stages/training.py", {"steps": "5000", "batch": "-3"})
    assert by_label(at.slider, "Steps").value == 2000
    assert by_label(at.slider, "Batch size").value == 1
    said = "\n".join(link_warnings(at))
    assert "The link asked for steps = “5000”; this page takes at most 2,000, so it uses 2,000." in said, said
    assert "The link asked for batch = “-3”; this page takes at least 1, so it uses 1." in said, said
    assert "could not be used" not in said and said.count("steps") == 1  # one line a parameter, not two
    at.run()
    assert not link_warnings(at)  # said once


@pytest.mark.parametrize(
    ("asked", "used", "said"),
    [
        ("10000", 10_000, None),  # a choice written as its number: no word needed
        ("10,000 characters", 10_000, None),  # as Copy link writes it
        ("99999999", 5_000_000, "this page takes at most 5,000,000 characters, so it uses 5,000,000 characters."),
        ("40000", 50_000, "the nearest being 50,000 characters, so it uses 50,000 characters."),
        ("lots", 200_000, "“lots”, which this page cannot use, so it uses 200,000 characters."),
    ],
)
def test_a_linked_number_of_bpe_characters_is_the_nearest_choice_and_said(asked, used, said):
    at = open_on_page("stages/tokens.py", {"bpe_chars": asked})
    assert by_label(at.select_slider, "Train on the first").value == used
    warnings = "\n".join(link_warnings(at))
    if said is None:
        assert "bpe_chars" not in warnings, warnings
    else:
        assert said in warnings and warnings.count("bpe_chars") == 1, warnings


def test_the_sentences_about_a_fitted_link_value_read_as_their_examples():
    import doctest

    from ui import refused

    assert doctest.testmod(refused).failed == 0
