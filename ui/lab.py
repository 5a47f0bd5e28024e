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

from collections.abc import Callable
from typing import Any

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.lab import faults
from llmviz.lab.classroom import ClassRow
from llmviz.lab.identity import student_key
from llmviz.lab.kept_run import KeptRun
from llmviz.lab.live import student_runs
from llmviz.lab.records import AUTOENCODER
from llmviz.lab.service import MODEL_KINDS, TASK, Lab, LabUnavailable, SnapshotDamaged, default_lab
from llmviz.lab.views import Curve, RunView, Snapshot, Start, Usage
from ui import identity, state, streamlit_private
from ui.text import literal_markdown


def _ask(read, otherwise):
    """``read(the lab, the student)``, or ``otherwise`` when the lab cannot be read (:class:`LabUnavailable`: the lab
    logs the fault once): then said once per page run, in the lab's one sentence; the rest of the page goes on."""
    try:
        return read(default_lab(), student())
    except LabUnavailable as fault:
        if streamlit_private.script_run_context() is not None and not state.LAB_FAULT_SAID.get():
            state.LAB_FAULT_SAID.set(True)
            st.warning(f"{fault} {faults.GOES_ON}")
        return otherwise


def _is_fault(sentence: str) -> bool:
    """Is ``sentence`` one of the lab's fault sentences (locked, full, damaged, gone, unreachable:
    :func:`llmviz.lab.faults.said`)?

    >>> _is_fault(faults.Fault.LOCKED.sentence), _is_fault("That run is not one of your kept runs.")
    (True, False)
    """
    return faults.said(sentence) is not None


def out() -> bool:
    """Did this page run find the lab's database out (and say so)? Then "no runs yet" is not said: the runs are kept,
    only not readable now."""
    return bool(state.LAB_FAULT_SAID.get())


def warn(sentence: str, how=None) -> None:
    """A refusal or a fault as one warning (``how``: ``st.warning`` by default, ``st.caption`` beside a run). A fault of
    the lab's database is said once a page run (issue 72: PostgreSQL's refusal was shown twice on one page): once the
    page said it, a control or start refused for the same fault says only that nothing was done."""
    how = how or st.warning
    if _is_fault(sentence):
        if state.LAB_FAULT_SAID.get():
            how(faults.NOTHING_DONE)
            return
        state.LAB_FAULT_SAID.set(True)
    how(literal_markdown(sentence))


def service() -> Lab | None:
    """The process's lab, or None when it cannot be read (said once in the page)."""
    return _ask(lambda door, _: door, None)


def student() -> str:
    """The student this page run is for, as the lab names them."""
    if streamlit_private.script_run_context() is None:
        return "no-session"
    return student_key(identity.student_id())


def runs(kinds: tuple[str, ...] | None = MODEL_KINDS) -> list[RunView]:
    """This student's runs of ``kinds`` (None: every kind), newest first; [] when the lab cannot be read."""
    return _ask(lambda door, who: door.runs(who, kinds), [])


def kept_runs() -> list[RunView]:
    """This student's runs of a model and their tasks whose result the lab keeps (a BPE tokenizer, word vectors),
    newest first: the Kept runs table (Delete, and the quota's disk use, cover both)."""
    found = runs(None)
    return [view for view in found if view.kind in MODEL_KINDS or (view.kind == TASK and view.config.get("task"))]


def live_elsewhere(here: set[str]) -> list[RunView]:
    """This student's runs that another app process trains (queued, running or paused there: not among ``here``,
    the ids of this process's own jobs), newest first, for the sidebar's progress on every page; [] when the lab
    cannot be read (quietly: the pages that need the lab say it)."""
    try:
        found = default_lab().runs(student(), None)
    except LabUnavailable:
        return []
    return [view for view in found if view.live and view.id not in here]


def section_starts(section: str) -> list[Start]:
    """The runs the page section ``section`` started for this student, one start per press of its button, oldest
    first (:meth:`llmviz.lab.service.Lab.section_starts`: from the lab, in any tab, after any restart); [] when the lab
    cannot be read."""
    return _ask(lambda door, who: door.section_starts(who, section), [])


def kept_run(view: RunView) -> KeptRun:
    """A run this process does not hold, drawn from the lab's record: its curve and kept snapshot steps."""
    return KeptRun(view, curve(view.id), tuple(snapshot.step for snapshot in snapshots(view.id)))


def autoencoder_runs() -> list[RunView]:
    """This student's sparse-autoencoder runs, newest first (Inside › Features lists and opens them; no other page)."""
    return runs((AUTOENCODER,))


def run(run_id: str) -> RunView | None:
    """This student's run ``run_id`` (None when it is not theirs, or the lab cannot be read)."""
    return _ask(lambda door, who: door.run(who, run_id), None) if run_id else None


def teacher_run(run_id: str) -> ClassRow | None:
    """Any student's run ``run_id``, for the teacher's browser only (the projector); None for anyone else."""
    if not _ask(lambda door, who: identity.is_teacher(), False):
        return None
    return next((row for row in class_runs("newest") or [] if row.run_id == run_id), None)


def curve(run_id: str, since_step: int = 0) -> Curve:
    """This student's run's curve: ``points`` (step, training loss, validation loss), every one the lab keeps, by
    step, and the steps it was ``resumes``-d at (empty when not theirs, or the lab cannot be read)."""
    return _ask(lambda door, who: door.curve(who, run_id, since_step), Curve(run_id, ()))


def samples(run_id: str) -> list[tuple[int, str]]:
    """``(step, text)`` of the samples this student's run wrote, by step."""
    return _ask(lambda door, who: door.samples(who, run_id), [])


