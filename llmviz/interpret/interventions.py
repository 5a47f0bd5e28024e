"""What every intervention shares: the names TransformerLens gives llmviz's hook points, the loss of a text row by
row, and how many rows of a sweep fit one forward pass.

An intervention is a forward pass through :meth:`~llmviz.models.cache.RecordsIntermediates.run_with_hooks` with
hooks on named intermediates (:func:`llmviz.models.gpt.cache_name`). A sweep (every head, every layer × position)
stacks its variants as the rows of one batch: row ``r`` of the input is the same text, and each hook edits only
the rows it is meant for, so the whole sweep costs a few batched forward passes instead of hundreds of single ones.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError

if TYPE_CHECKING:
    from llmviz.models.gpt import GPT, GPTConfig

#: llmviz's hook point (in a block, or of the model) → TransformerLens's ``hook_`` name; :data:`DIFFERENCES` says where
#: the two tensors are not the same numbers in the same shape.
TRANSFORMER_LENS = {
    "embed.tok": "hook_embed",
    "embed.pos": "hook_pos_embed",
    "resid_pre": "hook_resid_pre",
    "ln1": "ln1.hook_normalized",
    "attn.q": "attn.hook_q",
    "attn.k": "attn.hook_k",
    "attn.v": "attn.hook_v",
    "attn.rot_q": "attn.hook_rot_q",
    "attn.rot_k": "attn.hook_rot_k",
    "attn.masked_scores": "attn.hook_attn_scores",
    "attn.pattern": "attn.hook_pattern",
    "attn.z": "attn.hook_z",
    "attn.out": "hook_attn_out",
    "resid_mid": "hook_resid_mid",
    "ln2": "ln2.hook_normalized",
    "mlp.pre": "mlp.hook_pre",
    "mlp.up": "mlp.hook_pre_linear",
    "mlp.hidden": "mlp.hook_post",
    "mlp.out": "hook_mlp_out",
    "resid_post": "hook_resid_post",
    "ln_f": "ln_final.hook_normalized",
}


#: Where TransformerLens's tensor differs from llmviz's at the same point (checked in
#: tests/unit/interpret/test_transformer_lens.py).
DIFFERENCES = {
    "attn.q": "TransformerLens: (B, T, H, d_head); llmviz: (B, H, T, d_head)",
    "attn.k": "the same: positions before heads in TransformerLens",
    "attn.v": "the same: positions before heads in TransformerLens",
    "attn.z": "the same: positions before heads in TransformerLens",
    "attn.masked_scores": "TransformerLens fills the masked entries with a large negative number, llmviz with −inf",
    "ln1": "TransformerLens records the norm before its scale and shift; llmviz after (what attention reads)",
    "ln2": "the same: before the scale and shift in TransformerLens",
    "ln_f": "the same: before the scale and shift in TransformerLens",
    "embed.pos": "TransformerLens: (B, T, C); llmviz: (T, C), the same for every row",
}


def transformer_lens_name(name: str) -> str:
    """TransformerLens's name for the llmviz hook point ``name``.

    >>> transformer_lens_name("blocks.0.attn.pattern"), transformer_lens_name("blocks.2.resid_pre")
    ('blocks.0.attn.hook_pattern', 'blocks.2.hook_resid_pre')
    >>> transformer_lens_name("embed.tok")
    'hook_embed'
    """
    if name in TRANSFORMER_LENS:
        return TRANSFORMER_LENS[name]
    parts = name.split(".", 2)
    if len(parts) == 3 and parts[0] == "blocks" and parts[2] in TRANSFORMER_LENS:
        return f"blocks.{parts[1]}.{TRANSFORMER_LENS[parts[2]]}"
    raise ConfigError(
        f"{name} has no TransformerLens name (it records the scores only after the mask, and has no router)."
    )


def text_rows(ids: list[int], rows: int, device=None) -> torch.Tensor:
    """(rows, T): the token ids ``ids`` repeated, one row per variant of a sweep.

    >>> text_rows([5, 6, 7], 2).tolist()
    [[5, 6, 7], [5, 6, 7]]
    """
    return torch.tensor([list(ids)], dtype=torch.long, device=device).expand(rows, -1)


def row_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(B,) the mean next-token cross-entropy of each row: ``logits`` (B, T, V) predicting ``ids`` (B, T) shifted by
    one (the loss the model reports on that text).

    >>> logits = torch.log(torch.tensor([[[0.5, 0.5], [0.9, 0.1], [0.5, 0.5]]]))
    >>> round(float(row_losses(logits, torch.tensor([[0, 0, 1]]))[0]), 4)  # (−ln 0.5 − ln 0.1) / 2
    1.4979
    """
    return token_losses(logits, ids).mean(-1)  # (B,)


