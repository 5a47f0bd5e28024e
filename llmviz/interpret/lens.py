"""The logit lens and the loss on every token: reading a GPT's named cache as predictions.

Everything here reads a model's named cache (``run_with_cache``) and needs nothing but the
GPT's ``ln_f``, ``lm_head`` and config, so it works the same on the shipped GPT, a student's
run, and GPT-2 loaded into :class:`llmviz.models.gpt.GPT`.

- :func:`logit_lens` (nostalgebraist, 2020): the residual stream after the embedding and after
  each block, passed through the model's final norm (LayerNorm or RMSNorm) and the unembedding, read as
  a prediction.
- :func:`token_losses`: the cross-entropy on every token of a text, with the top predictions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.models.gpt import cache_name

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
    points = [("embedding", cache[cache_name(0, "resid_pre")])]
    points += [(f"block {layer}", cache[cache_name(layer, "resid_post")]) for layer in range(n_layers)]
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
