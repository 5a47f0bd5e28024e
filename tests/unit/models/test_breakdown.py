"""llmviz.models.breakdown: one parameter_breakdown for every model kind, checked against ``sum(p.numel())`` over
each component's own modules (a tied matrix counted once, where it is first met)."""

import pytest
import torch.nn as nn

from llmviz.models.decoder import TOY_CONFIG, Decoder
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS


def by_modules(groups: list[tuple[str, list[nn.Module]]]) -> dict[str, int]:
    """``sum(p.numel())`` over each group's modules, every parameter counted once (in its first group)."""
    seen: set[int] = set()
    counts: dict[str, int] = {}
    for name, modules in groups:
        fresh = [p for m in modules for p in m.parameters() if id(p) not in seen]
        seen.update(id(p) for p in fresh)
        counts[name] = counts.get(name, 0) + sum(p.numel() for p in fresh)
    return counts


def gpt_groups(model: GPT) -> list[tuple[str, list[nn.Module]]]:
    blocks = list(model.blocks)
    norm = "RMSNorm" if model.config.norm == "rmsnorm" else "LayerNorm"
    routers = [b.mlp.router for b in blocks if hasattr(b.mlp, "router")]
    mlps = [child for b in blocks for name, child in b.mlp.named_children() if name != "router"]
    mlps += [nn.ParameterList(b.mlp.parameters(recurse=False)) for b in blocks]  # an MLP's own parameters, if any
    groups = [
        ("token embedding", [model.tok_emb]),
        ("position embedding", [m for m in [getattr(model, "pos_emb", None)] if m is not None]),
        ("attention W_Q, W_K, W_V", [b.attn.qkv for b in blocks]),
        ("attention output W_O", [b.attn.proj for b in blocks]),
        ("MLP", mlps),
        (norm, [b.ln1 for b in blocks] + [b.ln2 for b in blocks] + [model.ln_f]),
        ("output head", [model.lm_head]),
    ]
    return groups + ([("MoE router", routers)] if model.config.n_experts else [])


@pytest.mark.parametrize("preset", ["gpt-nano", "llama-style", "moe-tiny"])
def test_the_gpt_breakdown_is_each_components_parameter_count(preset):
    model = GPT(PRESETS[preset].replace(vocab_size=40))
    assert model.parameter_breakdown() == by_modules(gpt_groups(model))
    assert sum(model.parameter_breakdown().values()) == sum(p.numel() for p in model.parameters())


def test_the_decoder_breakdown_is_each_components_parameter_count():
    model = Decoder(TOY_CONFIG)
    layers = list(model.layers)
    expected = by_modules(
        [
            ("embedding", [model.embed]),
            ("masked self-attention", [layer.self_attn for layer in layers]),
            ("cross-attention", [layer.cross_attn for layer in layers]),
            ("FFN", [layer.ffn for layer in layers]),
            ("LayerNorm", [n for layer in layers for n in (layer.ln_self, layer.ln_cross, layer.ln_ffn)]),
            ("output layer", [model.output]),
        ]
    )
    got = model.parameter_breakdown()
    assert got == expected and list(got) == [
        "embedding",
        "masked self-attention",
        "cross-attention",
        "FFN",
        "LayerNorm",
        "output layer",
    ]
