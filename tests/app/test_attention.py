"""The Attention page under AppTest: its toggles, slider extremes and bad inputs give clear messages, and its
tables, labels and step 0 vs step N show what llmviz computed."""

import json
import re
from collections import Counter
from pydoc_data.topics import topics

import pytest

from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import assert_clean, by_label, run_app, run_page, texts
from ui.stages import ROOT

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("heads", [1, 2])
def test_attention_toggles(scaled, causal, heads):
    at = run_page("stages/attention.py", attention_tab="Step by step")  # the lesson's tab under your sentence
    by_label(at.toggle, "Scale by √d_k").set_value(scaled)
    by_label(at.toggle, "Causal mask").set_value(causal)
    by_label(at.radio, "Heads").set_value(heads).run()
    assert_clean(at)
    assert not at.error


def test_attention_heads_that_do_not_divide():
    at = run_page("stages/attention.py", attention_tab="Step by step")
    by_label(at.radio, "Heads").set_value(3).run()
    assert_clean(at, errors_expected=True)
    assert "cannot split" in texts(at.error)


def test_attention_kv_cache_calculator_opens_lazily_and_counts_bytes():
    at = run_page("stages/attention.py")
    assert not [w for w in at.select_slider if w.label == "Key/value heads"]  # not chosen: its content never ran
    at = run_page("stages/attention.py", attention_tab="Grouped-query")  # its tab, opened
    by_label(at.select_slider, "Query heads").set_value(8).run()
    by_label(at.select_slider, "Key/value heads").set_value(2)
    by_label(at.select_slider, "Tokens in the cache").set_value(4096).run()
    assert_clean(at)
    # by hand: keys and values (2) × 24 layers × 2 key/value heads × head_dim 64 × 4,096 tokens × 2 bytes (bf16)
    expected = 2 * 24 * 2 * 64 * 4096 * 2
    assert f"{expected:,}".replace(",", "{,}") in " ".join(latex.value for latex in at.latex)  # as math mode writes it
    assert "75% less" in texts(at.caption)  # 2 key/value heads instead of 8


def test_attention_empty_and_long_sentence():
    at = run_page("stages/attention.py", lazy_attention_minilm=True)  # the MiniLM part, opened
    by_label(at.text_input, "Sentence").set_value("   ").run()
    assert_clean(at)
    assert "Type a sentence" in texts(at.warning)
    by_label(at.text_input, "Sentence").set_value("return " * 300).run()
    assert_clean(at)
    assert "more than the context" in texts(at.warning)
    assert "wordpieces" in texts(at.warning)


def test_attention_long_sentence_gets_one_notice_of_what_is_shown():
    """A sentence past the context and past what a chart can show: one notice says both cuts (there were two
    stacked boxes, one saying 'the first 128 are shown' and the next 'the charts show the first 48')."""
    at = run_page("stages/attention.py")
    by_label(at.text_input, "Sentence").set_value("the cat sat on the mat " * 60).run()
    assert_clean(at)
    notices = [box.value for box in [*at.warning, *at.info] if "tokens" in box.value and "first" in box.value]
    assert len(notices) == 1, notices
    assert "context of 128" in notices[0] and "the charts show the first" in notices[0]


def test_a_paste_longer_than_the_page_uses_lands_and_is_cut_with_a_word():
    """Streamlit's box drops a change longer than its max_chars without a word (a 6,000-character paste into the
    5,000-character sentence did nothing): the box takes it (ui.boxes.room), and the page uses the first 5,000
    characters and says so under it, the rest of the page as for any long sentence."""
    at = run_page("stages/attention.py")
    box = by_label(at.text_input, "Sentence")
    assert box.proto.max_chars == 50_000
    box.set_value("x" * 6_000).run()
    assert_clean(at)
    assert "Your sentence is 6,000 characters long: this page uses its first 5,000." in texts(at.caption)
    assert (  # the link's note says the same (it said "the page itself uses all of them")
        "The link to this view carries the first 2,000 of these 6,000 characters (an address cannot hold more); "
        "the page itself uses the first 5,000." in texts(at.caption)
    )


