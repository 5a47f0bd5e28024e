"""Attention-head detectors: which heads look at the previous token, the first token, an earlier copy of the
same token, or the token after an earlier copy (induction; Olsson et al., 2022).

:func:`head_scores` measures them on :func:`diagnostic_tokens` (a random token sequence repeated twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from llmviz.models.gpt import cache_name

if TYPE_CHECKING:
    from llmviz.models.gpt import GPT

# ---------------------------------------------------------------------------- head detectors

DETECTORS = ("previous token", "first token", "duplicate token", "induction")
DETECTOR_HELP = {
    "previous token": "attention from each token to the token just before it",
    "first token": "attention to the very first token (an 'attention sink': a place to put attention "
    "when nothing else is useful), from every position but the first",
    "duplicate token": "attention from a token to earlier copies of the same token",
    "induction": "attention from a token to the token that came *after* an earlier copy of it: "
    "the head that lets a model continue a repeated pattern ([A][B] … [A] → [B])",
}


def diagnostic_tokens(vocab_size: int, half_length: int, seed: int = 0) -> list[int]:
    """A random sequence of distinct token ids, repeated twice (the detectors' fixed input).

    >>> diagnostic_tokens(10, 4, seed=0)
    [4, 1, 7, 5, 4, 1, 7, 5]
    """
    generator = torch.Generator().manual_seed(seed)
    half = torch.randperm(vocab_size, generator=generator)[: min(half_length, vocab_size)].tolist()
    return half + half


def detector_mask(kind: str, tokens: list[int]) -> torch.Tensor:
    """(T, T) 0/1 matrix: which key positions each query position should attend to for ``kind``.

    >>> detector_mask("induction", [7, 8, 7, 8]).int().tolist()
    [[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    >>> detector_mask("duplicate token", [7, 8, 7, 8]).int().tolist()
    [[0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]]
    """
    size = len(tokens)
    mask = torch.zeros(size, size)
    for query in range(size):
        if kind == "previous token":
            keys = [query - 1] if query >= 1 else []
        elif kind == "first token":
            keys = [0] if query >= 1 else []
        elif kind == "duplicate token":
            keys = [key for key in range(query) if tokens[key] == tokens[query]]
        elif kind == "induction":
            keys = [key for key in range(1, query + 1) if tokens[key - 1] == tokens[query]]
        else:
            raise ValueError(f"unknown detector {kind!r}: pick one of {', '.join(DETECTORS)}")
        mask[query, keys] = 1.0
    return mask


def detector_score(pattern: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean attention a head puts on the mask's keys, over the queries that have any: (…, T, T) → (…).

    1 = every such query attends only where the detector says; a uniform head scores about
    (keys in the mask) / (keys it can see).

    >>> pattern = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.6, 0.2]])
    >>> round(float(detector_score(pattern, detector_mask("previous token", [1, 2, 3]))), 4)  # (0.5 + 0.6) / 2
    0.55
    """
    rows = mask.sum(-1) > 0  # (T,) queries with a target
    if not rows.any():
        return torch.zeros(pattern.shape[:-2])
    per_query = (pattern * mask).sum(-1)  # (…, T)
    return per_query[..., rows].mean(-1)


def head_scores(patterns: torch.Tensor, tokens: list[int]) -> dict[str, torch.Tensor]:
    """Every detector's (layers, heads) scores from patterns (layers, heads, T, T) on ``tokens``."""
    return {kind: detector_score(patterns, detector_mask(kind, tokens)) for kind in DETECTORS}


def attention_patterns(cache: dict[str, torch.Tensor], n_layers: int) -> torch.Tensor:
    """(layers, heads, T, T): every block's attention pattern of batch row 0."""
    return torch.stack([cache[cache_name(layer, "attn.pattern")][0] for layer in range(n_layers)])


@torch.no_grad()
def model_head_scores(model: GPT, half_length: int = 20, seed: int = 0) -> tuple[list[int], dict]:
    """The diagnostic input for ``model`` and every head's four scores on it."""
    half_length = max(1, min(half_length, model.config.context_length // 2, model.config.vocab_size))
    tokens = diagnostic_tokens(model.config.vocab_size, half_length, seed)
    device = next(model.parameters()).device
    _, _, cache = model.run_with_cache(torch.tensor([tokens], device=device))
    return tokens, head_scores(attention_patterns(cache, model.config.n_layers), tokens)
