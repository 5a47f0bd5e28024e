"""The soak: a scripted class trains, reloads and resumes for minutes while the lab is hurt, then every run is checked.

    python benchmarks/soak.py [--students 20] [--minutes 10] [--steps 120] [--port 8730] [--max-jobs 2]
                              [--kill-at 0.45] [--locks 0.2,0.7] [--lock-s 15] [--record docs/benchmarks/soak.md]

A class of ``--students`` students, each a browser of its own (a fresh identity secret in its ``llmviz_student``
cookie) speaking Streamlit's protocol (``benchmarks/_protocol_client.py``), half on each of two ``streamlit run
app.py`` processes that share one runs folder and one SQLite lab (``tests/support/app_server.py``; the set-up of
docs/classroom.md, without the proxy: each student stays on its process). For ``--minutes`` every student, over and
over: opens (reloads) the Training page, presses **Train** (``--steps`` steps) when it has no run training, or
**Resume it** on a kept run that was interrupted, reads for a few seconds, and reloads. Meanwhile:

- at ``--kill-at`` of the time, the first app process is killed (SIGKILL: no goodbye) and started again on the same
  port; its students reconnect when it answers;
- at each of ``--locks``, another program holds the lab's database locked (``BEGIN EXCLUSIVE``) for ``--lock-s``
  seconds;
- at each of ``--parks``, the teacher (a browser given the teacher key, on the second process) opens the class view,
  picks a run of the class that is training, and presses **Park it**; its student resumes it later like an
  interrupted one;
- now and then (``--deletes`` of a student's turns), a student with two or more ended runs deletes the oldest:
  **Delete it**, then **Yes, delete it** (refused in one sentence while the lab is locked).

The class's log: every run a student made (a run of theirs that appeared in the lab after their Train or Resume)
and the highest step seen of it. At the end the students stop, the runs still training finish (or are stopped), and
the lab is checked against the log: **no page error** (a fault is an alert's sentence, never the generic error),
**nothing lost** (every run logged is in the lab, at least at the step seen, unless its student deleted it), **a
deletion is whole** (a deleted run is gone from the lab and from the runs folder, and the rebuild does not bring it
back),
**no ghost** (no run stuck queued or training with nothing to show for it, no run of nobody), **every curve
complete** (one point per step from its first to its last). Reported: the counts, page opens p50/p95 and errors, the
load average before and after (the machine's other work slows everything; the checks do not depend on speed).
Exit status 1 when a check fails.

Not in rounds: one side only, a pass/fail check of what the class leaves behind, which does not depend on speed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
import secrets
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _app  # noqa: E402
from _protocol_client import ProtocolError, Student  # noqa: E402

from tests.support.app_server import AppServer, start_app  # noqa: E402

COOKIE = "llmviz_student"
LIVE = ("queued", "running", "paused")


def student_of(secret: str) -> str:
    """The student id the app makes of a browser secret (``ui.identity.student_from_secret``).

    >>> student_of("A" * 32)
    's-b0cf14dd25766605c6177d345c848518'
    """
    return "s-" + hashlib.sha256(f"llmviz-student:{secret}".encode()).hexdigest()[:32]


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (inclusive method), 0 for none.

    >>> quantile([1.0, 2.0, 3.0, 4.0], 0.5)
    2.5
    """
    return _app.quantile(values, q) if values else 0.0


def curve_gaps(steps: list[int]) -> list[tuple[int, int]]:
    """The missing stretches ``(first, last)`` in a curve's steps (one point per step from its first to its last).

    >>> curve_gaps([0, 1, 2, 5, 6, 9])
    [(3, 4), (7, 8)]
    >>> curve_gaps([])
    []
    """
    gaps = []
    for before, after in zip(steps, steps[1:], strict=False):
        if after > before + 1:
            gaps.append((before + 1, after - 1))
    return gaps


