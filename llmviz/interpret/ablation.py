"""Head ablation: knock attention heads out of a forward pass and see what the loss on a text does.

A head's whole contribution to the residual stream is its output ``z`` (B, H, T, d_head) times its slice of W_O,
so replacing ``blocks.L.attn.z[:, h]`` removes head ``h`` of layer ``L`` and nothing else (W_O's bias stays: it
belongs to no head). Two ways to remove it:

- **zero** ablation: z = 0, as if the head had never been trained (the simplest, and the harshest: an all-zero
  output is something the next layers never saw);
- **mean** ablation: z = its mean over every position of a reference text (by default the text itself), which
  keeps what the head writes on average and removes only what depends on the input (Wang et al., 2022).

:func:`ablate` knocks out any set of heads together; :func:`head_effects` knocks out each head alone and returns
the loss of every one as a (layers × heads) grid — one batched forward pass per :func:`rows_per_batch` heads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch

from llmviz.errors import ConfigError
from llmviz.interpret.interventions import (
    batches,
    check_text,
    nan_grid,
    row_losses,
    rows_per_batch,
    text_rows,
    token_losses,
)
from llmviz.models.cache import Hook
from llmviz.models.gpt import GPT, cache_name

MODES = ("zero", "mean")
MODE_HELP = {
    "zero": "its output set to 0",
    "mean": "its output replaced by its average over every position of the text",
}

Head = tuple[int, int]  # (layer, head)


def check_heads(model: GPT, heads: Iterable[Head]) -> list[Head]:
    """``heads`` as a sorted list of distinct (layer, head) pairs of ``model``; a pair it lacks is refused.

    >>> from llmviz.models.gpt import GPT
    >>> from llmviz.models.presets import PRESETS
    >>> check_heads(GPT(PRESETS["gpt-nano"]), [(1, 0), (0, 1), (1, 0)])
    [(0, 1), (1, 0)]
    """
    config = model.config
    found = sorted(set((int(layer), int(head)) for layer, head in heads))
    for layer, head in found:
        if not (0 <= layer < config.n_layers and 0 <= head < config.n_heads):
            raise ConfigError(
                f"Layer {layer}, head {head} does not exist: this model has layers 0–{config.n_layers - 1} and heads "
                f"0–{config.n_heads - 1}."
            )
    return found


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ConfigError(f"Ablation is 'zero' or 'mean' (got {mode!r}).")
    return mode


@torch.no_grad()
def head_means(model: GPT, ids: torch.Tensor) -> dict[int, torch.Tensor]:
    """Every layer's head outputs averaged over every position of ``ids`` (B, T): layer → (H, d_head), what mean
    ablation puts in place of a head."""
    names = [cache_name(layer, "attn.z") for layer in range(model.config.n_layers)]
    _, _, cache = model.run_with_hooks(ids, keep=names)
    device = ids.device
    return {layer: cache[name].mean(dim=(0, 2)).to(device) for layer, name in enumerate(names)}  # (H, hd)


def ablation_hook(rows: dict[int, list[int]], mode: str, mean: torch.Tensor | None) -> Hook:
    """A hook on ``blocks.L.attn.z`` (B, H, T, d_head): in batch row ``r`` the heads ``rows[r]`` are replaced by 0
    (``mode="zero"``) or by ``mean`` (H, d_head) (``mode="mean"``); the other rows pass unchanged."""

    def hook(z: torch.Tensor, name: str) -> torch.Tensor:
        z = z.clone()
        for row, knocked in rows.items():
            if mode == "zero":
                z[row, knocked] = 0.0
            else:
                assert mean is not None
                z[row, knocked] = mean[knocked][:, None, :].to(z.dtype)  # (k, 1, hd) over every position
        return z

    return hook


def ablation_hooks(
    model: GPT, per_row: list[list[Head]], mode: str, means: dict[int, torch.Tensor] | None
) -> dict[str, Hook]:
    """Hooks for a batch whose row ``r`` knocks out the heads ``per_row[r]`` (an empty list: the unablated run)."""
    by_layer: dict[int, dict[int, list[int]]] = {}
    for row, knocked in enumerate(per_row):
        for layer, head in knocked:
            by_layer.setdefault(layer, {}).setdefault(row, []).append(head)
    return {
        cache_name(layer, "attn.z"): ablation_hook(rows, mode, None if means is None else means[layer])
        for layer, rows in by_layer.items()
    }


@dataclass(frozen=True)
class Ablation:
    """The loss on a text with a set of heads knocked out, and without (both through the same hooked path).

    ``token_losses_*`` (T − 1,): the loss on every next token, before and after."""

    heads: tuple[Head, ...]
    mode: str
    loss_before: float
    loss_after: float
    token_losses_before: torch.Tensor
    token_losses_after: torch.Tensor

    @property
    def change(self) -> float:
        return self.loss_after - self.loss_before


@torch.no_grad()
def ablate(
    model: GPT, ids: list[int], heads: Iterable[Head], mode: str = "zero", reference: list[int] | None = None
) -> Ablation:
    """Knock ``heads`` (layer, head) out together and measure the loss on ``ids`` before and after; ``reference``:
    the text whose mean output mean ablation uses (default ``ids``)."""
    check_text(model, ids)
    knocked = check_heads(model, heads)
    mode = check_mode(mode)
    device = next(model.parameters()).device
    rows = text_rows(ids, 2, device)  # (2, T): row 0 as it is, row 1 ablated
    means = head_means(model, text_rows(reference or ids, 1, device)) if mode == "mean" else None
    logits, _, _ = model.run_with_hooks(rows, hooks=ablation_hooks(model, [[], knocked], mode, means))
    losses = token_losses(logits, rows).cpu()  # (2, T-1)
    return Ablation(tuple(knocked), mode, float(losses[0].mean()), float(losses[1].mean()), losses[0], losses[1])


@dataclass(frozen=True)
class HeadEffects:
    """Every head knocked out alone: ``losses`` (layers, heads) the loss on the text without that head (NaN where a
    stopped sweep did not get to), ``clean_loss`` the loss with every head."""

    mode: str
    clean_loss: float
    losses: torch.Tensor

    @property
    def effects(self) -> torch.Tensor:
        """(layers, heads): how much knocking each head out raises the loss (negative: the loss falls)."""
        return self.losses - self.clean_loss

    @property
    def done(self) -> int:
        """Heads measured so far."""
        return int((~torch.isnan(self.losses)).sum())

    @property
    def complete(self) -> bool:
        return self.done == self.losses.numel()

    def ranked(self) -> list[tuple[float, int, int]]:
        """``(effect, layer, head)`` from the head whose loss rises most, the heads not measured left out."""
        effects = self.effects
        return sorted(
            (
                (float(effects[layer, head]), layer, head)
                for layer in range(effects.shape[0])
                for head in range(effects.shape[1])
                if not torch.isnan(effects[layer, head])
            ),
            reverse=True,
        )


def head_effect_steps(
    model: GPT, ids: list[int], mode: str = "zero", reference: list[int] | None = None
) -> Iterator[HeadEffects]:
    """:func:`head_effects` one batched forward pass at a time: yields the grid so far (NaN for the heads still to
    do) after each, so a sweep that is stopped keeps what it measured."""
    check_text(model, ids)
    mode = check_mode(mode)
    config = model.config
    device = next(model.parameters()).device
    means = head_means(model, text_rows(reference or ids, 1, device)) if mode == "mean" else None
    every = [(layer, head) for layer in range(config.n_layers) for head in range(config.n_heads)]
    losses = nan_grid(config.n_layers, config.n_heads)
    size = rows_per_batch(config, len(ids))
    for chunk in batches(len(every), max(1, size - 1)):
        per_row: list[list[Head]] = [[]] + [[every[index]] for index in chunk]  # row 0: nothing knocked out
        rows = text_rows(ids, len(per_row), device)  # (1 + k, T)
        with torch.no_grad():
            logits, _, _ = model.run_with_hooks(rows, hooks=ablation_hooks(model, per_row, mode, means))
        measured = row_losses(logits, rows).cpu()  # (1 + k,)
        for row, index in enumerate(chunk, start=1):
            losses[every[index]] = measured[row]
        yield HeadEffects(mode, float(measured[0]), losses.clone())


def head_effects(
    model: GPT,
    ids: list[int],
    mode: str = "zero",
    reference: list[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeadEffects:
    """Knock out every head alone and measure the loss on ``ids`` each time: the layer × head heatmap.
    ``progress(heads done, heads in all)`` after each batched forward pass."""
    result = None
    for result in head_effect_steps(model, ids, mode, reference):
        if progress is not None:
            progress(result.done, result.losses.numel())
    assert result is not None  # a model has at least one head
    return result
