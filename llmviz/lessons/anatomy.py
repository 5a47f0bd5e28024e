"""Numbers the Model page shows, computed from configs, modules and recorded caches."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from llmviz.models.gpt import PRESETS, GPTConfig, count_parameters_without_building
from llmviz.models.layers import gelu_tanh

BYTES_PER_PARAMETER = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}


@dataclass(frozen=True)
class ArchitectureStep:
    """One step of the forward pass: its name, the tensor shape it produces, and a line about it."""

    name: str
    shape: tuple[str, ...]
    detail: str


def architecture(config: GPTConfig, batch: str = "B", tokens: str = "T") -> list[ArchitectureStep]:
    """The forward pass as a list of steps with symbolic and numeric tensor shapes."""
    d, v, h, hd = config.d_model, config.vocab_size, config.n_heads, config.head_dim
    block = (
        "LayerNorm → attention → + shortcut → LayerNorm → MLP → + shortcut"
        if config.mlp
        else "LayerNorm → attention → + shortcut (attention only: no MLP)"
    )
    steps = [
        ArchitectureStep("token ids", (batch, tokens), f"integers in [0, {v})"),
        ArchitectureStep("token embedding", (batch, tokens, str(d)), f"rows of a {v:,} × {d} table"),
        ArchitectureStep(
            "+ position embedding", (batch, tokens, str(d)), f"rows of a {config.context_length:,} × {d} table"
        ),
        ArchitectureStep(f"{config.n_layers} × transformer block", (batch, tokens, str(d)), block),
        ArchitectureStep("   ↳ Q, K, V per head", (batch, str(h), tokens, str(hd)), f"{h} heads × {hd} dims"),
        ArchitectureStep(
            "   ↳ attention pattern", (batch, str(h), tokens, tokens), "softmax(QKᵀ/√d_head) with a causal mask"
        ),
        ArchitectureStep("   ↳ MLP hidden", (batch, tokens, str(4 * d)), "Linear → GELU, 4 × wider"),
        ArchitectureStep("final LayerNorm", (batch, tokens, str(d)), ""),
        ArchitectureStep("output head → logits", (batch, tokens, str(v)), "a score for every token of the vocabulary"),
    ]
    return steps if config.mlp else [step for step in steps if "MLP" not in step.name]


#: Presets that size a published model, with that model's own settings: GPT-2 small has a bias in W_Q, W_K, W_V and
#: ties its output head to the token embedding (124,439,808 parameters, as OpenAI's checkpoint and transformers'
#: GPT2LMHeadModel count them).
AS_PUBLISHED = {"gpt2-124m": {"qkv_bias": True, "tie_weights": True}}


def published_config(preset: str) -> GPTConfig:
    """A preset as the Model page opens it: a published model's preset with that model's own bias and tying.

    >>> sum(parameter_table(published_config("gpt2-124m")).values())  # GPT-2 small
    124439808
    >>> published_config("gpt-mini") == PRESETS["gpt-mini"]
    True
    """
    return PRESETS[preset].replace(**AS_PUBLISHED.get(preset, {}))


def parameter_table(config: GPTConfig) -> dict[str, int]:
    """Parameters per component, from the modules (built on the meta device: no memory)."""
    return count_parameters_without_building(config)


def memory_bytes(num_parameters: int, dtype: str) -> int:
    """Bytes to hold the weights alone (no gradients, optimizer state or activations).

    >>> memory_bytes(124_412_160, "fp32")  # 4 bytes each
    497648640
    """
    return num_parameters * BYTES_PER_PARAMETER[dtype]


def residual_norms(cache: dict[str, torch.Tensor], n_layers: int) -> list[tuple[str, float]]:
    """Mean L2 norm of the residual stream per token, after the embeddings and after each block."""
    points = [("embeddings", cache["blocks.0.resid_pre"])] if n_layers else []
    points += [(f"after block {layer}", cache[f"blocks.{layer}.resid_post"]) for layer in range(n_layers)]
    return [(name, float(tensor.norm(dim=-1).mean())) for name, tensor in points]


def layernorm_before_after(cache: dict[str, torch.Tensor], layer: int) -> dict[str, torch.Tensor]:
    """Per-token mean and variance of the residual stream before and after block ``layer``'s ln1.

    The LayerNorm makes each token's vector mean 0 and variance 1 *before* its learned
    scale and shift; after them the statistics move again, as the shown numbers tell.
    """
    before = cache[f"blocks.{layer}.resid_pre"][0]  # (T, C)
    after = cache[f"blocks.{layer}.ln1"][0]  # (T, C)
    return {
        "mean_before": before.mean(-1),
        "var_before": before.var(-1, unbiased=False),
        "mean_after": after.mean(-1),
        "var_after": after.var(-1, unbiased=False),
    }


def activation_curves(low: float = -4.0, high: float = 4.0, points: int = 401) -> dict[str, torch.Tensor]:
    x = torch.linspace(low, high, points)
    return {"x": x, "GELU (tanh approximation)": gelu_tanh(x), "GELU (exact, erf)": F.gelu(x), "ReLU": F.relu(x)}


def positive_fraction(activations: torch.Tensor) -> float:
    """The share of activations above zero (how many MLP neurons 'fire').

    >>> positive_fraction(torch.tensor([[-1.0, 0.5], [2.0, 0.0]]))
    0.5
    """
    return float((activations > 0).float().mean())
