"""The Model page under AppTest: presets, custom switches that do not fit, the norms table, GPT-2's own tying,
and GPT-2 → Llama one switch at a time as lab runs."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pytest
import torch

from llmviz.models.presets import PRESETS
from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import assert_clean, by_label, finish_jobs, run_app, run_page, texts
from ui.stages import ROOT
from ui.text import fixed

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")


@pytest.mark.parametrize("heads, layers, message", [(7, 4, "not divisible"), (48, 1, "not divisible")])
def test_model_page_bad_config(heads, layers, message):
    at = run_page("stages/model.py")
    by_label(at.selectbox, "Preset").set_value("custom").run()
    by_label(at.slider, "Heads").set_value(heads)
    by_label(at.slider, "Layers").set_value(layers).run()
    assert_clean(at, errors_expected=True)
    assert message in texts(at.error)


def test_model_page_empty_and_long_sentence():
    at = run_page("stages/model.py", model_tab="Inside a trained GPT")
    by_label(at.text_input, "A sentence").set_value("").run()
    assert_clean(at)
    assert "nothing to run" in texts(at.warning)
    by_label(at.text_input, "A sentence").set_value("word " * 400).run()
    assert_clean(at)
    assert "do not fit the context" in texts(at.warning)


def test_model_page_untied_gpt2():
    # GPT-2 small, tied (test_model_page_opens_gpt2_small_with_its_own_tying_and_shows_the_untied_count)
    at = run_page("stages/model.py", preset="gpt2-124m")  # the page opens on the picked model: GPT-2 small chosen
    by_label(at.toggle, "Tie the output head to the token embedding (GPT-2 does)").set_value(False).run()
    assert_clean(at)
    assert any(m.value == "163,037,184" for m in at.metric)  # 124,439,808 + a second 50,257 × 768 matrix


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


def test_model_custom_layers_start_at_one_and_heads_reach_every_suggestion():
    at = run_page("stages/model.py")
    by_label(at.selectbox, "Preset").set_value("custom").run()
    assert by_label(at.slider, "Layers").min == 1
    assert by_label(at.slider, "Heads").max == 64
    by_label(at.slider, "Heads").set_value(48).run()
    error = texts(at.error)
    suggested = [int(n) for n in re.search(r"Try n_heads in \[([\d, ]+)\]", error).group(1).split(",")]
    assert max(suggested) <= by_label(at.slider, "Heads").max


def shown(elements) -> str:
    """What the browser shows of Markdown elements (their source escapes punctuation)."""
    return re.sub(r"\\(.)", r"\1", texts(elements))


def transformers_gpt2_parameters(tied: bool) -> int:
    """GPT-2 small's parameter count from Hugging Face's own GPT2LMHeadModel (built on the meta device: no memory)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, tie_word_embeddings=tied)
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    return sum(p.numel() for p in model.parameters())  # a tied matrix is one parameter, counted once


def test_model_page_opens_gpt2_small_with_its_own_tying_and_shows_the_untied_count():
    tied, untied = transformers_gpt2_parameters(True), transformers_gpt2_parameters(False)
    assert tied == 124_439_808  # what README and OpenAI's checkpoint say
    at = run_app("stages/model.py", preset="gpt2-124m")  # the page opens on the picked model: GPT-2 small chosen
    assert_clean(at)
    total = next(m.value for m in at.metric if m.label == "Total parameters")
    assert total == f"{tied:,}"
    assert f"Untied, the same sizes have {untied:,} parameters" in shown(at.caption)


@pytest.fixture
def page_with_lab():
    at = run_page("stages/model.py", corpus="names", model_tab="From GPT-2 to Llama")  # the lesson's tab
    by_label(at.select_slider, "Steps per run").set_value(50)
    by_label(at.button, "Train the seven steps").click().run()
    assert_clean(at)
    return finish_jobs(at)


def test_the_model_page_trains_the_seven_steps_and_shows_their_losses(page_with_lab):
    at = page_with_lab
    assert_clean(at)
    tables = [frame.value for frame in at.dataframe if "validation loss" in getattr(frame.value, "columns", [])]
    assert tables, "the lab table"
    table = tables[-1]
    assert len(table) == 7 and table["validation loss"].notna().all(), table
    assert (table["steps trained"] == 50).all()
    assert table["validation loss"].between(0.5, 5.0).all()  # names: 27 characters, ln 27 ≈ 3.3 at the start
    assert table["KV cache per token (bf16)"].tolist() == [512] * 5 + [256] * 2
    # untying adds a second vocabulary × 64 table; dropping the biases removes some
    assert table["parameters"].iloc[6] > table["parameters"].iloc[5]
    assert table["parameters"].iloc[4] < table["parameters"].iloc[3]


