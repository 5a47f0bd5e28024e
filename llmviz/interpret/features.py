"""What a sparse autoencoder's features mean, and what they do: the feature browser and the interventions.

- :func:`feature_index`: one pass over the corpus's activations gives every feature's firing frequency, its
  top-activating tokens (for the contexts) and the largest activation (for the histogram's range);
- :func:`contexts`: the texts around a feature's top tokens, each token with the feature's activation (for
  colouring, like the loss-per-token view), at distinct places (:func:`places`);
- :func:`readable_order`: the features a student can read first (:func:`selectivity`: the share of a feature's top
  places on one token), the densest ones no longer first;
- :func:`histogram`: a feature's non-zero activations over the corpus, binned;
- :func:`logit_effects`: the feature's decoder direction read through the unembedding (through the MLP's output
  weights first, for an MLP-hidden autoencoder): the tokens it promotes and suppresses (Neuronpedia's logit table);
- :func:`search`: which features fire on a text, per token and overall;
- :func:`steer`: generate with a feature's decoder direction added at its hook point (the Steer tab's mechanism,
  :mod:`llmviz.interpret.steering`), and :func:`knock_out`: the loss on every token with features removed.

>>> from llmviz.interpret.sae import SparseAutoencoder
>>> sae = SparseAutoencoder(d_in=2, d_sae=3, k=1)
>>> with torch.no_grad():
...     _ = sae.W_enc.copy_(torch.eye(2, 3)); _ = sae.W_dec.copy_(torch.eye(3, 2))
>>> index = feature_index(sae, torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]]), top=2)
>>> [round(v, 4) for v in index.frequency.tolist()], index.order[:2], index.top_positions[0].tolist()
([0.6667, 0.3333, 0.0], [0, 1], [1, 0])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from llmviz.errors import ConfigError
from llmviz.generation import sampling
from llmviz.interpret import steering
from llmviz.interpret.interventions import check_text, text_rows, token_losses
from llmviz.interpret.sae import SparseAutoencoder, splice_hook
from llmviz.models.gpt import GPT

CHUNK = 4096  # tokens encoded at once: CHUNK × d_sae floats at a time, whatever the corpus
MAX_TOP = 100
MAX_BINS = 200


def check_feature(sae: SparseAutoencoder, feature: int) -> int:
    if not 0 <= feature < sae.d_sae:
        raise ConfigError(f"Feature {feature} does not exist: this autoencoder has features 0–{sae.d_sae - 1}.")
    return feature


@dataclass(frozen=True)
class FeatureIndex:
    """Every feature over a corpus of N tokens: ``frequency`` (S,) the share of tokens it fires on, ``mean`` (S,) its
    mean activation where it fires, ``top_values``/``top_positions`` (S, top) its largest activations and the flat
    token positions they are at (−1 where it fired on fewer tokens), ``order`` the features by frequency."""

    frequency: torch.Tensor
    mean: torch.Tensor
    top_values: torch.Tensor
    top_positions: torch.Tensor
    tokens: int

    @property
    def order(self) -> list[int]:
        return [int(i) for i in torch.argsort(self.frequency, descending=True, stable=True)]

    @property
    def dead(self) -> int:
        return int((self.frequency == 0).sum())


@torch.no_grad()
def feature_index(sae: SparseAutoencoder, acts: torch.Tensor, top: int = 20) -> FeatureIndex:
    """:class:`FeatureIndex` of ``sae`` over activations ``acts`` (N, d_in), CHUNK tokens at a time."""
    if not 1 <= top <= MAX_TOP:
        raise ConfigError(f"Keep 1–{MAX_TOP} top tokens per feature (got {top}).")
    count, size = len(acts), sae.d_sae
    fired = torch.zeros(size)  # (S,)
    total = torch.zeros(size)  # (S,)
    best_v = torch.full((size, 0), -1.0)  # (S, 0) grows to (S, top)
    best_p = torch.zeros((size, 0), dtype=torch.long)
    for start in range(0, count, CHUNK):
        f = sae.encode(acts[start : start + CHUNK].float())  # (n, S)
        fired += (f > 0).sum(0)
        total += f.sum(0)
        positions = torch.arange(start, start + len(f)).expand(size, -1)  # (S, n)
        values = torch.cat([best_v, f.t()], dim=1)  # (S, top + n)
        places = torch.cat([best_p, positions], dim=1)  # (S, top + n)
        kept = values.topk(min(top, values.shape[1]), dim=1)  # (S, top)
        best_v, best_p = kept.values, places.gather(1, kept.indices)
    best_p = torch.where(best_v > 0, best_p, torch.full_like(best_p, -1))
    return FeatureIndex(fired / max(count, 1), total / fired.clamp_min(1), best_v.clamp_min(0), best_p, count)


@dataclass(frozen=True)
class Context:
    """A window of the corpus around one of a feature's top tokens: ``ids`` and the feature's activation on each
    token (``values``, for colouring); ``peak`` the index in ``ids`` of the top token."""

    ids: list[int]
    values: list[float]
    peak: int


def places(
    index: FeatureIndex,
    ids: torch.Tensor,
    feature: int,
    before: int = 12,
    after: int = 4,
    count: int = 8,
    window: int | None = None,
) -> list[tuple[int, int, int]]:
    """``(position, lo, hi)`` of up to ``count`` of ``feature``'s top activations, strongest first, each with the
    stretch ``ids[lo:hi]`` around it (``before`` tokens before, ``after`` after, inside its window of ``window``
    tokens when the corpus is windows laid end to end), keeping only distinct places: a top token inside a stretch
    already kept (its neighbour fired too) is skipped, and so is a stretch that repeats one kept around its top token
    (the corpus holds the same passage twice; one copy may be cut shorter by the start or end of its window).

    >>> index = FeatureIndex(torch.ones(1), torch.ones(1), torch.ones(1, 4), torch.tensor([[1, 2, 6, 9]]), 10)
    >>> ids = torch.tensor([5, 6, 7, 0, 0, 5, 6, 7, 0, 1])
    >>> places(index, ids, 0, before=1, after=1)  # 2 sits in 1's stretch; 6's stretch repeats 1's tokens
    [(1, 0, 3), (9, 8, 10)]
    >>> places(index, ids, 0, before=1, after=1, window=5)  # windows of 5: 6's stretch, cut to 6 7, repeats too
    [(1, 0, 3), (9, 8, 10)]
    """
    flat = ids.tolist()
    kept: list[tuple[int, int, int]] = []
    for position in index.top_positions[feature].tolist():
        if len(kept) == count or position < 0:
            break
        if any(lo <= position < hi for _, lo, hi in kept):
            continue
        start = 0 if window is None else position - position % window
        end = len(flat) if window is None else start + window
        lo, hi = max(start, position - before), min(end, len(flat), position + after + 1)
        if any(_same_around(flat, (position, lo, hi), other) for other in kept):
            continue
        kept.append((position, lo, hi))
    return kept


def _same_around(ids: list[int], one: tuple[int, int, int], other: tuple[int, int, int]) -> bool:
    """Do two stretches ``(top, lo, hi)`` hold the same tokens around their top tokens, as far as both reach?

    >>> _same_around([1, 2, 3, 9, 2, 3], (1, 0, 3), (4, 4, 6))  # 2 3 is in both, at their tops
    True
    """
    left = min(one[0] - one[1], other[0] - other[1])
    right = min(one[2] - one[0], other[2] - other[0])
    return ids[one[0] - left : one[0] + right] == ids[other[0] - left : other[0] + right]


@torch.no_grad()
def contexts(
    sae: SparseAutoencoder,
    acts: torch.Tensor,
    ids: torch.Tensor,
    index: FeatureIndex,
    feature: int,
    before: int = 12,
    after: int = 4,
    count: int = 8,
    window: int | None = None,
) -> list[Context]:
    """The ``count`` distinct corpus stretches where ``feature`` fires most (:func:`places`): ``acts`` (N, d_in) and
    ``ids`` (N,) the same flat tokens the index was made from; each stretch ``before`` tokens before the top token
    and ``after`` after (within its window of ``window`` tokens, when given)."""
    check_feature(sae, feature)
    result = []
    for position, lo, hi in places(index, ids, feature, before, after, count, window):
        values = sae.encode(acts[lo:hi].float())[:, feature]  # (w,)
        result.append(Context(ids[lo:hi].tolist(), [float(v) for v in values], position - lo))
    return result


LEAST_PLACES = 6  # a feature with fewer distinct top places is listed after every other one


def selectivity(index: FeatureIndex, ids: torch.Tensor, feature: int, window: int | None = None) -> tuple[float, int]:
    """``(share, places)``: of ``feature``'s distinct top places (:func:`places`, all its kept top activations), the
    share whose top token is its most common one there, and how many places there are (0, 0 for a dead feature).
    A feature whose strongest places all sit on one token is one a student names at a glance.

    >>> index = FeatureIndex(torch.ones(1), torch.ones(1), torch.ones(1, 3), torch.tensor([[0, 4, 8]]), 9)
    >>> selectivity(index, torch.tensor([7, 0, 0, 0, 7, 1, 1, 1, 9]), 0, window=3)
    (0.6667, 3)
    """
    found = places(index, ids, feature, count=index.top_positions.shape[1], window=window)
    if not found:
        return 0.0, 0
    tokens = torch.tensor([int(ids[position]) for position, _, _ in found])  # (n,)
    return round(int((tokens == tokens.mode().values).sum()) / len(tokens), 4), len(found)


def readable_order(index: FeatureIndex, ids: torch.Tensor, least: int = LEAST_PLACES, window: int | None = None):
    """Every feature, the most readable first: by :func:`selectivity` (the share of its distinct top places on one
    token), then by how often it fires (more examples); a feature with fewer than ``least`` distinct top places
    (too few to read) after all those, by frequency, and the dead ones last. The densest features, firing on a
    fifth of all tokens with no one meaning, are not first any more.

    >>> index = FeatureIndex(torch.tensor([0.5, 0.2, 0.1]), torch.ones(3), torch.ones(3, 2),
    ...                      torch.tensor([[0, 2], [1, 3], [4, -1]]), 6)
    >>> readable_order(index, torch.tensor([7, 9, 8, 9, 5, 5]), least=2, window=2)  # 1: twice on 9; 2: one place
    [1, 0, 2]
    """

    def key(feature: int) -> tuple:
        share, found = selectivity(index, ids, feature, window)
        return (found >= least, share if found >= least else 0.0, float(index.frequency[feature]))

    return sorted(range(len(index.frequency)), key=key, reverse=True)


@torch.no_grad()
def feature_values(sae: SparseAutoencoder, acts: torch.Tensor, feature: int) -> torch.Tensor:
    """(N,) ``feature``'s activation on every token of ``acts`` (N, d_in)."""
    check_feature(sae, feature)
    parts = [sae.encode(acts[s : s + CHUNK].float())[:, feature] for s in range(0, len(acts), CHUNK)]
    return torch.cat(parts) if parts else torch.zeros(0)


