"""Shared by ``benchmarks/load.py`` and ``benchmarks/pages.py``: start the app, drive chromium, wait on the app.

- :func:`require_browser` ends the benchmark with a clear message (not a traceback) when playwright or
  chromium is missing.
- :class:`App` runs ``streamlit run`` on 127.0.0.1 (headless, no file watcher), its output in a log file
  whose tail is printed if it does not start; it is stopped on exit, whatever happens.
- **Waiting on the app's script state.** Streamlit marks its root element (``[data-testid="stApp"]``) with
  ``data-test-connection-state`` and ``data-test-script-state`` (``initial`` → ``running`` → ``notRunning``,
  also ``rerunRequested``). :data:`INIT_SCRIPT`, installed in every page before the app's own scripts, records
  each change of that state with the page's clock (``performance.now()``), so a script run that starts and ends
  between two polls is still seen, and the moment a run ended is known to the millisecond, not to the next
  poll. :class:`StateLog` keeps those events on the Python side and maps them onto ``time.monotonic()``.
- :func:`machine` says where the numbers were taken: CPU model, cores, load average, date.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # tests.support.app_server, the one helper that starts the app
    sys.path.insert(0, str(ROOT))
if TYPE_CHECKING:
    from tests.support.app_server import AppServer
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ERROR_BOXES = "[data-testid='stException'], [data-testid='stAlertContentError']"

# The named reference of the page benchmarks: a bare Streamlit page that imports torch and draws one 48 × 48
# Plotly heatmap under one slider ("Size"), logging its server time like the app (LLMVIZ_TIMINGS). pages.py
# times its open and its slider rerun; load.py opens it in 20 fresh browsers at once (the floor of that row).
REFERENCE_PAGE = """
import json, os, time
_start = time.perf_counter()
import plotly.graph_objects as go
import streamlit as st
import torch

size = st.slider("Size", 8, 64, 48)
torch.manual_seed(0)
st.plotly_chart(go.Figure(go.Heatmap(z=torch.rand(size, size).tolist())))
with open(os.environ["LLMVIZ_TIMINGS"], "a") as out:
    out.write(json.dumps({"section": "page:reference", "seconds": time.perf_counter() - _start, "rerun": False}) +
    "\\n")
"""

# Runs in every document before the app's scripts: records each change of the app's state with the page clock.
INIT_SCRIPT = """
(() => {
  if (window.__llmvizState) return;
  const log = window.__llmvizState = {id: Math.random(), events: [], state: null};
  const record = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    let state = 'none';
    if (app) {
      state = app.getAttribute('data-test-connection-state') !== 'CONNECTED' ? 'connecting'
            : (app.getAttribute('data-test-script-state') || 'none');
    }
    if (state !== log.state) { log.state = state; log.events.push([performance.now(), state]); }
  };
  log.record = record;
  const watch = new MutationObserver(record);
  const start = () => {
    watch.observe(document, {subtree: true, attributes: true,
                             attributeFilter: ['data-test-script-state', 'data-test-connection-state']});
    // until the app's root exists, also look at every insertion (then only the two attributes matter)
    const until = new MutationObserver(() => { record(); if (document.querySelector('[data-testid="stApp"]'))
    until.disconnect(); });
    until.observe(document, {subtree: true, childList: true});
    record();
  };
  if (document.documentElement) start(); else document.addEventListener('DOMContentLoaded', start);
})();
"""

# Returns the events recorded since index ``from`` (and the page's clock now), for StateLog.update.
READ_STATE = """(from) => {
  const log = window.__llmvizState;
  if (!log) return null;
  log.record();
  return {id: log.id, now: performance.now(), total: log.events.length, events: log.events.slice(from)};
}"""


class BenchmarkError(Exception):
    """The app did not reach the state a benchmark waits for (counted as an error, reported in one line)."""


def require_browser() -> None:
    """Stop with a clear message when the real browser cannot be driven."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        raise SystemExit(
            "This benchmark drives a real browser: install playwright (pip install playwright); "
            f"it uses the system chromium at {CHROMIUM}, never a downloaded one."
        ) from None
    if not Path(CHROMIUM).exists():
        raise SystemExit(
            f"This benchmark drives a real browser, and {CHROMIUM} is not installed "
            "(Debian/Ubuntu: sudo apt-get install -y chromium)."
        )


def launch_failed(error: Exception) -> SystemExit:
    return SystemExit(f"chromium at {CHROMIUM} did not start: {str(error).splitlines()[0][:300]}")


def free_port(preferred: int) -> int:
    """``preferred`` or one of the 9 ports after it, whichever is free on 127.0.0.1."""
    for port in range(preferred, preferred + 10):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise SystemExit(f"no free port in {preferred}-{preferred + 9} (use --port)")


