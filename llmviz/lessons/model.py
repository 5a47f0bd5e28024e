"""Numbers the Model page shows (``stages/model.py``, drawn by ``ui/panels/model.py``), computed from configs, modules
and recorded caches. The architecture switches and the GPT-2 → Llama steps it also shows are shared with other pages:
:mod:`llmviz.lessons.architectures`; the recorded pass is :func:`llmviz.lessons.forward.recorded_pass`.

Every preset is sized as it is named: ``gpt2-124m`` is GPT-2 small as published, so its parameter table is GPT-2's.

>>> sum(parameter_table(PRESETS["gpt2-124m"]).values())  # as transformers' GPT2LMHeadModel counts GPT-2 small
124439808
"""

from __future__ import annotations

from typing import Literal

import torch

from llmviz.lessons import architectures, words
from llmviz.models.gpt import GPTConfig, cache_name, count_parameters_without_building
from llmviz.models.presets import PRESETS

#: Each preset's name for a student (its code id, such as ``attn-only-2l``, is what a link carries).
PRESET_NAMES = {
    "gpt2-124m": "GPT-2 small",
    "gpt-mini": "GPT mini",
    "gpt-micro": "GPT micro",
    "gpt-nano": "GPT nano",
    "attn-only-2l": "Attention only (no MLP)",
    "llama-style": "Llama-style",
    "smollm2-135m-shapes": "SmolLM2-135M's sizes",
    "qwen-style": "Qwen-style",
    "moe-tiny": "Mixture of experts",
}


def preset_title(name: str) -> str:
    """A preset as the Model page lists it: its name for a student and its size, from the preset itself.

    >>> preset_title("attn-only-2l"), preset_title("gpt2-124m")
    ('Attention only (no MLP): 2 layers, d 64', 'GPT-2 small: 12 layers, d 768')
    """
    config = PRESETS[name]  # type: ignore[index]
    return f"{PRESET_NAMES[name]}: {config.n_layers} layers, d {config.d_model}"


def validation_note(meta: dict) -> str:
    """Which text a checkpoint's final validation loss was measured on (the Adapting page measures another: its
    held-out windows), from what the checkpoint recorded; empty when it recorded no validation loss.

    >>> validation_note({"final": {"val_loss": 5.2588}, "train_config": {"eval_batches": 4, "batch_size": 16,
    ...                  "context_length": 128, "val_fraction": 0.1}}).split(": ")[1]
    '4 random batches of 16 × 128 tokens from the last 10% of its corpus, kept out of training'
    """
    final = (meta.get("final") or {}).get("val_loss")
    if final is None:
        return ""
    config = meta.get("train_config") or {}
    sample = (
        f"{config['eval_batches']} random batches of {config['batch_size']} × {config['context_length']} tokens "
        if {"eval_batches", "batch_size", "context_length"} <= set(config)
        else "windows "
    )
    return (
        f"final validation loss {final:.2f}: {sample}from the last {config.get('val_fraction', 0.1):.0%} of its "
        "corpus, kept out of training"
    )


# a sentence of the Python manual, every word of it one token of the shipped GPT
DEFAULT_SENTENCE = "The result is then bound to the class name."
LAB_CHARS = 200_000  # GPT-2 → Llama trains on the corpus's first characters, as the Training page's races do
SWIGLU_NEURONS = 32  # neurons of the GELU vs SwiGLU comparison

Dtype = Literal["fp32", "bf16", "fp16", "int8"]
BYTES_PER_PARAMETER: dict[Dtype, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}


def parameter_table(config: GPTConfig) -> dict[str, int]:
    """Parameters per component, from the modules (built on the meta device: no memory)."""
    return count_parameters_without_building(config)


def memory_bytes(num_parameters: int, dtype: Dtype) -> int:
    """Bytes to hold the weights alone (no gradients, optimizer state or activations).

    >>> memory_bytes(124_439_808, "fp32")  # GPT-2 small, 4 bytes each
    497759232
    """
    return num_parameters * BYTES_PER_PARAMETER[dtype]