def assert_no_error_box(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_latex_writes_negative_numbers_in_parentheses():
    at = run_page("stages/embeddings.py")
    by_label(at.text_input, "v₁").set_value("1, -2, 0.5")
    by_label(at.text_input, "v₂").set_value("0.5, -2, 1").run()
    assert_no_error_box(at)
    latex = texts(at.latex)
    assert "(-2)^2" in latex
    assert "((-2) - (-2))^2" in latex
    assert "+ -" not in latex and "- -" not in latex


def test_padding_panel_labels_the_pad_token():
    at = run_page("stages/attention.py", attention_tab="Masks")  # the lesson's tab under your sentence
    # the four masks are one figure of four panels: their subplot titles are its annotations, in panel order
    masks = next(
        c for c in charts(at) if any("padding" in a.get("text", "") for a in c["layout"].get("annotations", []))
    )
    titles = [a["text"] for a in masks["layout"]["annotations"]]
    heat = masks["data"][next(i for i, title in enumerate(titles) if title.startswith("padding"))]
    assert heat["x"][-1] == "[PAD]" and heat["y"][-1] == "[PAD]"
    assert "sat" not in heat["x"]


def test_gpt_heatmap_shows_every_token_label():
    at = run_page("stages/attention.py")
    heat = next(c for c in charts(at) if "layer 0, head 0" in json.dumps(c["layout"].get("title", "")))
    assert heat["layout"]["xaxis"]["dtick"] == 1 and heat["layout"]["yaxis"]["dtick"] == 1


def test_attention_step_0_vs_n_follows_the_layer_and_head_above_it():
    """(Step 0 vs step N is offered only where the picked model has steps: a run, here GPT mini's first steps.)"""
    from llmviz.jobs.default import default_manager

    at = run_app("stages/training.py", corpus="names")
    at.selectbox(key="train_model").set_value("gpt-mini")  # 4 layers, 4 heads
    at.slider(key="steps").set_value(20)
    at.button(key="train").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    assert job.wait(timeout=180), job.status().describe()
    at.session_state["lazy_attention_before_after"] = True  # the comparison, opened
    at.switch_page(str(ROOT / "stages/attention.py")).run()
    at.slider(key="layer").set_value(2).run()
    at.slider(key="head").set_value(3).run()
    assert_clean(at)
    assert not [s for s in at.slider if s.key in ("ba_layer", "ba_head")]  # no second pair of sliders
    import json

    titles = [json.loads(chart.proto.spec)["layout"].get("title", {}).get("text") for chart in at.get("plotly_chart")]
    # the head above, and step 0 and step N beside each other show the same head
    assert titles.count("layer 2, head 3") == 3, titles


def test_tables_and_csv_hold_the_numbers_the_page_shows():
    import numpy as np
    import pandas as pd

    from ui.text import csv_text, shortest_number, tidy_floats

    float32 = np.array([0.43, 0.15, 0.89, 1e-8, 123456.7], dtype=np.float32)
    assert [shortest_number(float(x)) for x in float32] == ["0.43", "0.15", "0.89", "0.00000001", "123456.7"]
    assert all(np.float32(float(shortest_number(float(x)))) == x for x in float32)  # nothing is lost
    assert shortest_number(0.1 + 0.2) == repr(0.1 + 0.2)  # a float64 keeps all its digits
    frame = pd.DataFrame({"step": [1, 2], "train_loss": [float(np.float32(0.43)), float("nan")]})
    assert csv_text(frame) == "step,train_loss\n1,0.43\n2,\n"
    assert "0.4300000071525574" in frame.to_csv(index=False)  # what the download wrote before
    at = run_app("stages/attention.py")
    journey = at.dataframe[0].value  # "Your journey starts with one step": the first row is 0.43, 0.15, 0.89
    assert journey.iloc[0].tolist() == [0.43, 0.15, 0.89]
    assert "0.43," in journey.to_csv() and "0000" not in journey.to_csv()
    assert tidy_floats(pd.DataFrame({"x": float32}))["x"].tolist() == [0.43, 0.15, 0.89, 1e-8, 123456.7]


# ------------------------------------------------------------ the page opens on your sentence through the picked model


def test_the_default_sentence_is_the_python_manual_read_word_by_word():
    """Before: "The return statement leaves the current function call with a value", which the shipped GPT cut into
    pieces (␣le a ve s). Now a sentence of its corpus, made of the corpus's common words, nearly all one token each."""
    at = run_page("stages/attention.py")
    sentence = at.text_input(key="sentence").value
    manual = " ".join(" ".join(topics.values()).split())
    assert sentence in manual  # a sentence of the corpus
    common = {word for word, _ in Counter(re.findall(r"[a-z]+", manual.lower())).most_common(300)}
    assert set(re.findall(r"[a-z]+", sentence.lower())) <= common
    _, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    words = re.findall(r" ?[A-Za-z]+|[.]", sentence)
    assert sum(len(tokenizer.encode(word)) > 1 for word in words) <= 1
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)  # the first chart: the pattern, layer 0, head 0
    assert heat["layout"]["title"]["text"] == "layer 0, head 0"
    assert len(heat["data"][0]["x"]) == len(tokenizer.encode(sentence))


