"""Words for a picture: the pieces every chart's text alternative is made of (issue 70, "every picture has words").

A screen reader cannot see a bar, a curve or a heatmap's colour; each chart says what it shows in a sentence made
from the same numbers it draws. The sentences of a stage live with its numbers (``llmviz.lessons.sampling``,
``attention``, ``training``, ``flow``); this module holds what they share: how a number is written, how a token is
quoted, a ranking and a trend.

>>> ranked(["the", " a", "of"], [0.12, 0.31, 0.08], 2)
'" a" 0.31 and "the" 0.12'
>>> trend([0, 100, 200, 300], [4.2, 3.0, 2.2, 2.1], "loss")
'loss now 2.1 at step 300, from 4.2 at step 0; over the last quarter of the steps it fell by 0.1'
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def number(value: float) -> str:
    """A number as a student reads it (and a screen reader says it): three significant digits, a large one whole.

    >>> number(0.123456), number(1234.5), number(2.0), number(-0.00012), number(279040.0)
    ('0.123', '1,234', '2', '-0.00012', '279,040')
    """
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def quoted(label) -> str:
    """A token or category in double quotes, its spaces kept (a screen reader says "quote space the quote").

    >>> quoted(" the"), quoted("cat")
    ('" the"', '"cat"')
    """
    return f'"{label}"'


def listed(parts: Sequence[str]) -> str:
    """Parts joined as a sentence lists them.

    >>> listed(["a"]), listed(["a", "b"]), listed(["a", "b", "c"])
    ('a', 'a and b', 'a, b and c')
    """
    parts = list(parts)
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def extremes(values: Sequence[float]) -> tuple[int, int]:
    """Where the largest and the smallest value are (the first of equals), for a sentence that names them.

    >>> extremes([0.5, 2.0, -1.0, 2.0])
    (1, 2)
    """
    return max(range(len(values)), key=lambda i: values[i]), min(range(len(values)), key=lambda i: values[i])


def ranked(labels: Sequence, values: Sequence[float], most: int = 3) -> str:
    """The ``most`` largest values with their labels, largest first (ties keep the drawn order).

    >>> ranked(["x", "y"], [1.0, 2.0], 5)
    '"y" 2 and "x" 1'
    """
    order = sorted(range(len(values)), key=lambda i: -float(values[i]))[:most]
    return listed([f"{quoted(labels[i])} {number(float(values[i]))}" for i in order])


def trend(steps: Sequence[float], values: Sequence[float], name: str, tail: float = 0.25) -> str:
    """Where a curve is now, where it started, and how it moved over its last ``tail`` of the steps: "falling",
    "rising", or "flat" when it moved less than 1% of its value there. NaN points are left out.

    >>> trend([1, 2], [3.0, 3.0], "loss")
    'loss now 3 at step 2, from 3 at step 1; over the last quarter of the steps it stayed flat'
    >>> trend([5], [1.5], "accuracy")
    'accuracy 1.5 at step 5 (one point so far)'
    """
    points = [(s, float(v)) for s, v in zip(steps, values) if v is not None and math.isfinite(float(v))]
    if not points:
        return f"no {name} yet"
    (first_step, first), (last_step, last) = points[0], points[-1]
    if len(points) == 1:
        return f"{name} {number(last)} at step {number(last_step)} (one point so far)"
    since = [p for p in points if p[0] <= last_step - tail * (last_step - first_step)][-1]
    change = last - since[1]
    if abs(change) < 0.01 * max(abs(last), 1e-12) or change == 0:
        moved = "stayed flat"
    else:
        direction = "fell" if change < 0 else "rose"
        moved = f"{direction} by {number(abs(change))}"
    part = {0.25: "quarter", 0.5: "half", 0.1: "tenth"}.get(tail, f"{tail:.0%}")
    return (
        f"{name} now {number(last)} at step {number(last_step)}, from {number(first)} at step {number(first_step)}; "
        f"over the last {part} of the steps it {moved}"
    )
