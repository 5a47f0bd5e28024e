"""The lecture hall's runs, measured: N students each start a run at once, on local worker processes and on a Ray head
of this machine, in one run.

    python benchmarks/hall_load.py [--students 20] [--steps 40] [--slots 2] [--ray-address HOST:PORT]
                                   [--pages 80] [--port 8520] [--record docs/benchmarks/hall_load.md]

For each backend (``process``: the default local workers; ``ray``: :mod:`llmviz.jobs.ray_executor` on a Ray head,
started here in a temporary folder with ``--slots`` CPUs unless ``--ray-address`` names one), one ``JobManager`` as an
app process has it (``--slots`` runs at once, one run per student, 1 torch thread per run) takes ``--students`` runs
of the Training page's smallest GPT (``gpt-nano``, characters, ``--steps`` steps) submitted at once, and the
benchmark watches every run every 20 ms until all have ended:

- **warm-up** first, for each backend: a teacher's one-step run (the local workers' forkserver starts) and, on Ray,
  the app process's warm actors started (``LLMVIZ_RAY_WARM_WORKERS``): the class arrives at a server that is up;
- **start after admission**: from the moment a run got its slot (its state turned *running*) to its first step: the
  worker's start (a forkserver child; on Ray, its resources reserved by a placement group, then a warm actor, or a
  new one that imports torch) and the run's first step;
- **wait for a slot**: from the submission to the slot (the fair queue: ``--students`` runs, ``--slots`` at a time);
- **runs lost**: runs that did not finish (0 expected), and whether the budget held at every moment: never more than
  ``--slots`` runs running, never more than one per student.

- **the pages** (``--pages`` students, 0: not measured): one app server (``app.py`` on ``--port``, started here,
  its Attention page opened once first, as a teacher would) and, for each backend, ``--pages`` students who open
  Attention all at once, over Streamlit's own protocol (``benchmarks/_protocol_client.py``, as in
  ``benchmarks/class_load.py``), at the moment the runs are submitted: the open's p50 / p95 / max seconds and its
  errors while the class's runs start and train. The runs are submitted by the benchmark's own job manager (as an
  app process's manager would submit them), so that their times can be watched; the pages' server and the runs
  share this machine's cores with both backends.

Bounded: at most 100 students, 200 page students and 1000 steps; everything on 127.0.0.1; the Ray head and the app
server started here are stopped at the end whatever happens.

Not in rounds: each backend is judged on its own budgets (start after admission, runs lost, the budget
kept), not by a speed ratio between the two, and a class's burst cannot be cut into alternating rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from llmviz.jobs.manager import JobManager  # noqa: E402
from llmviz.lab.live_status import JobState  # noqa: E402
from llmviz.training.config import TrainConfig  # noqa: E402
from llmviz.training.trainer import Trainer  # noqa: E402

TEXT = "the quick brown fox jumps over the lazy dog, said the cat to the hen\n" * 60
ENDED = {JobState.FINISHED, JobState.FAILED, JobState.STOPPED}


def trainer(steps: int, seed: int) -> Trainer:
    config = TrainConfig(
        model="gpt-nano", tokenizer="char", context_length=16, batch_size=8, steps=steps, eval_interval=steps, seed=seed
    )
    return Trainer.from_text(TEXT, config)


@dataclass
class Outcome:
    """What one backend did with the class's runs."""

    backend: str
    submitted: float = 0.0
    admitted: dict[str, float] = field(default_factory=dict)  # job id → when it turned running
    first_step: dict[str, float] = field(default_factory=dict)
    ended: dict[str, JobState] = field(default_factory=dict)
    most_running: int = 0
    most_per_student: int = 0
    seconds: float = 0.0
    opens: list[float] = field(default_factory=list)  # seconds of each page student's open of Attention
    open_errors: list[str] = field(default_factory=list)

    def starts(self) -> list[float]:
        return [self.first_step[j] - self.admitted[j] for j in self.first_step if j in self.admitted]

    def waits(self) -> list[float]:
        return [at - self.submitted for at in self.admitted.values()]


def watch(manager: JobManager, jobs: list, outcome: Outcome, timeout: float) -> None:
    """Poll every run every 20 ms until all have ended (or ``timeout``), recording when each was admitted and took
    its first step, and the most runs running at once (in all, and per student)."""
    deadline = time.monotonic() + timeout
    while len(outcome.ended) < len(jobs) and time.monotonic() < deadline:
        now = time.monotonic()
        running: dict[str, int] = {}
        for job in jobs:
            status = job.status()
            if status.state == JobState.RUNNING:
                outcome.admitted.setdefault(job.id, now)
                running[job.owner] = running.get(job.owner, 0) + 1
            if status.step >= 1:
                outcome.admitted.setdefault(job.id, now)
                outcome.first_step.setdefault(job.id, now)
            if status.state in ENDED:
                outcome.ended.setdefault(job.id, status.state)
        outcome.most_running = max(outcome.most_running, sum(running.values()), manager.running_count)
        outcome.most_per_student = max([outcome.most_per_student, *running.values()])
        time.sleep(0.02)


async def open_attention(url: str, students: int, timeout: float = 300.0) -> list:
    """``students`` students open Attention at the same moment; each one's :class:`Run` (or the exception)."""
    from _protocol_client import Student

    async def one():
        async with Student(url, timeout_s=timeout) as student:
            return await student.open("attention")

    return await asyncio.gather(*(one() for _ in range(students)), return_exceptions=True)


def record_opens(url: str, students: int, outcome: Outcome) -> None:
    from _protocol_client import Run

    for opened in asyncio.run(open_attention(url, students)):
        if isinstance(opened, Run):
            outcome.opens.append(opened.seconds)
            outcome.open_errors += list(opened.errors)
        else:
            outcome.open_errors.append(f"{type(opened).__name__}: {opened}"[:200])


