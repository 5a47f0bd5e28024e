"""A class measured at the server: N students open a page at once, then flip a toggle, over Streamlit's own protocol.

    python benchmarks/class_load.py [--students 40,80] [--page attention] [--toggle mask] [--toggles 2]
        [--query attention_tab=Step+by+step]
                                    [--fresh 20] [--phases quiet,training] [--port 8530] [--budget 1500]
                                    [--setup one-process|two-process] [--database sqlite|postgresql]
                                    [--registry sqlite] [--record docs/benchmarks/class_load.md]
    python benchmarks/class_load.py --setup two-process --students 40,80 --registry sqlite --record …
                                    # the documented class set-up: 2 app processes behind Caddy, one lab
    python benchmarks/class_load.py --validate     # the protocol client against one real chromium session
    python benchmarks/class_load.py --scenario follow --setup two-process --students 80 [--rounds 2] [--moves 3]
                                    # a class following the teacher, alternating with one that follows nobody
                                    # (issue 69: benchmarks/_class_follow.py says what is timed)
    python benchmarks/class_load.py --registry sqlite,postgresql [--students 80] [--record …]
                                    # the database's cost per open: the lab's registry calls a page open makes

Each student's laptop draws their own page; the server only runs the page script and sends what it drew. So a class
is measured at the server with a client that speaks the browser's protocol (``benchmarks/_protocol_client.py``: one
websocket per student, protobuf messages, costing this machine almost nothing), not with browsers sharing the server's
cores. ``--validate`` checks once that the client is what a browser is to the server: the same script runs, the same
number of deltas for the open and for the toggle, the same widget values sent.

For each number of students (``--students``), in one run, on one machine:

- **reference**: a bare Streamlit page (``_app.REFERENCE_PAGE``: import torch, one 48 × 48 Plotly heatmap under a
  slider) served by a second server: N students open it at once, then move its slider ``--toggles`` times, all at
  once — what any Streamlit app costs;
- **app**: N students open ``--page`` (``/attention``, with ``--query``: its "Step by step" tab) at once, then
  each flips the ``--toggle`` widget (the causal mask, inside a section: a fragment rerun) ``--toggles`` times, all
  at once; in two phases, ``quiet`` (nothing else running) and ``training`` (2 more students each pressed Train on
  the Training page first: their runs train in worker processes, and their pages refresh the live sections while
  the class works, as a browser's timer reruns each ``run_every`` section: ``Student.live``); every student is a
  browser of its own (a fresh identity secret in its ``llmviz_student`` cookie), so shares count per student;
- **static**: ``--fresh`` browsers with an empty cache at once: each downloads the static files a first visit loads
  (the HTML, then Streamlit's JavaScript, CSS and fonts, gzip-compressed as a browser asks) — Python serves them.

``--setup two-process`` measures the set-up docs/classroom.md documents for a class on one machine ("Serving a
bigger class", step by step), started here and stopped at the end: two ``streamlit run app.py`` processes with one
cookie secret, one runs folder and one lab database (SQLite ``runs/lab.db``; ``--database postgresql``: a throwaway
PostgreSQL cluster, ``tests/support/postgres.py``), ``LLMVIZ_MAX_JOBS`` (``--max-jobs``, 2) runs training at once on
the machine, ``LLMVIZ_TRUSTED_PROXIES=127.0.0.1``, a teacher key; and Caddy in front with
``examples/classroom/Caddyfile`` (static files from disk, the sticky cookie ``llmviz_backend``). Every student
first does what a browser's first request does, a GET of the page's HTML through Caddy (with its identity cookie,
before the timed websocket open), and sends the cookies it got (Caddy's sticky one: the process it lands on) with its
websocket; the notes under the table say how the class spread over the two processes. The teacher (its own browser,
given the teacher key once) has the class view (``/classroom``) open through Caddy from before the quiet phase to
the end of the training phase, its live section refreshing (the notes say how often); in the training phase the
class starts once both runs have taken a step, and the notes give each run's steps at the class's start and end (an
error of the open row if one did not advance). Warm-up opens the pages in each process directly. Server CPU is both
app processes summed; Caddy's CPU is its own column. **The database's cost per open**: each app process logs, per
page run, the time its thread spent in database statements (``ui/sections.py`` with ``LLMVIZ_TIMINGS``), reported
as p50 / p95 ms per ``--page`` run; with ``--registry sqlite`` the same invocation then also times the registry
calls of an open for students with 3 kept runs each (below).

Reported: p50 / p95 / max seconds (``_app.quantile``: ``statistics.quantiles(method="inclusive")``), errors (a run that
failed, timed out, or drew an exception or an error box), and the server's CPU seconds per open or per flip: the
``utime + stime`` of the server process (``/proc/<pid>/stat``; its threads included, the training workers, which are
processes of their own, not). Budgets (issue "one student cannot break the class"), on a quiet 2-core machine: 40
students open the page p95 ≤ 3 s, 80 students ≤ 6 s, 80 students flip the toggle p95 ≤ 2 s, with and without 2 runs
training, 0 errors. Bounded: at most 120 students, 127.0.0.1 only, ``--budget`` seconds in all (the table so far is
printed if it runs out); the servers are stopped at the end whatever happens. Run it on a quiet machine: other work
on the CPU inflates every number, so the load average is printed beside them.

``--registry``: the database's cost per page open, alone (:func:`registry_cost`). A lab of N students with 3 kept
runs each (300 curve points and 6 snapshot rows a run) on a fresh SQLite file and/or a throwaway PostgreSQL cluster
(Debian's; ``tests/support/postgres.py``), then every student opens a page: the registry calls an open makes
(the sidebar's picker: the student's runs with the orphan check, and their kept snapshot steps; the teacher flag),
timed one student after the other and with 8 at once (threads, as Streamlit serves sessions).

Not in rounds: its verdicts are absolute budgets (p95 seconds for a class, errors), and the bare page is
the floor printed beside them, never a side it is divided by.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _app  # noqa: E402
from _protocol_client import ProtocolError, Run, Student  # noqa: E402

MAX_STUDENTS = 120
BUDGETS = {  # (page, students, what) → p95 seconds
    ("app", 40, "open"): 3.0,
    ("app", 80, "open"): 6.0,
    ("app", 80, "toggle"): 2.0,
}
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int | list[int]) -> float:
    """The CPU seconds process ``pid`` (or the processes of a list) have used so far, all their threads:
    ``utime + stime`` of ``/proc/<pid>/stat`` (NaN for a process that cannot be read, or none given)."""
    total = float("nan") if not pid else 0.0
    for one in pid if isinstance(pid, list) else [pid]:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        total += (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15 of stat(5), after "pid (comm) state"
    return total


@dataclass
class Row:
    """One line of the table: what was measured, its samples, its errors and the server's CPU seconds per sample."""

    where: str  # "reference", "app", "static"
    phase: str  # "quiet" or "training"
    students: int
    what: str  # "open", "toggle", "fresh browser"
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu_per: float = float("nan")
    proxy_cpu_per: float = float("nan")  # Caddy's CPU seconds per sample (the two-process set-up)
    db_ms: list[float] = field(default_factory=list)  # database time of each page open, in the app (ms)

    def cells(self) -> list[str]:
        values = self.seconds or [float("nan")]
        budget = BUDGETS.get((self.where, self.students, self.what))
        p95 = _app.quantile(values, 0.95)
        met = "" if budget is None else ("yes" if p95 <= budget and not self.errors else "**no**")
        database = (
            f"{_app.quantile(self.db_ms, 0.5):.1f} / {_app.quantile(self.db_ms, 0.95):.1f}" if self.db_ms else "—"
        )
        return [
            {
                "reference": "bare Streamlit page (reference)",
                "app": f"llmviz /{ARGS.page}" + (f" at {ARGS.url}" if ARGS.url else ""),
                "static": "static files" + (f" at {ARGS.url}" if ARGS.url else ""),
            }[self.where],
            "1 process" if self.where == "reference" else SETUP_NAME.get(ARGS.setup, ARGS.setup),
            self.phase,
            str(self.students),
            self.what,
            _app.fmt_s(_app.quantile(values, 0.5)),
            _app.fmt_s(p95),
            _app.fmt_s(max(values)),
            str(len(self.errors)),
            _app.fmt_s(self.cpu_per, 3),
            _app.fmt_s(self.proxy_cpu_per, 4) if ARGS.setup == "two-process" and self.where != "reference" else "—",
            database,
            "—" if budget is None else f"≤ {budget:g} s",
            met,
        ]


