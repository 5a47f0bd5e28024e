"""The Sampling page under AppTest: sliders at their extremes, the methods, step mode, the KV cache, beam search,
the Deterministic pages switch and the predict-then-reveal quiz."""

import json

import pytest
import torch
from streamlit.testing.v1 import AppTest

from llmviz.data import corpus
from llmviz.lessons.defaults import DEFAULT_PROMPT
from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import TIMEOUT, assert_clean, by_label, open_tab, run_app, run_page, texts
from ui.stages import ROOT

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")


@pytest.mark.parametrize(
    "temperature, top_k, top_p", [(0.0, 0, 1.0), (2.5, 1024, 0.01), (0.05, 1, 1.0), (1.0, 0, 0.01)]
)
def test_sampling_slider_extremes(temperature, top_k, top_p):
    at = run_page("stages/sampling.py", sampling_part="Generate")  # the tab of the Generate button
    by_label(at.slider, "Temperature").set_value(temperature)
    by_label(at.slider, "Top-k").set_value(top_k)
    by_label(at.slider, "Top-p").set_value(top_p).run()
    assert_clean(at)
    by_label(at.button, "Generate").click().run()
    assert_clean(at)
    assert not at.error


@pytest.mark.parametrize("method", ["greedy", "beam search"])
def test_sampling_methods(method):
    at = run_page("stages/sampling.py", sampling_part="Generate")
    by_label(at.radio, "Method").set_value(method).run()
    by_label(at.button, "Generate").click().run()
    assert_clean(at)
    if method == "beam search":
        assert any("Beam search" in s.value for s in at.subheader)
        # 40 tokens asked (the slider's default): the page says it writes 12, the tree's depth
        assert any("Beam search writes 12 tokens here, not 40" in c.value for c in at.caption)


def test_sampling_names_model_long_prompt_and_unknown_characters():
    at = run_page("stages/sampling.py", _picker_selected="shipped:names-transformer")  # the sidebar picker
    by_label(at.text_input, "Prompt").set_value("Émile-42 " + "anna" * 10).run()
    assert_clean(at)
    warnings = texts(at.warning)
    assert "É" in warnings and "prompt was cut" in warnings  # (the characters are Markdown-escaped)


def test_the_prompt_follows_the_model_but_an_emptied_one_stays_empty():
    """A names model starts from an empty prompt, a GPT from the manual's; the box follows a model picked after the
    page opened while it holds one of them untouched, and a prompt the student emptied stays empty."""
    at = run_page("stages/sampling.py")
    assert by_label(at.text_input, "Prompt").value == DEFAULT_PROMPT
    at.session_state["_picker_selected"] = "shipped:names-transformer"
    at.run()
    assert_clean(at)
    assert by_label(at.text_input, "Prompt").value == ""
    at.session_state["_picker_selected"] = "shipped:gpt-python-docs"
    at.run()
    assert by_label(at.text_input, "Prompt").value == ""  # emptied (here by the names model): a start of its own
    by_label(at.text_input, "Prompt").set_value(DEFAULT_PROMPT).run()
    by_label(at.text_input, "Prompt").set_value("").run()
    at.run()
    assert_clean(at)
    assert by_label(at.text_input, "Prompt").value == ""


@pytest.mark.parametrize("shipped", ["names-bigram-counts", "names-bigram-neural", "names-mlp"])
def test_sampling_generates_from_short_context_models(shipped):
    at = run_page("stages/sampling.py", _picker_selected=f"shipped:{shipped}", sampling_part="Generate")
    by_label(at.slider, "Tokens to generate").set_value(30)
    by_label(at.button, "Generate").click().run()
    assert_clean(at)
    assert not at.error, texts(at.error)
    open_tab(at, "sampling_part", "Three temperatures")  # the next tab
    by_label(at.button, "Generate at these temperatures").click().run()
    assert not at.error and "error" not in " ".join(str(c.value) for c in at.code)


def test_sampling_step_mode_and_three_temperatures():
    at = run_page("stages/sampling.py")
    by_label(at.button, "Take this one (branch)").click().run()
    assert_clean(at)
    by_label(at.button, "Undo").click().run()
    open_tab(at, "sampling_part", "Three temperatures")  # the next tab
    by_label(at.button, "Generate at these temperatures").click().run()
    assert_clean(at)
    assert any("T = " in m.value for m in at.markdown)


def _generated_tokens(at):
    return [r.token for r in at.session_state["generated"][1]]


@pytest.mark.parametrize("deterministic", [True, False])
def test_deterministic_switch_decides_whether_generate_repeats(deterministic):
    at = run_page("stages/sampling.py", deterministic=deterministic, sampling_part="Generate")
    by_label(at.slider, "Temperature").set_value(1.5)
    by_label(at.slider, "Top-k").set_value(0)
    by_label(at.slider, "Top-p").set_value(1.0)
    by_label(at.slider, "Tokens to generate").set_value(60).run()
    by_label(at.button, "Generate").click().run()
    first = _generated_tokens(at)
    by_label(at.button, "Generate").click().run()
    second = _generated_tokens(at)
    assert_clean(at)
    assert (first == second) is deterministic  # off: fresh randomness (60 tokens at T = 1.5 never repeat by chance)


