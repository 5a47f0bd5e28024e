"""The Model page's numbers: docs/models.md's preset table is the one llmviz computes, and its counts are the modules'
(built on the meta device here, apart from the table's own count)."""

from __future__ import annotations

from pathlib import Path

import torch

from llmviz.lessons import architectures
from llmviz.lessons.model import (
    SWIGLU_NEURONS,
    gpt2_to_llama_table,
    memory_bytes,
    mlp_hidden,
    mlps_compared,
    norms_compared,
    other_tying,
    preset_table,
)
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.models.presets import PRESETS

DOCS = Path(__file__).resolve().parents[3] / "docs" / "models.md"


def test_docs_hold_the_preset_table():
    assert preset_table() in DOCS.read_text(encoding="utf-8")


def test_the_table_counts_what_the_modules_hold():
    lines = preset_table().splitlines()[2:]
    for (name, config), line in zip(PRESETS.items(), lines, strict=True):
        with torch.device("meta"):
            built = GPT(config, initialise=False)
        assert line.startswith(f"| `{name}` |") and line.endswith(f"| {built.num_parameters():,} |")


def test_memory_is_bytes_per_number_times_numbers():
    assert memory_bytes(1_000, "fp32") == 4_000 and memory_bytes(1_000, "bf16") == 2_000


def test_other_tying_is_what_the_flipped_model_holds():
    for name in ("gpt2-124m", "llama-style"):
        config = PRESETS[name]
        with torch.device("meta"):
            flipped = GPT(config.replace(tie_weights=not config.tie_weights), initialise=False)
        assert other_tying(config) == flipped.num_parameters()


def test_gpt2_to_llama_table_is_each_step_and_its_change():
    steps = architectures.gpt2_to_llama(kv_heads=4)
    rows = gpt2_to_llama_table(4)
    assert [row["parameters"] for row in rows] == [step.parameters for step in steps]
    assert [row["change"] for row in rows[1:]] == [b.parameters - a.parameters for a, b in zip(steps, steps[1:])]
    assert rows[-1]["KV cache, 1,024 tokens (MiB)"] == steps[-1].kv_cache_bytes_per_token * 1024 / 2**20


def test_the_recorded_pass_views_read_their_blocks_hook_points():
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=11, context_length=8, d_model=16, n_layers=2, n_heads=2)
    gpt = GPT(config).eval()
    _, _, cache = gpt.run_with_cache(torch.tensor([[1, 2, 3, 4]]))
    stream = cache["blocks.1.resid_pre"][0]  # (T, C)
    compared = norms_compared(cache, 1, config.norm_eps)
    layer_norm = torch.nn.functional.layer_norm(stream, (config.d_model,), eps=config.norm_eps)
    torch.testing.assert_close(compared["mean_layernorm"], layer_norm.mean(-1))
    torch.testing.assert_close(mlp_hidden(cache, 1), cache["blocks.1.mlp.hidden"][0])
    assert mlps_compared(cache, 0)["up"].shape == (4, SWIGLU_NEURONS)