def other_tying(config: GPTConfig) -> int:
    """The parameters of the same sizes with the output head's tying flipped (tied ↔ untied).

    >>> config = PRESETS["gpt2-124m"]  # tied: untying adds the 50,257 × 768 output matrix
    >>> other_tying(config) - sum(parameter_table(config).values()) == 50257 * 768
    True
    """
    return sum(parameter_table(config.replace(tie_weights=not config.tie_weights)).values())


def residual_norms(cache: dict[str, torch.Tensor], n_layers: int) -> list[tuple[str, float]]:
    """Mean L2 norm of the residual stream per token, after the embeddings and after each block."""
    points = [("embeddings", cache[cache_name(0, "resid_pre")])] if n_layers else []
    points += [(f"after block {layer}", cache[cache_name(layer, "resid_post")]) for layer in range(n_layers)]
    return [(name, float(tensor.norm(dim=-1).mean())) for name, tensor in points]


def layernorm_before_after(cache: dict[str, torch.Tensor], layer: int) -> dict[str, torch.Tensor]:
    """Per-token mean and variance of the residual stream before and after block ``layer``'s ln1.

    The LayerNorm makes each token's vector mean 0 and variance 1 *before* its learned
    scale and shift; after them the statistics move again, as the shown numbers tell.
    """
    before = cache[cache_name(layer, "resid_pre")][0]  # (T, C)
    after = cache[cache_name(layer, "ln1")][0]  # (T, C)
    return {
        "mean_before": before.mean(-1),
        "var_before": before.var(-1, unbiased=False),
        "mean_after": after.mean(-1),
        "var_after": after.var(-1, unbiased=False),
    }


def norms_compared(cache: dict[str, torch.Tensor], layer: int, eps: float) -> dict[str, torch.Tensor]:
    """LayerNorm and RMSNorm (without their learned scale) on block ``layer``'s input, token by token."""
    return architectures.norm_comparison(cache[cache_name(layer, "resid_pre")][0], eps)  # (T, C) in


def mlps_compared(cache: dict[str, torch.Tensor], layer: int) -> dict[str, torch.Tensor]:
    """GELU and SwiGLU on block ``layer``'s input to its MLP, through :data:`SWIGLU_NEURONS` random neurons."""
    return architectures.mlp_comparison(cache[cache_name(layer, "resid_mid")][0], hidden=SWIGLU_NEURONS)  # (T, C) in


def mlp_hidden(cache: dict[str, torch.Tensor], layer: int) -> torch.Tensor:
    """Block ``layer``'s MLP neurons after the activation, (T, F)."""
    return cache[cache_name(layer, "mlp.hidden")][0]  # (T, F)


def gpt2_to_llama_table(kv_heads: int) -> list[dict]:
    """GPT-2 small → Llama one switch at a time: each step's parameters, its change from the step before (None for
    the first) and its KV cache per token and for 1,024 tokens (MiB, bf16).

    >>> rows = gpt2_to_llama_table(4)
    >>> rows[0]["change"] is None, rows[1]["change"] == rows[1]["parameters"] - rows[0]["parameters"]
    (True, True)
    """
    rows = architectures.gpt2_to_llama(kv_heads=kv_heads)
    return [
        {
            "step": row.change,
            "parameters": row.parameters,
            "change": None if previous is None else row.parameters - previous.parameters,
            "KV cache per token (bf16)": row.kv_cache_bytes_per_token,
            "KV cache, 1,024 tokens (MiB)": row.kv_cache_bytes_per_token * 1024 / 2**20,
        }
        for row, previous in zip(rows, [None, *rows[:-1]])
    ]


def positive_fraction(activations: torch.Tensor) -> float:
    """The share of activations above zero (how many MLP neurons 'fire').

    >>> positive_fraction(torch.tensor([[-1.0, 0.5], [2.0, 0.0]]))
    0.5
    """
    return float((activations > 0).float().mean())