def assert_no_error_box(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_entropy_of_a_certain_token_is_not_negative_zero():
    at = run_page("stages/sampling.py")
    by_label(at.slider, "Temperature").set_value(0.0)
    by_label(at.slider, "Top-k").set_value(1).run()
    assert_no_error_box(at)
    values = [m.value for m in at.metric if m.label == "entropy"]
    assert "0.000 nats" in values and not any(v.startswith("-") for v in values), values


def test_step_mode_offers_the_raw_top_10_marked_when_filtered():
    at = run_page("stages/sampling.py")
    by_label(at.slider, "Top-k").set_value(2).run()
    assert_no_error_box(at)
    table = next(d.value for d in at.dataframe if "raw probability" in d.value.columns)
    assert len(table) == 10
    assert (table["raw probability"] > 1e-6).all(), "no zero-probability padding"
    assert list(table["can be sampled"]).count("yes") == 2
    forced = by_label(at.selectbox, "…or force one of the top 10")
    assert list(forced.options)[-1].endswith("· filtered out")


def test_kv_cache_section_generates_the_same_tokens_both_ways():
    at = run_page("stages/sampling.py", sampling_part="The KV cache")
    at.slider(key="kv_tokens").set_value(20)
    at.button(key="kv_run").click().run()
    assert_no_error_box(at)
    assert "Identical: all 20 tokens" in texts(at.success)
    labels = [m.label for m in at.metric]
    assert "with the KV cache" in labels and "without it" in labels


def test_beam_search_tree_marks_the_winning_path():
    at = run_page("stages/sampling.py", sampling_part="Generate")
    by_label(at.radio, "Method").set_value("beam search").run()
    by_label(at.slider, "Tokens to generate").set_value(4)
    at.button[[b.label for b in at.button].index("Generate")].click().run()
    assert_no_error_box(at)
    tree = next(c for c in charts(at) if any(t.get("name") == "winning path" for t in c["data"]))
    winners = next(t for t in tree["data"] if t.get("name") == "winning path")
    assert len(winners["x"]) == 4 and winners["x"] == [1, 2, 3, 4]


def test_top_k_goes_up_to_the_vocabulary_and_no_further():
    at = run_app("stages/sampling.py")
    assert_clean(at)
    from llmviz.training.checkpoint import load_checkpoint

    _, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    slider = at.slider(key="top_k")
    assert slider.max == tokenizer.vocab_size, (slider.max, tokenizer.vocab_size)  # was vocabulary + 10


def test_quiz_reveal_and_score_on_the_sampling_page():
    """Predict, then reveal under AppTest: ask, answer, reveal; the first answer counts for the score."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(str(ROOT / "stages" / "sampling.py")).run()
    at.button(key="quiz_ask_sampling").click().run()
    radio = next(r for r in at.radio if r.key and r.key.startswith("quiz_choice_sampling_"))
    radio.set_value(radio.options[0]).run()
    reveal = next(b for b in at.button if b.key == radio.key.replace("quiz_choice_", "quiz_reveal_", 1))
    reveal.click().run()
    assert not at.exception, [e.value for e in at.exception]
    answers = at.session_state["quiz_answers"]
    assert len(answers) == 1
    verdicts = [a.value for a in at.success] + [a.value for a in at.error]
    assert any(v.startswith(("Right", "Not quite")) for v in verdicts)


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


def test_greedy_generation_shows_the_models_probabilities_and_real_runner_ups():
    """Issue 50 §7: greedy coloured every token at p = 1.000 and listed control bytes at 0.00 as alternatives. The
    first generated token's p is the model's softmax at the prompt (a plain forward pass), its runner-ups the next
    most likely tokens, none under 0.005."""
    import html
    import re

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    model.eval()
    at = run_page("stages/sampling.py", sampling_part="Generate")
    by_label(at.radio, "Method").set_value("greedy").run()
    by_label(at.button, "Generate").click().run()
    assert_clean(at)
    shown = next(m.value for m in at.markdown if "llmviz-generated" in m.value)
    titles = [html.unescape(t) for t in re.findall(r"title='([^']*)'", shown)]
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor([tokenizer.encode(DEFAULT_PROMPT)]))[0][0, -1], dim=-1)  # (V,)
    p, runners = titles[0].split(" · runner-ups: ")
    assert p == f"p = {float(probs.max()):.3f}" and float(probs.max()) < 0.999
    ranked = [t for t in probs.argsort(descending=True).tolist()[1:6] if probs[t] >= 0.005]
    assert runners.split(" | ")[0] == f"{tokenizer.printable(ranked[0])} {float(probs[ranked[0]]):.2f}"
    assert " 0.00" not in runners
