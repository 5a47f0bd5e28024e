"""Vectors for tokens: lookups, positions, similarity and projections (word2vec's kept vectors:
:mod:`llmviz.lessons.embeddings_word2vec`).

A worked example of cosine similarity, computed (never copied):

>>> v1, v2 = torch.tensor([0.2, 0.4, 0.9]), torch.tensor([0.1, 0.5, 0.8])
>>> parts = cosine_parts(v1, v2)
>>> round(parts.dot, 4), round(parts.norm_a ** 2, 4), round(parts.cosine, 4)
(0.94, 1.01, 0.9859)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import regex
import torch
import torch.nn.functional as F

from llmviz.errors import EmbeddingError
from llmviz.lessons import words

# ---------------------------------------------------------------------------- lookups


def lookup(matrix: torch.Tensor, ids: torch.Tensor | list[int]) -> torch.Tensor:
    """Embedding lookup as an index: row ``i`` of the matrix for token ``i``."""
    return matrix[torch.as_tensor(ids)]


def one_hot_lookup(matrix: torch.Tensor, ids: torch.Tensor | list[int]) -> torch.Tensor:
    """The same lookup as a matrix product: one-hot(ids) (N, V) @ matrix (V, C) → (N, C)."""
    one_hot = F.one_hot(torch.as_tensor(ids), num_classes=matrix.shape[0]).to(matrix.dtype)  # (N, V)
    return one_hot @ matrix


def sinusoidal_encoding(positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / base^(2i/d_model)), PE[pos, 2i+1] = cos(pos / base^(2i/d_model)).

    >>> sinusoidal_encoding(2, 4)[1].round(decimals=4)  # sin 1, cos 1, sin 0.01, cos 0.01
    tensor([0.8415, 0.5403, 0.0100, 1.0000])
    """
    if positions < 1 or d_model < 1:
        raise EmbeddingError("Positions and d_model must both be at least 1.")
    position = torch.arange(positions, dtype=torch.float64)[:, None]  # (P, 1)
    pair = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i
    angle = position / base ** (pair / d_model)  # (P, ceil(d/2))
    encoding = torch.zeros(positions, d_model, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angle)
    encoding[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return encoding.float()


# ---------------------------------------------------------------------------- similarity


#: the cosine example's three typed vectors, and the pairs of them it compares (the Compare choice's options)
VECTOR_NAMES = ("v₁", "v₂", "v₃")
PAIRS = (("v₁", "v₂"), ("v₁", "v₃"), ("v₂", "v₃"))
_SUBSCRIPTS = str.maketrans("₁₂₃", "123")


def pair_label(pair: tuple[str, str]) -> str:
    """A pair of vectors as the Compare choice shows it, and as a link writes it.

    >>> pair_label(("v₁", "v₃"))
    'v₁ and v₃'
    """
    return f"{pair[0]} and {pair[1]}"


def pair_from_link(text: str) -> str | None:
    """The label of the pair a link names, written with or without subscripts (``v1-v3``, ``v1,v3``, ``v₁ and v₃``);
    None for anything that is not one of :data:`PAIRS` (a forged or stale link).

    >>> pair_from_link("v1-v3"), pair_from_link("v₂ and v₃"), pair_from_link("v1-v1"), pair_from_link("v4-v1")
    ('v₁ and v₃', 'v₂ and v₃', None, None)
    """
    found = regex.fullmatch(r"\s*v([1-9])\s*(?:and|[-,;\s])\s*v([1-9])\s*", text[:40].translate(_SUBSCRIPTS))
    if found is None:
        return None
    first, second = (int(digit) - 1 for digit in found.groups())
    if max(first, second) >= len(VECTOR_NAMES):
        return None
    pair = (VECTOR_NAMES[first], VECTOR_NAMES[second])
    return pair_label(pair) if pair in PAIRS else None


def parse_vector(text: str) -> torch.Tensor:
    """``"0.2, 0.4, 0.9"`` → a tensor; a clear error for anything that is not a number."""
    parts = [p for p in regex.split(r"[,\s;]+", text.strip().strip("[]()")) if p]
    if not parts:
        raise EmbeddingError("The vector is empty: type numbers separated by commas, e.g. 0.2, 0.4, 0.9.")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise EmbeddingError(f"{part!r} is not a number: type numbers separated by commas.") from None
        if not math.isfinite(value):
            raise EmbeddingError(f"{part!r} is not a finite number.")
        values.append(value)
    return torch.tensor(values, dtype=torch.float64)


@dataclass(frozen=True)
class CosineParts:
    """Every number in the cosine similarity of two vectors: dot product, both norms, the cosine, the angle, and
    their Euclidean distance."""

    dot: float
    norm_a: float
    norm_b: float
    cosine: float
    angle_degrees: float
    euclidean: float


def _check_pair(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.shape != b.shape:
        raise EmbeddingError(
            f"The vectors have different lengths ({a.numel()} and {b.numel()}): "
            "cosine similarity and distance compare vectors of the same size."
        )


def cosine_parts(a: torch.Tensor, b: torch.Tensor) -> CosineParts:
    """Dot product, norms, cosine, angle and Euclidean distance of two vectors."""
    _check_pair(a, b)
    a, b = a.double(), b.double()
    norm_a, norm_b = float(a.norm()), float(b.norm())
    if norm_a == 0 or norm_b == 0:
        raise EmbeddingError(
            "A zero vector has no direction: its cosine similarity with anything is undefined "
            "(0 / 0). Its Euclidean distance is still defined."
        )
    dot = float(a @ b)
    cosine = max(-1.0, min(1.0, dot / (norm_a * norm_b)))
    return CosineParts(dot, norm_a, norm_b, cosine, math.degrees(math.acos(cosine)), float((a - b).norm()))


def euclidean(a: torch.Tensor, b: torch.Tensor) -> float:
    _check_pair(a, b)
    return float((a.double() - b.double()).norm())


def cosine_matrix(vectors: torch.Tensor) -> torch.Tensor:
    """All pairwise cosine similarities of the rows (N, C) → (N, N)."""
    norms = vectors.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise EmbeddingError("A zero vector has no direction: cosine similarity with it is undefined.")
    unit = vectors / norms
    return unit @ unit.T


def distance_matrix(vectors: torch.Tensor) -> torch.Tensor:
    """All pairwise Euclidean distances of the rows (N, C) → (N, N)."""
    squared = (vectors[:, None, :] - vectors[None, :, :]).pow(2).sum(-1)
    return squared.sqrt()


def nearest_neighbours(
    matrix: torch.Tensor, query: torch.Tensor, k: int = 10, exclude: set[int] | None = None
) -> list[tuple[int, float]]:
    """The ``k`` rows most cosine-similar to ``query``: ``[(row, similarity), …]``."""
    norms = matrix.norm(dim=-1).clamp(min=1e-12)
    similarity = (matrix @ query) / (norms * query.norm().clamp(min=1e-12))  # (V,)
    for index in exclude or ():
        similarity[index] = -float("inf")
    values, indices = torch.topk(similarity, min(k, len(similarity)))
    return [(int(i), float(v)) for i, v in zip(indices, values) if math.isfinite(float(v))]


def analogy(matrix: torch.Tensor, a: int, b: int, c: int, k: int = 5) -> list[tuple[int, float]]:
    """a − b + c (king − man + woman): the nearest rows, leaving out the three inputs."""
    return nearest_neighbours(matrix, matrix[a] - matrix[b] + matrix[c], k, exclude={a, b, c})


def pca(points: torch.Tensor, dims: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Project rows onto their ``dims`` main directions: ``(coordinates (N, dims), explained variance ratios)``."""
    if points.shape[0] < 2:
        raise EmbeddingError("PCA needs at least two points: one point has no spread to find directions in.")
    if not bool(torch.isfinite(points).all()):
        raise EmbeddingError(
            "Some of these vectors hold NaN or infinite numbers (the model's weights are broken): "
            "they have no directions to project onto."
        )
    centred = points.double() - points.double().mean(dim=0)
    _, singular, vh = torch.linalg.svd(centred, full_matrices=False)
    dims = min(dims, vh.shape[0])
    variance = singular.pow(2)
    ratio = variance[:dims] / variance.sum().clamp(min=1e-12)
    return (centred @ vh[:dims].T).float(), ratio.float()


def map_words(
    counts: dict[str, int], looked_up: tuple[str, list[float]] | None, neighbours: list[tuple[str, list[float]]]
) -> str:
    """The embedding map in words: how many points of each kind it draws, where the looked-up token is, and how far
    from it each of its nearest neighbours (by cosine, in all the dimensions) lies on the map, nearest first: close
    in every dimension need not mean close in two.

    >>> said = map_words({"common token": 200, "looked up": 1}, ("cat", [1.0, 0.0]), [("dog", [1, 3]), ("cow", [1, 1])])
    >>> said.split("; ")
    ['Points on the map: common token 200, looked up 1. "cat" is at (1, 0)', \
'its nearest neighbours lie on the map, nearest first: "cow" 1 away and "dog" 3 away.']
    """
    said = "Points on the map: " + ", ".join(f"{kind} {count}" for kind, count in counts.items() if count) + "."
    if looked_up is None:
        return said
    name, point = looked_up
    said += f" {words.quoted(name)} is at (" + ", ".join(words.number(v) for v in point) + ")"
    away = sorted(((math.dist(point, where), label) for label, where in neighbours), key=lambda pair: pair[0])
    if not away:
        return said + "."
    return (
        said
        + "; its nearest neighbours lie on the map, nearest first: "
        + words.listed([f"{words.quoted(label)} {words.number(distance)} away" for distance, label in away])
        + "."
    )


def angle_words(angle_degrees: float, a_name: str, b_name: str) -> str:
    """The two directions' picture in words: the angle between them and its cosine.

    >>> angle_words(60.0, "v₁", "v₂")
    '"v₁" and "v₂" are 60° apart: cosine 0.5.'
    """
    cosine = math.cos(math.radians(angle_degrees))
    return (
        f"{words.quoted(a_name)} and {words.quoted(b_name)} are {words.number(angle_degrees)}° apart: cosine "
        f"{words.number(cosine)}."
    )


def cosine_words(labels: list[str], matrix: list[list[float]]) -> str:
    """A cosine-similarity matrix in words (rows and columns the same items, ``labels``): the two most alike and the
    two least alike of every different pair.

    >>> cosine_words(["cat", "dog", "the"], [[1, 0.8, 0.1], [0.8, 1, -0.2], [0.1, -0.2, 1]])
    'Most alike: "cat" and "dog" (0.8); least alike: "dog" and "the" (-0.2), of 3 pairs.'
    """
    pairs = [(matrix[i][j], i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))]
    if not pairs:
        return "One item: nothing to compare."
    high = max(pairs, key=lambda pair: pair[0])
    low = min(pairs, key=lambda pair: pair[0])

    def said(pair) -> str:
        value, i, j = pair
        return f"{words.quoted(labels[i])} and {words.quoted(labels[j])} ({words.number(value)})"

    return f"Most alike: {said(high)}; least alike: {said(low)}, of {len(pairs)} pairs."


def closest_words(labels: list[str], points: list[list[float]]) -> str:
    """A map of a few points in words: the two closest and the two farthest apart on it.

    >>> closest_words(["S1", "S2", "S3"], [[0.0, 0.0], [0.0, 1.0], [3.0, 4.0]])
    'Closest on the map: S1 and S2 (1 apart); farthest: S1 and S3 (5 apart).'
    """
    pairs = [(math.dist(points[i], points[j]), i, j) for i in range(len(points)) for j in range(i + 1, len(points))]
    if not pairs:
        return "One point."
    near, far = min(pairs), max(pairs)
    return (
        f"Closest on the map: {labels[near[1]]} and {labels[near[2]]} ({words.number(near[0])} apart); farthest: "
        f"{labels[far[1]]} and {labels[far[2]]} ({words.number(far[0])} apart)."
    )


def sinusoid_words(d_model: int, dims: list[int], positions: int, base: float = 10000.0) -> str:
    """The sinusoidal encoding's chosen dimensions in words: how many positions each one's wave takes to repeat
    (2π · base^(2⌊i/2⌋/d_model)): the higher the dimension, the slower.

    >>> sinusoid_words(64, [0, 10], 64)
    'Along 64 positions: dim 0 (sin) repeats every 6.28 positions, dim 10 (sin) every 26.5; the higher the \
dimension, the slower its wave.'
    """
    if not dims:
        return "No dimension picked."
    waves = [
        f"dim {d} ({'sin' if d % 2 == 0 else 'cos'}) {'repeats every ' if n == 0 else 'every '}"
        f"{words.number(2 * math.pi * base ** (2 * (d // 2) / d_model))}{' positions' if n == 0 else ''}"
        for n, d in enumerate(dims)
    ]
    return f"Along {positions} positions: {', '.join(waves)}; the higher the dimension, the slower its wave."


def rope_angle_words(frequencies: list[float]) -> str:
    """RoPE's angles in words: how far pair 0 and the last pair turn per position, and the positions a full turn
    takes each.

    >>> rope_angle_words([1.0, 0.1, 0.01])
    'Pair 0 turns 1 radian per position (a full turn every 6.28 positions); the last pair, 2, turns 0.01 (a full \
turn every 628).'
    """
    first, last = frequencies[0], frequencies[-1]
    return (
        f"Pair 0 turns {words.number(first)} radian per position (a full turn every "
        f"{words.number(2 * math.pi / first)} positions); the last pair, {len(frequencies) - 1}, turns "
        f"{words.number(last)} (a full turn every {words.number(2 * math.pi / last)})."
    )


def rope_circle_words(pairs: list[int], turns: list[float], last_position: int) -> str:
    """The unit pairs turned on a circle in words: how many full turns each drawn pair makes from position 0 to
    ``last_position``.

    >>> rope_circle_words([0, 31], [2.387, 0.0001], 15)
    'From position 0 to 15, pair 0 makes 2.39 full turns and pair 31 0.0001.'
    """
    said = [
        f"pair {p} {'makes ' if n == 0 else ''}{words.number(t)}{' full turns' if n == 0 else ''}"
        for n, (p, t) in enumerate(zip(pairs, turns, strict=True))
    ]
    return f"From position 0 to {last_position}, {words.listed(said)}."


def vectors_words(labels: list[str], vectors: list[list[float]]) -> str:
    """Your tokens' rows in words: how many values are drawn, the largest in size (whose, where), and the longest
    and shortest row (its length over the dimensions drawn).

    >>> print(vectors_words(["a", "b"], [[0.5, -1.0], [0.3, 0.4]]))
    2 tokens × 2 dimensions. Largest in size: -1 ("a", dimension 1). Longest row "a" (1.12), shortest "b" (0.5).
    """
    size, row, column = max((abs(v), r, c) for r, values in enumerate(vectors) for c, v in enumerate(values))
    lengths = [math.sqrt(sum(v * v for v in values)) for values in vectors]
    longest = max(range(len(lengths)), key=lambda r: lengths[r])
    shortest = min(range(len(lengths)), key=lambda r: lengths[r])
    return (
        f"{len(vectors)} tokens × {len(vectors[0])} dimensions. Largest in size: {words.number(vectors[row][column])} "
        f"({words.quoted(labels[row])}, dimension {column}). Longest row {words.quoted(labels[longest])} "
        f"({words.number(lengths[longest])}), shortest {words.quoted(labels[shortest])} "
        f"({words.number(lengths[shortest])})."
    )


def token_position_words(labels: list[str], token: list[list[float]], position: list[list[float]]) -> list[str]:
    """The three heatmaps of token + position in words (token rows, position rows, their sum): each one's size (the
    mean of |value|); the sum's sentence says what it teaches: the same token at two positions enters block 0 as two
    different rows.

    >>> for said in token_position_words(["a", "b", "a"], [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]],
    ...                                  [[0.0, 0.5], [0.5, 0.0], [0.25, 0.25]]):
    ...     print(said)
    The token rows: 3 tokens × 2 dimensions, mean size 0.5; a token's row is the same wherever it stands.
    The position rows: mean size 0.25, half the token rows'.
    Token + position: "a" at positions 0 and 2 enters block 0 as two different rows, 0.354 apart (its token rows \
are equal).
    """

    def mean_size(matrix: list[list[float]]) -> float:
        return sum(abs(v) for values in matrix for v in values) / max(1, sum(len(values) for values in matrix))

    tok, pos = mean_size(token), mean_size(position)
    ratio = pos / tok if tok else float("inf")
    said_ratio = "half" if abs(ratio - 0.5) < 1e-9 else f"{words.number(ratio)} times"
    sums = [[t + p for t, p in zip(a, b)] for a, b in zip(token, position)]
    first: dict[str, int] = {}
    repeated = None
    for i, label in enumerate(labels):
        if label in first and repeated is None:
            repeated = (first[label], i)
        first.setdefault(label, i)
    if repeated is None:
        ending = "each token's row is moved by its position's, so order is in the input."
    else:
        i, j = repeated
        apart = math.sqrt(sum((x - y) ** 2 for x, y in zip(sums[i], sums[j])))
        ending = (
            f"{words.quoted(labels[i])} at positions {i} and {j} enters block 0 as two different rows, "
            f"{words.number(apart)} apart (its token rows are equal)."
        )
    return [
        f"The token rows: {len(token)} tokens × {len(token[0])} dimensions, mean size {words.number(tok)}; a token's "
        "row is the same wherever it stands.",
        f"The position rows: mean size {words.number(pos)}, {said_ratio} the token rows'.",
        f"Token + position: {ending}",
    ]


def rope_distance_words(distances: list[int], scores: list[float]) -> str:
    """The rotated score against the distance in words: at distance 0, and where it is highest and lowest.

    >>> rope_distance_words([0, 1, 2], [1.5, -0.25, 0.75])
    'The score depends on the distance alone: 1.5 at distance 0, highest 1.5 at distance 0, lowest -0.25 at \
distance 1.'
    """
    if not scores:
        return "No distances to draw."
    high, low = words.extremes(scores)
    return (
        f"The score depends on the distance alone: {words.number(scores[0])} at distance {distances[0]}, highest "
        f"{words.number(scores[high])} at distance {distances[high]}, lowest {words.number(scores[low])} at "
        f"distance {distances[low]}."
    )


def rope_scores_words(scores: list[list[float]], most: int = 3) -> str:
    """The rotated scores at every (m, n) in words: each diagonal (the same distance m − n) holds one number, within
    the largest spread along a diagonal; the first ``most`` distances' numbers.

    >>> rope_scores_words([[1.0, 9.0, 9.0], [0.5, 1.0, 9.0], [0.25, 0.5, 1.0]])
    'Every diagonal (one distance m - n) holds one number, within 0: distance 0 1, distance 1 0.5, distance 2 0.25.'
    """
    size = len(scores)
    spread, said = 0.0, []
    for distance in range(size):
        diagonal = [scores[n + distance][n] for n in range(size - distance)]
        spread = max(spread, max(diagonal) - min(diagonal))
        if distance < most:
            said.append(f"distance {distance} {words.number(diagonal[0])}")
    return f"Every diagonal (one distance m - n) holds one number, within {words.number(spread)}: {', '.join(said)}."


def encoding_words(encoding: list[list[float]]) -> str:
    """The sinusoidal table PE[pos, i] in words: position 0's row (sin 0 = 0, cos 0 = 1), and how far the first and
    the last dimension move over the positions (the first fastest, the last barely).

    >>> encoding_words([[0.0, 1.0, 0.0, 1.0], [0.84, 0.54, 0.01, 1.0], [0.91, -0.42, 0.02, 1.0]])
    'Position 0 reads 0, 1, 0, 1: sin 0 and cos 0. Over 3 positions dimension 0 runs from 0 to 0.91, dimension 2 \
from 0 to 0.02.'
    """
    first = [row[0] for row in encoding]
    last_sine = len(encoding[0]) - 2 if len(encoding[0]) >= 2 else 0
    last = [row[last_sine] for row in encoding]
    head = ", ".join(words.number(v) for v in encoding[0][:4])
    return (
        f"Position 0 reads {head}{', …' if len(encoding[0]) > 4 else ''}: sin 0 and cos 0. Over {len(encoding)} "
        f"positions dimension 0 runs from {words.number(min(first))} to {words.number(max(first))}, dimension "
        f"{last_sine} from {words.number(min(last))} to {words.number(max(last))}."
    )