@dataclass
class Log:
    """What the class did and saw."""

    runs: dict[str, str] = field(default_factory=dict)  # run id → student id: every run a student made
    seen: dict[str, int] = field(default_factory=dict)  # run id → the highest step seen
    opens: list[float] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    refused: int = 0  # opens refused while a process was down
    trains: int = 0
    resumes: int = 0
    resume_missed: int = 0  # a kept interrupted run whose Resume button the Training page did not draw
    parks: int = 0  # the teacher's Park it pressed on a training run
    parked: set[str] = field(default_factory=set)  # the runs the teacher parked
    deleting: set[str] = field(default_factory=set)  # the runs a student pressed Yes, delete it for
    events: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ the lab, read


def read_lab(database: str) -> dict[str, dict] | None:
    """Every run in the lab: id → {student, state, step, points (steps)}; None while it cannot be read."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=2)) as db:
            rows = db.execute("select id, student, state, step, label from lab_runs").fetchall()
            points: dict[str, list[int]] = {}
            for run, step in db.execute("select run, step from lab_points order by run, step"):
                points.setdefault(run, []).append(step)
    except sqlite3.Error:
        return None
    return {
        run: {"student": student, "state": state, "step": step, "label": label, "points": points.get(run, [])}
        for run, student, state, step, label in rows
    }


def watch_lab(database: str, log: Log, students: set[str], stop: threading.Event) -> None:
    """Every 2 s: runs of the class that appeared are logged as theirs, and the highest step seen of each."""
    while not stop.wait(2.0):
        found = read_lab(database)
        for run, row in (found or {}).items():
            if row["student"] in students:
                log.runs.setdefault(run, row["student"])
                log.seen[run] = max(log.seen.get(run, 0), row["step"])


# ------------------------------------------------------------------------------------------------ the faults


def hold_lock(database: str, seconds: float, log: Log) -> None:
    """Another program holds the lab's database locked (a write transaction) for ``seconds``."""
    began = time.monotonic()
    with contextlib.closing(sqlite3.connect(database, timeout=60, isolation_level=None)) as db:
        db.execute("BEGIN EXCLUSIVE")
        log.events.append(f"{time.strftime('%H:%M:%S')} database locked for {seconds:.0f} s")
        time.sleep(seconds)
        db.execute("COMMIT")
    log.events.append(f"{time.strftime('%H:%M:%S')} database free again ({time.monotonic() - began:.0f} s)")


# ------------------------------------------------------------------------------------------------ a student


async def act(student: Student, me: str, log: Log, rng: random.Random, database: str, deletes: float = 0.0) -> None:
    """Train when nothing of theirs is live; else, now and then, resume a kept interrupted or parked run, or delete
    the oldest of their ended runs (with ``deletes`` of the chance, when they have two or more)."""
    lab = read_lab(database) or {}
    mine = {run: row for run, row in lab.items() if row["student"] == me}
    if any(row["state"] in LIVE for row in mine.values()):
        return
    ended = [run for run, row in mine.items() if row["state"] in ("finished", "stopped") and run not in log.deleting]
    if len(ended) >= 2 and rng.random() < deletes:
        await delete(student, me, ended[0], mine[ended[0]]["label"], log)
        return
    resumable = [run for run, row in mine.items() if row["state"] in ("interrupted", "parked")]
    if resumable:
        try:
            student.widget("kept_delete_choice")
        except KeyError:  # no Kept runs part on the page (the lab said it cannot be read now): Train below
            resumable = []
    if resumable and rng.random() < 0.7:
        try:
            choice = f"{mine[resumable[0]]['label']} · {resumable[0]}"  # the kept run's option (ui/panels/kept.py)
            await student.set_widget("kept_delete_choice", choice, whole_page=True)
            clicked = await student.click(f"run_resume_chosen_{resumable[0]}")  # its Resume (run_view.controls)
            log.page_errors.extend(f"{me[:10]} resume: {e[:160]}" for e in clicked.errors)
            log.resumes += 1
            return
        except KeyError:  # the page drew no Resume for it: counted, and a failure of the soak (see main)
            log.resume_missed += 1
    try:
        clicked = await student.click("train")
    except KeyError:
        return
    log.page_errors.extend(f"{me[:10]} train: {e[:160]}" for e in clicked.errors)
    log.trains += 1