def test_the_comparison_table_marks_the_first_row_without_a_change():
    """The first row has no change from the row above: a dash, not 'None' (seen in chromium: the browser draws an empty
    cell with the dataframe's placeholder, whatever the Styler's na_rep says)."""
    at = run_page("stages/model.py", model_tab="From GPT-2 to Llama")  # the lesson's tab
    [table] = [frame for frame in at.dataframe if "change" in frame.value.columns]
    shown = pa.ipc.open_stream(table.proto.arrow_data.styler.display_values).read_all().to_pandas()
    assert shown["change"].iloc[0] == "—" and shown["change"].iloc[1] == "-786,432", shown["change"].tolist()
    assert table.proto.placeholder == "—"


def test_fixed_drops_the_sign_of_a_number_that_shows_as_zero():
    assert [fixed(4)(v) for v in (-3e-9, -0.0, -0.00016, 0.25, -1.5)] == [
        "0.0000",
        "0.0000",
        "-0.0002",
        "0.2500",
        "-1.5000",
    ]
    assert fixed(2)(float("nan")) == "—"


def test_norms_table_shows_no_negative_zero():
    at = run_page("stages/model.py", model_tab="Inside a trained GPT")
    [table] = [frame for frame in at.dataframe if "LayerNorm: mean" in frame.value.columns]
    shown = pa.ipc.open_stream(table.proto.arrow_data.styler.display_values).read_all().to_pandas()
    means = shown["LayerNorm: mean"].tolist()
    assert means and all(text == "0.0000" for text in means), means  # LayerNorm subtracts the mean: 0 for every token
    assert any(text.startswith("-") for text in shown["RMSNorm: mean"])  # RMSNorm keeps a negative mean's sign


# ------------------------------------------------------------------ the page opens on the picked model's architecture


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_the_page_opens_on_the_picked_models_architecture_and_its_parameters():
    at = run_page("stages/model.py")
    assert at.selectbox(key="preset").value == "picked"
    model, _, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    total = sum(p.numel() for p in model.parameters())  # PyTorch's own count (a tied matrix once)
    assert metric(at, "Total parameters") == f"{total:,}"
    flow = next(m.value for m in at.markdown if "token embedding" in m.value and "(B, T" in m.value)
    config = model.config
    assert f"rows of a {config.vocab_size:,} × {config.d_model} table" in flow
    assert f"{config.n_layers} × transformer block" in flow
    lessons = [tab.label for tab in at.tabs if tab.label in ("Inside a trained GPT", "From GPT-2 to Llama")]
    assert lessons == ["Inside a trained GPT", "From GPT-2 to Llama"]  # (the first holds tabs of its own)


