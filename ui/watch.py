"""Watching a run costs the server a bounded amount of time, however many tabs watch.

Every live section (``ui.panels.runs.live``, the sidebar's progress) reports how long each refresh took with
:func:`record`. When a page opens a live section, :func:`refresh_seconds` picks its refresh interval so that
all the tabs watching on this server together spend at most :data:`BUDGET` seconds of server time per second
(a quarter of one core by default, env ``LLMVIZ_WATCH_BUDGET``), never refreshing faster than every
:data:`FASTEST` seconds nor slower than every :data:`SLOWEST`. One tab watching gets a refresh every 2 s; a
class of 20 watching tabs each refresh less often, and the pages stay fast for everybody.

The registry is per server process (shared by all sessions); it holds only timings and session ids.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from llmviz import settings

FASTEST = 2.0  # seconds between two refreshes of one tab, at best
SLOWEST = 15.0  # at worst (a progress bar that moves every 15 s is still alive)
WINDOW = 20.0  # seconds of history that count
BUDGET = settings.get("LLMVIZ_WATCH_BUDGET")  # server seconds per second for all watching together

_lock = threading.Lock()
_refreshes: deque[tuple[float, str, str, float]] = deque()  # (monotonic time, session, section, seconds)


def record(session: str, section: str, seconds: float, now: float | None = None) -> None:
    """One refresh of the live ``section`` of ``session`` took ``seconds`` of server time."""
    now = time.monotonic() if now is None else now
    with _lock:
        _refreshes.append((now, session, section, seconds))
        _forget(now)


def _forget(now: float) -> None:
    while _refreshes and now - _refreshes[0][0] > WINDOW:
        _refreshes.popleft()


def load(now: float | None = None) -> tuple[int, float]:
    """``(tabs watching, server seconds one tab costs per refresh)`` over the last :data:`WINDOW` seconds.

    A tab may have several live sections (a progress bar and a chart): a refresh costs the mean time of one
    section's refresh times the mean number of live sections per tab.

    >>> reset(); record("a", "chart", 0.2, now=1.0); record("a", "progress", 0.1, now=1.0)
    >>> record("b", "chart", 0.3, now=2.0)
    >>> tabs, cost = load(now=3.0); tabs, round(cost, 3)
    (2, 0.3)
    """
    now = time.monotonic() if now is None else now
    with _lock:
        _forget(now)
        if not _refreshes:
            return 0, 0.0
        sessions = {session for _, session, _, _ in _refreshes}
        sections = {(session, section) for _, session, section, _ in _refreshes}
        mean = sum(seconds for *_, seconds in _refreshes) / len(_refreshes)
    return len(sessions), mean * len(sections) / len(sessions)


def interval(
    watchers: int, cost_per_refresh: float, budget: float = BUDGET, fastest: float = FASTEST, slowest: float = SLOWEST
) -> float:
    """The refresh interval that keeps ``watchers`` tabs, each costing ``cost_per_refresh`` seconds a refresh,
    within ``budget`` seconds of server time per second.

    >>> interval(1, 0.05)       # one tab: as fast as allowed
    2.0
    >>> interval(20, 0.1)       # 20 tabs × 0.1 s every 8 s = 0.25 s per second
    8.0
    >>> interval(40, 0.5)       # never slower than 15 s
    15.0
    """
    if watchers <= 0 or cost_per_refresh <= 0:
        return fastest
    return min(slowest, max(fastest, watchers * cost_per_refresh / budget))


def refresh_seconds(session: str) -> float:
    """The interval for a live section that ``session`` opens now (itself counted as a watcher)."""
    watchers, cost = load()
    with _lock:
        watching = any(s == session for _, s, _, _ in _refreshes)
    return interval(watchers + (0 if watching else 1), cost)


def reset() -> None:
    """Forget every timing (tests)."""
    with _lock:
        _refreshes.clear()