async def delete(student: Student, me: str, run: str, label: str, log: Log) -> None:
    """The student deletes ``run`` from *Kept runs*: picks it, **Delete it** (asks first), **Yes, delete it**."""
    try:
        await student.set_widget("kept_delete_choice", f"{label} · {run}", whole_page=True)
        asked = await student.click("kept_delete")
        done = await student.click("kept_delete")
    except KeyError:  # no Kept runs part on the page (the lab said it cannot be read now)
        return
    log.deleting.add(run)
    log.page_errors.extend(f"{me[:10]} delete: {e[:160]}" for e in asked.errors + done.errors)


async def teacher_parks(url: str, key: str, runs: Path, students: set[str], log: Log) -> None:
    """The teacher's browser opens the class view, picks a run of the class that is training (its option as the
    class view writes it: the student's name, the run's label, its id), and presses Park it."""
    from llmviz.lab.service import Lab

    lab = Lab.at(runs)
    try:
        rows = [row for row in lab.class_runs() if row.student in students and row.state == "running"]
    finally:
        lab.registry.dispose()
    if not rows:
        log.events.append(f"{time.strftime('%H:%M:%S')} the teacher found no run training to park")
        return
    teacher = Student(url, timeout_s=180, headers={"Cookie": f"{COOKIE}={secrets.token_urlsafe(24)}"})
    try:
        opened = await teacher.open("classroom", f"teacher={key}")
        log.page_errors.extend(f"teacher open: {e[:160]}" for e in opened.errors)
        row = rows[0]
        picked = await teacher.set_widget("class_run", f"{row.name} · {row.label} · {row.run_id}", whole_page=True)
        parked = await teacher.click("class_park")
        log.page_errors.extend(f"teacher park: {e[:160]}" for e in picked.errors + parked.errors)
        log.parks += 1
        log.parked.add(row.run_id)
        log.events.append(f"{time.strftime('%H:%M:%S')} the teacher parked {row.run_id}")
    except (KeyError, ProtocolError, OSError) as error:
        log.events.append(f"{time.strftime('%H:%M:%S')} the teacher could not park: {error!r}"[:200])
    finally:
        await teacher.close()


# ------------------------------------------------------------------------------------------------ the checks


def check(lab: dict[str, dict], log: Log, students: set[str]) -> tuple[list[str], dict[str, int]]:
    """The end's checks: nothing lost, no ghost, every curve complete. Returns the failures and the counts.

    >>> log = Log(runs={"r1": "s1"}, seen={"r1": 5})
    >>> check({"r1": {"student": "s1", "state": "finished", "step": 9, "points": list(range(10))}}, log, {"s1"})
    ([], {'runs': 1, 'points': 10, 'finished': 1, 'resumable': 0, 'stopped': 0, 'deleted': 0})
    >>> check({"r1": {"student": "s1", "state": "queued", "step": 3, "points": [0, 1, 3]}}, log, {"s1"})[0]
    ['r1: at step 3, below the 5 seen', 'r1: stuck queued at the end (a ghost)', 'r1: curve misses steps 2-2']

    A run its student deleted is not lost: it is gone (one still in the lab was refused, as under a lock).

    >>> check({}, Log(runs={"r1": "s1"}, deleting={"r1"}), {"s1"})[0]
    []
    """
    failures = []
    for run, student in log.runs.items():
        if run not in lab and run not in log.deleting:
            failures.append(f"{run} of {student[:10]}: lost (not in the lab)")
    counts = {"runs": 0, "points": 0, "finished": 0, "resumable": 0, "stopped": 0}
    counts["deleted"] = sum(run not in lab for run in log.deleting)
    for run, row in lab.items():
        if row["student"] not in students:
            failures.append(f"{run}: a run of nobody in the class (a ghost)")
            continue
        counts["runs"] += 1
        counts["points"] += len(row["points"])
        state = row["state"]
        counts["finished"] += state == "finished"
        counts["resumable"] += state in ("interrupted", "parked")
        counts["stopped"] += state == "stopped"
        if row["step"] < log.seen.get(run, 0):
            failures.append(f"{run}: at step {row['step']}, below the {log.seen[run]} seen")
        if state in LIVE:
            failures.append(f"{run}: stuck {state} at the end (a ghost)")
        gaps = curve_gaps(row["points"])
        if gaps:
            failures.append(f"{run}: curve misses steps " + ", ".join(f"{a}-{b}" for a, b in gaps[:5]))
        if row["points"] and row["points"][-1] < row["step"] - 1:
            failures.append(f"{run}: curve ends at {row['points'][-1]}, the run at step {row['step']}")
    return failures, counts