def test_a_kv_cache_of_less_than_a_kib_is_shown_in_bytes():
    """Before: moe-tiny's 256 bytes a token read "0.2 KiB"."""
    at = run_page("stages/model.py", preset="moe-tiny")
    assert_clean(at)
    # keys and values (2) × 2 layers × 2 key/value heads × head_dim 64 / 4 heads × 2 bytes (bf16), by hand
    assert 2 * 2 * 2 * (64 // 4) * 2 == 256
    assert metric(at, "KV cache per token (bf16)") == "256 B"


def test_the_tied_output_heads_bar_has_its_text():
    """Before: GPT-2's tied output head was a bar of zero with no number beside it."""
    at = run_page("stages/model.py", preset="gpt2-124m")
    bars = next(
        json.loads(chart.proto.spec)["data"][0]
        for chart in at.get("plotly_chart")
        if json.loads(chart.proto.spec)["data"][0].get("orientation") == "h"
    )
    texts = dict(zip(bars["y"], bars["text"]))
    assert texts["output head"].startswith("0: tied")
    assert texts["token embedding"] == f"{50257 * 768:,}"  # GPT-2's vocabulary × width
    assert all(texts.values()) and bars["textposition"] == "outside"


def test_a_picked_model_that_is_no_gpt_shows_gpt2_small_and_says_why():
    at = run_page("stages/model.py", _picker_selected="shipped:names-mlp")
    assert_clean(at)
    # what it is, not only what it is not (a names model drawn with blocks and heads was called "not a GPT")
    assert any("is a small character-level model (the kind the names lessons train)" in i.value for i in at.info)
    # GPT-2 small as published (test_model_page_opens_gpt2_small_with_its_own_tying_and_shows_the_untied_count)
    assert metric(at, "Total parameters") == "124,439,808"


def test_presets_are_listed_by_their_names_not_their_code_ids():
    """Issue 50 §10: the Preset box listed ``attn-only-2l`` and ``smollm2-135m-shapes``; it lists each preset by its
    name and its size (read from the preset), while a link keeps the id."""
    at = run_page("stages/model.py")
    assert_clean(at)
    box = by_label(at.selectbox, "Preset")
    shown = box.options
    assert not [option for option in shown if re.fullmatch(r"[a-z0-9-]+", option) and option != "custom"], shown
    for name, config in PRESETS.items():
        assert any(option.endswith(f": {config.n_layers} layers, d {config.d_model}") for option in shown), name
    assert "Attention only (no MLP): 2 layers, d 64" in shown and "SmolLM2-135M's sizes: 30 layers, d 576" in shown
    box.set_value("attn-only-2l").run()
    assert_clean(at)
    assert at.selectbox(key="preset").value == "attn-only-2l"


# ------------------------------------------------------------------ the flow: the page's key picture
def flows(at) -> list[dict]:
    """The data of every flow the page mounted (Custom Components v2 elements named llmviz.flow), in page order."""
    found = []

    def walk(node):
        for child in getattr(node, "children", {}).values():
            proto = getattr(child, "proto", None)
            if getattr(child, "type", None) == "bidi_component" and proto.component_name == "llmviz.flow":
                found.append(json.loads(proto.json))
            walk(child)

    walk(at._tree)
    return found


def test_the_page_opens_on_the_flow_of_the_shipped_gpt_with_its_own_numbers():
    from llmviz.lessons.model import DEFAULT_SENTENCE
    from llmviz.tokenizers.ids import encode

    at = run_page("stages/model.py")
    assert_clean(at)
    (data,) = flows(at)
    payload = data["payload"]
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")[:3]
    ids = encode(tokenizer, DEFAULT_SENTENCE)
    assert payload["ids"] == ids and data["open"] is None
    with torch.no_grad():
        logits, _ = model.eval()(torch.tensor([ids]))  # a plain forward pass (fused attention), no cache
    sent = torch.tensor(payload["last"]["logits"], dtype=torch.float32)
    torch.testing.assert_close(sent, torch.sort(logits[0, -1], descending=True).values, rtol=1e-5, atol=1e-5)
    # the flow comes before the lessons: the Architecture tab is under it
    assert [tab.label for tab in at.tabs][:1] == ["Architecture"]


def test_the_flow_follows_the_sentence_and_says_what_it_cut():
    at = run_page("stages/model.py")
    by_label(at.text_input, "Your sentence").set_value("").run()
    assert_clean(at)
    assert "nothing to run" in texts(at.warning) and not flows(at)
    by_label(at.text_input, "Your sentence").set_value("the class " * 40).run()
    assert_clean(at)
    (data,) = flows(at)
    assert len(data["payload"]["ids"]) == 32
    assert "Only the last 32 tokens are drawn (" in texts(at.caption) and "the flow draws at most that many" in texts(
        at.caption
    )


@pytest.mark.parametrize("name", ["names-transformer", "names-gru", "names-bigram-counts", "names-wavenet"])
def test_the_flow_draws_every_shipped_model(name):
    """Each names model draws a name of its corpus (as much as its window holds), every letter a token (the
    manual's sentence reached them as "heresultisthenboundtotheclassname": no capital, space or full stop is in
    their vocabulary)."""

    from llmviz.lessons.defaults import NAMES_SENTENCE

    at = run_page("stages/model.py", _picker_selected=f"shipped:{name}")
    assert_clean(at)
    (data,) = flows(at)
    kinds = [stage["kind"] for stage in data["payload"]["stages"]]
    assert kinds[0] == "tokens" and kinds[-2:] == ["logits", "probs"]
    assert ("attn" in kinds) == (name == "names-transformer")
    tokenizer = load_checkpoint(ROOT / "data" / name)[1]
    assert by_label(at.text_input, "Your sentence").value == NAMES_SENTENCE == "charlotte"
    ids = data["payload"]["ids"]  # the last letters that fit the model's window (1 for a bigram, 8 for the WaveNet)
    assert ids and ids == tokenizer.encode("charlotte")[-len(ids) :]
    if name == "names-transformer":  # CHANGELOG: after "charlotte" it predicts the name's end at 94 %
        model = load_checkpoint(ROOT / "data" / name)[0].eval()
        with torch.no_grad():
            probs = torch.softmax(model(torch.tensor([ids]))[0][0, -1], dim=-1)
        assert probs.argmax().item() == tokenizer.encode("\n")[0] and round(100 * probs.max().item()) == 94
    if name == "names-bigram-counts":  # its window is one letter: the caption says so, in the singular
        assert "Only the last token is drawn (8 earlier ones left out): this model reads one token at a time." in texts(
            at.caption
        )
    elif len(ids) < 9:  # the WaveNet's window: 8 letters (1 earlier one left out)
        assert f"Only the last {len(ids)} tokens are drawn (" in texts(at.caption)
        assert f"this model reads {len(ids)} tokens at a time" in texts(at.caption)


def test_the_shipped_transformer_replays_the_sentence_at_its_kept_steps():
    """Issue 58 §3: a shipped run's steps work at once. names-transformer keeps its weights at seven earlier steps
    (data/names-transformer/steps/, float16): the sidebar offers them, a link opens one, and the flow's numbers are that
    step's own (a plain forward pass of the file's weights, read here with safetensors)."""
    from safetensors.torch import load_file

    folder = ROOT / "data" / "names-transformer"
    at = run_app("stages/model.py", query={"model": "shipped:names-transformer@100"})
    assert_clean(at)
    slider = next(s for s in at.sidebar.select_slider if s.label == "Step (kept in training)")
    assert list(slider.options) == ["0", "10", "50", "100", "200", "500", "1000", "2000"] and slider.value == 100
    (data,) = flows(at)
    assert data["payload"]["model"]["step"] == 100
    assert "Step 100 of this model's training (8 snapshots, steps 0–2000)" in texts(at.caption)
    model, tokenizer, _ = load_checkpoint(folder)
    state = load_file(str(folder / "steps" / "step-000100.safetensors"))
    model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
    ids = tokenizer.encode("charlotte")  # a name: the sentence a names model opens with
    assert data["payload"]["ids"] == ids
    with torch.no_grad():
        logits = model.eval()(torch.tensor([ids]))[0]
    sent = torch.tensor(data["payload"]["last"]["logits"], dtype=torch.float32)
    torch.testing.assert_close(sent, torch.sort(logits[0, -1], descending=True).values, rtol=1e-5, atol=1e-5)
    slider.set_value(2000).run()  # the last position: the checkpoint itself
    assert_clean(at)
    (data,) = flows(at)
    assert data["payload"]["model"]["step"] == 2000


def test_a_saved_checkpoint_that_keeps_steps_has_the_step_slider_too(tmp_path, monkeypatch):
    """`train --keep-steps` writes OUT/steps/: a checkpoint in the runs folder that keeps steps is offered with the
    sidebar's step slider, as the shipped one is, and a damaged step file is said in one sentence, not a traceback."""
    import shutil

    folder = tmp_path / "runs" / "names-steps"
    shutil.copytree(ROOT / "data" / "names-transformer", folder)
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(tmp_path / "runs"))
    at = run_app("stages/model.py", query={"model": "dir:names-steps@50"})
    assert_clean(at)
    slider = next(s for s in at.sidebar.select_slider if s.label == "Step (kept in training)")
    assert slider.value == 50 and list(slider.options)[-1] == "2000"
    (data,) = flows(at)
    assert data["payload"]["model"]["step"] == 50
    (folder / "steps" / "step-000010.safetensors").write_bytes(b"not a safetensors file")
    slider.set_value(10).run()
    assert not at.exception
    assert "The weights of step 10 in names-steps cannot be read: the file is damaged. The shipped GPT is shown." in (
        texts(at.info)
    )