class App:
    """``streamlit run <script>`` on 127.0.0.1:``port`` while the ``with`` block runs.

    ``env``: extra environment (e.g. ``LLMVIZ_TIMINGS``). Runs and downloads of the benchmark go to a temporary
    folder (``LLMVIZ_RUNS_DIR``), never the developer's ``runs/``; the corpus cache stays the usual one, so its
    caches are warm as a teacher's would be. With ``timings`` (the default) the server logs the server time of
    every page run and section run to :attr:`timings` (``LLMVIZ_TIMINGS``, see ``ui/sections.py``).
    """

    def __init__(
        self,
        script: str = "app.py",
        port: int = 8520,
        env: dict[str, str] | None = None,
        start_timeout_s: float = 120,
        timings: bool = True,
    ):
        self.script, self.port, self.extra_env, self.start_timeout_s = script, port, env or {}, start_timeout_s
        self.folder = Path(tempfile.mkdtemp(prefix="llmviz-bench-app-"))
        self.log_path = self.folder / "server.log"
        self.timings = self.folder / "timings.jsonl"  # LLMVIZ_TIMINGS: server time of each page and section run
        if timings:
            self.extra_env = {"LLMVIZ_TIMINGS": str(self.timings), **self.extra_env}
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen | None = None
        self.server: AppServer | None = None

    def __enter__(self) -> App:
        (self.folder / "runs").mkdir()
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
            "PYTHONPATH": str(ROOT),
            "LLMVIZ_RUNS_DIR": str(self.folder / "runs"),
            **self.extra_env,
        }
        from tests.support.app_server import AppDidNotStart, start_app  # the one way the repository starts the app

        try:
            self.server = start_app(
                self.script, port=self.port, env=env, log=self.log_path, timeout_s=self.start_timeout_s
            )
        except AppDidNotStart as error:
            raise SystemExit(f"streamlit did not start on port {self.port}:\n{error}") from error
        self.process = self.server.process
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def stop(self) -> None:
        """Stop the server and close its log (tests.support.app_server's own stop)."""
        if self.server is not None:
            self.server.stop()

    def log_tail(self, chars: int = 2000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def server_errors(self) -> list[str]:
        """The last line (the exception) of each traceback the server printed: an exception a page did not
        catch, a crashed worker…"""
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(errors="replace").splitlines()
        found = []
        for number, line in enumerate(lines):
            if line.startswith("Traceback"):
                found.append(
                    next(
                        (after for after in lines[number + 1 :] if after and not after[0].isspace()),
                        "(traceback cut off)",
                    )
                )
        return found


class StateLog:
    """The app's state changes in one page, on the ``time.monotonic()`` clock of this process.

    Feed it what :data:`READ_STATE` returned (:meth:`update`); ask how many state changes there have been
    (:attr:`count`, to see a new script run after a click), when the page went quiet (:meth:`quiet_since`)
    and how much of the last seconds it was idle (:meth:`idle_fraction`).

    >>> log = StateLog()
    >>> log.update({"id": 1, "now": 5000.0, "total": 3, "events": [[1000.0, "initial"], [1200.0, "running"],
    ...                                                             [3000.0, "notRunning"]]}, monotonic=105.0)
    >>> log.state, log.count, log.quiet_since(1.0)   # notRunning since page time 3 s = monotonic 103 s
    ('notRunning', 3, 103.0)
    >>> round(log.idle_fraction(3.0, now=105.0), 3)   # idle from 103 to 105 of the window 102-105
    0.667
    """

    def __init__(self):
        self.page_id = None
        self.page_events: list[tuple[float, str]] = []  # (page clock seconds, state)
        self.offset = 0.0  # monotonic = page seconds + offset (the smallest seen: the least latency)
        self.last_update = 0.0

    @property
    def events(self) -> list[tuple[float, str]]:
        """``(monotonic seconds, state)`` of every change."""
        return [(t + self.offset, state) for t, state in self.page_events]

    @property
    def count(self) -> int:
        return len(self.page_events)

    @property
    def state(self) -> str:
        return self.page_events[-1][1] if self.page_events else "none"

    def update(self, result: dict | None, monotonic: float | None = None) -> None:
        monotonic = time.monotonic() if monotonic is None else monotonic
        self.last_update = monotonic
        if not result:
            return
        offset = monotonic - result["now"] / 1000
        if result["id"] != self.page_id:  # a new document (goto, reload): its own clock and events
            self.page_id, self.page_events, self.offset = result["id"], [], offset
        self.offset = min(self.offset, offset)
        # the events were fetched from index self.count, so they all are new
        self.page_events.extend((t / 1000, state) for t, state in result["events"])

    def trace(self, since: int, origin: float) -> str:
        """The changes from index ``since``, in seconds after ``origin``: "1.29 running, 2.33 notRunning"."""
        return ", ".join(f"{t - origin:.2f} {state}" for t, state in self.events[since:]) or "no change"

    def changed_since(self, index: int) -> list[str]:
        return [state for _, state in self.page_events[index:]]

    def quiet_since(self, quiet_s: float, now: float | None = None) -> float | None:
        """When the app went ``notRunning`` (connected, no script running), if it has stayed so ``quiet_s``."""
        now = self.last_update if now is None else now
        if not self.events or self.state != "notRunning":
            return None
        since = self.page_events[-1][0] + self.offset
        return since if now - since >= quiet_s else None

    def idle_fraction(self, window_s: float, now: float | None = None) -> float:
        """The share of the last ``window_s`` seconds the app spent ``notRunning``."""
        now = self.last_update if now is None else now
        start, idle = now - window_s, 0.0
        for (t, state), following in zip(self.events, [*self.events[1:], (now, None)]):
            begin, end = max(t, start), min(following[0], now)
            if state == "notRunning" and end > begin:
                idle += end - begin
        return idle / window_s


def read_state(page, log: StateLog) -> StateLog:
    """Sync playwright: bring ``log`` up to date."""
    result = page.evaluate(READ_STATE, log.count if log.page_id is not None else 0)
    if result and result["id"] != log.page_id:
        result = page.evaluate(READ_STATE, 0)
    log.update(result)
    return log


async def read_state_async(page, log: StateLog) -> StateLog:
    """Async playwright: bring ``log`` up to date."""
    result = await page.evaluate(READ_STATE, log.count if log.page_id is not None else 0)
    if result and result["id"] != log.page_id:
        result = await page.evaluate(READ_STATE, 0)
    log.update(result)
    return log


def settled(log: StateLog, started: float, quiet_s: float, live: bool) -> float | None:
    """The moment the app settled, once it has (else None).

    Not live: the app has been ``notRunning`` for ``quiet_s``: it settled when it went ``notRunning``.
    Live (a page with a section that refreshes every few seconds, a run training): the same, or, once 3 s have
    passed, the last 3 s were at least 75 % idle (only those short refreshes): it settled at the last moment it
    went ``notRunning`` (or now, if it is running a refresh)."""
    quiet = log.quiet_since(quiet_s)
    if quiet is not None:
        return quiet
    now = log.last_update
    if live and now - started >= 3.0 and log.idle_fraction(3.0) >= 0.75:
        idle_starts = [t for t, state in log.events if state == "notRunning"]
        return idle_starts[-1] if idle_starts and log.state == "notRunning" else now
    return None


def wait_settled(
    page,
    log: StateLog,
    *,
    started: float,
    after: int | None = None,
    timeout_s: float = 180,
    quiet_s: float = 1.0,
    live: bool = False,
    start_bound_s: float = 10.0,
    ready=None,
) -> float:
    """Sync playwright: wait until the app has settled; returns when it settled (monotonic seconds).

    ``after``: a state-change count taken before an action; the app must first be seen to leave
    ``notRunning`` after it (a new script run), or ``start_bound_s`` must pass with none. ``ready(page)``: an
    extra condition (the element that should have changed)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        read_state(page, log)
        begun = (
            after is None
            or any(s != "notRunning" for s in log.changed_since(after))
            or (time.monotonic() - started > start_bound_s)
        )
        end = settled(log, started, quiet_s, live) if begun else None
        if end is not None and end < started:  # no run seen since the action: it has not settled, it is idle
            end = started
        if end is not None and (ready is None or ready(page)):
            return end
        time.sleep(0.1)
    raise BenchmarkError(
        f"the page did not settle within {timeout_s:.0f} s (state: {log.state}"
        + ("" if ready is None else ", the expected change not on the page")
        + f"; seen since the start: {log.trace(after or 0, started)})"
    )


async def wait_settled_async(
    page,
    log: StateLog,
    *,
    started: float,
    after: int | None = None,
    timeout_s: float = 180,
    quiet_s: float = 1.0,
    live: bool = False,
    start_bound_s: float = 10.0,
    ready=None,
) -> float:
    """Async playwright: :func:`wait_settled`; ``ready`` is an async function of the page."""
    import asyncio

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        await read_state_async(page, log)
        begun = (
            after is None
            or any(s != "notRunning" for s in log.changed_since(after))
            or (time.monotonic() - started > start_bound_s)
        )
        end = settled(log, started, quiet_s, live) if begun else None
        if end is not None and end < started:  # no run seen since the action: it has not settled, it is idle
            end = started
        if end is not None and (ready is None or await ready(page)):
            return end
        await asyncio.sleep(0.15)
    raise BenchmarkError(
        f"the page did not settle within {timeout_s:.0f} s (state: {log.state}"
        + ("" if ready is None else ", the expected change not on the page")
        + f"; seen since the start: {log.trace(after or 0, started)})"
    )


# ---------------------------------------------------------------------------- numbers and the machine


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) with ``statistics.quantiles(method="inclusive")``: never outside the samples.

    >>> quantile([1.0, 2.0, 3.0], 0.95), quantile([4.0], 0.95)
    (2.9, 4.0)
    """
    if len(values) == 1:
        return values[0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")  # 99 cut points: cuts[k - 1] is the k-th %
    return cuts[round(q * 100) - 1]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


def machine(load_before: str) -> list[str]:
    """Lines that say where and when: CPU, cores, load average before the benchmark, date, versions."""
    import streamlit

    return [
        f"Machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}; "
        f"Python {platform.python_version()}, Streamlit {streamlit.__version__}.",
        f"Load average before starting: {load_before}; after: {load_average()}.",
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC.",
    ]


def fmt_s(seconds: float | None, digits: int = 2) -> str:
    return "-" if seconds is None or math.isnan(seconds) else f"{seconds:.{digits}f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table (pastes into the README as it is)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