# ------------------------------------------------------------------------------------------------ the class


def start(port: int, env: dict[str, str], folder: Path, name: str) -> AppServer:
    return start_app("app.py", port=port, env=env, log=folder / f"{name}-{int(time.time())}.log", timeout_s=300)


async def soak(args: argparse.Namespace) -> int:
    folder = Path(args.folder or tempfile.mkdtemp(prefix="llmviz-soak-"))
    runs = folder / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    database = str(runs / "lab.db")
    env = {
        "LLMVIZ_RUNS_DIR": str(runs),
        "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32),
        "LLMVIZ_MAX_JOBS": str(args.max_jobs),
        "LLMVIZ_TEACHER_KEY": secrets.token_urlsafe(16),
        "LLMVIZ_TORCH_THREADS": "1",
    }
    load_before = os.getloadavg()
    print(f"soak: {args.students} students, {args.minutes:g} min, runs folder {runs}", flush=True)
    apps = [start(args.port, env, folder, "a"), start(args.port + 1, env, folder, "b")]
    log = Log()
    stop = threading.Event()
    class_ids: set[str] = set()
    try:
        began = time.monotonic()
        seconds = args.minutes * 60
        deadline = began + seconds
        urls = [app.url for app in apps]
        watcher_students: set[str] = set()  # each student's id, given to the watcher before it arrives

        async def student_task(n: int) -> None:
            await one_student_logged(n, urls, log, deadline, args, database, watcher_students)

        watcher = threading.Thread(target=watch_lab, args=(database, log, watcher_students, stop), daemon=True)
        watcher.start()
        tasks = [asyncio.ensure_future(student_task(n)) for n in range(args.students)]
        faults = sorted(
            [(at, "lock") for at in args.locks] + [(args.kill_at, "kill")] + [(at, "park") for at in args.parks]
        )
        for at, what in faults:
            await asyncio.sleep(max(0.0, began + at * seconds - time.monotonic()))
            if what == "lock":
                threading.Thread(target=hold_lock, args=(database, args.lock_s, log), daemon=True).start()
            elif what == "park":
                await teacher_parks(apps[1].url, env["LLMVIZ_TEACHER_KEY"], runs, watcher_students, log)
            else:
                log.events.append(f"{time.strftime('%H:%M:%S')} app process A killed (SIGKILL)")
                apps[0].process.send_signal(signal.SIGKILL)
                apps[0].process.wait()
                restarted = time.monotonic()
                apps[0] = await asyncio.to_thread(start, args.port, env, folder, "a")
                log.events.append(
                    f"{time.strftime('%H:%M:%S')} app process A answers again ({time.monotonic() - restarted:.0f} s)"
                )
        await asyncio.gather(*tasks)
        class_ids = set(watcher_students)
        # the end: runs still live finish (short ones) within --finish-s, else they are left as the lab says
        finish_by = time.monotonic() + args.finish_s
        while time.monotonic() < finish_by:
            lab = read_lab(database) or {}
            if not any(row["state"] in LIVE for run, row in lab.items() if row["student"] in class_ids):
                break
            await asyncio.sleep(3)
        time.sleep(3)  # the keepers' last writes (once a second)
        stop.set()
        final = read_lab(database) or {}
        for run, row in final.items():  # the last steps seen, before the check
            if row["student"] in class_ids:
                log.runs.setdefault(run, row["student"])
    finally:
        stop.set()
        for app in apps:
            app.stop()
    final = read_lab(database) or {}
    failures, counts = check(final, log, class_ids)
    if log.page_errors:  # a fault must be one sentence, never the generic error or a traceback
        failures.append(f"{len(log.page_errors)} page(s) drew an error instead of a sentence")
    for run in sorted(run for run in log.deleting if run not in final):  # a deletion is whole: its files go too
        if any((runs / "lab").glob(f"*/{run}/run.json")):
            failures.append(f"{run}: deleted from the lab, but its run.json is still in the runs folder")
    if log.resume_missed:  # a kept interrupted run the student could not resume: the soak did not test Resume
        failures.append(f"{log.resume_missed} time(s) a kept interrupted run had no Resume button on the page")
    try:
        rebuilt = rebuild_check(runs, final, class_ids, frozenset(run for run in log.deleting if run not in final))
    except Exception as error:  # noqa: BLE001 - said as a failure of the check, the rest still reported
        rebuilt = ("rebuild from the run folders: failed", [f"the rebuild failed: {error!r}"[:300]])
    failures += rebuilt[1]
    load_after = os.getloadavg()
    lines = report(args, log, counts, failures, load_before, load_after, time.monotonic() - began)
    lines.insert(-1 - len(failures[:20]) - len(log.page_errors[:5]), f"- {rebuilt[0]}")
    print("\n".join(lines), flush=True)
    if args.record:
        with open(args.record, "a") as out:
            out.write("\n" + "\n".join(lines) + "\n")
    return 1 if failures else 0