def warm_up(manager: JobManager, backend: dict) -> None:
    """The class arrives at a server that has been up a while: the teacher's one-step run has trained (the local
    workers' forkserver has started), and on Ray the app process's warm actors have started (at most 120 s)."""
    teacher = manager.submit_training("teacher", trainer(1, 0), label="teacher")
    teacher.wait(300)
    if backend["workers"] == "ray":
        import ray

        from llmviz.jobs import ray_executor

        pending = [warm.ready for warm in ray_executor.warm_pool().idle]
        ray.wait(pending, num_returns=len(pending), timeout=120)


def measure(backend: dict, students: int, steps: int, slots: int, pages: tuple[str, int] | None = None) -> Outcome:
    """One backend: the class's runs submitted at once (and ``pages``: that many students opening Attention on the
    app server at that URL at the same moment), watched until all have ended."""
    manager = JobManager(
        max_running=slots, torch_threads=1, session_timeout=None, runs_per_session=1, latest_snapshot_s=0.5, **backend
    )
    outcome = Outcome(backend["workers"])
    warm_up(manager, backend)
    opening = threading.Thread(target=record_opens, args=(*pages, outcome), daemon=True) if pages else None
    try:
        runs = [trainer(steps, seed) for seed in range(students)]
        start = time.monotonic()
        outcome.submitted = start
        if opening is not None:
            opening.start()
        jobs = [manager.submit_training(f"student-{n}", run, label=f"run {n}") for n, run in enumerate(runs)]
        watch(manager, jobs, outcome, timeout=60 + students * steps)
        outcome.seconds = time.monotonic() - start
        if opening is not None:
            opening.join(timeout=600)
    finally:
        manager.shutdown()
    return outcome


def quantiles(values: list[float]) -> str:
    if not values:
        return "— / — / —"
    cut = statistics.quantiles(values, n=20, method="inclusive") if len(values) > 1 else [values[0]] * 19
    return f"{statistics.median(values):.2f} / {cut[18]:.2f} / {max(values):.2f}"


def table(outcomes: list[Outcome], students: int, slots: int, pages: int = 0) -> str:
    lines = [
        "| backend | start after admission p50 / p95 / max s | wait for a slot p50 / p95 / max s | runs finished "
        "| runs lost | most running (budget) | most per student (budget) | all ended after s "
        f"| {pages} students open Attention p50 / p95 / max s | open errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        finished = sum(state == JobState.FINISHED for state in o.ended.values())
        opened = (quantiles(o.opens), str(len(o.open_errors))) if pages else ("not measured", "—")
        lines.append(
            f"| {o.backend} | {quantiles(o.starts())} | {quantiles(o.waits())} | {finished} / {students} "
            f"| {students - finished} | {o.most_running} ({slots}) | {o.most_per_student} (1) | {o.seconds:.1f} "
            f"| {opened[0]} | {opened[1]} |"
        )
    return "\n".join(lines)


def conditions(args: argparse.Namespace, load_before: tuple[float, ...]) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    load = os.getloadavg()
    return (
        f"Commit {commit.strip()}; `python benchmarks/hall_load.py --students {args.students} --steps {args.steps} "
        f"--slots {args.slots} --pages {args.pages}`.\n"
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}. Load average before: "
        f"{' / '.join(f'{x:.2f}' for x in load_before)}; after: {' / '.join(f'{x:.2f}' for x in load)} "
        "(1 / 5 / 15 min)."
    )


@contextlib.contextmanager
def ray_head(address: str | None, cpus: int):
    if address:
        yield address
        return
    from tests.support.ray_cluster import local_head

    with local_head(cpus=cpus) as started:
        yield started


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--slots", type=int, default=2, help="runs training at once (and the Ray head's CPUs)")
    parser.add_argument("--ray-address", default=None, help="a running Ray head (default: start one here)")
    parser.add_argument("--pages", type=int, default=80, help="students opening Attention meanwhile (0: none)")
    parser.add_argument("--port", type=int, default=8520, help="the app server's port (the next free one from here)")
    parser.add_argument("--record", type=Path, default=None, help="append the table to this Markdown file")
    args = parser.parse_args(argv)
    if not 1 <= args.students <= 100 or not 1 <= args.steps <= 1000 or not 1 <= args.slots <= 64:
        parser.error("--students 1..100, --steps 1..1000, --slots 1..64")
    if not 0 <= args.pages <= 200:
        parser.error("--pages 0..200")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack:  # the app server and the Ray head started here end with this block
        pages = None
        if args.pages:
            import _app

            app = stack.enter_context(_app.App("app.py", port=_app.free_port(args.port), timings=False))
            asyncio.run(open_attention(app.url, 1))  # warm: the teacher has shown the page once
            pages = (app.url, args.pages)
        outcomes = [measure({"workers": "process"}, args.students, args.steps, args.slots, pages)]
        address = stack.enter_context(ray_head(args.ray_address, args.slots))
        ray_backend = {"workers": "ray", "ray_address": address}
        outcomes.append(measure(ray_backend, args.students, args.steps, args.slots, pages))
        import ray

        ray.shutdown()
    text = f"{conditions(args, load_before)}\n\n{table(outcomes, args.students, args.slots, args.pages)}\n"
    print(text)
    if args.record:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        with args.record.open("a", encoding="utf-8") as out:
            out.write(f"\n## {stamp}\n\n{text}")
    lost = sum(args.students - sum(state == JobState.FINISHED for state in o.ended.values()) for o in outcomes)
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