def histogram(values: torch.Tensor, bins: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    """``(counts (bins,), edges (bins + 1,))`` of the non-zero ``values`` (where the feature fires).

    >>> counts, edges = histogram(torch.tensor([0.0, 1.0, 1.0, 3.0]), bins=2)
    >>> counts.tolist(), edges.tolist()
    ([2.0, 1.0], [1.0, 2.0, 3.0])
    """
    if not 1 <= bins <= MAX_BINS:
        raise ConfigError(f"Use 1–{MAX_BINS} bins (got {bins}).")
    firing = values[values > 0].float()  # (n,)
    if not len(firing):
        return torch.zeros(bins), torch.linspace(0, 1, bins + 1)
    lo, hi = float(firing.min()), float(firing.max())
    hi = hi if hi > lo else lo + 1e-6
    return torch.histc(firing, bins, lo, hi), torch.linspace(lo, hi, bins + 1)


def residual_direction(model: GPT, sae: SparseAutoencoder, hook: str, feature: int) -> torch.Tensor:
    """(d_model,) what ``feature`` writes into the residual stream: its decoder row, through the MLP's output
    weights when the autoencoder reads an MLP's hidden layer."""
    row = sae.W_dec[check_feature(sae, feature)].detach().float()  # (D,)
    if not hook.endswith("mlp.hidden"):
        return row
    layer = int(hook.split(".")[1])
    mlp: Any = model.blocks[layer].mlp  # an MLP: input_width refused mlp.hidden for a mixture of experts
    return mlp.proj.weight.detach().float() @ row  # (C, F) @ (F,) → (C,)


@dataclass(frozen=True)
class LogitEffects:
    """The tokens a feature's direction raises (``promoted``) and lowers (``suppressed``) the logits of most, read
    directly through the unembedding: (token id, logit change per unit of activation)."""

    promoted: list[tuple[int, float]]
    suppressed: list[tuple[int, float]]


@torch.no_grad()
def logit_effects(model: GPT, sae: SparseAutoencoder, hook: str, feature: int, top: int = 10) -> LogitEffects:
    """``feature``'s direction times the unembedding W_U (C, V): the direct path to the logits (the final norm
    left out, as Neuronpedia's logit tables do)."""
    direction = residual_direction(model, sae, hook, feature)  # (C,)
    logits = model.lm_head.weight.detach().float() @ direction  # (V, C) @ (C,) → (V,)
    top = max(1, min(top, len(logits)))
    up, down = logits.topk(top), (-logits).topk(top)
    return LogitEffects(
        [(int(i), float(v)) for v, i in zip(up.values, up.indices)],
        [(int(i), -float(v)) for v, i in zip(down.values, down.indices)],
    )


@dataclass(frozen=True)
class Search:
    """The features that fire on a text: ``per_token`` (T,) lists of (feature, activation), strongest first;
    ``overall`` (feature, largest activation on the text) strongest first."""

    per_token: list[list[tuple[int, float]]]
    overall: list[tuple[int, float]]


@torch.no_grad()
def search(model: GPT, sae: SparseAutoencoder, hook: str, ids: list[int], top: int = 5) -> Search:
    """Which features fire on the text ``ids``, and how strongly, at every token."""
    from llmviz.interpret.sae import activations_at

    check_text(model, ids, least=1)
    device = next(model.parameters()).device
    acts = activations_at(model, torch.tensor([list(ids)], device=device), hook)[0].cpu()  # (T, D)
    f = sae.encode(acts)  # (T, S)
    per_token = []
    for row in f:
        values, indices = row.topk(min(top, sae.d_sae))  # (top,)
        per_token.append([(int(i), float(v)) for v, i in zip(values, indices) if v > 0])
    peak = f.max(0).values  # (S,)
    values, indices = peak.topk(min(top * 4, sae.d_sae))
    return Search(per_token, [(int(i), float(v)) for v, i in zip(values, indices) if v > 0])


def steer(
    model: GPT,
    sae: SparseAutoencoder,
    hook: str,
    ids: list[int],
    feature: int,
    alpha: float,
    new_tokens: int = 30,
    temperature: float = 0.8,
    seed: int = 0,
) -> steering.SteeredPair:
    """Generate after ``ids`` plainly and with α × the feature's decoder row added at the autoencoder's hook point at
    every position, both from the same seed (:class:`llmviz.interpret.steering.Hooked`; α = 0 gives the plain text)."""
    check_text(model, ids, least=1)
    if not 1 <= new_tokens <= steering.MAX_NEW_TOKENS:
        raise ConfigError(f"Generate between 1 and {steering.MAX_NEW_TOKENS} tokens (got {new_tokens}).")
    if not (alpha == alpha and abs(alpha) < 1e6):
        raise ConfigError("α must be a finite number.")
    direction = sae.W_dec[check_feature(sae, feature)].detach().float()  # (D,)
    texts: list[list[int]] = []
    for hooks in ({}, {hook: steering.steering_hook(direction, alpha)}):
        steps = sampling.generate(
            steering.Hooked(model, hooks), list(ids), new_tokens, temperature=temperature, seed=seed, use_kv_cache=False
        )
        texts.append([record.token for record in steps])
    layer = int(hook.split(".")[1])
    return steering.SteeredPair(layer, float(alpha), float(direction.norm()), texts[0], texts[1])


MODES = ("subtract", "reconstruction")


@dataclass(frozen=True)
class KnockOut:
    """The loss on every next token of a text (T − 1,) ``before`` and ``after`` knocking ``features`` out."""

    features: tuple[int, ...]
    mode: str
    before: torch.Tensor
    after: torch.Tensor

    @property
    def change(self) -> torch.Tensor:
        return self.after - self.before  # (T-1,)


@torch.no_grad()
def knock_out(
    model: GPT, sae: SparseAutoencoder, hook: str, ids: list[int], features: list[int], mode: str = "subtract"
) -> KnockOut:
    """Knock ``features`` out at the hook point and measure the loss on every token of ``ids``.

    ``mode="subtract"``: x − Σ f_i·W_dec,i (only those features' contributions go; before = the clean model);
    ``mode="reconstruction"``: x̂ with those features set to 0 (before = x̂ with every feature)."""
    check_text(model, ids)
    if mode not in MODES:
        raise ConfigError(f"Knock a feature out by {' or '.join(MODES)} (got {mode!r}).")
    knocked = sorted({check_feature(sae, int(f)) for f in features})
    if not knocked:
        raise ConfigError("Name at least one feature to knock out.")
    rows = text_rows(ids, 1, next(model.parameters()).device)  # (1, T)
    first = {} if mode == "subtract" else {hook: splice_hook(sae)}
    losses = []
    for hooks in (first, {hook: splice_hook(sae, knocked, mode)}):
        logits, _, _ = model.run_with_hooks(rows, hooks=hooks)
        losses.append(token_losses(logits, rows)[0].cpu())  # (T-1,)
    return KnockOut(tuple(knocked), mode, losses[0], losses[1])