async def one_student_logged(n, urls, log, deadline, args, database, ids: set[str]) -> None:
    """:func:`one_student`, with its id given to the watcher first."""
    secret = secrets.token_urlsafe(24)
    me = student_of(secret)
    ids.add(me)
    url = urls[n % len(urls)]
    rng = random.Random(n)
    await asyncio.sleep(rng.uniform(0, 10))
    while time.monotonic() < deadline:
        student = Student(url, timeout_s=180, headers={"Cookie": f"{COOKIE}={secret}"})
        try:
            opened = await student.open("training", f"steps={args.steps}")
            log.opens.append(opened.seconds)
            log.page_errors.extend(f"{me[:10]} open: {e[:160]}" for e in opened.errors)
            await act(student, me, log, rng, database, args.deletes)
            await asyncio.sleep(rng.uniform(3, 12))
        except (ProtocolError, OSError):
            log.refused += 1  # its process is down (killed, starting again): the browser reconnects
            await asyncio.sleep(3)
        finally:
            await student.close()


def rebuild_check(
    runs: Path, final: dict[str, dict], students: set[str], deleted: frozenset[str] = frozenset()
) -> tuple[str, list[str]]:
    """The lab rebuilt from the run folders alone (``python -m llmviz lab rebuild`` into a new database) must hold
    every run at the same state, step and curve. Skipped where this code keeps no ``run.json``."""
    try:
        from llmviz.lab.rebuild import rebuild
        from llmviz.lab.service import Lab
    except ImportError:
        return "rebuild from the run folders: not checked (this code keeps no run.json)", []
    copy = Path(tempfile.mkdtemp(prefix="llmviz-soak-rebuilt-")) / "lab.db"
    lab = Lab.at(runs, url=f"sqlite:///{copy}")
    done = rebuild(lab)
    lab.registry.dispose()
    again = read_lab(str(copy)) or {}
    failures = [f"{run}: deleted, but its folder brought it back in the rebuild" for run in deleted if run in again]
    for run, row in final.items():
        if row["student"] not in students:
            continue
        other = again.get(run)
        if other is None:
            failures.append(f"{run}: not rebuilt from its folder")
        elif (other["step"], other["points"]) != (row["step"], row["points"]):
            failures.append(
                f"{run}: rebuilt at step {other['step']} with {len(other['points'])} points, not "
                f"{row['step']} with {len(row['points'])}"
            )
    return f"rebuild from the run folders alone into a new database: {done.line()}", failures


