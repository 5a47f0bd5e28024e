"""Two sides measured in alternating rounds: the one way llmviz's side-by-side benchmarks compare speeds.

A benchmark that times one side and then the other compares two different machines when the load changes in
between (``benchmarks/sae.py`` once gave 1.26× and then 1.69× for the same code). Here the work is cut into rounds;
in each round both sides run the same amount of it, the side that goes first alternating, and the round's ratio is
taken at once, so that a change in the load falls on both sides of the ratio. What is reported is the **median of
the per-round ratios** with its spread (the quartiles and the extremes) and the load average: a median is not moved
by the few rounds a burst of load fell on.

    >>> clock = iter([0.0, 1.0, 1.0, 3.0, 3.0, 5.0, 5.0, 6.0]).__next__  # a: 1 s then 2 s; b: 2 s then 1 s
    >>> rounds = alternate({"a": lambda: None, "b": lambda: None}, 2, clock=clock)
    >>> rounds.seconds
    {'a': [1.0, 1.0], 'b': [2.0, 2.0]}
    >>> rounds.ratios("b", "a")  # b's seconds over a's, per round: how many times as fast a is
    [2.0, 2.0]
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def load_average() -> str:
    """The 1, 5 and 15 min load averages, or "unknown" where the system has none."""
    try:
        return " / ".join(f"{value:.1f}" for value in os.getloadavg()) + " (1 / 5 / 15 min)"
    except (OSError, AttributeError):
        return "unknown"


@dataclass
class Rounds:
    """Each side's time (seconds, wall-clock or CPU) in every round, in order."""

    seconds: dict[str, list[float]] = field(default_factory=dict)

    def add(self, side: str, seconds: float) -> None:
        """One more round of ``side`` (a side's n-th value pairs with the other side's n-th)."""
        self.seconds.setdefault(side, []).append(seconds)

    def ratios(self, slower: str, faster: str) -> list[float]:
        """``slower``'s time over ``faster``'s in each round both ran (> 1: ``faster`` is faster)."""
        pairs = zip(self.seconds.get(slower, []), self.seconds.get(faster, []), strict=False)
        return [a / b for a, b in pairs if b > 0]

    def median(self, slower: str, faster: str) -> float:
        return statistics.median(self.ratios(slower, faster))

    def summary(self, slower: str, faster: str) -> str:
        """The median per-round ratio with its spread, in words.

        >>> rounds = Rounds({"ref": [1.0, 1.2, 1.1, 3.0, 1.0], "ours": [1.0, 1.0, 1.0, 1.0, 1.0]})
        >>> rounds.summary("ref", "ours")
        'median 1.10× over 5 rounds (quartiles 1.00-1.20×, extremes 1.00-3.00×)'
        """
        return spread_text(self.ratios(slower, faster))


def spread_text(ratios: list[float]) -> str:
    """``ratios``' median, quartiles and extremes, in words (the quartiles by the inclusive method)."""
    if not ratios:
        return "no rounds"
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}× (one round)"
    low, _, high = statistics.quantiles(ratios, n=4, method="inclusive")
    return (
        f"median {statistics.median(ratios):.2f}× over {len(ratios)} rounds "
        f"(quartiles {low:.2f}-{high:.2f}×, extremes {min(ratios):.2f}-{max(ratios):.2f}×)"
    )


def alternate(
    sides: dict[str, Callable[[], object]], rounds: int, clock: Callable[[], float] = time.perf_counter
) -> Rounds:
    """Run every side's ``sides[name]()`` (one round's work) ``rounds`` times, the sides' order reversed every other
    round, timing each call with ``clock``."""
    found = Rounds()
    order = list(sides)
    for index in range(rounds):
        for name in order if index % 2 == 0 else order[::-1]:
            start = clock()
            sides[name]()
            found.add(name, clock() - start)
    return found


def child_rounds(
    pipes: dict, sides: list[str] | tuple[str, ...], steps: int, round_steps: int
) -> tuple[Rounds, Rounds]:
    """Rounds over child processes, one a side, each answering ``(wall seconds, CPU seconds)`` for the number of steps
    it is sent (``pipes[side][0]`` is the parent's end): ``steps`` in rounds of ``round_steps``, the side that goes
    first alternating; the first round (each side's set-up: lazy imports, first arenas) is not compared. Returns the
    wall-clock and the CPU rounds."""
    wall, cpu = Rounds(), Rounds()
    done = 0
    while done < steps:
        count = min(round_steps, steps - done)
        for name in sides if (done // round_steps) % 2 == 0 else list(sides)[::-1]:
            pipes[name][0].send(count)
            seconds, cpu_seconds = pipes[name][0].recv()
            if done:
                wall.add(name, seconds)
                cpu.add(name, cpu_seconds)
        done += count
    return wall, cpu
