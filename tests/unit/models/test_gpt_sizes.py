"""A GPT's size is known from its config before anything is allocated: the estimate that bounds what llmviz builds
is checked against PyTorch's own count of a built model, and each bound refuses with the number."""

from __future__ import annotations

import pytest
import torch

from llmviz.errors import ConfigError
from llmviz.models import gpt
from llmviz.models.gpt import GPT, SIZE_LIMITS, GPTConfig, estimate_parameters, size_problem
from llmviz.models.presets import PRESETS

SHAPES = {
    **{name: config for name, config in PRESETS.items() if name != "gpt2-124m"},
    "swiglu-gqa": PRESETS["gpt-micro"].replace(mlp_kind="swiglu", n_kv_heads=1, positions="rope"),
    "tied": PRESETS["gpt-micro"].replace(tie_weights=True),
    "experts": PRESETS["gpt-micro"].replace(n_experts=8),
    "attention-only": PRESETS["gpt-nano"].replace(mlp=False),
}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n == "smollm2-135m-shapes" else n for n in SHAPES],  # 135 M weights
)
def test_the_estimate_is_pytorchs_count_less_the_biases_and_norms(name):
    config = SHAPES[name]
    counted = GPT(config).num_parameters()  # the reference: every tensor PyTorch allocated
    estimate = estimate_parameters(config)
    assert 0.97 * counted <= estimate <= counted, (estimate, counted)


@pytest.mark.parametrize("name, limit", list(SIZE_LIMITS.items()))
def test_each_size_has_a_bound(name, limit):
    with pytest.raises(ConfigError, match=f"{name} = {limit + 1:,} is more than llmviz builds"):
        GPTConfig(**{"vocab_size": 100, "d_model": 64, "n_heads": 4, "n_layers": 1, name: limit + 1})


def test_the_parameter_cap_and_the_memory_are_said_with_the_numbers(monkeypatch):
    config = GPTConfig(vocab_size=50_000, context_length=1024, d_model=1024, n_heads=16, n_layers=12)
    expected = 12 * (4 * 1024**2 + 2 * 1024 * 4096) + 2 * 50_000 * 1024 + 1024 * 1024  # 254,803,968
    monkeypatch.setenv("LLMVIZ_MAX_PARAMETERS", "100000000")
    assert f"about {expected:,} parameters, more than llmviz loads or builds" in size_problem(config)
    with pytest.raises(ConfigError, match="This GPT cannot be built here"):
        GPT(config)  # refused before any weight is allocated
    with torch.device("meta"):  # a calculator may count any shape: nothing is allocated
        assert GPT(config).num_parameters() > 100_000_000
    monkeypatch.delenv("LLMVIZ_MAX_PARAMETERS")
    monkeypatch.setattr(gpt, "machine_memory_bytes", lambda: 512 * 2**20)  # 0.5 GB
    assert "weights alone take 0.9 GB: more than this machine's 0.5 GB" in size_problem(config)
    monkeypatch.setattr(gpt, "machine_memory_bytes", lambda: None)  # unknown: only the cap applies
    assert size_problem(config) is None
