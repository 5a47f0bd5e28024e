"""Work a page computes in a worker, as a task job of the student's (a report, a short demo, a BPE or word2vec
training): :func:`computed` gives its result, shared by every session that asks for the same inputs, or starts it
and draws its progress live with a Stop button; :func:`follow_task` follows a task a page started itself. Runs the
lab keeps (training, races) are drawn by :mod:`ui.panels.runs`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import streamlit as st
from cachetools import LRUCache

from llmviz.lab.live import LiveRun
from llmviz.lab.live_status import JobRefused, JobState, JobStatus
from llmviz.training.footprint import Footprint
from ui import lab, picker, state
from ui.panels.runs import live

MAX_RESULTS = 64  # a report is kilobytes (a LoRA demo's ΔW: a few hundred KB on the shipped GPT)
_RESULTS: LRUCache[tuple, object] = LRUCache(maxsize=MAX_RESULTS)  # the inputs' key → the worker's result
_RESULTS_LOCK = threading.Lock()


def follow_task(job_slot: state.Slot, *, describe: Callable[[JobStatus], str], name: str) -> LiveRun | None:
    """A page's task job (BPE, word2vec, …) whose id is in ``job_slot.get()["id"]``: while it runs,
    draw its progress (``describe(status)``) and a Stop button, live; once it has ended, forget it and return it,
    so the page can take :attr:`~llmviz.lab.live.LiveRun.result` (what was made, also when stopped)."""
    spec = job_slot.get()
    if not spec:
        return None
    job = picker.runs().live(spec["id"])
    if job is None:  # forgotten (the session's jobs were cleared)
        job_slot.pop()
        return None
    if job.status().done:
        job_slot.pop()
        return job
    follow_task_job(
        job, describe=describe, name=name, stop_help="Stops after this step and keeps what was learned so far."
    )
    return None


def _remembered(key: tuple):
    with _RESULTS_LOCK:
        return _RESULTS.get(key)


def _remember(key: tuple, value: object) -> None:
    with _RESULTS_LOCK:
        _RESULTS[key] = value


def _task_job(name: str, key: tuple) -> LiveRun | None:
    """This session's task job for the part ``name`` of the page, or None: none was started, or it was started for
    other settings than ``key`` (then it is stopped: its answer is not wanted)."""
    spec = state.TASK_JOBS.get().get(name)
    job = picker.runs().live(spec["id"]) if spec else None
    if job is not None and spec["key"] != key:  # the settings changed meanwhile: that job's answer is not wanted
        lab.control(job.id, "stop")
        return None
    return job


def _ended_task(job: LiveRun, name: str, key: tuple, label: str):
    """The result of the ended task job ``job`` (remembered under ``key`` for every session), or None: it failed
    (said in a warning) or was stopped. Either way the part ``name`` of the page forgets the job."""
    state.TASK_JOBS.get().pop(name, None)
    status = job.status()
    if status.state == JobState.FINISHED and job.result is not None:
        _remember(key, job.result)
        return job.result
    if status.state == JobState.FAILED:
        st.warning(f"{label}: {status.error or 'it failed'}")
    return None


def _started_task(
    name: str,
    key: tuple,
    loop: Callable,
    *,
    label: str,
    total: int,
    start: str | None,
    footprint: Footprint | None,
) -> LiveRun | None:
    """A task job started for the part ``name`` of the page (and recorded with its ``key``), or None: the button
    ``start`` is drawn and not pressed, or the lab refused the job (said in a warning)."""
    if start is not None and not st.button(start, key=state.widget("task_start_", name)):
        return None
    try:
        job = picker.runs().submit_task(loop, label=label, total=total, footprint=footprint)
    except JobRefused as refused:
        lab.warn(str(refused))
        return None
    state.TASK_JOBS.setdefault()[name] = {"id": job.id, "key": key}
    return job


def computed(
    name: str,
    key: tuple,
    loop: Callable,
    *,
    label: str,
    total: int,
    describe: Callable[[JobStatus], str] | None = None,
    start: str | None = None,
    footprint: Footprint | None = None,
):
    """The result of a computation that runs in a worker (a task job of this session), or None while it is not
    there yet.

    ``key`` names what is computed by its content only — the model's key, a hash of the text, the settings —
    never by a label a student chooses: a result is shared by every session that asks for the same key (the
    shipped GPT on the built-in corpus is computed once per server). Without one, the task ``loop`` (see
    :meth:`~llmviz.lab.live.StudentRuns.submit_task`) is started (at once, or when the button ``start`` is
    pressed), its progress drawn live with a Stop button, and the page is drawn again with the result when it
    ends. ``name``: the part of the page (its slot and widget keys). ``footprint``: the memory the task needs
    (:func:`llmviz.training.footprint.model_task`), admitted before it starts like any run."""
    found = _remembered(key)
    if found is not None:
        return found
    job = _task_job(name, key)
    if job is not None and job.status().done:
        found = _ended_task(job, name, key, label)
        if found is not None:
            return found
        job = None
        if start is None:
            start = "Compute it again"
    if job is None:
        job = _started_task(name, key, loop, label=label, total=total, start=start, footprint=footprint)
        if job is None:
            return None
    words = describe or (lambda status: f"{label}: {status.describe()}")
    picker.on_this_page([job.id])  # its progress is drawn here: the sidebar does not draw it a second time
    follow_task_job(job, describe=words, name=f"task.{name}")
    return None


def task_words(status: JobStatus, describe: Callable[[JobStatus], str]) -> str:
    """The line over a task's progress bar: while it waits behind other runs, that it waits (a BPE behind a training
    run said "Counting pairs…"); the page's ``describe`` once it runs."""
    return f"Queued, {status.describe()}" if status.state == JobState.QUEUED else describe(status)


def follow_task_job(
    job: LiveRun, *, describe: Callable[[JobStatus], str], name: str, stop_help: str = "Stops after this step."
) -> None:
    """Draw a task job's progress and Stop button, live, until it ends (then the page is drawn again)."""

    def draw() -> None:
        status = job.status()
        st.progress(status.fraction, text=task_words(status, describe))
        if not status.done:
            st.button(
                "Stop",
                key=state.widget("run_stop_", name, job.id),
                help=stop_help,
                on_click=lab.act,
                args=(job.id, "stop"),
            )

    # a progress bar and a Stop button cost the server about a millisecond: a task (seconds long) refreshes every
    # second, so its Stop can be pressed while it works
    live(draw, active=lambda: not job.status().done, name=name, seconds=1.0)
