"""The app's one door to the lab (:mod:`llmviz.lab.service`): a student's runs, each run's curve, samples and kept
snapshots, the student's disk use, and every control (pause, resume, stop, park, delete), read from and sent to the
lab's one record, whichever app process trains a run. Pages, the picker and the class view ask here; nothing in
``ui/`` or ``stages/`` reaches a registry table or a run's files (``tests/project/test_lab_door.py`` checks it).

When the lab cannot be read (a damaged or unreachable database), each call here says so once in the page, in one
sentence (:func:`unavailable`), and returns nothing: the page goes on with what needs no kept run.

Kinds of runs (as the lab stores them): the picker offers :data:`MODEL_KINDS` (a model to look at on every page);
a sparse autoencoder's runs are Inside › Features' own (:func:`autoencoder_runs`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import streamlit as st

from llmviz.jobs.keeping import student_key
from llmviz.jobs.manager import default_manager
from llmviz.lab.classroom import class_rows
from llmviz.lab.registry import LIVE_STATES
from llmviz.lab.service import Lab, default_lab
from ui import identity, state, streamlit_private

log = logging.getLogger(__name__)
T = TypeVar("T")

MODEL_KINDS = ("training", "race", "finetune", "lora", "sft", "dpo")  # runs whose snapshots are models to pick
AUTOENCODER = "autoencoder"
RESUMABLE = ("parked", "interrupted")
UNAVAILABLE = (
    "Your kept runs cannot be read just now ({why}); what needs no kept run goes on, and they are back as soon as "
    "the lab is."
)


@dataclass(frozen=True)
class RunView:
    """One run as the lab keeps it (the fields :class:`llmviz.lab.service.RunView` has)."""

    id: str
    student: str
    kind: str
    label: str
    state: str
    step: int = 0
    total: int = 0
    model: str = ""
    config: dict = field(default_factory=dict)
    created: float = 0.0
    updated: float = 0.0
    best_val_loss: float | None = None
    last_loss: float | None = None
    error: str | None = None
    training: bool = False
    state_by: str | None = None  # who set the state: "student", "teacher", "server"
    state_step: int | None = None  # the step it was at when that happened
    resumes: tuple[int, ...] = ()  # the steps it was resumed at

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def resumable(self) -> bool:
        return self.state in RESUMABLE


@dataclass(frozen=True)
class Usage:
    """A student's disk use (snapshots, resume states, uploads) against their quota, in bytes."""

    used: int
    quota: int


def _lab() -> Lab:
    return default_lab()


_LOGGED: dict[str, float] = {}


def _ask(read: Callable[[Lab], T], otherwise: T) -> T:
    """``read(lab)``, or ``otherwise`` when the lab cannot be read: then said once per page run in one sentence, and
    logged once a minute at most (a fault is not logged every second by every watching tab)."""
    try:
        return read(_lab())
    except Exception as error:  # noqa: BLE001 - an unreadable lab: one sentence, the page goes on
        why = str(error).split("\n", 1)[0][:160] or type(error).__name__
        if time.monotonic() - _LOGGED.get(why, -1e9) > 60:
            _LOGGED[why] = time.monotonic()
            log.warning("the lab cannot be read: %s", why, exc_info=error)
        if streamlit_private.script_run_context() is not None and not state.LAB_FAULT_SAID.get():
            state.LAB_FAULT_SAID.set(True)
            st.warning(UNAVAILABLE.format(why=why))
        return otherwise


def service() -> Lab | None:
    """The process's lab, or None when it cannot be read (said once in the page)."""
    return _ask(lambda lab: lab, None)


def student() -> str:
    """The student this page run is for, as the lab names them."""
    if streamlit_private.script_run_context() is None:
        return "no-session"
    return student_key(identity.student_id())


_KINDS = {"train": "training"}  # the registry's kind names before kinds were stored apart


def _view(record) -> RunView:
    return RunView(
        id=record.id,
        student=record.student,
        kind=_KINDS.get(record.kind, record.kind),
        label=record.label,
        state=record.state,
        step=record.step,
        total=record.total,
        model=record.model,
        config=dict(record.config or {}),
        created=record.created,
        updated=record.updated,
        best_val_loss=record.best_val_loss,
        last_loss=record.last_loss,
        error=record.error,
        training=record.training,
    )


def _records(lab: Lab, who: str) -> list:
    found = lab.registry.runs(who)
    if any(record.state in LIVE_STATES for record in found) and lab.registry.interrupt_orphans(student=who):
        found = lab.registry.runs(who)  # a run whose app process has gone shows interrupted at once
    return found


def runs(kinds: tuple[str, ...] | None = MODEL_KINDS) -> list[RunView]:
    """This student's runs of ``kinds`` (None: every kind), newest first; [] when the lab cannot be read."""
    views = [_view(record) for record in reversed(_ask(lambda lab: _records(lab, student()), []))]
    return [view for view in views if kinds is None or view.kind in kinds]


def autoencoder_runs() -> list[RunView]:
    """This student's sparse-autoencoder runs, newest first (Inside › Features lists and opens them; no other page)."""
    return runs((AUTOENCODER,))


def run(run_id: str) -> RunView | None:
    """This student's run ``run_id`` (None when it is not theirs, or the lab cannot be read)."""
    record = _ask(lambda lab: lab.registry.run(student(), run_id), None) if run_id else None
    return _view(record) if record is not None else None


