"""Pages under AppTest with their toggles, slider extremes and bad inputs: clear messages, no exception."""

import re

import pytest

import ui
from tests.test_app_pages import STAGES, assert_clean, finish_jobs, run_page


def by_label(widgets, label):
    matches = [w for w in widgets if w.label == label]
    assert matches, f"no widget labelled {label!r}: {[w.label for w in widgets]}"
    return matches[0]


def texts(elements):
    return " ".join(str(e.value) for e in elements)


# ------------------------------------------------------------------ tokens


def test_tokens_empty_text_warns():
    at = run_page("stages/tokens.py")
    by_label(at.text_area, "Your text").set_value("").run()
    assert_clean(at)
    assert "empty" in texts(at.warning)


def test_tokens_huge_paste_is_clamped_and_odd_text_works():
    at = run_page("stages/tokens.py")
    by_label(at.text_area, "Your text").set_value("ab\x00\x07 🙂 東京 " * 90_000).run()
    assert_clean(at)
    assert "first 100,000" in texts(at.warning)
    # every tokenizer draws its first 2,000 tokens as chips and says so; the table counts them all
    table = at.dataframe[0].value
    drawn = [caption.value for caption in at.caption if caption.value.startswith("The first 2,000 of")]
    assert drawn == [
        f"The first 2,000 of {count:,} tokens are drawn; the counts below are for all of them."
        for count in table["tokens"]
        if count > 2000
    ]
    assert drawn and all(chips.value.count('title="id ') <= 2000 for chips in at.markdown)


def test_tokens_train_bpe_then_replay_and_short_text():
    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.slider, "Vocabulary size").set_value(257)  # no merges at all: only the special token
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    by_label(at.slider, "Vocabulary size").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    assert "Learned 43 merges" in texts(at.success)
    by_label(at.slider, "Merges applied").set_value(43).run()
    assert_clean(at)
    at.session_state["tokens_tab"] = "Input–target pairs"  # the windows' tab under the chips
    by_label(at.text_area, "Your text").set_value("hi").run()
    by_label(at.slider, "Context size").set_value(32).run()
    assert_clean(at)
    assert "one window needs" in texts(at.warning)


# ------------------------------------------------------------------ model


@pytest.mark.parametrize("heads, layers, message", [(7, 4, "not divisible"), (48, 1, "not divisible")])
def test_model_page_bad_config(heads, layers, message):
    at = run_page("stages/model.py")
    by_label(at.selectbox, "Preset").set_value("custom").run()
    by_label(at.slider, "Heads").set_value(heads)
    by_label(at.slider, "Layers").set_value(layers).run()
    assert_clean(at, errors_expected=True)
    assert message in texts(at.error)


def test_model_page_empty_and_long_sentence():
    at = run_page("stages/model.py")
    by_label(at.text_input, "A sentence").set_value("").run()
    assert_clean(at)
    assert "nothing to run" in texts(at.warning)
    by_label(at.text_input, "A sentence").set_value("word " * 400).run()
    assert_clean(at)
    assert "do not fit the context" in texts(at.warning)


def test_model_page_untied_gpt2():
    at = run_page("stages/model.py", preset="gpt2-124m")  # GPT-2 small, tied (tests/test_ui_defects.py checks it)
    by_label(at.toggle, "Tie the output head to the token embedding (GPT-2 does)").set_value(False).run()
    assert_clean(at)
    assert any(m.value == "163,037,184" for m in at.metric)  # 124,439,808 + a second 50,257 × 768 matrix


# ------------------------------------------------------------------ attention


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


# ------------------------------------------------------------------ embeddings


@pytest.mark.parametrize(
    "v2, message",
    [("1, 2", "different lengths"), ("0, 0, 0", "undefined"), ("0.1, x, 3", "not a number"), ("", "empty")],
)
def test_embeddings_bad_vectors(v2, message):
    at = run_page("stages/embeddings.py")
    by_label(at.text_input, "v₂").set_value(v2).run()
    assert_clean(at, errors_expected=True)
    assert message in texts(at.error)


def test_embeddings_single_sentence_and_unknown_tokens():
    at = run_page("stages/embeddings.py", embeddings_tab="Sentence embeddings")  # the MiniLM tab, opened
    by_label(at.text_area, "One sentence per line").set_value("☃☃☃").run()
    assert_clean(at)
    assert "at least two sentences" in texts(at.info)
    assert "[UNK]" in texts(at.info)
    by_label(at.text_area, "One sentence per line").set_value("").run()
    assert_clean(at)


def test_embeddings_word2vec_and_missing_words():
    at = run_page("stages/embeddings.py", corpus="names", embeddings_tab="Word2vec")  # every name occurs once
    by_label(at.slider, "Steps").set_value(100)
    finish_jobs(by_label(at.button, "Train word2vec").click().run())
    assert_clean(at, errors_expected=True)
    assert "fewer than two words" in texts(at.error)
    at = run_page("stages/embeddings.py", corpus="python-docs", embeddings_tab="Word2vec")
    by_label(at.slider, "Steps").set_value(100)
    finish_jobs(by_label(at.button, "Train word2vec").click().run())
    assert_clean(at)
    at.text_input(key="w2v_nn").set_value("zzzzqq").run()
    assert_clean(at)
    assert "not in the vocabulary" in texts(at.warning)


