"""Where a class's open and toggle go: the app and a bare Streamlit page, sampled at the server with py-spy.

    python benchmarks/profile_open.py [--students 40] [--page attention] [--toggle mask] [--toggles 2]
                                      [--rate 200] [--port 8560] [--record docs/benchmarks/class_load.md]

Issue 71 §1 asks where an open of ``/attention`` goes before it asks for it to cost less. This starts one app
process (``app.py``) and the class benchmark's bare page (``_app.REFERENCE_PAGE``: torch, one Plotly heatmap under a
slider), warms each up with one open, then, for each in turn, ``--students`` students (the class benchmark's protocol
client, ``benchmarks/class_load.py``) open it at once and flip its toggle ``--toggles`` times, while
`py-spy <https://github.com/benfred/py-spy>`_ samples the server process: ``--rate`` samples a second of the thread
that holds the GIL (``--gil``: one process runs one thread of Python at a time, so the class's page runs queue for
it, and that queue is the class's wait; a thread waiting for a lock or the GIL is not counted, nor C code that lets
the GIL go, such as torch's kernels), ``--nonblocking`` (the process is never paused). What it prints:

- per page and action: the server's CPU seconds per open or flip (``/proc``), the samples, and their share by the
  thread they were taken in: the **page run** (Streamlit's script thread: the page's own code, its figures, and
  Streamlit turning each element into a message), the **server loop** (Tornado's event loop: the websocket, sending
  the messages), and the rest (the lab's keeper, watchdogs);
- the app's page runs by the **package** whose code was running (a sample's innermost frame: ``streamlit``,
  ``plotly``, ``pandas``, ``torch``, this project's ``llmviz``/``ui``/``stages``, the standard library …), beside the
  bare page's;
- the **project functions** that hold the most page-run samples, inclusive (a sample counts for every project
  function on its stack, once), the top ``--top``; the router (``app.py``) and the sections' wrappers
  (``ui/sections.py``), on every page run's stack, are left out.

Not in rounds: a profile says where the time of one class goes, not how two sides compare; the bare page is
sampled beside the app as the floor, never a side divided by (``benchmarks/class_load.py`` times them).

py-spy is a sampling profiler: shares are of samples, within a few per cent at a few thousand samples; the CPU
seconds come from the kernel, not from the samples. Run it on a quiet machine (the load average is printed);
``--record`` appends the tables, dated, to the class benchmark's record. ``pip install py-spy`` (in
requirements-dev.txt) puts the ``py-spy`` binary beside this Python; reading another process's memory needs
ptrace (root, or ``kernel.yama.ptrace_scope`` 0).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _app  # noqa: E402
import class_load  # noqa: E402
from _protocol_client import Student  # noqa: E402

PROJECT = ("llmviz", "ui", "stages", "app.py")  # this project's code, by its top folder (or file)
WRAPPERS = ("app.py", "ui/sections.py")  # the router and the sections' wrappers: on every page run's stack
RECORD = "docs/benchmarks/profile_open.md"
SCRIPT_THREAD = "_run_script"  # Streamlit's ScriptRunner: a frame of the page run's thread
SERVER_LOOP = ("tornado", "asyncio")  # the event loop's thread: the websocket and the messages sent


# ---------------------------------------------------------------------------- py-spy's raw stacks


def parse_raw(text: str) -> list[tuple[list[str], int]]:
    """py-spy's ``--format raw`` output (one stack a line, root first, ``;``-separated, then its count) as
    ``(frames, count)``.

    >>> parse_raw("main (a.py:3);f (b.py:7) 12\\nmain (a.py:3) 2\\n")
    [(['main (a.py:3)', 'f (b.py:7)'], 12), (['main (a.py:3)'], 2)]
    """
    stacks = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def frame_path(frame: str) -> str:
    """The file of a py-spy frame ``name (path:line)``.

    >>> frame_path("render (ui/panels/attention.py:41)")
    'ui/panels/attention.py'
    """
    inside = frame.rpartition(" (")[2].rstrip(")")
    return inside.rpartition(":")[0] or inside


def package_of(path: str, root: str) -> str:
    """Which package's code ``path`` is (py-spy names a file relative to the ``sys.path`` entry it was found on, so
    ``plotly/io/_json.py``, ``ui/sections.py``, and a page script by its name alone): a distribution's top folder,
    this project's top folder (a page script: "stages"), or a module of the standard library, "(python)".

    >>> package_of("plotly/io/_json.py", "/srv/app"), package_of("ui/panels/attention.py", "/srv/app")
    ('plotly', 'ui')
    >>> package_of("json/encoder.py", "/srv/app"), package_of("threading.py", "/srv/app")
    ('json (python)', 'threading (python)')
    >>> package_of("/v/lib/python3.11/site-packages/torch/nn/modules/module.py", "/srv/app")
    'torch'
    """
    if path.startswith("/"):
        if "site-packages/" in path:
            return package_of(path.split("site-packages/", 1)[1], root)
        inside = os.path.relpath(path, root)
        return package_of(inside, root) if not inside.startswith("..") else "other"
    top = path.split("/", 1)[0]
    if top in PROJECT:
        return top
    if "/" not in path and (Path(root) / "stages" / path).is_file():
        return "stages"
    name = top.removesuffix(".py")
    return f"{name} (python)" if name in sys.stdlib_module_names else name


def project_function(frame: str, root: str) -> str | None:
    """``path:function`` of a frame in this project's code, else None.

    >>> project_function("draw (ui/panels/attention.py:41)", "/srv/app")
    'ui/panels/attention.py:draw'
    >>> project_function("dumps (json/__init__.py:231)", "/srv/app") is None
    True
    """
    path = frame_path(frame)
    package = package_of(path, root)
    if package not in (*PROJECT, "stages"):
        return None
    shown = f"stages/{path}" if package == "stages" and "/" not in path else path
    return None if shown in WRAPPERS else f"{shown}:{frame.rpartition(' (')[0]}"


def thread_of(frames: list[str]) -> str:
    """Which thread a stack was sampled in: the page run, the server loop, or another.

    >>> thread_of(["run (threading.py:1)", "_run_script (script_runner.py:9)", "f (a.py:1)"])
    'page run'
    >>> thread_of(["start (tornado/ioloop.py:2)"])
    'server loop'
    >>> thread_of(["_bootstrap (threading.py:1)", "run (llmviz/jobs/keeping.py:3)"])
    'other'
    """
    if any(SCRIPT_THREAD in frame.rpartition(" (")[0] for frame in frames):
        return "page run"
    if any(part in frame_path(frame) for frame in frames for part in SERVER_LOOP):
        return "server loop"
    return "other"


@dataclass
class Profile:
    """The samples of one page and action."""

    page: str
    action: str
    stacks: list[tuple[list[str], int]]
    cpu_per: float  # the server's CPU seconds per open or flip
    count: int  # opens or flips
    seconds_p95: float = float("nan")
    threads: collections.Counter = field(default_factory=collections.Counter)

    def __post_init__(self) -> None:
        for frames, count in self.stacks:
            self.threads[thread_of(frames)] += count

    @property
    def samples(self) -> int:
        return sum(self.threads.values())

    def share(self, thread: str) -> float:
        return self.threads[thread] / max(1, self.samples)

    def page_runs(self) -> list[tuple[list[str], int]]:
        return [(frames, count) for frames, count in self.stacks if thread_of(frames) == "page run"]

    def by_package(self, root: str) -> collections.Counter:
        """Page-run samples by the package of their innermost frame."""
        found: collections.Counter = collections.Counter()
        for frames, count in self.page_runs():
            found[package_of(frame_path(frames[-1]), root)] += count
        return found

    def project_functions(self, root: str) -> collections.Counter:
        """Page-run samples with each project function on their stack (once per stack)."""
        found: collections.Counter = collections.Counter()
        for frames, count in self.page_runs():
            for name in {name for frame in frames if (name := project_function(frame, root)) is not None}:
                found[name] += count
        return found


# ---------------------------------------------------------------------------- sampling a class


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: pip install -r requirements-dev.txt (or pip install py-spy)")
    return found


class Sampler:
    """py-spy recording ``pid`` from ``__enter__`` to ``__exit__`` (stopped with SIGINT: it then writes its file)."""

    def __init__(self, pid: int, rate: int, folder: Path):
        self.pid, self.rate = pid, rate
        self.output = folder / f"spy-{pid}-{time.monotonic_ns()}.txt"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Sampler:
        command = [py_spy(), "record", "--pid", str(self.pid), "--rate", str(self.rate), "--format", "raw"]
        command += ["--gil", "--nonblocking", "--output", str(self.output)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # attached before the class starts
        if self.process.poll() is not None:
            raise SystemExit(f"py-spy could not sample the server: {self.process.stderr.read().strip()[:300]}")
        return self

    def __exit__(self, *_exc) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def stacks(self) -> list[tuple[list[str], int]]:
        return parse_raw(self.output.read_text()) if self.output.exists() else []


async def one_class(app: _app.App, page: str, query: str, key: str, values: list, folder: Path) -> list[Profile]:
    """``ARGS.students`` students open ``page`` at once, then flip ``key`` through ``values``; each sampled."""
    pid = app.process.pid
    with Sampler(pid, ARGS.rate, folder) as opening:
        students, opened = await class_load.open_all(app.url, page, ARGS.students, pid, query)
    with Sampler(pid, ARGS.rate, folder) as flipping:
        flipped = await class_load.toggle_all(students, key, values, pid)
    await class_load.close_all(students)
    name = page or "bare page"
    for row in (opened, flipped):
        for error in sorted(set(row.errors))[:3]:
            print(f"  {name} {row.what}: error: {error}", flush=True)
    return [
        Profile(name, "open", opening.stacks(), opened.cpu_per, len(opened.seconds), p95(opened.seconds)),
        Profile(name, "toggle", flipping.stacks(), flipped.cpu_per, len(flipped.seconds), p95(flipped.seconds)),
    ]


def p95(seconds: list[float]) -> float:
    return _app.quantile(seconds, 0.95) if seconds else float("nan")


async def warm(url: str, page: str, query: str) -> None:
    async with Student(url, timeout_s=ARGS.timeout) as student:
        await student.open(page, query)


def sample_both() -> list[Profile]:
    folder = Path(tempfile.mkdtemp(prefix="llmviz-profile-"))
    bare = folder / "reference.py"
    bare.write_text(_app.REFERENCE_PAGE)
    env = {"LLMVIZ_SESSION_TIMEOUT": "5", "LLMVIZ_NEW_STUDENTS_PER_MINUTE": "0"}
    port = _app.free_port(ARGS.port)
    with _app.App("app.py", port=port, env=env) as app, _app.App(str(bare), port=_app.free_port(port + 1)) as ref:
        class_load.SETUP = class_load.Setup(app.url, [app.process.pid], [app.timings], apps=[app])
        asyncio.run(warm(app.url, ARGS.page, ARGS.query))
        asyncio.run(warm(ref.url, "", ""))
        print(f"app on {app.url}, bare page on {ref.url}: {ARGS.students} students each", flush=True)
        flips = [flip % 2 == 1 for flip in range(ARGS.toggles)]  # off, on, … (the mask starts on)
        sizes = [[32.0] if flip % 2 == 0 else [48.0] for flip in range(ARGS.toggles)]  # the bare page's slider
        profiles = asyncio.run(one_class(ref, "", "", "Size", sizes, folder))
        profiles += asyncio.run(one_class(app, ARGS.page, ARGS.query, ARGS.toggle, flips, folder))
    if os.environ.get("LLMVIZ_PROFILE_KEEP"):
        print(f"py-spy's raw stacks are kept in {folder}", flush=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return profiles


# ---------------------------------------------------------------------------- the tables


def per_action_table(profiles: list[Profile]) -> list[str]:
    lines = [
        "| page | action | count | p95 s | server CPU-s each | samples | page run | server loop | other |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in profiles:
        lines.append(
            f"| {p.page} | {p.action} | {p.count} | {p.seconds_p95:.2f} | {p.cpu_per:.4f} | {p.samples:,} | "
            f"{p.share('page run'):.0%} | {p.share('server loop'):.0%} | {p.share('other'):.0%} |"
        )
    return lines


def package_table(profiles: list[Profile], root: str, top: int) -> list[str]:
    """The page runs' samples by package, as CPU seconds per open or flip (its share of the samples times the
    measured CPU seconds each), app beside the bare page."""
    columns = [p for p in profiles]
    totals = [p.by_package(root) for p in columns]
    names = collections.Counter()
    for p, counts in zip(columns, totals):
        names.update({name: count / max(1, p.samples) * p.cpu_per for name, count in counts.items()})
    header = " | ".join(f"{p.page} {p.action}" for p in columns)
    lines = [f"| package (innermost frame) | {header} |", "|---|" + "---|" * len(columns)]
    for name, _ in names.most_common(top):
        cells = [
            f"{counts[name] / max(1, p.samples) * p.cpu_per * 1000:.1f} ms" if counts[name] else "—"
            for p, counts in zip(columns, totals)
        ]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines


def function_table(profile: Profile, root: str, top: int) -> list[str]:
    counts = profile.project_functions(root)
    runs = sum(count for _, count in profile.page_runs())
    lines = [
        f"| project function ({profile.page} {profile.action}) | share of the page run | ms each |",
        "|---|---|---|",
    ]
    for name, count in counts.most_common(top):
        share = count / max(1, runs)
        ms = count / max(1, profile.samples) * profile.cpu_per * 1000
        lines.append(f"| `{name}` | {share:.0%} | {ms:.1f} |")
    return lines


def report(profiles: list[Profile], load_before: str) -> str:
    root = str(_app.ROOT)
    app = [p for p in profiles if p.page != "bare page"]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"## {when}: where an open and a toggle go (py-spy)",
        "",
        f"Commit {class_load.commit()}; `python benchmarks/profile_open.py --students {ARGS.students} --page "
        f"{ARGS.page} --toggles {ARGS.toggles} --rate {ARGS.rate}`; one app process and the bare page, "
        f"{os.cpu_count()} CPUs, load average {load_before} at the start, {_app.load_average()} at the end.",
        "",
        *per_action_table(profiles),
        "",
        "The page runs' samples by the package that was running, as server CPU milliseconds per open or flip:",
        "",
        *package_table(profiles, root, ARGS.top),
        "",
        *[line for p in app for line in (*function_table(p, root, ARGS.top), "")],
    ]
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40, help="students who open at once (1 to 120)")
    parser.add_argument("--page", default="attention")
    parser.add_argument("--query", default="attention_tab=Step+by+step")
    parser.add_argument("--toggle", default="mask", help="the key of the toggle every student flips")
    parser.add_argument("--toggles", type=int, default=2, help="flips per student (1 to 10)")
    parser.add_argument("--rate", type=int, default=200, help="py-spy's samples a second (10 to 1000)")
    parser.add_argument("--top", type=int, default=15, help="rows of the package and function tables")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one open or flip may take")
    parser.add_argument("--port", type=int, default=8560)
    parser.add_argument("--record", default=None, help=f"append the tables to this Markdown file ({RECORD})")
    args = parser.parse_args(argv)
    if not 1 <= args.students <= class_load.MAX_STUDENTS or not 1 <= args.toggles <= 10:
        parser.error(f"--students from 1 to {class_load.MAX_STUDENTS}, --toggles from 1 to 10")
    if not 10 <= args.rate <= 1000 or not 1 <= args.top <= 50:
        parser.error("--rate from 10 to 1000, --top from 1 to 50")
    return args


def main(argv: list[str] | None = None) -> int:
    global ARGS
    ARGS = parse(argv)
    class_load.ARGS = class_load.parse(["--students", str(ARGS.students), "--timeout", str(ARGS.timeout)])
    py_spy()  # before anything starts: a missing binary is one line
    load_before = _app.load_average()
    text = report(sample_both(), load_before)
    print(text)
    if ARGS.record:
        with open(ARGS.record, "a", encoding="utf-8") as record:
            record.write("\n" + text + "\n")
    return 0


ARGS = parse([])

if __name__ == "__main__":
    raise SystemExit(main())
