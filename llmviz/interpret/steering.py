"""Steering: add a direction to the residual stream while the model generates, and compare with and without.

At one layer the residual stream entering the block, ``blocks.L.resid_pre`` (B, T, C), gets ``α × direction``
added at every position, the prompt's and each generated token's (activation addition; Turner et al., 2023,
"Activation Addition: Steering Language Models Without Optimization"). Two kinds of direction:

- the **mean difference** of ``resid_pre`` at that layer between two sets of prompts (every position of every
  prompt averaged): what the model's stream holds more of for the first set than for the second;
- a **token's direction**: its row of the token embedding, made unit length (where that token starts out in the
  residual stream).

:func:`steered_pair` generates from one prompt twice with the same random draws, once plain and once steered, so
any difference between the two texts is the steering's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn as nn

from llmviz.errors import ConfigError
from llmviz.generation import sampling
from llmviz.interpret.interventions import check_text
from llmviz.models.cache import Hook, HookPoints
from llmviz.models.gpt import GPT, cache_name

POINT = "resid_pre"  # where a direction is measured and added
MAX_NEW_TOKENS = 200
MAX_PROMPTS = 20  # prompts on each side of a mean difference (each is one forward pass)


def check_layer(model: GPT, layer: int) -> int:
    if not 0 <= layer < model.config.n_layers:
        raise ConfigError(f"Layer {layer} does not exist: this model has layers 0–{model.config.n_layers - 1}.")
    return layer


@torch.no_grad()
def mean_activation(model: GPT, prompts: list[list[int]], layer: int) -> torch.Tensor:
    """(C,) ``blocks.layer.resid_pre`` averaged over every position of every prompt (each prompt one run)."""
    check_layer(model, layer)
    if not prompts:
        raise ConfigError("Give at least one prompt for each side of the difference.")
    if len(prompts) > MAX_PROMPTS:
        raise ConfigError(f"Give at most {MAX_PROMPTS} prompts on each side of the difference (got {len(prompts):,}).")
    device = next(model.parameters()).device
    name = cache_name(layer, POINT)
    total, count = torch.zeros(model.config.d_model), 0
    for ids in prompts:
        check_text(model, ids, least=1)
        _, _, cache = model.run_with_hooks(torch.tensor([list(ids)], device=device), keep=[name])
        total += cache[name][0].float().sum(0)  # (C,)
        count += len(ids)
    return total / count


def mean_difference(model: GPT, positive: list[list[int]], negative: list[list[int]], layer: int) -> torch.Tensor:
    """(C,) the mean of ``resid_pre`` at ``layer`` over the ``positive`` prompts minus its mean over the
    ``negative`` ones."""
    return mean_activation(model, positive, layer) - mean_activation(model, negative, layer)


def token_direction(model: GPT, token: int) -> torch.Tensor:
    """(C,) token ``token``'s embedding row, made unit length.

    >>> from llmviz.models.gpt import GPT
    >>> from llmviz.models.presets import PRESETS
    >>> round(float(token_direction(GPT(PRESETS["gpt-nano"]), 5).norm()), 6)
    1.0
    """
    if not 0 <= token < model.config.vocab_size:
        raise ConfigError(f"Token {token} is not in the model's vocabulary of {model.config.vocab_size}.")
    row = model.tok_emb.weight[token].detach().float().cpu()  # (C,)
    return row / row.norm().clamp_min(1e-12)


@torch.no_grad()
def stream_norm(model: GPT, ids: list[int], layer: int) -> float:
    """The mean length ‖x‖ of the residual stream entering block ``layer`` over the positions of ``ids``: the
    scale against which α × ‖direction‖ is large or small."""
    check_layer(model, layer)
    check_text(model, ids, least=1)
    device = next(model.parameters()).device
    name = cache_name(layer, POINT)
    _, _, cache = model.run_with_hooks(torch.tensor([list(ids)], device=device), keep=[name])
    return float(cache[name][0].float().norm(dim=-1).mean())


def steering_hook(direction: torch.Tensor, alpha: float) -> Hook:
    """A hook that adds ``alpha × direction`` (C,) at every position of a (B, T, C) stream."""
    vector = alpha * direction.detach().float()  # (C,)

    def hook(x: torch.Tensor, name: str) -> torch.Tensor:
        return x + vector.to(device=x.device, dtype=x.dtype)  # (B, T, C)

    return hook


class Hooked(nn.Module):
    """``model`` with ``hooks`` on every forward pass: generation code that calls ``model(idx)`` runs it hooked.

    It has no KV cache (a cached step would skip the hooks on the earlier positions), so
    :func:`llmviz.generation.sampling.generate` gives it the whole window each step."""

    def __init__(self, model: GPT, hooks: dict[str, Hook]):
        super().__init__()
        self.model = model
        self.hooks = hooks
        self.train(model.training)  # generate() restores this mode when it ends: never switch a shared model's

    @property
    def context_length(self) -> int:
        return self.model.config.context_length

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        return self.model(idx, targets, cache=HookPoints(self.hooks))


@dataclass(frozen=True)
class SteeredPair:
    """The same prompt continued twice with the same random draws: ``plain`` and ``steered`` (generated ids)."""

    layer: int
    alpha: float
    direction_norm: float
    plain: list[int]
    steered: list[int]


def steered_steps(
    model: GPT,
    ids: list[int],
    layer: int,
    direction: torch.Tensor,
    alpha: float,
    new_tokens: int = 30,
    temperature: float = 0.8,
    seed: int = 0,
) -> Iterator[SteeredPair]:
    """:func:`steered_pair` one token at a time: yields the pair so far after each generated token (the plain text
    first, then the steered one), so a lab job shows progress and a Stop keeps what was written."""
    check_layer(model, layer)
    check_text(model, ids, least=1)
    if not 1 <= new_tokens <= MAX_NEW_TOKENS:
        raise ConfigError(f"Generate between 1 and {MAX_NEW_TOKENS} tokens (got {new_tokens}).")
    if direction.shape != (model.config.d_model,):
        raise ConfigError(f"A direction has {model.config.d_model} numbers (the residual width).")
    if not torch.isfinite(direction).all() or not (alpha == alpha and abs(alpha) < 1e6):
        raise ConfigError("The direction and α must be finite numbers.")
    texts: list[list[int]] = [[], []]
    runs: tuple[dict[str, Hook], ...] = ({}, {cache_name(layer, POINT): steering_hook(direction, alpha)})
    for which, hooks in enumerate(runs):
        steps = sampling.generate(
            Hooked(model, hooks), list(ids), new_tokens, temperature=temperature, seed=seed, use_kv_cache=False
        )
        for record in steps:
            texts[which].append(record.token)
            yield SteeredPair(layer, float(alpha), float(direction.norm()), list(texts[0]), list(texts[1]))


def steered_pair(
    model: GPT,
    ids: list[int],
    layer: int,
    direction: torch.Tensor,
    alpha: float,
    new_tokens: int = 30,
    temperature: float = 0.8,
    seed: int = 0,
) -> SteeredPair:
    """Generate ``new_tokens`` after ``ids`` plainly and with ``alpha × direction`` added at ``layer``, both from
    the same seed (and through the same hooked path: α = 0 gives the plain text exactly)."""
    *_, last = steered_steps(model, ids, layer, direction, alpha, new_tokens, temperature, seed)
    return last


def generation_work(config, prompt: int, new_tokens: int, prompts: int = 0, prompt_tokens: int = 8) -> float:
    """The multiply-adds of :func:`steered_pair` — two generations without a KV cache, each token reading the whole
    window so far — and of a mean difference over ``prompts`` prompts of about ``prompt_tokens`` tokens, roughly:
    what the page compares with its budget (:data:`llmviz.interpret.interventions.IN_PAGE_WORK`).

    >>> from llmviz.models.presets import PRESETS
    >>> [f"{generation_work(PRESETS[name], 1, 30, 6):.1e}" for name in ("gpt-mini", "gpt2-124m")]
    ['1.8e+09', '2.4e+11']
    """
    from llmviz.interpret.interventions import forward_work

    windows = [min(prompt + step, config.context_length) for step in range(new_tokens)]
    return 2 * sum(forward_work(config, window) for window in windows) + prompts * forward_work(config, prompt_tokens)