# ------------------------------------------------------------------ sampling


@pytest.mark.parametrize(
    "temperature, top_k, top_p", [(0.0, 0, 1.0), (2.5, 1024, 0.01), (0.05, 1, 1.0), (1.0, 0, 0.01)]
)
def test_sampling_slider_extremes(temperature, top_k, top_p):
    at = run_page("stages/sampling.py")
    by_label(at.slider, "Temperature").set_value(temperature)
    by_label(at.slider, "Top-k").set_value(top_k)
    by_label(at.slider, "Top-p").set_value(top_p).run()
    assert_clean(at)
    by_label(at.button, "Generate").click().run()
    assert_clean(at)
    assert not at.error


@pytest.mark.parametrize("method", ["greedy", "beam search"])
def test_sampling_methods(method):
    at = run_page("stages/sampling.py")
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


@pytest.mark.parametrize("shipped", ["names-bigram-counts", "names-bigram-neural", "names-mlp"])
def test_sampling_generates_from_short_context_models(shipped):
    at = run_page("stages/sampling.py", _picker_selected=f"shipped:{shipped}")  # the sidebar picker
    by_label(at.slider, "Tokens to generate").set_value(30)
    by_label(at.button, "Generate").click().run()
    assert_clean(at)
    assert not at.error, texts(at.error)
    by_label(at.button, "Generate at these temperatures").click().run()
    assert not at.error and "error" not in " ".join(str(c.value) for c in at.code)


def test_sampling_step_mode_and_three_temperatures():
    at = run_page("stages/sampling.py")
    by_label(at.button, "Take this one (branch)").click().run()
    assert_clean(at)
    by_label(at.button, "Undo").click().run()
    by_label(at.button, "Generate at these temperatures").click().run()
    assert_clean(at)
    assert any("T = " in m.value for m in at.markdown)


# ------------------------------------------------------------------ training


@pytest.fixture(autouse=True)
def fresh_session_jobs():
    """AppTest gives every test the same session id: forget the jobs earlier tests left behind."""
    from llmviz.jobs.manager import default_manager

    for owner in list(default_manager()._sessions):
        default_manager().end_session(owner)


def session_jobs(at, kind="train"):
    """The jobs of the AppTest's browser session, each waited for until it ends."""
    from llmviz.jobs.manager import default_manager

    found = [
        job
        for job in default_manager().jobs(at.session_state["_llmviz_session_id"])
        if kind is None or job.kind == kind
    ]
    for job in found:
        assert job.wait(timeout=120), job
    return found


def train_on_names(model: str = "mlp", sample_every: int | None = None):
    """The Training page on the names corpus with a character-level ``model`` trained for 20 steps (Train pressed)."""
    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value(model)
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Steps").set_value(20)
    if sample_every is not None:
        by_label(at.slider, "Sample every (steps)").set_value(sample_every)
    at.button(key="train").click().run()
    return at


def test_training_short_run_then_sampling_sees_it():
    at = train_on_names()
    assert_clean(at)
    [job] = session_jobs(at)
    assert job.status().state == "finished"
    at.switch_page(str(__import__("ui").ROOT / "stages/sampling.py")).run()
    assert_clean(at)
    shared = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page")
    assert shared.value == f"run:{job.id}", "the new run is picked for every page"
    shown = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]  # Markdown source: punctuation is escaped
    assert any("Model: " in c and job.label in c for c in shown), "Sampling shows the picked run"


def test_every_page_shows_a_run_while_it_trains():
    """A run picked while it trains in the background: every page draws it with no error box, and the run goes on.
    (The browser tour in test_browser_lab.py visits the pages whose views change with the run; this covers all.)"""
    import time

    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value("gpt-mini")
    by_label(at.slider, "Steps").set_value(2000)
    by_label(at.slider, "Sample every (steps)").set_value(0)
    at.button(key="train").click().run()
    assert_clean(at)
    from llmviz.jobs.manager import default_manager

    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    deadline = time.time() + 120
    while job.status().step < 2:  # snapshots at steps 0, 1, 2: "step 0 vs step N" has something to compare
        assert time.time() < deadline and not job.status().done, job.status().describe()
        time.sleep(0.1)
    try:
        for stage in STAGES:
            at.switch_page(str(ui.ROOT / stage.path)).run()
            assert_clean(at)
            shared = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page")
            assert shared.value == f"run:{job.id}", stage.key
            assert job.status().state == "running", (stage.key, job.status().describe())
            if stage.key == "attention":
                assert "Step 0 vs step N" in [h.value for h in at.subheader]
    finally:
        job.stop()
        assert job.wait(timeout=60)


