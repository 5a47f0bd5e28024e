"""A class measured at the server: N students open a page at once, then flip a toggle, over Streamlit's own protocol.

    python benchmarks/class_load.py [--students 40,80] [--page attention] [--toggle mask] [--toggles 2]
        [--query attention_tab=Step+by+step]
                                    [--fresh 20] [--phases quiet,training] [--port 8530] [--budget 1500]
                                    [--record docs/benchmarks/class_load.md]
    python benchmarks/class_load.py --validate     # the protocol client against one real chromium session
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
  the class works);
- **static**: ``--fresh`` browsers with an empty cache at once: each downloads the static files a first visit loads
  (the HTML, then Streamlit's JavaScript, CSS and fonts, gzip-compressed as a browser asks) — Python serves them.

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
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
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

    def cells(self) -> list[str]:
        values = self.seconds or [float("nan")]
        budget = BUDGETS.get((self.where, self.students, self.what))
        p95 = _app.quantile(values, 0.95)
        met = "" if budget is None else ("yes" if p95 <= budget and not self.errors else "**no**")
        return [
            {
                "reference": "bare Streamlit page (reference)",
                "app": f"llmviz /{ARGS.page}" + (f" at {ARGS.url}" if ARGS.url else ""),
                "static": "static files" + (f" at {ARGS.url}" if ARGS.url else ""),
            }[self.where],
            self.phase,
            str(self.students),
            self.what,
            _app.fmt_s(_app.quantile(values, 0.5)),
            _app.fmt_s(p95),
            _app.fmt_s(max(values)),
            str(len(self.errors)),
            _app.fmt_s(self.cpu_per, 3),
            "—" if budget is None else f"≤ {budget:g} s",
            met,
        ]


HEADER = [
    "page",
    "phase",
    "students",
    "action",
    "p50 s",
    "p95 s",
    "max s",
    "errors",
    "server CPU-s each",
    "budget",
    "met",
]


def errors_of(outcome) -> list[str]:
    if isinstance(outcome, BaseException):
        return [f"{type(outcome).__name__}: {outcome}"[:200]]
    return list(outcome.errors)


async def open_all(url: str, path: str, count: int, pid, query: str = "") -> tuple[list[Student], Row]:
    """``count`` students open ``path`` (with the link's ``query``) at the same moment; the row holds each open's
    seconds and errors."""
    students = [Student(url, timeout_s=ARGS.timeout) for _ in range(count)]
    before = cpu_seconds(pid)
    outcomes = await asyncio.gather(*(student.open(path, query) for student in students), return_exceptions=True)
    row = Row("", "", count, "open", cpu_per=(cpu_seconds(pid) - before) / count)
    for outcome in outcomes:
        if isinstance(outcome, Run):
            row.seconds.append(outcome.seconds)
        row.errors += errors_of(outcome)
    return students, row


async def toggle_all(students: list[Student], key: str, values: list, pid) -> Row:
    """Every student flips widget ``key`` through ``values`` (one flip each at the same moment, then the next)."""
    row = Row("", "", len(students), "toggle")
    before = cpu_seconds(pid)
    live = [student for student in students if student.socket is not None and student.widgets]
    for value in values:
        outcomes = await asyncio.gather(*(s.set_widget(key, value) for s in live), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Run):
                row.seconds.append(outcome.seconds)
            row.errors += errors_of(outcome)
    row.errors += [f"never opened ({len(students) - len(live)} students)"] if len(live) < len(students) else []
    row.cpu_per = (cpu_seconds(pid) - before) / max(1, len(live) * len(values))
    return row


async def close_all(students: list[Student]) -> None:
    await asyncio.gather(*(student.close() for student in students), return_exceptions=True)


async def start_training(url: str) -> list[Student]:
    """Two students each press Train on the Training page (GPT micro, 2,000 steps, batch 32: longer than the phase)
    and stay on it, their live sections refreshing, as a student watching a run does."""
    trainers = []
    for _ in range(2):
        student = Student(url, timeout_s=ARGS.timeout)
        opened = await student.open("training", "steps=2000&batch=32")
        if opened.errors:
            raise ProtocolError(f"the Training page did not open cleanly: {opened.errors[:1]}")
        clicked = await student.click("train")
        if clicked.errors:
            raise ProtocolError(f"Train did not start a run: {clicked.errors[:1]}")
        trainers.append(student)
    for student in trainers:
        student.reader = asyncio.ensure_future(student.drain())
    return trainers


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


async def measure(app_url: str, app_pids: list[int], reference: _app.App, rows: list[Row]) -> None:
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
        for phase in phases:
            trainers = await start_training(app_url) if phase == "training" else []
            try:
                students, row = await open_all(app_url, ARGS.page, count, app_pids, ARGS.query)
                row.where, row.phase = "app", phase
                rows.append(row)
                report(row)
                values = [flip % 2 == 1 for flip in range(ARGS.toggles)]  # off, on, off, … (it starts on)
                toggled = await toggle_all(students, ARGS.toggle, values, app_pids)
                toggled.where, toggled.phase = "app", phase
                rows.append(toggled)
                report(toggled)
                await close_all(students)
            finally:
                await close_all(trainers)
                await asyncio.sleep(0)  # the readers see their sockets closed
            if trainers:  # the runs stop with their sessions (LLMVIZ_SESSION_TIMEOUT); wait for it
                await asyncio.sleep(float(ARGS.session_timeout) + 2)


def report(row: Row) -> None:
    cells = row.cells()
    print(
        f"  {cells[0]}, {row.phase}, {row.students} students, {row.what}: p50 {cells[4]}, p95 {cells[5]}, "
        f"max {cells[6]}, {cells[7]} errors, server CPU-s each {cells[8]}",
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


def run_all() -> int:
    load_before = _app.load_average()
    rows: list[Row] = []
    folder = Path(tempfile.mkdtemp(prefix="llmviz-class-load-"))
    reference_page = folder / "reference.py"
    reference_page.write_text(_app.REFERENCE_PAGE)
    env = {"LLMVIZ_SESSION_TIMEOUT": str(ARGS.session_timeout)}
    began = time.monotonic()
    partial = False
    port = _app.free_port(ARGS.port)
    with contextlib.ExitStack() as servers:  # every server started here is stopped when this block ends
        if ARGS.url:  # an app already running (behind a proxy, several processes): ARGS.pids are its processes
            app_url, app_pids, app = ARGS.url.rstrip("/"), ARGS.pids, None
        else:
            app = servers.enter_context(_app.App("app.py", port=port, env=env))
            app_url, app_pids = app.url, [app.process.pid]
        reference = servers.enter_context(_app.App(str(reference_page), port=_app.free_port(port + 1), timings=True))
        print(f"app on {app_url}, reference on {reference.url}; warming both up (one open each)", flush=True)
        files, source = first_visit_files(app_url, ARGS.page) if ARGS.fresh else ([], "")
        if files:
            print(f"a first visit downloads {len(files)} files ({source})", flush=True)
        try:
            asyncio.run(asyncio.wait_for(warm_up(app_url, reference.url), ARGS.budget))
            left = ARGS.budget - (time.monotonic() - began)
            asyncio.run(asyncio.wait_for(measure(app_url, app_pids, reference, rows), left))
        except TimeoutError:
            partial = True
            print(f"--budget ({ARGS.budget:.0f} s) ran out: the table so far", flush=True)
        if ARGS.fresh and not partial and time.monotonic() - began < ARGS.budget:
            rows.append(fresh_browsers(app_url, files, ARGS.fresh, app_pids))
            report(rows[-1])
        errors = app.server_errors() if app is not None else []
    if errors:
        print(f"The server printed {len(errors)} traceback(s): {sorted(set(errors))[:3]}")
    return print_table(rows, load_before, partial)


async def warm_up(app_url: str, reference_url: str) -> None:
    """One open of each page first: a class opens a page a teacher has already shown (models loaded, code compiled)."""
    for url, path, query in ((app_url, ARGS.page, ARGS.query), (app_url, "training", ""), (reference_url, "", "")):
        async with Student(url, timeout_s=ARGS.timeout) as student:
            await student.open(path, query)


def print_table(rows: list[Row], load_before: str, partial: bool = False) -> int:
    lines = [
        "",
        "## "
        + ("(cut short by --budget) " if partial else "")
        + f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC",
        "",
        f"Commit {commit()}; `python benchmarks/class_load.py {' '.join(sys.argv[1:])}`.",
        *_app.machine(load_before),
        "",
        _app.table(HEADER, [row.cells() for row in rows]),
        "",
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
    parser.add_argument("--timeout", type=float, default=120, help="seconds one open or flip may take")
    parser.add_argument("--session-timeout", type=float, default=5, help="LLMVIZ_SESSION_TIMEOUT of the app")
    parser.add_argument("--budget", type=float, default=1500, help="seconds the whole benchmark may take")
    parser.add_argument("--record", default=None, help="append the results to this Markdown file")
    parser.add_argument("--validate", action="store_true", help="compare the protocol client with chromium once")
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
    return args


def registry_cost(kind: str, students: int, port: int) -> list[str]:
    """Time the registry calls one page open makes, for ``students`` students on a ``kind`` database (``sqlite`` or
    ``postgresql``): table rows ``| database | students | mode | p50 ms | p95 ms | max ms | CPU ms each |``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from llmviz.jobs.manager import JobManager
    from llmviz.lab.registry import RunRecord
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
            lab.registry.ensure_student(name, name=name)
            for r in range(3):
                run_id = f"{name[-3:]}r{r}"
                lab.registry.add_run(RunRecord(run_id, name, "train", f"Run {r}", "finished", total=300, step=300))
                lab.registry.add_points(run_id, [(step, 3.0 - step / 200, None) for step in range(1, 301)])
                for step in (0, 1, 10, 100, 200, 300):
                    lab.registry.add_snapshot(run_id, step, f"{folder}/{run_id}-{step}", 1000)
        manager = JobManager(max_running=1, lab=lab)

        def page_open(name: str) -> tuple[float, float]:
            wall, cpu = time.perf_counter(), time.thread_time()
            kept = manager.kept_runs(name)  # the picker: the student's runs (and the orphan check)
            if kept:
                lab.registry.steps_by_run(name)  # their kept snapshot steps
            lab.registry.student(name)  # the teacher flag / display name
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
                f"Commit {commit()}; `python benchmarks/class_load.py --registry {','.join(kinds)} --students "
                f"{','.join(map(str, ARGS.students))}`. Each student has 3 kept runs (300 curve points, 6 snapshot "
                "rows each); an open is the registry calls the sidebar's picker makes (the student's runs with the "
                "orphan check, their snapshot steps, their row), each student twice.\n"
                f"Load average before starting: {load} (1 / 5 / 15 min), on this shared 2-core machine.\n\n"
                f"{text}\n"
            )
    return 0


ARGS = parse([])

if __name__ == "__main__":
    ARGS = parse()
    if ARGS.registry:
        sys.exit(run_registry([kind for kind in ARGS.registry.split(",") if kind in ("sqlite", "postgresql")]))
    sys.exit(validate() if ARGS.validate else run_all())
