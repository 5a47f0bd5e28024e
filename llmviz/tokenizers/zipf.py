"""Zipf statistics of a token stream: counts by rank, and a least-squares line through them on log-log axes."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass


def rank_frequency(ids: list[int]) -> list[int]:
    """How often each token occurs, most frequent first (for a log–log Zipf plot).

    >>> rank_frequency([5, 5, 7, 5, 9, 7])
    [3, 2, 1]
    """
    return sorted(Counter(ids).values(), reverse=True)


@dataclass(frozen=True)
class ZipfFit:
    """A least-squares line through (ln rank, ln count): Zipf's law predicts slope ≈ −1 and R² near 1."""

    slope: float
    intercept: float
    r_squared: float

    def count_at(self, rank: float) -> float:
        """The fitted count at ``rank``: e^intercept · rank^slope."""
        return math.exp(self.intercept) * rank**self.slope


def zipf_fit(counts: list[int]) -> ZipfFit | None:
    """Fit ln count = intercept + slope · ln rank over ranks 1..n; ``None`` for fewer than 3 points.

    Counts that follow 1/rank exactly lie on a line of slope −1 with R² = 1:

    >>> fit = zipf_fit([600, 300, 200, 150, 120, 100])
    >>> round(fit.slope, 6), round(fit.r_squared, 6)
    (-1.0, 1.0)
    >>> zipf_fit([5, 5]) is None
    True
    """
    if len(counts) < 3:
        return None
    xs = [math.log(rank) for rank in range(1, len(counts) + 1)]
    ys = [math.log(count) for count in counts]
    if max(ys) == min(ys):  # every count the same: a flat line, fitted exactly (R² = 1 by convention)
        return ZipfFit(0.0, ys[0], 1.0)
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    return ZipfFit(slope, intercept, 1.0 - residual / total if total else 1.0)
