"""The Sampling page opens on the next-token bars of the picked model for a prompt the model knows."""

import json

import torch

from llmviz.data import corpus
from llmviz.lessons.defaults import DEFAULT_PROMPT
from llmviz.training.checkpoint import load_checkpoint
from tests.test_app_pages import assert_clean, run_page
from ui import ROOT


def test_the_default_prompt_is_the_manuals_and_its_most_likely_next_token_is_a_word():
    """'The for statement' (the default) was a heading of the manual: the shipped GPT's most likely next token after
    it was a newline. The default is a sentence of the manual, and the page's first bar is the model's own top token
    (torch's argmax on the shipped GPT), a word, not a line break."""
    assert DEFAULT_PROMPT in corpus.load("python-docs")
    at = run_page("stages/sampling.py")
    assert_clean(at)
    assert at.text_input(key="prompt").value == DEFAULT_PROMPT
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    with torch.no_grad():
        logits = model(torch.tensor([tokenizer.encode(DEFAULT_PROMPT)]))[0][0, -1]
    top = int(logits.argmax())
    assert "\n" not in tokenizer.decode([top]) and tokenizer.decode([top]).strip()
    first = json.loads(at.get("plotly_chart")[0].proto.spec)  # the page's first picture: the raw softmax's bars
    assert first["layout"]["title"]["text"] == "raw softmax"
    assert first["data"][0]["y"][0] == tokenizer.printable(top)
    assert abs(first["data"][0]["x"][0] - float(torch.softmax(logits, -1)[top])) < 1e-6


def test_the_lessons_are_tabs_and_only_the_open_one_runs():
    at = run_page("stages/sampling.py")
    assert [t.label for t in at.tabs] == ["Step mode", "Generate", "Three temperatures", "The KV cache"]
    assert [h.value for h in at.subheader][-1].startswith("Step mode")
    assert not [b for b in at.button if b.label == "Generate"]  # the Generate tab has not run
    at = run_page("stages/sampling.py", sampling_part="The KV cache")  # a link to the tab (?sampling_part=…)
    assert [b.label for b in at.button if b.key == "kv_run"] == ["Generate both ways"]  # no cut-off label
