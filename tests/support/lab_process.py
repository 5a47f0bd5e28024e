"""A real app-like process for the lab's multi-process tests: a JobManager with a Lab on a runs folder and a
database URL (SQLite file or PostgreSQL), as :func:`llmviz.jobs.default.default_manager` makes one, training runs
the pages' way (built in the worker from their text, so the lab keeps the text and the run can be resumed).

``python -m tests.support.lab_process FOLDER URL SPEC...`` with ``SPEC`` = ``student:steps`` or
``student:steps:pause`` (pause it once it has trained a few steps). It prints one JSON line ``{"student": run id}``
(a student's second run: ``"student#N"``) once every run has trained ``READY_STEPS`` steps (paused ones paused and
written), then keeps serving until it is killed, or until every run has ended when all are short. SIGTERM ends it
in order, as Streamlit's server does (its exit handlers run: the runs that train pause, sending their resume
state, and the keeper writes the runs' last steps)."""

from __future__ import annotations

import atexit
import functools
import json
import signal
import sys
import time

from llmviz.jobs.manager import JobManager
from llmviz.lab.service import Lab
from llmviz.training import footprint
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import vocab_bound
from llmviz.training.trainer import build_trainer
from tests.support.jobs import TEXT

READY_STEPS = 5
READY_TIMEOUT = 600.0  # seconds


def config(steps: int) -> TrainConfig:
    return TrainConfig(
        model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=steps, eval_interval=10
    )


def submit(manager: JobManager, student: str, steps: int):
    """A run the pages' way: built in its worker from ``TEXT`` (kept by the lab, so it can be resumed)."""
    chosen = config(steps)
    needs = footprint.of_config(chosen, vocab_bound(TEXT, chosen), text_bytes=len(TEXT))
    build = functools.partial(build_trainer, TEXT, chosen)
    return manager.submit_training(student, build=build, footprint=needs, label=f"{student}'s run")


def wait_for(predicate, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def main(folder: str, url: str, *specs: str) -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    manager = JobManager(max_running=4, lab=Lab.at(folder, url=url), runs_per_session=2)
    atexit.register(manager.close_for_restart)  # as default_manager does
    jobs = {}
    for spec in specs:
        student, steps, *pause = spec.split(":")
        name = student if student not in jobs else f"{student}#{len(jobs)}"  # a student's second run
        job = jobs[name] = submit(manager, student, int(steps))
        # generous: on a loaded 2-core machine a worker's start (torch's import) can take minutes; a run that never
        # gets there ends this process with the reason, never a silent "queued" that a test then misreads
        if not wait_for(lambda job=job: job.ended or job.status().step >= READY_STEPS, READY_TIMEOUT):
            sys.exit(f"{name}'s run did not train {READY_STEPS} steps in {READY_TIMEOUT:.0f} s: {job.status()}")
        if pause:
            job.pause()
            if not wait_for(lambda job=job: job.status().state.value == "paused", READY_TIMEOUT):
                sys.exit(f"{name}'s run did not pause in {READY_TIMEOUT:.0f} s: {job.status()}")
    manager.keeper.flush()
    print(json.dumps({student: job.id for student, job in jobs.items()}), flush=True)
    while not all(job.ended for job in jobs.values()) or any(int(s.split(":")[1]) > 1000 for s in specs):
        time.sleep(0.2)
    manager.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:])
