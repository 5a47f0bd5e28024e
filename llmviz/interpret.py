"""Looking inside a GPT: the logit lens, attention-head detectors and the loss on every token.

Everything here reads a model's named cache (``run_with_cache``) and needs nothing but the
GPT's ``ln_f``, ``lm_head`` and config, so it works the same on the shipped GPT, a student's
run, and GPT-2 loaded into :class:`llmviz.models.GPT`.

- :func:`logit_lens` (nostalgebraist, 2020): the residual stream after the embedding and after
  each block, passed through the model's final norm (LayerNorm or RMSNorm) and the unembedding, read as
  a prediction.
- :func:`head_scores`: how much each head attends to the previous token, the first token, an
  earlier copy of the same token, or the token after an earlier copy (induction; Olsson et al.,
  2022), measured on :func:`diagnostic_tokens` (a random token sequence repeated twice).
- :func:`token_losses`: the cross-entropy on every token of a text, with the top predictions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn as nn
import torch.nn.functional as F

if TYPE_CHECKING:
    from llmviz.models.gpt import GPT

# ---------------------------------------------------------------------------- logit lens


def residual_points(cache: dict[str, torch.Tensor], n_layers: int) -> list[tuple[str, torch.Tensor]]:
    """The residual stream after the embedding and after every block: ``[(name, (B, T, C)), ...]``.

    The embedding point is block 0's input (token + position embedding); a model with no
    blocks has none (its stream is read from the final norm's input instead).
    """
    if n_layers == 0:
        raise ValueError("a model without blocks has no residual stream between blocks to look at")
    points = [("embedding", cache["blocks.0.resid_pre"])]
    points += [(f"block {layer}", cache[f"blocks.{layer}.resid_post"]) for layer in range(n_layers)]
    return points


def lens_logits(resid: torch.Tensor, ln_f: nn.Module, lm_head: nn.Module) -> torch.Tensor:
    """Read a residual stream (…, C) as if it were the last block's output: lm_head(ln_f(resid)).

    >>> ln, head = nn.LayerNorm(2), nn.Linear(2, 3, bias=False)
    >>> with torch.no_grad():
    ...     _ = head.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    ...     [round(v, 3) for v in lens_logits(torch.tensor([3.0, 1.0]), ln, head).tolist()]  # LN: (1, −1)
    [1.0, -1.0, 0.0]
    """
    return lm_head(ln_f(resid))  # (…, V)


@dataclass(frozen=True)
class LogitLens:
    """Top predictions of every layer at every position, and the true next token's probability.

    ``top_ids``/``top_probs``: (layers + 1, T, k), row 0 = after the embedding, row l + 1 = after
    block l. ``true_probs``: (layers + 1, T − 1), the probability each layer gives the token that
    actually comes next (positions 0 … T − 2).
    """

    layer_names: list[str]
    top_ids: torch.Tensor
    top_probs: torch.Tensor
    true_probs: torch.Tensor


@torch.no_grad()
def logit_lens(model: GPT, cache: dict[str, torch.Tensor], ids: list[int], k: int = 5) -> LogitLens:
    """The logit lens of one sequence (batch row 0 of ``cache``).

    The last row equals the model's own prediction, since the last block's output is what
    ``ln_f`` and ``lm_head`` read in the forward pass.
    """
    points = residual_points(cache, model.config.n_layers)
    device = next(model.parameters()).device
    stream = torch.stack([tensor[0] for _, tensor in points]).to(device)  # (L+1, T, C)
    probs = lens_logits(stream, model.ln_f, model.lm_head).float().softmax(-1).cpu()  # (L+1, T, V)
    top_probs, top_ids = probs.topk(min(k, probs.shape[-1]), dim=-1)  # (L+1, T, k)
    targets = torch.tensor(ids[1:], dtype=torch.long)  # (T-1,)
    true_probs = probs[:, :-1].gather(-1, targets.expand(len(points), -1)[..., None])[..., 0]  # (L+1, T-1)
    return LogitLens([name for name, _ in points], top_ids, top_probs, true_probs)


@torch.no_grad()
def sequence_logit_lens(model: GPT, ids: list[int], k: int = 5) -> LogitLens:
    """Run ``ids`` through ``model`` (one forward pass, with its named cache) and take the logit lens."""
    device = next(model.parameters()).device
    _, _, cache = model.run_with_cache(torch.tensor([list(ids)], device=device))  # (1, T) in
    return logit_lens(model, cache, list(ids), k=k)


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
    return torch.stack([cache[f"blocks.{layer}.attn.pattern"][0] for layer in range(n_layers)])


@torch.no_grad()
def model_head_scores(model: GPT, half_length: int = 20, seed: int = 0) -> tuple[list[int], dict]:
    """The diagnostic input for ``model`` and every head's four scores on it."""
    half_length = max(1, min(half_length, model.config.context_length // 2, model.config.vocab_size))
    tokens = diagnostic_tokens(model.config.vocab_size, half_length, seed)
    device = next(model.parameters()).device
    _, _, cache = model.run_with_cache(torch.tensor([tokens], device=device))
    return tokens, head_scores(attention_patterns(cache, model.config.n_layers), tokens)


# ---------------------------------------------------------------------------- loss per token


@dataclass(frozen=True)
class TokenLosses:
    """The model's loss on every token of a text it reads.

    ``losses[i]`` is −ln p(token i + 1 | tokens ≤ i), the cross-entropy of predicting token
    i + 1; the first token has no loss (nothing predicts it). ``mean`` equals the model's loss
    on the text. ``top_ids``/``top_probs`` (T − 1, k): the predictions at each position.
    """

    losses: torch.Tensor
    true_probs: torch.Tensor
    top_ids: torch.Tensor
    top_probs: torch.Tensor

    @property
    def mean(self) -> float:
        return float(self.losses.mean())


def token_losses_from_logits(logits: torch.Tensor, ids: list[int], k: int = 5) -> TokenLosses:
    """Per-token losses from logits (T, V) of the sequence ``ids`` (T tokens, T ≥ 2).

    >>> logits = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.1], [0.5, 0.5]]))
    >>> result = token_losses_from_logits(logits, [0, 1, 0], k=1)
    >>> [round(v, 4) for v in result.losses.tolist()]  # −ln 0.5, −ln 0.9
    [0.6931, 0.1054]
    """
    if len(ids) < 2:
        raise ValueError("a text of one token has no next token to predict: type at least two tokens")
    log_probs = F.log_softmax(logits[:-1].float(), dim=-1)  # (T-1, V)
    targets = torch.tensor(ids[1:], dtype=torch.long, device=log_probs.device)  # (T-1,)
    true_log_probs = log_probs.gather(-1, targets[:, None])[:, 0]  # (T-1,)
    top_log_probs, top_ids = log_probs.topk(min(k, log_probs.shape[-1]), dim=-1)  # (T-1, k)
    return TokenLosses(-true_log_probs.cpu(), true_log_probs.exp().cpu(), top_ids.cpu(), top_log_probs.exp().cpu())


@torch.no_grad()
def token_losses(model: nn.Module, ids: list[int], k: int = 5) -> TokenLosses:
    """Run ``ids`` (at most the context length) through ``model`` and score every next token."""
    device = next(model.parameters()).device
    logits, _ = model(torch.tensor([ids], device=device))
    return token_losses_from_logits(logits[0], ids, k)
