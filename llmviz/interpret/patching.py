"""Activation patching: which activations carry what makes a model's answer?

Two prompts of the same length that differ in a token or two — a *clean* one ("… John gave a drink to") and a
*corrupted* one (a name swapped) — get different answers. Patching runs the corrupted prompt but puts in one
activation from the clean run (one layer's residual stream at one position, or one head's output) and measures how
much of the clean answer comes back (Meng et al., 2022, "Locating and Editing Factual Associations in GPT";
Wang et al., 2022, "Interpretability in the Wild"):

    logit difference  d = logit(answer) − logit(wrong), at the last position
    share restored    (d_patched − d_corrupted) / (d_clean − d_corrupted)

0: that activation carries none of the difference; 1: it carries all of it. Patching the residual stream at every
layer and position at once gives back the clean run exactly.

The components (:data:`COMPONENTS`): the residual stream entering each block, the attention output and the MLP
output of each block (layer × position), and each head's output at every position (layer × head). Each is a hook
point (:func:`llmviz.models.gpt.cache_name`); a sweep runs its cells as the rows of a few batched forward passes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch

from llmviz.errors import ConfigError
from llmviz.interpret.interventions import batches, check_text, nan_grid, rows_per_batch, text_rows
from llmviz.models.cache import Hook
from llmviz.models.gpt import GPT, cache_name

COMPONENTS = ("resid_pre", "attn.out", "mlp.out", "attn.z")
COMPONENT_LABELS = {
    "resid_pre": "residual stream",
    "attn.out": "attention output",
    "mlp.out": "MLP output",
    "attn.z": "each head",
}
COMPONENT_HELP = {
    "resid_pre": "the residual stream entering each block, at one position",
    "attn.out": "what a block's attention adds to the residual stream, at one position",
    "mlp.out": "what a block's MLP adds to the residual stream, at one position",
    "attn.z": "one head's output, at every position at once",
}

Cell = tuple[int, int]  # (layer, position) or, for attn.z, (layer, head)


def check_component(model: GPT, component: str) -> str:
    if component not in COMPONENTS:
        raise ConfigError(f"Patch one of {', '.join(COMPONENTS)} (got {component!r}).")
    if component == "mlp.out" and not model.config.mlp:
        raise ConfigError("This model has no MLPs (attention only): patch the residual stream or the heads.")
    return component


def first_difference(clean: list[int], corrupted: list[int]) -> int:
    """The first position where the two prompts differ (the positions before it are the same in both runs).

    >>> first_difference([1, 2, 3, 4], [1, 2, 9, 4])
    2
    """
    return next(position for position, (a, b) in enumerate(zip(clean, corrupted)) if a != b)


def check_pair(model: GPT, clean: list[int], corrupted: list[int]) -> None:
    """Both prompts fit the model, have the same number of tokens, and differ somewhere."""
    check_text(model, clean, least=1)
    check_text(model, corrupted, least=1)
    if len(clean) != len(corrupted):
        raise ConfigError(
            f"The clean prompt has {len(clean)} tokens and the corrupted one {len(corrupted)}: patching puts each "
            "position's activation in the same position, so both need the same number of tokens (swap a word for "
            "one of the same token count)."
        )
    if list(clean) == list(corrupted):
        raise ConfigError("The two prompts are the same: change a word of the corrupted one.")


def logit_difference(logits: torch.Tensor, answer: int, wrong: int) -> torch.Tensor:
    """(B,) logit(answer) − logit(wrong) at the last position of each row of ``logits`` (B, T, V).

    >>> logit_difference(torch.tensor([[[0.0, 0.0, 0.0], [1.0, 3.0, 0.5]]]), answer=1, wrong=2)
    tensor([2.5000])
    """
    last = logits[:, -1].float()  # (B, V)
    return last[:, answer] - last[:, wrong]


#: The lesson's default pair: on the shipped GPT (data/gpt-python-docs) the clean prompt's most likely next token is
#: " function" and the corrupted one's is ' "': the corruption changes the answer, so a patch has something to bring
#: back (the earlier "for"/"if" pair predicted ' "' from both, and its shares taught nothing).
DEFAULT_CLEAN = 'The "def" statement defines a'
DEFAULT_CORRUPTED = 'The "class" statement defines a'


@dataclass(frozen=True)
class Answers:
    """The two tokens a logit difference compares: ``answer``, the clean run's most likely next token, and ``wrong``,
    the corrupted run's; ``changed`` is False when both runs' most likely token is the same (``wrong`` is then the
    corrupted run's second choice, and :attr:`problem` says there is no clean answer to bring back)."""

    answer: int
    wrong: int
    changed: bool

    @property
    def problem(self) -> str | None:
        if self.changed:
            return None
        return (
            "Both prompts make the same token the most likely next one: the corruption does not change the answer, "
            "so patching has no clean answer to bring back. Change a word of the corrupted prompt so that its most "
            "likely next token differs."
        )


@torch.no_grad()
def answers(model: GPT, clean: list[int], corrupted: list[int]) -> Answers:
    """:class:`Answers` of a prompt pair: the clean and the corrupted run's most likely next tokens, and whether the
    corruption changed it."""
    device = next(model.parameters()).device
    logits, _, _ = model.run_with_hooks(torch.tensor([list(clean), list(corrupted)], device=device))
    answer = int(logits[0, -1].argmax())
    ranked = logits[1, -1].argsort(descending=True).tolist()
    changed = ranked[0] != answer
    return Answers(answer, int(ranked[0] if changed else ranked[1]), changed)


def default_answers(model: GPT, clean: list[int], corrupted: list[int]) -> tuple[int, int]:
    """``(answer, wrong)``: the clean run's most likely next token, and the corrupted run's (its second most likely
    when both runs agree: :func:`answers` says whether they do)."""
    found = answers(model, clean, corrupted)
    return found.answer, found.wrong


def patch_hook(rows: dict[int, list[int]], clean: torch.Tensor) -> Hook:
    """A hook that, in batch row ``r``, puts the clean activation in at the indices ``rows[r]`` of the second axis:
    positions of a (B, T, C) stream, or heads of ``attn.z`` (B, H, T, d_head). ``clean``: the clean run's (1, …)."""

    def hook(x: torch.Tensor, name: str) -> torch.Tensor:
        x = x.clone()
        source = clean.to(device=x.device, dtype=x.dtype)
        for row, indices in rows.items():
            x[row, indices] = source[0, indices]  # (k, C) positions, or (k, T, hd) heads at every position
        return x

    return hook


def patch_hooks(per_row: list[list[Cell]], clean_cache: dict[str, torch.Tensor], component: str) -> dict[str, Hook]:
    """Hooks for a batch whose row ``r`` patches the cells ``per_row[r]`` (an empty list: the corrupted run)."""
    by_layer: dict[int, dict[int, list[int]]] = {}
    for row, cells in enumerate(per_row):
        for layer, index in cells:
            by_layer.setdefault(layer, {}).setdefault(row, []).append(index)
    return {
        cache_name(layer, component): patch_hook(rows, clean_cache[cache_name(layer, component)])
        for layer, rows in by_layer.items()
    }


@torch.no_grad()
def clean_activations(model: GPT, clean: list[int], component: str) -> dict[str, torch.Tensor]:
    """The clean run's ``component`` at every layer (name → (1, …), on the CPU)."""
    device = next(model.parameters()).device
    names = [cache_name(layer, component) for layer in range(model.config.n_layers)]
    _, _, cache = model.run_with_hooks(text_rows(clean, 1, device), keep=names)
    return cache


@torch.no_grad()
def patched_logits(
    model: GPT, clean: list[int], corrupted: list[int], component: str, cells: Iterable[Cell]
) -> torch.Tensor:
    """(1, T, V) the corrupted run's logits with every cell of ``cells`` (together) taken from the clean run."""
    check_pair(model, clean, corrupted)
    check_component(model, component)
    device = next(model.parameters()).device
    hooks = patch_hooks([list(cells)], clean_activations(model, clean, component), component)
    logits, _, _ = model.run_with_hooks(text_rows(corrupted, 1, device), hooks=hooks)
    return logits


@dataclass(frozen=True)
class Patching:
    """A patching sweep: ``differences`` (layers, positions) — or (layers, heads) for ``attn.z`` — the logit
    difference of each patched run (NaN where a stopped sweep did not get to)."""

    component: str
    answer: int
    wrong: int
    clean_difference: float
    corrupted_difference: float
    differences: torch.Tensor
    first_difference: int  # positions before it are the same in both prompts: patching them restores nothing

    @property
    def problem(self) -> str | None:
        """Why no share can be read from this sweep (None: they can): the corrupted run must prefer ``answer`` over
        ``wrong`` less than the clean run does, or "the share of the difference brought back" has no meaning (a
        corruption that keeps the answer gave shares of 2.88 and −0.65)."""
        if self.clean_difference - self.corrupted_difference > 1e-6:
            return None
        return (
            f"The corrupted prompt prefers the answer as much as the clean one does (logit difference "
            f"{self.corrupted_difference:.3f} against {self.clean_difference:.3f}): the corruption does not change the "
            "answer, so no share of it can be brought back. Change a word of the corrupted prompt so that its most "
            "likely next token differs."
        )

    @property
    def restored(self) -> torch.Tensor:
        """The share of the logit difference each patch restores: 0 = none of it, 1 = all of it."""
        return (self.differences - self.corrupted_difference) / (self.clean_difference - self.corrupted_difference)

    @property
    def done(self) -> int:
        return int((~torch.isnan(self.differences)).sum())

    @property
    def complete(self) -> bool:
        return self.done == self.differences.numel()


def cells_of(model: GPT, component: str, tokens: int, first: int) -> list[Cell]:
    """The cells a sweep measures: every head of every layer for ``attn.z``; else every layer at every position
    from ``first`` on (before it the prompts agree, and a patch there changes nothing)."""
    config = model.config
    columns = range(config.n_heads) if component == "attn.z" else range(first, tokens)
    return [(layer, column) for layer in range(config.n_layers) for column in columns]


def patching_steps(
    model: GPT, clean: list[int], corrupted: list[int], answer: int, wrong: int, component: str = "resid_pre"
) -> Iterator[Patching]:
    """:func:`patching` one batched forward pass at a time: yields the sweep so far after each."""
    check_pair(model, clean, corrupted)
    component = check_component(model, component)
    config = model.config
    vocab = config.vocab_size
    if not (0 <= answer < vocab and 0 <= wrong < vocab) or answer == wrong:
        raise ConfigError("The answer and the wrong token must be two different tokens of the model's vocabulary.")
    device = next(model.parameters()).device
    cache = clean_activations(model, clean, component)
    ends = model.run_with_hooks(torch.tensor([list(clean), list(corrupted)], device=device))[0]
    clean_d, corrupted_d = (float(d) for d in logit_difference(ends, answer, wrong))
    if math.isclose(clean_d, corrupted_d, abs_tol=1e-6):
        raise ConfigError(
            "Both prompts give the answer and the wrong token the same logit difference: there is nothing to "
            "restore. Pick other tokens, or change the corrupted prompt so the model answers differently."
        )
    first = first_difference(clean, corrupted)
    columns = config.n_heads if component == "attn.z" else len(clean)
    differences = nan_grid(config.n_layers, columns)
    if component != "attn.z":
        differences[:, :first] = corrupted_d  # the prompts agree up to here: the patched run is the corrupted one
    cells = cells_of(model, component, len(clean), first)
    size = rows_per_batch(config, len(clean))
    for chunk in batches(len(cells), size):
        per_row = [[cells[index]] for index in chunk]
        rows = text_rows(corrupted, len(per_row), device)
        with torch.no_grad():
            logits, _, _ = model.run_with_hooks(rows, hooks=patch_hooks(per_row, cache, component))
        measured = logit_difference(logits, answer, wrong).cpu()
        for row, index in enumerate(chunk):
            differences[cells[index]] = measured[row]
        yield Patching(component, answer, wrong, clean_d, corrupted_d, differences.clone(), first)


def patching(
    model: GPT,
    clean: list[int],
    corrupted: list[int],
    answer: int,
    wrong: int,
    component: str = "resid_pre",
    progress: Callable[[int, int], None] | None = None,
) -> Patching:
    """Patch the clean ``component`` into the corrupted run at every layer × position (or layer × head for
    ``attn.z``) and measure the logit difference each time. ``progress(cells done, cells in all)``."""
    result = None
    for result in patching_steps(model, clean, corrupted, answer, wrong, component):
        if progress is not None:
            progress(result.done, result.differences.numel())
    if result is None:  # nothing to sweep: every cell is before the first difference (cannot happen: T > first)
        raise ConfigError("Nothing to patch.")
    return result
