"""The Tokens page under AppTest: it opens on your text as token chips, one card per tokenizer, with the lessons
(train a BPE, encode and decode, input–target pairs) in tabs under them."""

import json
import re
from pydoc_data.topics import topics

import ui
from llmviz.training.checkpoint import load_checkpoint
from tests.test_app_pages import assert_clean, finish_jobs, run_page


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_the_default_text_is_the_python_manual_read_word_by_word():
    """The shipped GPT was trained on the Python manual: the page opens on sentences of it, each word one token."""
    at = run_page("stages/tokens.py")
    assert_clean(at)
    text = at.text_area(key="text").value
    manual = " ".join(" ".join(topics.values()).split())  # the corpus, its line breaks as spaces
    sentences = re.findall(r"[^.]+\.", text)
    assert len(sentences) == 2 and all(sentence.strip() in manual for sentence in sentences), text
    _, tokenizer, _ = load_checkpoint(ui.ROOT / "data" / "gpt-python-docs")
    words = re.findall(r" ?[A-Za-z]+", text)
    assert all(len(tokenizer.encode(word)) == 1 for word in words), [w for w in words if len(tokenizer.encode(w)) > 1]


def test_the_lessons_are_tabs_under_the_chips_and_only_the_open_one_runs():
    at = run_page("stages/tokens.py")
    assert [tab.label for tab in at.tabs] == ["Train your own BPE", "Encode and decode", "Input–target pairs"]
    headers = [h.value for h in at.header]
    assert headers[0].startswith("1.") and headers[1].startswith("2. Train your own BPE") and len(headers) == 2
    assert not [s for s in at.slider if s.label == "Context size"]  # the pairs' tab is closed: it never ran
    at = run_page("stages/tokens.py", tokens_tab="Input–target pairs")
    assert [h.value[:2] for h in at.header] == ["1.", "4."]
    assert [s for s in at.slider if s.label == "Context size"]


def test_zipf_axes_are_labelled_at_the_powers_of_ten_only():
    """Before: Plotly labelled the log axes "1 2 5 10 2 5 100 2" (the 2s and 5s between the powers of ten)."""
    at = run_page("stages/tokens.py", corpus="names")
    at.slider(key="vocab").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    zipf = next(c for c in charts(at) if c["layout"].get("xaxis", {}).get("title", {}).get("text") == "rank")
    ranks = len(zipf["data"][0]["x"])
    for axis, high in (("xaxis", ranks), ("yaxis", max(zipf["data"][0]["y"]))):
        shown = zipf["layout"][axis]
        assert shown["type"] == "log"
        assert shown["tickvals"][:4] == [1, 10, 100, 1000][: len(shown["tickvals"])]
        assert shown["ticktext"] == [f"{10**k:,}" for k in range(len(shown["tickvals"]))]  # 1, 10, 100, 1,000
        assert shown["tickvals"][-1] >= high > shown["tickvals"][-2]  # one power of ten past the data, not more