def teacher_run(run_id: str) -> RunView | None:
    """Any student's run ``run_id``, for the teacher's browser only (the projector); None for anyone else."""
    if not identity.is_teacher():
        return None
    found = _ask(lambda lab: [record for record in lab.registry.all_runs() if record.id == run_id], [])
    return _view(found[0]) if found else None


def curve(run_id: str, since_step: int = 0) -> list[tuple[int, float | None, float | None]]:
    """``(step, training loss, validation loss)`` of this student's run, every point the lab keeps, by step."""
    if run(run_id) is None:
        return []
    return [point for point in _ask(lambda lab: lab.registry.curve(run_id), []) if point[0] >= since_step]


def samples(run_id: str) -> list[tuple[int, str]]:
    """``(step, text)`` of the samples this student's run wrote, by step."""
    return _ask(lambda lab: list(lab.registry.samples(run_id)), []) if run(run_id) is not None else []


def _files(run_id: str, teacher: bool) -> list[tuple[int, str, int]]:
    if not (teacher and identity.is_teacher()) and run(run_id) is None:
        return []
    return _ask(lambda lab: list(lab.registry.snapshots(run_id)), [])


def snapshots(run_id: str, teacher: bool = False) -> list[int]:
    """The kept snapshot steps of this student's run (``teacher``: of any student's run, for the projector)."""
    return [step for step, *_ in _files(run_id, teacher)]


def snapshots_by_run() -> dict[str, list[int]]:
    """The kept snapshot steps of each of this student's runs (one query: the picker lists them)."""
    return _ask(lambda lab: lab.registry.steps_by_run(student()), {})


def snapshot_file(run_id: str, step: int | None, teacher: bool = False) -> tuple[int, str, int] | None:
    """``(step, path, bytes)`` of the run's kept snapshot at ``step`` (its nearest at or before it; the last when
    None), for :func:`open_snapshot`."""
    files = _files(run_id, teacher)
    if not files:
        return None
    return files[-1] if step is None else next((f for f in reversed(files) if f[0] <= step), files[0])


def open_snapshot(path: str):
    """The weights and metadata of a kept snapshot file (safetensors: never unpickled)."""
    return _lab().storage.read_snapshot(path)


def disk() -> Usage | None:
    """This student's disk use against their quota (None when the lab cannot be read)."""
    return _ask(lambda lab: Usage(lab.registry.disk_bytes(student()), lab.quota), None)


def training_count() -> int | None:
    """Runs training now on every app process of this machine or hall (None when the lab cannot be read)."""
    return _ask(lambda lab: lab.registry.training_count(), None)


def control(run_id: str, action: str, by: str = "student") -> str:
    """Pause, resume, stop, park or delete this student's run (``by="teacher"``: any student's run, from the class
    view), wherever it trains; one sentence saying what was done. A refusal raises
    :class:`~llmviz.jobs.manager.JobRefused` (one line)."""
    if by == "teacher":
        if not identity.is_teacher():
            return "Only the teacher's browser acts on another student's run."
        asked = _ask(lambda lab: lab.registry.request(run_id, action), None)
        return f"Asked to {action} it: its app process does so within a second." if asked else "It is not training."
    manager, owner = default_manager(), identity.student_id()
    view = run(run_id)
    if view is None:
        return "That run is not one of yours."
    if action == "delete":
        manager.remove(owner, run_id)
        return f"{view.label} is deleted."
    if view.resumable and action == "resume":
        return f"{manager.resume_kept(owner, run_id).label} trains on."
    return "Done." if manager.control(owner, run_id, action) else "It is not training: nothing to do."


def class_runs(sort: str):
    """Every student's runs with their names, in ``sort`` order, for the teacher's class view
    (:func:`llmviz.lab.classroom.class_rows`); None when the lab cannot be read."""
    return _ask(lambda lab: class_rows(lab.registry, sort), None)


def class_curves(run_ids: list[str]) -> dict[str, list[tuple]]:
    """Many runs' curves in one query (the class chart)."""
    return _ask(lambda lab: lab.registry.curves(run_ids), {})


def state_text(view: RunView) -> str:
    """A run's state in words, with who changed it and at which step (the lab's record says both).

    >>> view = RunView("r", "s", "training", "GPT micro", "parked", step=401, total=2000, state_by="teacher")
    >>> state_text(view)
    'parked by the teacher at step 401 of 2000: its snapshots are kept; Resume trains it on'
    >>> state_text(RunView("r", "s", "training", "x", "interrupted", step=178, total=2000))
    'interrupted at step 178 of 2000: the server stopped while it trained; its snapshots are kept; Resume trains it on'
    >>> state_text(RunView("r", "s", "training", "x", "finished", step=60, total=60))
    'finished after 60 steps'
    """
    step = view.state_step if view.state_step is not None else view.step
    at = f"at step {step} of {view.total}"
    if view.state == "finished":
        return f"finished after {view.step} steps"
    if view.state == "parked":
        who = {"teacher": "by the teacher ", "student": "by you "}.get(view.state_by or "", "when you left ")
        return f"parked {who}{at}: its snapshots are kept; Resume trains it on"
    if view.state == "interrupted":
        return f"interrupted {at}: the server stopped while it trained; its snapshots are kept; Resume trains it on"
    if view.state == "stopped":
        return f"stopped {at}" + (" by the teacher" if view.state_by == "teacher" else "") + ": what it learned is kept"
    if view.state == "failed":
        return f"failed {at}: {view.error or 'it stopped with a problem'}"
    return f"{WHERE.get(view.state, view.state)} · step {view.step} of {view.total}"


WHERE = {"running": "training", "queued": "waiting for its turn", "paused": "paused"}  # a live run's state