def snapshots(run_id: str, owner: str | None = None) -> list[Snapshot]:
    """The kept snapshots (step, bytes) of this student's run (``owner``: another student's, for the teacher's
    projector), by step."""
    return _ask(lambda door, who: door.snapshots(owner or who, run_id), [])


def snapshots_by_run() -> dict[str, list[int]]:
    """The kept snapshot steps of each of this student's runs (one query: the picker lists them)."""
    return _ask(lambda door, who: door.snapshot_steps(who), {})


def open_snapshot(run_id: str, step: int, owner: str | None = None) -> tuple[dict, dict]:
    """The weights and metadata of this student's (``owner``'s) run's kept snapshot at ``step``; a damaged one raises
    :class:`~llmviz.lab.service.SnapshotDamaged` (one sentence)."""
    return default_lab().open_snapshot(owner or student(), run_id, step)


def disk() -> Usage | None:
    """This student's disk use against their quota (None when the lab cannot be read)."""
    return _ask(lambda door, who: door.disk(who), None)


def training_count() -> int | None:
    """Runs training now on every app process of this machine or hall (None when the lab cannot be read)."""
    return _ask(lambda door, _: door.training_count(), None)


def control(run_id: str, action: str, by: str = "student", owner: str | None = None) -> str:
    """Pause, resume, stop, park or delete this student's run (``by="teacher"`` with its ``owner``: any student's run,
    from the class view), wherever it trains: the one control path, :meth:`llmviz.lab.service.Lab.control` (this
    process's job manager acts at once on the runs it holds, and Resume trains a kept run on as the same run). Returns
    the one sentence to show: what was done, or why nothing was (a refusal, or a database fault: the lab's sentence,
    and nothing changed). Never raises for either."""
    if by == "teacher" and not _ask(lambda door, who: identity.is_teacher(), False):
        return "Only the teacher's browser acts on another student's run."
    student_runs(identity.student_id())  # this process's trainer is attached to the lab (a Resume trains here)
    try:
        return default_lab().control(owner or student(), run_id, action, by=by)
    except LlmvizError as refused:  # LabUnavailable (locked, full, gone), JobRefused (a share, no kept text)
        return str(refused)


def act(run_id: str, action: str, by: str = "student", owner: str | None = None) -> None:
    """A control button's callback (Pause, Resume, Stop, Park, Delete): :func:`control`, its sentence kept for the
    run's next drawing (:func:`said`). Streamlit calls it for the click before the run that carries the click draws
    anything, whichever run that is: a click is never lost, and never silent."""
    state.CONTROL_SAID.set(control(run_id, action, by=by, owner=owner), run_id)


def said(run_id: str) -> str | None:
    """What the last control of ``run_id`` said, once (the run's drawing shows it beside its state)."""
    return state.CONTROL_SAID.pop(run_id)


def kept_texts() -> list[tuple[str, str, int]]:
    """This student's kept uploads, newest first: ``(sha256, the file's name, bytes)``; [] when the lab cannot be
    read."""
    return _ask(lambda door, who: door.kept_texts(who), [])


def kept_text(digest: str) -> str | None:
    """This student's kept upload ``digest`` as text; None when the lab cannot be read (said once)."""
    return _ask(lambda door, who: door.kept_text(who, digest), None)


def kept_result(task: str, decode: Callable[[dict, dict], Any]) -> Any:
    """``decode(tensors, meta)`` of this student's newest kept result of ``task`` (a BPE tokenizer, word vectors:
    :meth:`llmviz.lab.service.Lab.kept_result`), once a session (a page asks when its session holds none: after a
    reload, in another tab, after a restart; again while one of the student's is still running, whose result is
    kept when it ends); None when there is none, or it was asked already. A damaged file is one sentence in the
    page, and the page goes on without it."""
    if state.RESULT_ASKED.get(task):
        return None
    found = None
    try:
        asked = _ask(lambda door, who: (door.kept_result(who, task), door.task_running(who, task)), None)
        if asked is None:  # the lab cannot be read (said once): asked again when it can
            return None
        found, running = asked
        if found is not None or not running:  # one that is still running: asked again on the next page run
            state.RESULT_ASKED.set(True, task)
        return decode(*found[1:]) if found is not None else None
    except SnapshotDamaged as damaged:
        state.RESULT_ASKED.set(True, task)
        st.warning(literal_markdown(str(damaged)))
    except (KeyError, ValueError, TypeError, RuntimeError):  # a file that reads but does not hold what it says
        st.warning(literal_markdown(f"Your kept {found[0].label} cannot be read back: make it again."))
    return None


def class_runs(sort: str) -> list[ClassRow] | None:
    """Every student's runs of a model with their names, in ``sort`` order, for the teacher's class view; None when
    the lab cannot be read."""
    return _ask(lambda door, _: door.class_runs(sort), None)


def class_curves(run_ids: list[str]) -> dict[str, list[tuple]]:
    """Many runs' curves in one query (the class chart)."""
    return _ask(lambda door, _: door.class_curves(run_ids), {})


def state_text(view: RunView) -> str:
    """A run's state in words, with who changed it and at which step (the lab's record says both).

    >>> from llmviz.lab.records import RunRecord
    >>> def view(state, step, total, by=None):
    ...     return RunView.of(RunRecord("r", "s", "training", "x", state, total, step, state_by=by, state_step=step))
    >>> state_text(view("parked", 401, 2000, by="teacher"))
    'parked by the teacher at step 401 of 2000: its snapshots are kept; Resume trains it on'
    >>> state_text(view("interrupted", 178, 2000))
    'interrupted at step 178 of 2000: the server stopped while it trained; its snapshots are kept; Resume trains it on'
    >>> state_text(view("finished", 60, 60))
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