HEADER = [
    "page",
    "set-up",
    "phase",
    "students",
    "action",
    "p50 s",
    "p95 s",
    "max s",
    "errors",
    "server CPU-s each",
    "Caddy CPU-s each",
    "DB ms per open p50 / p95",
    "budget",
    "met",
]


def errors_of(outcome) -> list[str]:
    if isinstance(outcome, BaseException):
        return [f"{type(outcome).__name__}: {outcome}"[:200]]
    return list(outcome.errors)


COOKIE = "llmviz_student"  # ui/identity.py: the browser's secret, which makes it one student
STICKY = "llmviz_backend"  # examples/classroom/Caddyfile: the cookie that keeps a browser on one app process
SETUP_NAME = {"one-process": "1 process", "two-process": "2 processes + Caddy"}


@dataclass
class Setup:
    """What is being measured: where students connect, the app processes (their CPU, their timing logs), Caddy,
    the runs folder and database they share, and the teacher key (the two-process set-up)."""

    url: str
    pids: list[int]
    timings: list[Path]
    runs: Path | None = None
    database: str | None = None  # LLMVIZ_DATABASE_URL; None: SQLite under the runs folder
    proxy_pid: int | None = None
    backends: dict[str, str] = field(default_factory=dict)  # Caddy's sticky cookie value → "process :port"
    teacher_key: str = ""
    apps: list[_app.App] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines printed under the table


SETUP = Setup("", [], [])


def student_of(secret: str) -> str:
    """The student id the app makes of a browser secret (``ui.identity.student_from_secret``; the benchmark does
    not import the app's ``ui`` package).

    >>> student_of("A" * 32)
    's-b0cf14dd25766605c6177d345c848518'
    """
    return "s-" + hashlib.sha256(f"llmviz-student:{secret}".encode()).hexdigest()[:32]


def sticky_value(dial: str) -> str:
    """The value Caddy's ``lb_policy cookie`` gives a browser it sends to upstream ``dial`` (an HMAC-SHA256 of the
    address, with the policy's secret, empty here): how the benchmark tells which process a student landed on."""
    return hmac.new(b"", dial.encode(), hashlib.sha256).hexdigest()


def landing(url: str, path: str, secret: str) -> str:
    """A browser's first request: the page's HTML, with the student's identity cookie. Returns the cookies the
    browser then sends with its websocket: the identity, and what the answer set (Caddy's sticky cookie, which
    picks the app process; Streamlit's XSRF cookie)."""
    request = urllib.request.Request(f"{url}/{path}", headers={"Cookie": f"{COOKIE}={secret}"})
    with urllib.request.urlopen(request, timeout=ARGS.timeout) as answer:
        answer.read()
        set_cookies = answer.headers.get_all("Set-Cookie") or []
    jar = {COOKIE: secret}
    for line in set_cookies:
        name, _, value = line.split(";", 1)[0].partition("=")
        jar[name.strip()] = value.strip()
    return "; ".join(f"{name}={value}" for name, value in jar.items())


async def enrol(url: str, path: str, count: int) -> tuple[list[Student], list[str]]:
    """``count`` new students, each a browser of its own: a fresh identity secret in its cookie (so the app counts
    each one's shares apart), and behind a proxy the cookies of its first request (the process it sticks to).
    Returns the students and their secrets."""
    chosen = [secrets.token_urlsafe(24) for _ in range(count)]
    if ARGS.setup == "two-process" or ARGS.url:
        cookies = await asyncio.gather(*(asyncio.to_thread(landing, url, path, secret) for secret in chosen))
    else:
        cookies = [f"{COOKIE}={secret}" for secret in chosen]
    students = [Student(url, timeout_s=ARGS.timeout, headers={"Cookie": cookie}) for cookie in cookies]
    return students, chosen


def spread(students: list[Student]) -> str:
    """How many students each app process serves (by Caddy's sticky cookie): "process :8731 41, process :8732 39"."""
    counts: dict[str, int] = {}
    for student in students:
        jar = dict(part.split("=", 1) for part in student.headers.get("Cookie", "").split("; ") if "=" in part)
        where = SETUP.backends.get(jar.get(STICKY, ""), "no sticky cookie" if STICKY not in jar else "unknown")
        counts[where] = counts.get(where, 0) + 1
    return ", ".join(f"{where} {n}" for where, n in sorted(counts.items()))


def timing_marks() -> list[int]:
    """Where each app process's timing log ends now (LLMVIZ_TIMINGS)."""
    return [path.stat().st_size if path.exists() else 0 for path in SETUP.timings]