def test_training_race_and_decoder():
    at = run_page("stages/training.py", corpus="names")
    by_label(at.slider, "Steps per runner").set_value(50)
    by_label(at.button, "Character-level race on names").click().run()
    assert_clean(at)
    assert len(session_jobs(at)) == 7
    by_label(at.button, "Train the decoder (200 steps)").click().run()
    assert_clean(at)
    [decoder] = session_jobs(at, "task")
    assert decoder.status().state == "finished" and decoder.status().step == 200
    at.run()
    assert_clean(at)


def test_training_text_shorter_than_a_window():
    at = run_page("stages/training.py", corpus="upload")
    at.session_state["uploaded_corpus"] = ("tiny.txt", "hello there\n")
    at.run()
    at.button(key="train").click().run()
    assert_clean(at, errors_expected=True)
    assert "one window needs" in texts(at.error)


def test_training_diverging_run_says_what_to_change():
    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value("mlp")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.selectbox, "Optimizer").set_value("rmsprop")
    by_label(at.select_slider, "Learning rate").set_value(1.0)
    by_label(at.toggle, "Clip gradients at norm 1").set_value(False)
    by_label(at.slider, "Steps").set_value(200)
    at.button(key="train").click().run()
    [job] = session_jobs(at)
    at.run()
    assert_clean(at, errors_expected=True)
    assert "Lower the learning rate" in texts(at.error), texts(at.error)
    assert "failed" in [row for row in at.dataframe[0].value["status"]]


# ------------------------------------------------------------------ the "Deterministic pages" switch


def _generated_tokens(at):
    return [r.token for r in at.session_state["generated"][1]]


@pytest.mark.parametrize("deterministic", [True, False])
def test_deterministic_switch_decides_whether_generate_repeats(deterministic):
    at = run_page("stages/sampling.py", deterministic=deterministic)
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


@pytest.mark.parametrize("model", ["bigram-counts", "bigram-neural"])
def test_training_bigram_with_samples_on(model):
    at = train_on_names(model, sample_every=10)
    [job] = session_jobs(at)
    at.run()
    assert_clean(at)
    assert not at.error, texts(at.error)
    status = job.status()
    assert status.state == "finished" and [step for step, _ in status.samples] == [10, 20]
    assert all(len(sample) > 0 for _, sample in status.samples)


def test_tokens_round_trip_with_a_character_model_picked():
    """A character-level model's tokenizer: characters it lacks are dropped with a warning that says which (not an
    error box, not a traceback), and it claims no special token (before: GPT-2's `<|endoftext|>` → 50256)."""
    at = run_page("stages/tokens.py", _picker_selected="shipped:names-transformer", tokens_tab="Encode and decode")
    assert_clean(at)
    assert any("are not in this" in w.value and "characters come back" not in w.value for w in at.warning)
    shown = " ".join(m.value for m in at.markdown)
    assert "This tokenizer has no special tokens" in shown and "50256" not in shown


def test_dropped_characters_are_shown_as_typed():
    """Characters a vocabulary lacks are quoted and escaped: `$x$` or `*a*` in the text never turns into an equation
    or emphasis in the warning (the raw markdown carries the escapes; Streamlit shows the characters themselves)."""
    at = run_page("stages/tokens.py", _picker_selected="shipped:names-transformer", tokens_tab="Encode and decode")
    at.text_area(key="text").set_value("ab $x$ *c*").run()
    assert_clean(at)
    warnings = [w.value for w in at.warning if "are not in this" in w.value]
    # every punctuation character gets a backslash (Markdown's escape), the quotes around each character too
    assert warnings and r"\'\$\'" in warnings[0] and r"\'\*\'" in warnings[0], warnings


@pytest.mark.parametrize("preset", ["llama-style", "smollm2-135m-shapes", "qwen-style", "moe-tiny"])
def test_model_page_modern_presets(preset):
    at = run_page("stages/model.py")
    by_label(at.selectbox, "Preset").set_value(preset).run()
    assert_clean(at)
    assert not at.error
    if preset == "smollm2-135m-shapes":  # SmolLM2-135M's published size, tied head
        assert any(m.value == "134,515,008" for m in at.metric)


def test_model_page_custom_switches_that_do_not_fit():
    at = run_page("stages/model.py")
    by_label(at.selectbox, "Preset").set_value("custom").run()
    by_label(at.number_input, "Key/value heads").set_value(3).run()
    assert_clean(at, errors_expected=True)
    assert "not a multiple of n_kv_heads" in texts(at.error)
    by_label(at.number_input, "Key/value heads").set_value(2)
    by_label(at.number_input, "Experts (0 = one dense MLP)").set_value(1).run()
    assert "n_experts must be 0" in texts(at.error)


def test_attention_long_sentence_gets_one_notice_of_what_is_shown():
    """A sentence past the context and past what a chart can show: one notice says both cuts (there were two
    stacked boxes, one saying 'the first 128 are shown' and the next 'the charts show the first 48')."""
    at = run_page("stages/attention.py")
    by_label(at.text_input, "Sentence").set_value("the cat sat on the mat " * 60).run()
    assert_clean(at)
    notices = [box.value for box in [*at.warning, *at.info] if "tokens" in box.value and "first" in box.value]
    assert len(notices) == 1, notices
    assert "context of 128" in notices[0] and "the charts show the first" in notices[0]
