"""llmviz.lessons.architectures: GPT-2 → Llama one switch at a time, each step a model the table counts."""

from __future__ import annotations

import torch

from llmviz.lessons import architectures
from llmviz.models.gpt import SWITCHES
from llmviz.models.presets import PRESETS
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer

TEXT = "the quick brown fox jumps over the lazy dog\n" * 30


def test_lab_steps_flip_one_switch_at_a_time_and_build_what_the_table_counts():
    steps = architectures.gpt2_to_llama_lab()
    assert len(steps) == 7
    expected_changes = [
        set(),
        {"positions"},
        {"norm"},
        {"mlp_kind", "d_mlp"},
        {"bias", "qkv_bias"},
        {"n_kv_heads"},
        {"tie_weights"},
    ]
    for previous, step, expected in zip([None] + steps[:-1], steps, expected_changes):
        if previous is not None:
            assert {name for name in SWITCHES if previous.switches[name] != step.switches[name]} == expected
        config = TrainConfig(
            model=step.model, tokenizer="char", context_length=16, batch_size=2, steps=1, architecture=step.switches
        )
        model = Trainer.from_text(TEXT, config).model
        built = model.config
        assert all(getattr(built, name) == value for name, value in step.switches.items())
        assert (built.d_model, built.n_layers, built.n_heads) == (64, 2, 4)  # GPT micro's size
        # the cache the model keeps for one token: K and V of every layer, (1, H_kv, 1, hd) each, in bf16
        with torch.no_grad():
            _, past = model.forward_with_kv_cache(torch.zeros(1, 1, dtype=torch.long))
        kept = sum(tensor.numel() for pair in past for tensor in pair[:2]) * 2
        assert kept == step.kv_cache_bytes_per_token
    assert steps[0].switches["positions"] == "learned" and steps[-1].switches["n_kv_heads"] == 2
    assert PRESETS["gpt-micro"].n_heads == 4