def _commit() -> str:
    from record import commit

    return commit()


def report(args, log: Log, counts: dict, failures: list[str], before, after, wall: float) -> list[str]:
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {args.students} students · {args.minutes:g} min",
        "",
        f"- machine: {_app.cpu_model()}, {os.cpu_count()} cores; load average (1 / 5 / 15 min) before "
        f"{before[0]:.1f} / {before[1]:.1f} / {before[2]:.1f}, after {after[0]:.1f} / {after[1]:.1f} / {after[2]:.1f}",
        f"- commit: {_commit()}",
        f"- set-up: 2 app processes, one runs folder, SQLite lab, LLMVIZ_MAX_JOBS={args.max_jobs}, {args.steps} steps "
        f"a run; process A killed at {args.kill_at:.0%} and restarted; the database locked {len(args.locks)} times "
        f"for {args.lock_s:.0f} s; the teacher parked a training run {len(args.parks)} times",
        f"- the class: {log.trains} Train, {log.resumes} Resume, {len(log.deleting)} Yes, delete it "
        f"({counts.get('deleted', 0)} gone, the others refused), {log.parks} Park it by the teacher, "
        f"{len(log.opens)} page opens (p50 "
        f"{quantile(log.opens, 0.5):.1f} s, p95 {quantile(log.opens, 0.95):.1f} s, max "
        f"{max(log.opens, default=0):.1f} s), {log.refused} open(s) refused while a process was down, "
        f"{len(log.page_errors)} page error(s)",
        f"- the lab at the end: {counts['runs']} runs ({counts['finished']} finished, {counts['resumable']} "
        f"interrupted or parked, {counts['stopped']} stopped), {counts['points']} curve points; "
        f"{len(log.runs)} runs in the class's log; wall {wall / 60:.1f} min",
        f"- checks: **{'PASS' if not failures else 'FAIL'}** (nothing lost, no ghost, every curve complete, every "
        "deletion whole)" + ("" if not failures else f": {len(failures)} failure(s)"),
    ]
    lines += [f"  - {failure}" for failure in failures[:20]]
    lines += [f"  - page error: {error}" for error in log.page_errors[:5]]
    lines += ["- events: " + "; ".join(log.events[:12])]
    return lines


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--port", type=int, default=8730)
    parser.add_argument("--max-jobs", type=int, default=2)
    parser.add_argument("--kill-at", type=float, default=0.45)
    parser.add_argument("--locks", type=lambda text: [float(x) for x in text.split(",") if x], default=[0.2, 0.7])
    parser.add_argument("--lock-s", type=float, default=15.0)
    parser.add_argument("--parks", type=lambda text: [float(x) for x in text.split(",") if x], default=[0.3, 0.6])
    parser.add_argument("--deletes", type=float, default=0.15, help="the chance a turn deletes an ended run")
    parser.add_argument("--finish-s", type=float, default=300.0, help="how long the last runs may take to finish")
    parser.add_argument("--folder", default=None, help="where the runs folder and logs go (default: a temp folder)")
    parser.add_argument("--record", default=None, help="append the result to this Markdown file")
    args = parser.parse_args(argv)
    if not 1 <= args.students <= 120 or args.minutes <= 0 or not 1 <= args.steps <= 100_000:
        parser.error("--students 1..120, --minutes > 0, --steps 1..100000")
    return args


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(soak(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