def token_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(B, T − 1) the cross-entropy on every next token of each row."""
    predicted = logits[:, :-1].float()  # (B, T-1, V)
    return F.cross_entropy(predicted.reshape(-1, predicted.shape[-1]), ids[:, 1:].reshape(-1), reduction="none").view(
        ids.shape[0], -1
    )  # (B, T-1)


def check_text(model: GPT, ids: list[int], least: int = 2) -> None:
    """Refuse a text the model cannot read in one forward pass, before anything is allocated."""
    if len(ids) < least:
        raise ConfigError(f"Type at least {least} tokens: the first token has nothing before it to be predicted from.")
    if len(ids) > model.config.context_length:
        raise ConfigError(
            f"{len(ids)} tokens do not fit this model's context of {model.config.context_length}: use a shorter text."
        )


#: the memory one batch of a sweep may take (its activations), whatever the model: a sweep over a large model takes
#: more forward passes, never more memory
BATCH_BYTES = 256 * 2**20


def rows_per_batch(config: GPTConfig, tokens: int, budget: int = BATCH_BYTES) -> int:
    """How many rows of ``tokens`` tokens one forward pass of a sweep may take: the attention patterns (H·T² per
    layer, a few copies) and the residual-width tensors (about 12·C·T per layer) in float32, within ``budget``.

    >>> from llmviz.models.presets import PRESETS
    >>> rows_per_batch(PRESETS["gpt-mini"], 64) >= 32, rows_per_batch(PRESETS["gpt2-124m"], 1024)
    (True, 1)
    """
    width = config.d_model + config.mlp_width // 2
    per_row = 4 * config.n_layers * tokens * (4 * config.n_heads * tokens + 12 * width) + 4 * tokens * config.vocab_size
    return max(1, min(512, budget // max(1, per_row)))


def forward_work(config: GPTConfig, tokens: int) -> float:
    """Multiply-adds of one forward pass over ``tokens`` tokens, roughly: the weights (2 per parameter per token,
    the output head included) and attention's two T × T products.

    >>> from llmviz.models.presets import PRESETS
    >>> f"{forward_work(PRESETS['gpt2-124m'], 1024):.2e}"
    '2.92e+11'
    """
    per_layer = 4 * config.d_model**2 + (3 if config.mlp_kind == "swiglu" else 2) * config.d_model * config.mlp_width
    if not config.mlp:
        per_layer = 4 * config.d_model**2
    weights = config.n_layers * per_layer + config.d_model * config.vocab_size
    attention = config.n_layers * 2 * tokens * tokens * config.d_model
    return 2.0 * (weights * tokens + attention)


#: the work a sweep may do inside a page's script run (about 0.3 s on one loaded laptop core, measured in
#: benchmarks/interventions.py); a larger sweep runs as a lab job with progress and a Stop button
IN_PAGE_WORK = 3e9


def fits_in_page(config: GPTConfig, tokens: int, runs: int) -> bool:
    """Can a sweep of ``runs`` forward passes over ``tokens`` tokens run inside the page (:data:`IN_PAGE_WORK`)?

    >>> from llmviz.models.presets import PRESETS
    >>> fits_in_page(PRESETS["gpt-mini"], 24, 17), fits_in_page(PRESETS["gpt2-124m"], 24, 145)
    (True, False)
    """
    return runs * forward_work(config, tokens) <= IN_PAGE_WORK


def batches(total: int, size: int) -> list[range]:
    """``range(total)`` cut into consecutive pieces of at most ``size``.

    >>> batches(5, 2)
    [range(0, 2), range(2, 4), range(4, 5)]
    """
    return [range(start, min(total, start + size)) for start in range(0, total, max(1, size))]


def nan_grid(rows: int, columns: int) -> torch.Tensor:
    """A grid of results not computed yet (a stopped sweep keeps NaN where it did not get to)."""
    return torch.full((rows, columns), math.nan)