def preset_table() -> str:
    """The presets as a Markdown table (``docs/models.md`` holds it; a test keeps the two the same): sizes, switches
    and the parameter count computed from the modules (a tied matrix counted once).

    >>> preset_table().splitlines()[2].split(" | ")[:2]
    ['| `gpt2-124m`', '768']
    """
    rows = [
        "| preset | d_model | layers | heads (key/value) | vocabulary | context | positions | norm | MLP | head | "
        "parameters |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | ---: |",
    ]
    for name, config in PRESETS.items():
        mlp = "none (attention only)" if not config.mlp else f"{config.mlp_kind} {config.mlp_width}"
        if config.n_experts:
            mlp += f" × {config.n_experts} experts (top {config.experts_top_k})"
        heads = f"{config.n_heads}" + (f" ({config.kv_heads})" if config.kv_heads != config.n_heads else "")
        parameters = sum(parameter_table(config).values())
        rows.append(
            f"| `{name}` | {config.d_model} | {config.n_layers} | {heads} | {config.vocab_size:,} | "
            f"{config.context_length:,} | {config.positions} | {config.norm} | {mlp} | "
            f"{'tied' if config.tie_weights else 'untied'} | {parameters:,} |"
        )
    return "\n".join(rows)


def parameter_words(table: dict[str, int], most: int = 3) -> str:
    """The parameters per component in words: the total, and the ``most`` largest components with their share.

    >>> parameter_words({"token embedding": 300, "attention": 500, "MLP": 1200, "output head": 0})
    'Parameters: 2,000 in all; MLP 1,200 (60.0%), attention 500 (25.0%) and token embedding 300 (15.0%).'
    """
    total = sum(table.values())
    largest = sorted(table.items(), key=lambda item: -item[1])[:most]
    named = [f"{name} {words.number(count)} ({count / total:.1%})" for name, count in largest if total]
    return f"Parameters: {words.number(total)} in all; {words.listed(named)}."


def residual_words(points: list[tuple[str, float]]) -> str:
    """The residual stream's mean size in words: from the first point to the last, and the largest.

    >>> residual_words([("embeddings", 1.5), ("after block 0", 4.0), ("after block 1", 3.5)])
    'The mean size of the residual stream goes from 1.5 (embeddings) to 3.5 (after block 1); largest 4 (after block 0).'
    """
    if not points:
        return "No block."
    (first, start), (last, end) = points[0], points[-1]
    top_name, top = max(points, key=lambda point: point[1])
    return (
        f"The mean size of the residual stream goes from {words.number(start)} ({first}) to {words.number(end)} "
        f"({last}); largest {words.number(top)} ({top_name})."
    )


def mlp_words(tokens: list[str], hidden: list[list[float]], neurons: int) -> str:
    """A dense MLP's neurons (rows the tokens, columns the first neurons of ``neurons``) in words: the share of the
    drawn cells that are positive, and the largest one.

    >>> mlp_words(["a", "b"], [[0.5, -1.0], [2.0, 0.0]], 8)
    'The first 2 of 8 neurons for 2 tokens: 2 of the 4 values are positive; the largest 2 ("b", neuron 0).'
    """
    cells = [(v, t, n) for t, row in enumerate(hidden) for n, v in enumerate(row)]
    if not cells:
        return "No neuron drawn."
    top, token, neuron = max(cells, key=lambda cell: cell[0])
    positive = sum(1 for v, _, _ in cells if v > 0)
    return (
        f"The first {len(hidden[0])} of {neurons} neurons for {len(tokens)} tokens: {positive} of the {len(cells)} "
        f"values are positive; the largest {words.number(top)} ({words.quoted(tokens[token])}, neuron {neuron})."
    )


def gates_words(token: str, gelu: list[float], gate: list[float], swiglu: list[float]) -> str:
    """GELU vs SwiGLU on one token's stream, in words: how many neurons each passes (a value above 0.01 in size),
    and how many gates are nearly closed (below 0.1 in size).

    >>> gates_words("a", [0.5, 0.0, 1.0], [0.05, 0.9, 1.2], [0.01, 0.5, 1.1])
    'Token "a", 3 neurons: GELU passes 2, SwiGLU 2; 1 gate is nearly closed (|gate| < 0.1).'
    """

    def passes(values: list[float]) -> int:
        return sum(1 for v in values if abs(v) > 0.01)

    closed = sum(1 for g in gate if abs(g) < 0.1)
    return (
        f"Token {words.quoted(token)}, {len(gelu)} neurons: GELU passes {passes(gelu)}, SwiGLU {passes(swiglu)}; "
        f"{closed} gate{' is' if closed == 1 else 's are'} nearly closed (|gate| < 0.1)."
    )