def database_ms(marks: list[int], page: str) -> list[float]:
    """The database time (ms) of each run of ``page`` the app processes logged since ``marks``: the lab's registry
    statements on the page run's own thread (``ui/sections.py``: ``db_seconds``)."""
    found = []
    for path, mark in zip(SETUP.timings, marks):
        if not path.exists():
            continue
        with path.open("rb") as log:
            log.seek(mark)
            for line in log.read().decode(errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("section") == f"page:{page}" and "db_seconds" in entry:
                    found.append(entry["db_seconds"] * 1000)
    return found


async def open_all(url: str, path: str, count: int, pid, query: str = "") -> tuple[list[Student], Row]:
    """``count`` students open ``path`` (with the link's ``query``) at the same moment; the row holds each open's
    seconds and errors, the server's (and Caddy's) CPU seconds per open and the database time of each page run."""
    students, _ = await enrol(url, path, count)
    proxy = SETUP.proxy_pid if pid == SETUP.pids else None
    marks = timing_marks() if pid == SETUP.pids else []
    before, proxy_before = cpu_seconds(pid), cpu_seconds(proxy) if proxy else float("nan")
    outcomes = await asyncio.gather(*(student.open(path, query) for student in students), return_exceptions=True)
    row = Row("", "", count, "open", cpu_per=(cpu_seconds(pid) - before) / count)
    if proxy:
        row.proxy_cpu_per = (cpu_seconds(proxy) - proxy_before) / count
    if marks:
        row.db_ms = database_ms(marks, path)
    for outcome in outcomes:
        if isinstance(outcome, Run):
            row.seconds.append(outcome.seconds)
        row.errors += errors_of(outcome)
    return students, row


async def toggle_all(students: list[Student], key: str, values: list, pid) -> Row:
    """Every student flips widget ``key`` through ``values`` (one flip each at the same moment, then the next)."""
    row = Row("", "", len(students), "toggle")
    proxy = SETUP.proxy_pid if pid == SETUP.pids else None
    before, proxy_before = cpu_seconds(pid), cpu_seconds(proxy) if proxy else float("nan")
    live = [student for student in students if student.socket is not None and student.widgets]
    for value in values:
        outcomes = await asyncio.gather(*(s.set_widget(key, value) for s in live), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Run):
                row.seconds.append(outcome.seconds)
            row.errors += errors_of(outcome)
    row.errors += [f"never opened ({len(students) - len(live)} students)"] if len(live) < len(students) else []
    row.cpu_per = (cpu_seconds(pid) - before) / max(1, len(live) * len(values))
    if proxy:
        row.proxy_cpu_per = (cpu_seconds(proxy) - proxy_before) / max(1, len(live) * len(values))
    return row


async def close_all(students: list[Student]) -> None:
    await asyncio.gather(*(student.close() for student in students), return_exceptions=True)


async def start_training(url: str) -> tuple[list[Student], list[str]]:
    """Two students each press Train on the Training page (GPT micro, 2,000 steps, batch 32: longer than the phase)
    and stay on it, their live sections refreshing, as a student watching a run does. Returns them and their
    student ids."""
    trainers, chosen = await enrol(url, "training", 2)
    for student in trainers:
        opened = await student.open("training", "steps=2000&batch=32")
        if opened.errors:
            raise ProtocolError(f"the Training page did not open cleanly: {opened.errors[:1]}")
        clicked = await student.click("train")
        if clicked.errors:
            raise ProtocolError(f"Train did not start a run: {clicked.errors[:1]}")
    for student in trainers:
        student.reader = asyncio.ensure_future(student.live())
    return trainers, [student_of(secret) for secret in chosen]


def training_steps(students: list[str]) -> dict[str, tuple[str, int]]:
    """The runs of ``students`` in the lab's registry (the database the app processes share): run id → (state,
    step). Empty when the set-up's registry is not known (``--url``)."""
    if SETUP.runs is None:
        return {}
    from llmviz.lab.classroom import class_rows
    from llmviz.lab.registry import Registry, default_url

    registry = Registry(SETUP.database or default_url(SETUP.runs))
    try:
        return {row.run_id: (row.state, row.step) for row in class_rows(registry) if row.student in students}
    finally:
        registry.dispose()


async def first_steps(students: list[str], timeout_s: float = 180) -> dict[str, tuple[str, int]]:
    """Wait until both runs of ``students`` have taken a step (a worker process starts first), at most
    ``timeout_s``; returns their steps then (the phase's start)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = training_steps(students)
        if SETUP.runs is None or (len(found) >= 2 and all(step >= 1 for _, step in found.values())):
            return found
        if time.monotonic() > deadline:
            return found  # check_training reports it
        await asyncio.sleep(0.5)


async def later_steps(students: list[str], before: dict[str, tuple[str, int]], wait_s: float = 3.0):
    """The steps of the runs of ``students`` now; a short class may end within the second the app writes steps in
    (the lab's keeper writes once a second), so wait up to ``wait_s`` for them to pass ``before``."""
    deadline = time.monotonic() + wait_s
    while True:
        found = training_steps(students)
        advanced = all(step > before.get(run, ("", 0))[1] for run, (_, step) in found.items())
        if (found and advanced) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.5)


def check_training(before: dict[str, tuple[str, int]], after: dict[str, tuple[str, int]]) -> tuple[str, list[str]]:
    """A line saying how far each run trained during the phase, and an error for each of the 2 that did not.

    >>> check_training({"a": ("running", 3)}, {"a": ("running", 90), "b": ("running", 40)})
    ('runs trained during the phase: a 3 → 90 (running), b 0 → 40 (running)', [])
    >>> check_training({}, {"a": ("queued", 0)})[1]
    ['a run did not train during the phase: a 0 → 0 (queued)', 'only 1 of 2 runs in the registry']
    """
    parts, errors = [], []
    for run_id, (state, step) in sorted(after.items()):
        first = before.get(run_id, ("", 0))[1]
        parts.append(f"{run_id} {first} → {step} ({state})")
        if step <= first:
            errors.append(f"a run did not train during the phase: {parts[-1]}")
    if len(after) < 2:
        errors.append(f"only {len(after)} of 2 runs in the registry")
    return "runs trained during the phase: " + (", ".join(parts) or "none"), errors


async def open_teacher(url: str) -> Student:
    """The teacher (a browser of its own, given the teacher key once) opens the class view and keeps it open, its
    live section refreshing, read as a browser reads it."""
    [teacher], _ = await enrol(url, "classroom", 1)
    opened = await teacher.open("classroom", urllib.parse.urlencode({"teacher": SETUP.teacher_key}))
    refused = [alert for alert in opened.alerts if "This page is the teacher's" in alert]
    if opened.errors or refused:
        raise ProtocolError(f"the class view did not open for the teacher: {(opened.errors + refused)[:1]}")
    teacher.reader = asyncio.ensure_future(teacher.live())
    return teacher


# ---------------------------------------------------------------------------- static files (a fresh browser)


def static_files(url: str) -> list[str]:
    """Every file a first visit could download: the HTML page, what it names, and every script, stylesheet and font
    Streamlit's main bundle names (its chunks, loaded as the page needs them), as far as they exist in the installed
    Streamlit. More than one page loads (chromium: ``first_visit_files``); used when chromium is not installed."""
    import streamlit

    installed = Path(streamlit.__file__).parent / "static" / "static"
    folders = {"js": "js", "css": "css", "woff2": "media", "woff": "media", "ttf": "media"}
    html = urllib.request.urlopen(f"{url}/", timeout=30).read().decode()
    found = set(re.findall(r'(?:src|href)="\.?/?(static/[^"]+)"', html))
    for name in [n for n in found if n.endswith(".js") and "/index." in n]:
        bundle = urllib.request.urlopen(f"{url}/{name}", timeout=30).read().decode(errors="replace")
        for part in set(re.findall(r"[\w.-]+\.(?:js|css|woff2|woff|ttf)\b", bundle)):
            folder = folders[part.rsplit(".", 1)[1]]
            if (installed / folder / part).is_file():
                found.add(f"static/{folder}/{part}")
    return ["", *sorted(found)]


def first_visit_files(url: str, page: str) -> tuple[list[str], str]:
    """The files a browser with an empty cache downloads to open ``page``, as one headless chromium (run once, before
    anything is measured) downloads them; without chromium, :func:`static_files` (every file the bundle names)."""
    try:
        _app.require_browser()
        from playwright.sync_api import sync_playwright
    except SystemExit:
        return static_files(url), "every file Streamlit's bundle names (no chromium here)"
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_app.CHROMIUM, headless=True, args=_app.CHROMIUM_ARGS)
        tab = browser.new_page()
        tab.on("request", lambda request: requests.append(request.url))
        tab.goto(f"{url}/{page}")
        tab.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=ARGS.timeout * 1000)
        tab.wait_for_timeout(3000)  # the chunks and fonts the drawn page asks for
        browser.close()
    files = sorted({r[len(url) + 1 :] for r in requests if r.startswith(f"{url}/") and "/_stcore/" not in r})
    return files, "the files chromium downloaded for a first visit"


