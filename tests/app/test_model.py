"""The Model page under AppTest: it opens on the architecture of the model picked in the sidebar, with its parameters
counted from the modules; byte counts below 1 KiB are bytes; a tied output head says so beside its empty bar."""

import json

import ui
from llmviz.training.checkpoint import load_checkpoint
from tests.test_app_pages import assert_clean, run_page


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_the_page_opens_on_the_picked_models_architecture_and_its_parameters():
    at = run_page("stages/model.py")
    assert at.selectbox(key="preset").value == "picked"
    model, _, _ = load_checkpoint(ui.ROOT / "data" / "gpt-python-docs")
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
    assert any("is not a GPT" in info.value for info in at.info)
    assert metric(at, "Total parameters") == "124,439,808"  # GPT-2 small as published (tests/test_ui_defects.py)