def test_a_names_model_opens_on_a_name_every_letter_a_token():
    """The manual's sentence reached a names model as "heassignedobjectshouldbeasequenceobjectofthesametype" (no
    capital, space or full stop is in its vocabulary): it opens on a name of its corpus, one pattern cell a letter."""
    at = run_page("stages/attention.py", _picker_selected="shipped:names-transformer")
    assert_clean(at)
    assert at.text_input(key="sentence").value == "charlotte"
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [label.split(" (")[0] for label in heat["data"][0]["x"]] == list("charlotte")  # the second t: "t (2)"


def test_the_sentence_follows_the_model_picked_after_the_page_opened_until_the_student_types_one():
    """A class opens the page, then picks a names model: the box still held the manual's sentence (a keyed box keeps
    its text whatever its default), which the model read as letters run together. A default follows the model; a
    sentence the student typed stays."""
    at = run_page("stages/attention.py")
    assert at.text_input(key="sentence").value.startswith("The assigned object")
    at.session_state["_picker_selected"] = "shipped:names-transformer"
    at.run()
    assert_clean(at)
    assert at.text_input(key="sentence").value == "charlotte"
    at.session_state["_picker_selected"] = "shipped:gpt-python-docs"
    at.run()
    assert at.text_input(key="sentence").value.startswith("The assigned object")
    at.text_input(key="sentence").set_value("Mine, typed by hand.").run()
    at.session_state["_picker_selected"] = "shipped:names-transformer"
    at.run()
    assert at.text_input(key="sentence").value == "Mine, typed by hand."


def test_step_0_vs_step_n_is_offered_only_where_the_model_has_steps():
    """Before: the shipped GPT, which has no steps, offered "Step 0 vs step N … at the step picked in the sidebar".
    (A run's comparison: tests/app/test_pages.py.)"""
    at = run_page("stages/attention.py")
    assert "Step 0 vs step N" not in [h.value for h in at.subheader]
    assert not [e for e in at.expander if "step 0" in e.label]


def test_the_lessons_are_tabs_and_a_link_opens_the_lesson_it_sets():
    at = run_page("stages/attention.py")
    assert [tab.label for tab in at.tabs] == ["Without weights", "Step by step", "Shapes", "Masks", "Grouped-query"]
    assert [h.value[:2] for h in at.header] == ["1.", "2."]  # your sentence, then the lesson open
    at = run_app("stages/attention.py", query={"mask": "false"})  # a link that turned the causal mask off
    assert_clean(at)
    assert at.toggle(key="mask").value is False
    assert [h.value[:2] for h in at.header] == ["1.", "3."]  # it opens on the lesson that has the mask


def test_the_softmax_weights_are_shown_with_the_digits_of_the_worked_alpha():
    """Issue 50 §10: the softmax panel wrote 0.500 / 0.499 / 0.000 (summing to 0.999) beside α = 0.5005 worked out
    under it. It writes each weight to 4 decimals, as α is, and 'cat''s row as shown sums to 1 (PyTorch's softmax of
    the scaled scores the page draws)."""
    import base64

    import numpy as np
    import torch

    at = run_page("stages/attention.py", attention_tab="Step by step")
    assert_clean(at)
    steps = next(
        json.loads(chart.proto.spec)
        for chart in at.get("plotly_chart")
        if "softmax weights" in json.dumps(json.loads(chart.proto.spec)["layout"].get("annotations", []))
    )
    panel = next(trace for trace in steps["data"] if trace.get("zmax") == 1)  # the softmax panel (0 … 1)
    assert panel["texttemplate"] == "%{z:.4f}"

    def matrix(z):  # plotly writes a numpy array as base64 bytes (bdata), or as lists
        if isinstance(z, dict):
            shape = [int(n) for n in str(z["shape"]).split(",")]
            return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape).astype(float)
        return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)

    scaled = torch.tensor(matrix(steps["data"][1]["z"]))
    cat = torch.softmax(scaled[1, :2], dim=-1)  # 'cat' sees 'The' and itself (causal)
    shown = [round(float(v), 4) for v in np.nan_to_num(matrix(panel["z"])[1])]
    assert shown[:2] == pytest.approx([round(v, 4) for v in cat.tolist()], abs=1e-4)
    assert sum(shown) == pytest.approx(1.0, abs=1e-4)
    alpha = re.search(r"\\alpha_\{\\text\{cat\},\\text\{The\}\}.* = (0\.\d{4})", texts(at.latex) if at.latex else "")
    assert alpha is None or float(alpha.group(1)) == pytest.approx(shown[0], abs=1e-4)