def fresh_browser(url: str, files: list[str]) -> float:
    """Download every file as a browser with an empty cache does (6 connections at a time, gzip accepted)."""
    began = time.perf_counter()

    def get(name: str) -> int:
        request = urllib.request.Request(f"{url}/{name}", headers={"Accept-Encoding": "gzip, deflate, br"})
        with urllib.request.urlopen(request, timeout=ARGS.timeout) as response:
            return len(response.read())

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(get, files))
    return time.perf_counter() - began


def fresh_browsers(url: str, files: list[str], count: int, pid) -> Row:
    row = Row("static", "quiet", count, "fresh browser")
    before = cpu_seconds(pid)
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(fresh_browser, url, files) for _ in range(count)]
        for future in futures:
            try:
                row.seconds.append(future.result(timeout=ARGS.timeout))
            except Exception as error:  # noqa: BLE001 - counted as an error of the row
                row.errors.append(f"{type(error).__name__}: {error}"[:200])
    row.cpu_per = (cpu_seconds(pid) - before) / count
    return row


# ---------------------------------------------------------------------------- the run


async def app_phase(phase: str, count: int, rows: list[Row], teacher: Student | None) -> None:
    """One phase of the app for ``count`` students, the teacher's class view open (``teacher``): in the training
    phase 2 students train first; the class opens the page at once and flips its toggle; then whether both runs
    trained meanwhile, and how often the teacher's and the trainers' live sections refreshed."""
    trainers, trainer_ids = await start_training(SETUP.url) if phase == "training" else ([], [])
    try:
        before = await first_steps(trainer_ids) if trainer_ids else {}
        began, seen = time.monotonic(), [s.refreshes for s in [*trainers, *([teacher] if teacher else [])]]
        students, row = await open_all(SETUP.url, ARGS.page, count, SETUP.pids, ARGS.query)
        row.where, row.phase = "app", phase
        rows.append(row)
        values = [flip % 2 == 1 for flip in range(ARGS.toggles)]  # off, on, off, … (it starts on)
        toggled = await toggle_all(students, ARGS.toggle, values, SETUP.pids)
        toggled.where, toggled.phase = "app", phase
        rows.append(toggled)
        refreshed = [s.refreshes - n for s, n in zip([*trainers, *([teacher] if teacher else [])], seen)]
        took = f"{time.monotonic() - began:.0f} s"
        if trainer_ids:
            line, errors = check_training(before, await later_steps(trainer_ids, before))
            if SETUP.runs is not None:
                row.errors += errors
                SETUP.notes.append(
                    f"{count} students, training phase: {line}; the trainers' pages refreshed "
                    f"{refreshed[0]} and {refreshed[1]} times in the phase's {took}."
                )
        if SETUP.backends:
            SETUP.notes.append(f"{count} students, {phase} phase, students per app process: {spread(students)}.")
        if teacher is not None:
            SETUP.notes.append(
                f"{count} students, {phase} phase: the teacher's class view refreshed {refreshed[-1]} times in the "
                f"phase's {took} ({teacher.refreshes} since it opened)."
            )
        report(row)
        report(toggled)
        await close_all(students)
    finally:
        await close_all(trainers)
        await asyncio.sleep(0)  # the readers see their sockets closed
    if trainer_ids:  # the runs are parked once their students' tabs have gone (LLMVIZ_SESSION_TIMEOUT); wait for it
        await asyncio.sleep(float(ARGS.session_timeout) + 2)


async def measure(reference: _app.App, rows: list[Row]) -> None:
    phases = ARGS.phases.split(",")
    for count in ARGS.students:
        students, row = await open_all(reference.url, "", count, reference.process.pid)
        row.where, row.phase = "reference", "quiet"
        rows.append(row)
        report(row)
        sizes = [[32.0] if flip % 2 == 0 else [48.0] for flip in range(ARGS.toggles)]  # the slider "Size"
        toggled = await toggle_all(students, "Size", sizes, reference.process.pid)
        toggled.where, toggled.phase = "reference", "quiet"
        rows.append(toggled)
        report(toggled)
        await close_all(students)
        teacher = await open_teacher(SETUP.url) if SETUP.teacher_key else None  # open through every app phase
        try:
            for phase in phases:
                await app_phase(phase, count, rows, teacher)
        finally:
            await close_all([teacher] if teacher else [])


