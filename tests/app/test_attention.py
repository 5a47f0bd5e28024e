"""The Attention page under AppTest: it opens on your sentence through the picked model, with the lessons in tabs."""

import json
import re
from collections import Counter
from pydoc_data.topics import topics

import ui
from llmviz.training.checkpoint import load_checkpoint
from tests.test_app_pages import assert_clean, run_page
from tests.test_architecture_links import open_with_link


def test_the_default_sentence_is_the_python_manual_read_word_by_word():
    """Before: "The return statement leaves the current function call with a value", which the shipped GPT cut into
    pieces (␣le a ve s). Now a sentence of its corpus, made of the corpus's common words, nearly all one token each."""
    at = run_page("stages/attention.py")
    sentence = at.text_input(key="sentence").value
    manual = " ".join(" ".join(topics.values()).split())
    assert sentence in manual  # a sentence of the corpus
    common = {word for word, _ in Counter(re.findall(r"[a-z]+", manual.lower())).most_common(300)}
    assert set(re.findall(r"[a-z]+", sentence.lower())) <= common
    _, tokenizer, _ = load_checkpoint(ui.ROOT / "data" / "gpt-python-docs")
    words = re.findall(r" ?[A-Za-z]+|[.]", sentence)
    assert sum(len(tokenizer.encode(word)) > 1 for word in words) <= 1
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)  # the first chart: the pattern, layer 0, head 0
    assert heat["layout"]["title"]["text"] == "layer 0, head 0"
    assert len(heat["data"][0]["x"]) == len(tokenizer.encode(sentence))


def test_step_0_vs_step_n_is_offered_only_where_the_model_has_steps():
    """Before: the shipped GPT, which has no steps, offered "Step 0 vs step N … at the step picked in the sidebar".
    (A run's comparison: tests/test_ui_defects.py.)"""
    at = run_page("stages/attention.py")
    assert "Step 0 vs step N" not in [h.value for h in at.subheader]
    assert not [e for e in at.expander if "step 0" in e.label]


def test_the_lessons_are_tabs_and_a_link_opens_the_lesson_it_sets():
    at = run_page("stages/attention.py")
    assert [tab.label for tab in at.tabs] == ["Without weights", "Step by step", "Shapes", "Masks", "Grouped-query"]
    assert [h.value[:2] for h in at.header] == ["1.", "2."]  # your sentence, then the lesson open
    at = open_with_link("stages/attention.py", {"mask": "false"})  # a link that turned the causal mask off
    assert_clean(at)
    assert at.toggle(key="mask").value is False
    assert [h.value[:2] for h in at.header] == ["1.", "3."]  # it opens on the lesson that has the mask