def report(row: Row) -> None:
    cells = dict(zip(HEADER, row.cells()))
    print(
        f"  {cells['page']}, {cells['set-up']}, {row.phase}, {row.students} students, {row.what}: "
        f"p50 {cells['p50 s']}, p95 {cells['p95 s']}, max {cells['max s']}, {cells['errors']} errors, "
        f"server CPU-s each {cells['server CPU-s each']}, Caddy {cells['Caddy CPU-s each']}, "
        f"DB ms per page run p50 / p95 {cells['DB ms per open p50 / p95']}",
        flush=True,
    )
    for error in sorted(set(row.errors))[:3]:
        print(f"    error: {error}", flush=True)


def commit() -> str:
    try:
        found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=_app.ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=_app.ROOT, capture_output=True, text=True)
        return found.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wait_healthy(url: str, process: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.read().strip() == b"ok":
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            raise SystemExit(f"Caddy did not answer at {url} within {timeout_s:.0f} s:\n{tail}")
        time.sleep(0.3)


def two_processes(servers: contextlib.ExitStack, env: dict[str, str], port: int) -> Setup:
    """The documented set-up (docs/classroom.md, "Serving a bigger class", step by step): two ``streamlit run
    app.py`` processes with one cookie secret, one runs folder and one database (SQLite under the runs folder, or
    ``--database postgresql``: a throwaway cluster, tests/support/postgres.py), trusting Caddy's forwarded address,
    behind Caddy with examples/classroom/Caddyfile (static files from disk, a sticky cookie per browser); and a
    teacher key."""
    if shutil.which("caddy") is None:
        raise SystemExit("--setup two-process needs Caddy on PATH (Debian: sudo apt-get install -y caddy)")
    import streamlit

    folder = Path(tempfile.mkdtemp(prefix="llmviz-class-two-"))
    runs = folder / "runs"
    runs.mkdir()
    database = None
    if ARGS.database == "postgresql":
        from tests.support.postgres import fresh_database, local_cluster, postgres_bin

        found = postgres_bin()
        if found is None:
            raise SystemExit("--database postgresql needs Debian's postgresql (sudo apt-get install -y postgresql)")
        admin = servers.enter_context(local_cluster(found, _app.free_port(port + 10)))
        database = servers.enter_context(fresh_database(admin))
    key = secrets.token_urlsafe(24)
    shared = {
        **env,
        "LLMVIZ_RUNS_DIR": str(runs),
        "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32),
        "LLMVIZ_TRUSTED_PROXIES": "127.0.0.1",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
        "LLMVIZ_MAX_JOBS": str(ARGS.max_jobs),
        "LLMVIZ_TEACHER_KEY": key,
        **({"LLMVIZ_DATABASE_URL": database} if database else {}),
    }
    apps: list[_app.App] = []
    for n in range(2):
        chosen = _app.free_port(port if n == 0 else apps[-1].port + 1)
        apps.append(servers.enter_context(_app.App("app.py", port=chosen, env=shared)))
    listen = f"127.0.0.1:{_app.free_port(apps[-1].port + 1)}"
    dials = [app.url.removeprefix("http://") for app in apps]
    log = folder / "caddy.log"
    with log.open("wb") as out:
        caddy = subprocess.Popen(
            ["caddy", "run", "--config", str(_app.ROOT / "examples/classroom/Caddyfile"), "--adapter", "caddyfile"],
            env={
                **os.environ,
                "STREAMLIT_STATIC": str(Path(streamlit.__file__).parent / "static"),
                "LLMVIZ_BIND": listen.rsplit(":", 1)[0],
                "LLMVIZ_PORT": listen.rsplit(":", 1)[1],
                "LLMVIZ_BACKENDS": " ".join(dials),
            },
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    servers.callback(stop_process, caddy)
    wait_healthy(f"http://{listen}", caddy, log)
    return Setup(
        url=f"http://{listen}",
        pids=[app.process.pid for app in apps],
        timings=[app.timings for app in apps],
        runs=runs,
        database=database,
        proxy_pid=caddy.pid,
        backends={sticky_value(dial): f"process :{dial.rsplit(':', 1)[1]}" for dial in dials},
        teacher_key=key,
        apps=apps,
    )


def start_setup(servers: contextlib.ExitStack, env: dict[str, str], port: int) -> Setup:
    """The app as ``--setup`` (or ``--url``) says, stopped when ``servers`` closes."""
    if ARGS.url:  # an app already running (behind a proxy, several processes): ARGS.pids are its processes
        return Setup(ARGS.url.rstrip("/"), ARGS.pids, [])
    if ARGS.setup == "two-process":
        return two_processes(servers, env, port)
    if ARGS.database == "postgresql":
        raise SystemExit("--database postgresql: with --setup two-process")
    app = servers.enter_context(_app.App("app.py", port=port, env=env))
    return Setup(app.url, [app.process.pid], [app.timings], runs=app.folder / "runs", apps=[app])


def run_all() -> int:
    global SETUP
    load_before = _app.load_average()
    rows: list[Row] = []
    folder = Path(tempfile.mkdtemp(prefix="llmviz-class-load-"))
    reference_page = folder / "reference.py"
    reference_page.write_text(_app.REFERENCE_PAGE)
    env = {
        "LLMVIZ_SESSION_TIMEOUT": str(ARGS.session_timeout),
        "LLMVIZ_NEW_STUDENTS_PER_MINUTE": "0",
    }  # one machine: a class
    began = time.monotonic()
    partial = False
    port = _app.free_port(ARGS.port)
    with contextlib.ExitStack() as servers:  # every server started here is stopped when this block ends
        SETUP = start_setup(servers, env, port)
        after = max([port, *(int(u.rsplit(":", 1)[1]) for u in [SETUP.url, *(a.url for a in SETUP.apps)])])
        reference = servers.enter_context(_app.App(str(reference_page), port=_app.free_port(after + 1), timings=True))
        print(f"app on {SETUP.url}, reference on {reference.url}; warming both up", flush=True)
        files, source = first_visit_files(SETUP.url, ARGS.page) if ARGS.fresh else ([], "")
        if files:
            print(f"a first visit downloads {len(files)} files ({source})", flush=True)
        try:
            asyncio.run(asyncio.wait_for(warm_up(reference.url), ARGS.budget))
            left = ARGS.budget - (time.monotonic() - began)
            asyncio.run(asyncio.wait_for(measure(reference, rows), left))
        except TimeoutError:
            partial = True
            print(f"--budget ({ARGS.budget:.0f} s) ran out: the table so far", flush=True)
        if ARGS.fresh and not partial and time.monotonic() - began < ARGS.budget:
            rows.append(fresh_browsers(SETUP.url, files, ARGS.fresh, SETUP.pids))
            report(rows[-1])
        errors = [error for app in SETUP.apps for error in app.server_errors()]
    if errors:
        print(f"The server printed {len(errors)} traceback(s): {sorted(set(errors))[:3]}")
    return print_table(rows, load_before, partial)


async def warm_up(reference_url: str) -> None:
    """One open of each page first, in every app process: a class opens a page a teacher has already shown
    (models loaded, code compiled)."""
    urls = [app.url for app in SETUP.apps] or [SETUP.url]
    for url, path, query in [
        *((u, p, q) for u in urls for p, q in ((ARGS.page, ARGS.query), ("training", ""))),
        (reference_url, "", ""),
    ]:
        async with Student(url, timeout_s=ARGS.timeout) as student:
            await student.open(path, query)


def setup_line() -> str:
    """One sentence on the set-up measured."""
    if ARGS.setup == "one-process":
        return "Set-up: one `streamlit run app.py` process, its lab in SQLite under its runs folder."
    database = "a throwaway PostgreSQL cluster" if ARGS.database == "postgresql" else "SQLite (`runs/lab.db`)"
    return (
        "Set-up: docs/classroom.md's two app processes behind Caddy (examples/classroom/Caddyfile: static files from "
        f"disk, a sticky cookie per browser), sharing one runs folder and one database, {database}; "
        f"LLMVIZ_MAX_JOBS={ARGS.max_jobs}, LLMVIZ_TRUSTED_PROXIES=127.0.0.1; in every app phase the teacher (the "
        "teacher key) has the class view open through Caddy. Every student is a browser of its own (an identity "
        "cookie). Server CPU: both app processes summed; Caddy's apart. DB ms: the database statements of each "
        f"/{ARGS.page} page run, on its own thread (LLMVIZ_TIMINGS)."
    )


def print_table(rows: list[Row], load_before: str, partial: bool = False) -> int:
    lines = [
        "",
        "## "
        + ("(cut short by --budget) " if partial else "")
        + f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC",
        "",
        f"Commit {commit()}; `python benchmarks/class_load.py {' '.join(sys.argv[1:])}`.",
        *_app.machine(load_before),
        *([setup_line()] if not ARGS.url else []),
        "",
        _app.table(HEADER, [row.cells() for row in rows]),
        "",
        *(f"- {note}" for note in SETUP.notes),
        *([""] if SETUP.notes else []),
    ]
    text = "\n".join(lines)
    print(text)
    if ARGS.record and not partial:
        path = Path(ARGS.record)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(RECORD_HEAD)
        with path.open("a", encoding="utf-8") as out:
            out.write(text)
        print(f"appended to {path}")
    failed = [row for row in rows if row.cells()[-1] == "**no**"]
    return 1 if failed else 0


RECORD_HEAD = """# A class on one server, measured at the server

`python benchmarks/class_load.py --record docs/benchmarks/class_load.md` appends a dated section here (machine,
commit, load average, the table). How it measures: the docstring of `benchmarks/class_load.py`; the protocol client
was checked against chromium with `python benchmarks/class_load.py --validate` (see the first section). Numbers from
a machine that was not quiet (a load average well above 0 before the start) are upper bounds.
"""


# ---------------------------------------------------------------------------- --scenario follow


def run_follow() -> int:
    """The class following the teacher (``_class_follow``), on the set-up ``--setup`` says, at the largest
    ``--students``: ``--rounds`` rounds of each class, alternating (follows nobody, then follows the teacher)."""
    global SETUP
    from _class_follow import FOLLOW_BUDGET_S, Follow, summary

    load_before = _app.load_average()
    key = secrets.token_urlsafe(24)
    env = {
        "LLMVIZ_SESSION_TIMEOUT": str(ARGS.session_timeout),
        "LLMVIZ_NEW_STUDENTS_PER_MINUTE": "0",
        "LLMVIZ_TEACHER_KEY": key,
    }
    count = max(ARGS.students)
    with contextlib.ExitStack() as servers:
        SETUP = start_setup(servers, env, _app.free_port(ARGS.port))
        SETUP.teacher_key = SETUP.teacher_key or key
        print(f"app on {SETUP.url}; {count} students, {ARGS.rounds} rounds of each class", flush=True)
        follow = Follow(SETUP.url, SETUP.teacher_key, count, ARGS.timeout, enrol)

        async def rounds() -> None:
            for url in [app.url for app in SETUP.apps] or [SETUP.url]:  # warm up: the page in every process
                async with Student(url, timeout_s=ARGS.timeout) as student:
                    await student.open("tokens")
            teacher = await follow.teacher()
            try:
                for _ in range(ARGS.rounds):
                    for leads in (False, True):
                        await follow.round(teacher, leads, ARGS.moves)
            finally:
                await teacher.close()

        partial = False
        try:
            asyncio.run(asyncio.wait_for(rounds(), ARGS.budget))
        except TimeoutError:
            partial = True
            print(f"--budget ({ARGS.budget:.0f} s) ran out: the table so far", flush=True)
        errors = [error for app in SETUP.apps for error in app.server_errors()]
    if errors:
        print(f"The server printed {len(errors)} traceback(s): {sorted(set(errors))[:3]}")
    merged: dict[tuple[str, str], tuple[list[float], list[str]]] = {}
    for kind, what, seconds, errs in follow.rows:  # the rounds of one class together
        found = merged.setdefault((kind, what), ([], []))
        found[0].extend(seconds)
        found[1].extend(errs)
    header = ["class", "action", "students", "samples", "p50 s", "p95 s", "max s", "errors", "budget", "met"]
    lines, failed = [], False
    for (kind, what), (seconds, errs) in merged.items():
        p50, p95, top = summary(seconds)
        budget = FOLLOW_BUDGET_S if what == "page shown" and count >= 80 else None
        met = "" if budget is None else ("yes" if p95 <= budget and not errs else "**no**")
        failed |= met == "**no**" or bool(errs)
        cells = [kind, what, str(count), str(len(seconds)), _app.fmt_s(p50), _app.fmt_s(p95), _app.fmt_s(top)]
        lines.append([*cells, str(len(set(errs))), "—" if budget is None else f"≤ {budget:g} s", met])
    text = "\n".join(
        [
            "",
            "## "
            + ("(cut short by --budget) " if partial else "")
            + f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC: the class follows the teacher",
            "",
            f"Commit {commit()}; `python benchmarks/class_load.py {' '.join(sys.argv[1:])}`.",
            *_app.machine(load_before),
            *([setup_line()] if not ARGS.url else []),
            f"Each class {ARGS.rounds} times, in turn (follows nobody, then follows the teacher); "
            f"{ARGS.moves} changes of the teacher's view per round of followers. Open and toggle: the Tokens page; "
            "lead seen / page shown: from the teacher's change sent to the script that moves the student's page "
            "drawn / to the student's page drawn at the teacher's view; answer: a student's answer's run; answers "
            "on the chart: from the first answer sent to the teacher's chart counting every student.",
            "",
            _app.table(header, lines),
            "",
        ]
    )
    print(text)
    if ARGS.record and not partial:
        with open(ARGS.record, "a", encoding="utf-8") as out:
            out.write(text)
        print(f"appended to {ARGS.record}")
    return 1 if failed or partial else 0


# ---------------------------------------------------------------------------- --validate


def validate() -> int:
    """Open ``--page`` and flip ``--toggle`` once in chromium and once with the protocol client, on one server;
    compare what the server did for each: script runs, deltas, the widget values sent with the flip."""
    _app.require_browser()
    from playwright.sync_api import sync_playwright
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    with _app.App("app.py", port=_app.free_port(ARGS.port)) as app:
        asyncio.run(_client_session(app.url))  # the first open loads the models (a spinner): warm up first
        client = asyncio.run(_client_session(app.url))
        sent: list = []
        received: list = []
        requests: list[str] = []

        def watch(socket) -> None:
            def back(payload):
                if isinstance(payload, bytes | bytearray):
                    message = BackMsg()
                    message.ParseFromString(bytes(payload))
                    sent.append(message)

            def forward(payload):
                if isinstance(payload, bytes | bytearray):
                    message = ForwardMsg()
                    message.ParseFromString(bytes(payload))
                    received.append(message)

            socket.on("framesent", back)
            socket.on("framereceived", forward)

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=_app.CHROMIUM, headless=True, args=_app.CHROMIUM_ARGS)
            page = browser.new_page()
            page.on("websocket", watch)
            page.on("request", lambda request: requests.append(request.url))
            page.goto(f"{app.url}/{ARGS.page}" + (f"?{ARGS.query}" if ARGS.query else ""))
            opened = _browser_run(page, received, 0)
            files = len([r for r in requests if r.startswith(app.url) and "/_stcore/" not in r])
            first = len(received)
            first_sent = len(sent)
            _drawn(page)  # every widget mounted (a browser sends the values of the widgets it has drawn)
            page.get_by_text(client["label"], exact=True).click(timeout=ARGS.timeout * 1000)
            flipped = _browser_run(page, received, first)
            browser_states = {
                w.id: w.WhichOneof("value")
                for m in sent[first_sent:]
                if m.WhichOneof("type") == "rerun_script"
                for w in m.rerun_script.widget_states.widgets
            }
            browser.close()
        listed = len(static_files(app.url))
    rows = [
        ["open: script runs finished", opened[0], client["open"].status and 1],
        ["open: deltas", opened[1], client["open"].deltas],
        ["toggle: fragment runs finished", flipped[0], client["toggle"].status and 1],
        ["toggle: deltas", flipped[1], client["toggle"].deltas],
        ["toggle: widget values sent", len(browser_states), len(client["states"])],
        ["toggle: the same widgets, of the same kinds", "", "yes" if browser_states == client["states"] else "**no**"],
        ["first visit: files downloaded (static_files: every one the bundle names)", files, listed],
    ]
    print(_app.table(["what the server saw", "chromium", "protocol client"], [[str(c) for c in r] for r in rows]))
    same = all(str(r[1]) == str(r[2]) for r in rows[:5]) and browser_states == client["states"]
    print("The protocol client is what a browser is to the server." if same else "They differ: see above.")
    return 0 if same else 1


def _drawn(page, timeout_s: float = 120) -> None:
    """Wait until chromium has drawn the whole page: its number of elements unchanged for 3 s."""
    deadline, last, since = time.monotonic() + timeout_s, -1, time.monotonic()
    while time.monotonic() < deadline:
        count = page.locator("[data-testid='stElementContainer']").count()
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= 3:
            return
        page.wait_for_timeout(250)


def _browser_run(page, received: list, start: int, timeout_s: float = 120) -> tuple[int, int]:
    """Wait until chromium's session has received a finished script run after message ``start``; returns (finished
    runs, deltas) in that stretch. (Playwright delivers the frames while it waits: ``page.wait_for_timeout``.)"""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stretch = received[start:]
        finished = [m for m in stretch if m.WhichOneof("type") == "script_finished" and m.script_finished != 2]
        if finished:
            page.wait_for_timeout(1000)  # anything sent right after (a rerun the page asked for) is counted too
            stretch = received[start:]
            finished = [m for m in stretch if m.WhichOneof("type") == "script_finished" and m.script_finished != 2]
            return len(finished), sum(1 for m in stretch if m.WhichOneof("type") == "delta")
        page.wait_for_timeout(50)
    kinds = sorted({m.WhichOneof("type") for m in received[start:]})
    raise SystemExit(f"chromium's session never finished a script run (received {len(received) - start}: {kinds})")


async def _client_session(url: str) -> dict:
    async with Student(url, timeout_s=ARGS.timeout) as student:
        opened = await student.open(ARGS.page, ARGS.query)
        widget = student.widget(ARGS.toggle)
        flipped = await student.set_widget(ARGS.toggle, not student.values[widget.id])
        states = {w.id: w.kind for w in student.widgets.values() if w.id in student.values}
        return {"open": opened, "toggle": flipped, "states": states, "label": widget.label}


# ---------------------------------------------------------------------------- command line


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", default="40,80", help="class sizes, comma-separated (at most 120)")
    parser.add_argument("--page", default="attention", help="the page's URL path")
    parser.add_argument("--toggle", default="mask", help="the key of the toggle every student flips")
    parser.add_argument(
        "--query",
        default="attention_tab=Step+by+step",
        help="the link's parameters for --page (default: the Attention tab that holds the causal-mask toggle)",
    )
    parser.add_argument("--toggles", type=int, default=2, help="flips per student")
    parser.add_argument("--fresh", type=int, default=20, help="fresh browsers downloading the static files (0: none)")
    parser.add_argument("--phases", default="quiet,training", help="quiet, training, or both")
    parser.add_argument("--port", type=int, default=8530)
    parser.add_argument(
        "--setup",
        default="one-process",
        choices=["one-process", "two-process"],
        help="one app process, or docs/classroom.md's two processes behind Caddy sharing one runs folder and database",
    )
    parser.add_argument(
        "--database", default="sqlite", choices=["sqlite", "postgresql"], help="the lab's database (two-process)"
    )
    parser.add_argument("--max-jobs", type=int, default=2, help="LLMVIZ_MAX_JOBS of the two-process set-up")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one open or flip may take")
    parser.add_argument("--session-timeout", type=float, default=5, help="LLMVIZ_SESSION_TIMEOUT of the app")
    parser.add_argument("--budget", type=float, default=1500, help="seconds the whole benchmark may take")
    parser.add_argument("--record", default=None, help="append the results to this Markdown file")
    parser.add_argument("--validate", action="store_true", help="compare the protocol client with chromium once")
    parser.add_argument(
        "--scenario",
        default="class",
        choices=["class", "follow"],
        help="class: open and toggle; follow: a class following the teacher, alternating with one that follows nobody",
    )
    parser.add_argument("--rounds", type=int, default=2, help="follow: rounds of each class, alternating")
    parser.add_argument("--moves", type=int, default=3, help="follow: the teacher's changes of view per round")
    parser.add_argument(
        "--registry", default="", help="sqlite, postgresql or both: time the lab's registry calls of one page open"
    )
    parser.add_argument(
        "--url", default=None, help="measure an app already running here (127.0.0.1: behind a proxy, say)"
    )
    parser.add_argument(
        "--pids", default="", help="with --url: the app's processes, comma-separated (their CPU seconds are reported)"
    )
    args = parser.parse_args(argv)
    args.students = [int(n) for n in args.students.split(",") if n.strip()]
    args.pids = [int(n) for n in args.pids.split(",") if n.strip()]
    if args.url and urllib.parse.urlparse(args.url).hostname not in ("127.0.0.1", "localhost"):
        parser.error("--url: an app on this machine (127.0.0.1) only")
    if not args.students or max(args.students) > MAX_STUDENTS or min(args.students) < 1:
        parser.error(f"--students: from 1 to {MAX_STUDENTS}")
    if not set(args.phases.split(",")) <= {"quiet", "training"}:
        parser.error("--phases: quiet, training or quiet,training")
    if not 1 <= args.toggles <= 10 or not 0 <= args.fresh <= 60:
        parser.error("--toggles from 1 to 10, --fresh from 0 to 60")
    if not 1 <= args.rounds <= 10 or not 1 <= args.moves <= 20:
        parser.error("--rounds from 1 to 10, --moves from 1 to 20")
    return args


def registry_cost(kind: str, students: int, port: int) -> list[str]:
    """Time the registry calls one page open makes, for ``students`` students on a ``kind`` database (``sqlite`` or
    ``postgresql``): table rows ``| database | students | mode | p50 ms | p95 ms | max ms | CPU ms each |``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from llmviz.jobs.manager import JobManager
    from llmviz.lab.records import RunRecord
    from llmviz.lab.service import Lab
    from tests.support.postgres import fresh_database, local_cluster, postgres_bin

    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="llmviz-registry-"))
        url = None
        if kind == "postgresql":
            url = stack.enter_context(fresh_database(stack.enter_context(local_cluster(postgres_bin(), port))))
        lab = Lab.at(folder, url=url)
        names = [f"student-{i:03d}" for i in range(students)]
        for name in names:
            lab.registry.records.ensure_student(name, name=name)
            for r in range(3):
                run_id = f"{name[-3:]}r{r}"
                lab.registry.records.add_run(
                    RunRecord(run_id, name, "train", f"Run {r}", "finished", total=300, step=300)
                )
                lab.registry.records.add_points(run_id, [(step, 3.0 - step / 200, None) for step in range(1, 301)])
                for step in (0, 1, 10, 100, 200, 300):
                    lab.registry.records.add_snapshot(run_id, step, f"{folder}/{run_id}-{step}", 1000)
        manager = JobManager(max_running=1, lab=lab)

        def page_open(name: str) -> tuple[float, float]:
            wall, cpu = time.perf_counter(), time.thread_time()
            kept = manager.lab_side.kept_runs(name)  # the picker: the student's runs (and the orphan check)
            if kept:
                lab.registry.records.steps_by_run(name)  # their kept snapshot steps
            lab.registry.records.student(name)  # the teacher flag / display name
            return time.perf_counter() - wall, time.thread_time() - cpu

        for name in names[:5]:
            page_open(name)  # connections made, statements prepared
        rows = []
        for mode, workers in (("one at a time", 1), ("8 at once", 8)):
            with ThreadPoolExecutor(workers) as pool:
                timed = list(pool.map(page_open, names * 2))
            walls = [w * 1000 for w, _ in timed]
            cpu = sum(c for _, c in timed) / len(timed) * 1000
            p50, p95 = _app.quantile(walls, 0.5), _app.quantile(walls, 0.95)
            rows.append(f"| {kind} | {students} | {mode} | {p50:.2f} | {p95:.2f} | {max(walls):.2f} | {cpu:.2f} |")
        manager.shutdown()
        lab.registry.dispose()
        return rows


def run_registry(kinds: list[str]) -> int:
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "| database | students | opens | p50 ms | p95 ms | max ms | CPU ms each |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in kinds:
        lines += registry_cost(kind, max(ARGS.students), 55495)
    text = "\n".join(lines)
    print(text)
    if ARGS.record:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        with open(ARGS.record, "a") as out:
            out.write(
                f"\n## {stamp}: the database's cost per open (the lab's registry)\n\n"
                f"Commit {commit()}; `python benchmarks/class_load.py {' '.join(sys.argv[1:])}`"
                + (", after the class above, in the same invocation" if ARGS.setup == "two-process" else "")
                + ". Each student has 3 kept runs (300 curve points, 6 snapshot "
                "rows each); an open is the registry calls the sidebar's picker makes (the student's runs with the "
                "orphan check, their snapshot steps, their row), each student twice.\n"
                f"Load average before starting: {load} (1 / 5 / 15 min).\n\n"
                f"{text}\n"
            )
    return 0


ARGS = parse([])

if __name__ == "__main__":
    ARGS = parse()
    kinds = [kind for kind in ARGS.registry.split(",") if kind in ("sqlite", "postgresql")]
    if ARGS.registry and ARGS.setup == "one-process":
        sys.exit(run_registry(kinds))
    if ARGS.validate:
        sys.exit(validate())
    if ARGS.scenario == "follow":
        sys.exit(run_follow())
    code = run_all()  # the two-process set-up: the class, then (with --registry) the registry alone, in one run
    sys.exit(max(code, run_registry(kinds)) if kinds else code)
