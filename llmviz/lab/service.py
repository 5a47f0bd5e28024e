"""The lab as one door: every question a page, the picker, the class view or the CLI asks about a student's runs,
and every control, goes through :class:`Lab` (no Streamlit here). The registry (:mod:`llmviz.lab.registry`) and the
run files (:mod:`llmviz.lab.storage`) are the only truth: a live run's worker writes through them (the jobs layer's
keeper), and nothing a page needs is read from a job in memory.

What the door answers (``student`` is always the run's owner; a run id alone opens nothing):

- :meth:`Lab.runs` / :meth:`Lab.run`: :class:`~llmviz.lab.views.RunView` rows, kept and live alike, newest first
  (what the door hands out: :mod:`llmviz.lab.views`);
- :meth:`Lab.curve`, :meth:`Lab.samples`, :meth:`Lab.snapshots`, :meth:`Lab.open_snapshot`;
- :meth:`Lab.control`: pause, resume, stop, park, delete, from any app process, by the student, the teacher or the
  server; it returns the one sentence to show;
- :meth:`Lab.disk`: the student's disk use against their quota (:meth:`Lab.thin` keeps them within it);
- :meth:`Lab.class_runs`, :meth:`Lab.class_curves`: the teacher's class view;
- ``lab.teaching`` (:class:`llmviz.lab.teaching.Teaching`): ``open_poll``, ``answer``, ``class_poll``, ``poll_csv``,
  ``lead``, ``set_lead``, ``follow``: the class answering together.

Faults are refusals: a database locked past its busy timeout, full, damaged, deleted or unreachable makes every
method raise :class:`LabUnavailable` with one sentence for the student (logged once per fault, with a count, and
once more when it clears: :mod:`llmviz.lab.faults`). A damaged snapshot raises :class:`SnapshotDamaged` (one
sentence, never a path).

>>> import tempfile
>>> from llmviz.lab.records import TRAINING, RunRecord
>>> lab = Lab.at(tempfile.mkdtemp())
>>> lab.registry.url.endswith("lab.db"), lab.storage.root.endswith("lab")
(True, True)
>>> lab.registry.records.ensure_student("s1")
>>> lab.registry.records.add_run(
...     RunRecord("r1", "s1", TRAINING, "Run 1", "parked", total=300, step=120, state_by="teacher", state_step=120)
... )
>>> view = lab.run("s1", "r1")
>>> view.kind, view.state_line, lab.run("s2", "r1")
('training', 'parked by the teacher at step 120', None)
>>> lab.disk("s1").used
0
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from llmviz import settings
from llmviz.errors import CheckpointError, LlmvizError, UploadError
from llmviz.lab import faults
from llmviz.lab.classroom import ClassRow, class_rows
from llmviz.lab.faults import Fault, LabUnavailable
from llmviz.lab.migrations import schema
from llmviz.lab.records import (
    KINDS,
    LIVE_STATES,
    MODEL_KINDS,
    TASK,
)
from llmviz.lab.registry import Registry, default_url
from llmviz.lab.storage import Storage, content_hash, thinning_order
from llmviz.lab.teaching import Teaching
from llmviz.lab.views import SERIES_KINDS, Curve, RunView, Snapshot, Start, Usage, starts
from llmviz.paths import runs_folder

__all__ = [
    "ACTIONS",
    "KINDS",
    "MODEL_KINDS",
    "RESULT_FORMAT",
    "TASK",
    "Lab",
    "LabUnavailable",
    "QuotaExceeded",
    "SnapshotDamaged",
    "default_lab",
]

log = logging.getLogger(__name__)
ACTIONS = ("pause", "resume", "stop", "park", "delete")  # what Lab.control takes


# LabUnavailable: the lab's database cannot answer (locked past its timeout, full, damaged, deleted or unreachable):
# the message is one sentence for the student; nothing was half-written. Defined in llmviz.lab.faults (the engine's
# watch raises it too), one class for both.


# the metadata's format of a task's kept result (llmviz.lab.live_status.KeptResult): a snapshot-shaped safetensors
# file that holds no model; Lab.kept_result reads only these, the picker only "llmviz-checkpoint"
RESULT_FORMAT = "llmviz-task-result"


class SnapshotDamaged(LlmvizError):
    """A kept snapshot file cannot be read (the message says so in one sentence, without its path)."""


class QuotaExceeded(LlmvizError):
    """A run or file would pass the student's disk quota even after thinning their snapshots."""


class Controller(Protocol):
    """What a process that trains runs (the jobs layer's manager) offers the lab: acting on a run it holds at once,
    and resuming a kept run (the same run id) in itself."""

    def act(self, student: str, run_id: str, action: str, by: str) -> bool: ...

    def holds(self, student: str, run_id: str) -> bool: ...

    def deleting(self, student: str, run_id: str) -> contextlib.AbstractContextManager: ...

    def resume_run(self, student: str, run_id: str, by: str) -> Any: ...


# ---------------------------------------------------------------------------- the door


class Lab:
    """A registry and a storage, with the per-student quota (bytes) and retention (seconds): the one door to the
    students' runs (see the module's docstring)."""

    def __init__(self, registry: Registry, storage: Storage, quota: int | None = None, keep_s: float | None = None):
        self.registry = registry
        self.storage = storage
        self.quota = quota if quota is not None else int(settings.get("LLMVIZ_STUDENT_DISK_MB") * 2**20)
        self.keep_s = keep_s if keep_s is not None else float(settings.get("LLMVIZ_KEEP_DAYS")) * 86400
        self.controller: Controller | None = None  # this process's trainer of runs, when it has one (attach)
        self.watch = registry.watch  # the database's one watch: its faults and its file
        self.faults = self.watch.log  # every fault of the lab said once, with its count (llmviz.lab.faults)
        self._reopening = threading.Lock()
        self.teaching = Teaching(registry, self.guard)  # the class's polls and the teacher's lead (llmviz.lab.teaching)

    def check_database(self) -> None:
        """A SQLite file removed under the running app refuses every call (:class:`LabUnavailable`: nothing is
        written to a file nobody will read); one replaced (restored from a backup, rebuilt) is reopened and upgraded,
        and :attr:`generation` counts it (the keeper then records its live runs again where they are missing)."""
        if not self.watch.replaced():
            return
        if self.watch.gone():
            self.watch.trip(Fault.GONE)
            raise LabUnavailable(Fault.GONE)
        with self._reopening:
            if not self.watch.replaced():
                return  # another thread reopened it meanwhile
            log.warning("the lab's database file was replaced: it is reopened")
            self.registry.engine.dispose()
            schema.upgrade(self.registry.engine)
            self.watch.remember_file()
        self.watch.clear()

    @property
    def generation(self) -> int:
        """How many times the database file was replaced under this lab (:attr:`llmviz.lab.faults.Watch.generation`)."""
        return self.watch.generation

    @classmethod
    def at(cls, folder: str | os.PathLike, url: str | None = None, **limits) -> Lab:
        """The lab of runs folder ``folder``: its database ``url`` (default ``<folder>/lab.db``), files in
        ``<folder>/lab``. :class:`LabUnavailable` when the database cannot be opened."""
        try:
            registry = Registry(url or default_url(folder))
        except Exception as error:  # noqa: BLE001 - whatever the driver says: one sentence
            raise LabUnavailable(faults.classify(error) or Fault.UNREACHABLE) from error
        return cls(registry, Storage(os.path.join(os.fspath(folder), "lab")), **limits)

    def attach(self, controller: Controller) -> None:
        """This process trains runs (its job manager): controls of runs it holds act at once, and Resume of a kept
        run trains it on here."""
        self.controller = controller

    @contextlib.contextmanager
    def guard(self, what: str, writes: bool = False) -> Iterator[None]:
        """Turn a database fault during ``what`` into :class:`LabUnavailable` (one sentence), logged once per
        fault (:class:`llmviz.lab.faults.FaultLog`); a success after a fault logs that it cleared (a lock clears
        only when a write (``writes``) succeeds: reads go on under another process's write lock)."""
        self.check_database()
        try:
            yield
        except LlmvizError:
            raise
        except Exception as error:  # noqa: BLE001 - the driver's errors (SQLAlchemy's, OSError): one sentence
            fault = faults.classify(error)
            if fault is None:
                raise
            self.faults.fail(what, error)
            raise LabUnavailable(Fault.GONE if self.watch.gone() else fault) from None
        self.faults.cleared(writes)

    # ------------------------------------------------------------------ reading

    def runs(self, student: str, kinds: tuple[str, ...] | list[str] | None = None) -> list[RunView]:
        """``student``'s runs, kept and live alike, newest first; ``kinds``: only those kinds (a page lists the runs
        it can use). A live run whose process has gone is marked interrupted first (resumable at once)."""
        if kinds is not None and not set(kinds) <= set(KINDS):
            raise ValueError(f"a run's kind is one of {', '.join(KINDS)}")
        with self.guard("list a student's runs"):
            found = self.registry.records.runs(student)
        if any(run.state in LIVE_STATES for run in found) and self._interrupt_orphans(student):
            with self.guard("list a student's runs"):
                found = self.registry.records.runs(student)
        views = [RunView.of(run) for run in found if kinds is None or run.kind in kinds]
        return sorted(views, key=lambda view: (-view.created, view.id))

    def section_starts(self, student: str, section: str) -> list[Start]:
        """The runs a page section (``"lora"``, ``"race"``, …) started for ``student``, one :class:`Start` per press
        of its button, oldest first, from any app process and after any restart: the section finds its runs here,
        never in the browser's session (:func:`llmviz.lab.views.starts`)."""
        return starts(self.runs(student), section)

    def _interrupt_orphans(self, student: str) -> list[str]:
        """Mark ``student``'s live runs whose process has gone as interrupted (a write: under another process's
        lock it waits for the next call, and the runs are listed as they are)."""
        try:
            return self.registry.liveness.interrupt_orphans(student=student)
        except Exception as error:  # noqa: BLE001 - a database fault: logged once; reading goes on
            if faults.classify(error) is None:
                raise
            self.faults.fail("mark runs of a process that has gone", error)
            return []

    def run(self, student: str, run_id: str) -> RunView | None:
        """``student``'s run ``run_id`` (None when it is not theirs or does not exist)."""
        with self.guard("read a run"):
            found = self.registry.records.run(student, run_id)
        return RunView.of(found) if found is not None else None

    def curve(self, student: str, run_id: str, since_step: int = 0) -> Curve:
        """``student``'s run's points from ``since_step`` on (live or kept), with its resume steps; an empty curve
        when the run is not theirs."""
        with self.guard("read a run's curve"):
            found = self.registry.records.run(student, run_id)
            if found is None:
                return Curve(run_id, ())
            points = self.registry.records.curve(run_id, since_step)
            series = self.registry.records.series(run_id) if found.kind in SERIES_KINDS else {}
        resumes = tuple(int(step) for step in found.resumes or ())
        kept = {name: tuple(p for p in values if p[0] >= since_step) for name, values in series.items()}
        return Curve(run_id, tuple(points), resumes, kept)

    def samples(self, student: str, run_id: str) -> list[tuple[int, str]]:
        """The text samples a run wrote as it trained, ``(step, text)`` by step (none when not theirs)."""
        with self.guard("read a run's samples"):
            if self.registry.records.run(student, run_id) is None:
                return []
            return self.registry.records.samples(run_id)

    def snapshots(self, student: str, run_id: str) -> list[Snapshot]:
        """A run's kept snapshots, by step (none when not theirs)."""
        with self.guard("list a run's snapshots"):
            if self.registry.records.run(student, run_id) is None:
                return []
            return [Snapshot(step, nbytes) for step, _, nbytes in self.registry.records.snapshots(run_id)]

    def snapshot_steps(self, student: str) -> dict[str, list[int]]:
        """The kept snapshot steps of each of ``student``'s runs, in one query (the picker lists them)."""
        with self.guard("list a student's snapshots"):
            return self.registry.records.steps_by_run(student)

    def open_snapshot(self, student: str, run_id: str, step: int) -> tuple[dict, dict]:
        """The weights (a state dict) and metadata of ``student``'s run's snapshot at ``step``. A snapshot that is
        not kept (or not theirs) or a damaged file raises :class:`SnapshotDamaged` in one sentence (the path goes to
        the server's log only)."""
        with self.guard("open a snapshot"):
            found = self.registry.records.run(student, run_id)
            files = {kept_step: path for kept_step, path, _ in self.registry.records.snapshots(run_id)} if found else {}
        if found is None or step not in files:
            raise SnapshotDamaged(f"Step {step} of that run is not kept (it was thinned or deleted).")
        try:
            return self.storage.read_snapshot(files[step])
        except CheckpointError as error:
            log.warning("a kept snapshot cannot be read: %s", error)
            raise SnapshotDamaged(
                f"The snapshot of {found.label} at step {step} is damaged and cannot be opened; its other steps "
                "are still kept."
            ) from None

    def kept_result(self, student: str, task: str) -> tuple[RunView, dict, dict] | None:
        """The newest kept result of ``task`` (``"bpe"``, ``"word2vec"``: :class:`~llmviz.lab.live_status.KeptResult`)
        that ``student`` made: ``(its run, its tensors, its metadata)``, None when they kept none. A damaged file
        raises :class:`SnapshotDamaged` (one sentence; the path goes to the server's log only)."""
        made = [view for view in self.runs(student, (TASK,)) if view.config.get("task") == task and not view.live]
        for view in made:
            found = self.task_result(student, view.id)
            if found is not None:  # else ended before its result was written, or over the quota: an older one?
                return found
        return None

    def task_running(self, student: str, task: str) -> bool:
        """Is a run of ``task`` of ``student``'s live (queued, running, paused: its result is not kept yet)? A page
        that found no kept result asks again while one is."""
        return any(view.live for view in self.runs(student, (TASK,)) if view.config.get("task") == task)

    def task_result(self, student: str, run_id: str) -> tuple[RunView, dict, dict] | None:
        """``student``'s task run ``run_id`` with its kept result's tensors and metadata; None when it is not theirs,
        not a task, or kept no result. A damaged file raises :class:`SnapshotDamaged` (one sentence)."""
        view = self.run(student, run_id)
        if view is None or view.kind != TASK or not view.config.get("task"):
            return None
        with self.guard("find a kept result"):
            files = self.registry.records.snapshots(run_id)
        if not files:
            return None
        try:
            tensors, meta = self.storage.read_snapshot(files[-1][1])
        except CheckpointError as error:
            log.warning("a kept result cannot be read: %s", error)
            raise SnapshotDamaged(f"The kept {view.label} is damaged and cannot be opened: make it again.") from None
        if meta.get("format") != RESULT_FORMAT or meta.get("task") != view.config["task"]:
            return None
        return view, tensors, meta

    def disk(self, student: str) -> Usage:
        """``student``'s disk use (snapshots, resume states, uploads) against their quota."""
        with self.guard("count a student's disk use"):
            return Usage(self.registry.records.disk_bytes(student), self.quota)

    def student(self, student: str) -> dict | None:
        """What the lab keeps of ``student`` (name, teacher, when first and last seen); None for one it never saw."""
        with self.guard("read a student"):
            return self.registry.records.student(student)

    def keep_student(self, student: str, **values) -> None:
        """Make ``student`` known to the lab (or update them): ``name=``, ``teacher=``."""
        with self.guard("keep a student", writes=True):
            self.registry.records.ensure_student(student, **values)

    def training_count(self) -> int:
        """Runs training now on every app process of this machine or hall (their slots in the lab's record)."""
        with self.guard("count the runs training"):
            return self.registry.slots.training_count()

    def class_runs(self, sort: str = "best validation loss", kinds: tuple[str, ...] = MODEL_KINDS) -> list[ClassRow]:
        """Every student's runs of ``kinds`` for the teacher's class view (:func:`llmviz.lab.classroom.class_rows`)."""
        with self.guard("list the class's runs"):
            return class_rows(self.registry, sort, kinds)

    def class_curves(self, run_ids: list[str]) -> dict[str, list[tuple[int, float | None, float | None]]]:
        """Many runs' curves in one query (the class view: the teacher sees every student's)."""
        with self.guard("read the class's curves"):
            return self.registry.records.curves(run_ids)

    # ------------------------------------------------------------------ controls

    def control(self, student: str, run_id: str, action: str, by: str = "student") -> str:
        """``action`` (one of :data:`ACTIONS`) on ``student``'s run ``run_id``, from any app process, by ``by``
        (``"student"``, ``"teacher"``, ``"server"``); returns the sentence to show. The one control path: a live run
        held by this process acts at once; one held by another process is asked through the registry (it acts within
        a second); Resume of a parked, interrupted or stopped run trains the same run on in this process. Every step
        is inside the lab's guard: a database fault is :class:`LabUnavailable` (one sentence) and a refusal an
        :class:`~llmviz.errors.LlmvizError` (one sentence), and either changes nothing."""
        if action not in ACTIONS:
            raise ValueError(f"a run's controls are {', '.join(ACTIONS)}")
        found = self.run(student, run_id)
        if found is None:
            return "That run is not one of yours any more (it was deleted)."
        with self.guard(f"{action} a run", writes=action in ("delete", "resume") or not found.live):
            return self._control(found, action, by)

    def _control(self, found: RunView, action: str, by: str) -> str:
        if action == "delete":
            return self._delete(found, by)
        if action == "resume" and not found.live:
            return self._resume_kept(found, by)
        if not found.live:
            return f"{found.label} is not training ({found.state_line}): there is nothing to {action}."
        if self.controller is not None and self.controller.act(found.student, found.id, action, by):
            return _asked(found.label, action, at_once=True)
        asked = self.registry.mailbox.request(found.id, action, student=found.student, by=by)
        return _asked(found.label, action, at_once=False) if asked else f"{found.label} has just ended."

    def _resume_kept(self, found: RunView, by: str) -> str:
        if not found.resumable:
            return found.resume_note or f"{found.label} cannot be resumed: it is {found.state_line}."
        if self.controller is None:
            return "Runs are resumed from the app (this process does not train runs)."
        self.controller.resume_run(found.student, found.id, by)  # LlmvizError: its refusal, one sentence
        return f"{found.label} goes on from step {found.step}: the same run, its curve and snapshots kept."

    def _delete(self, found: RunView, by: str) -> str:
        """The run's rows and folder go first; only then does the run stop where it trains (this process's job is
        discarded by :meth:`Controller.deleting` once the deletion has succeeded): a deletion the database refuses
        leaves the run as it was, training on. A run another process trains is asked to stop first (that process
        writes nothing more of it)."""
        held = self.controller is not None and self.controller.holds(found.student, found.id)
        if found.live and not held:
            self.registry.mailbox.request(found.id, "stop", student=found.student, by=by)
        deleting = self.controller.deleting if self.controller is not None else _nothing_held
        with deleting(found.student, found.id):
            self.delete_run(found.student, found.id)  # nothing of it is written behind (this process's keeper)
        return f"{found.label} is deleted, with its curve and snapshots."

    # ------------------------------------------------------------------ the quota

    def thin(self, student: str, room: int = 0) -> list[tuple[str, int]]:
        """Delete ``student``'s oldest snapshots (:func:`thinning_order`) until their files fit the quota with
        ``room`` bytes to spare, then, if still over, their oldest runs' resume states (such a run then resumes with
        its weights only: the optimizer starts afresh); returns the ``(run, step)`` of the snapshots deleted."""
        used = self.registry.records.disk_bytes(student) + room
        if used <= self.quota:
            return []
        kept = self.registry.records.student_snapshots(student)
        last: dict[str, int] = {}
        for run, step, *_ in kept:
            last[run] = max(step, last.get(run, step))
        held = self.registry.records.student_resumes(student)
        sizes = {(run, step): (path, nbytes) for run, step, path, nbytes, _ in kept}
        dropped = []
        order = thinning_order(
            [(run, step, nbytes) for run, step, _, nbytes, _ in kept], last, {r: s for r, s, *_ in held}
        )
        for run, step in order:
            if used <= self.quota:
                break
            path, nbytes = sizes[(run, step)]
            self.registry.records.drop_snapshot(run, step)  # the row first: a row never names a missing file
            self.registry.work.after_commit(functools.partial(self.storage.delete_file, path))  # its unit of work's
            used -= nbytes
            dropped.append((run, step))
        for run, _, _, nbytes in held:
            if used <= self.quota:
                break
            self.drop_resume(run)
            used -= nbytes
        return dropped

    def make_room(self, student: str, nbytes: int, what: str, starting: bool = False) -> None:
        """Before writing ``nbytes`` for ``student``: thin their snapshots to make room, and refuse
        (:class:`QuotaExceeded`, one sentence: :func:`quota_refusal`; ``starting``: for a run that then does not
        start) when it still would not fit. Nothing is written here."""
        self.thin(student, room=nbytes)
        used = self.registry.records.disk_bytes(student)
        if used + nbytes > self.quota:
            raise QuotaExceeded(quota_refusal(what, nbytes, used, self.quota, starting))

    def drop_resume(self, run_id: str) -> None:
        """Delete ``run_id``'s resume state (a finished run needs none; a thinned one resumes with weights only)."""
        path = self.registry.records.drop_resume(run_id)
        if path:
            self.registry.work.after_commit(functools.partial(self.storage.delete_file, path))

    def keep_upload(self, student: str, name: str, data: bytes) -> str:
        """Keep an uploaded file of ``student`` once per content, when it is uploaded (so a later run on it can be
        resumed, and a restarted server still has it): its SHA-256. Within the student's quota: their oldest
        snapshots are thinned to make room (:meth:`thin`), and a file that still does not fit is refused
        (:class:`~llmviz.errors.UploadError`, one line; nothing is written)."""
        digest = content_hash(data)
        with self.registry.work.transaction():  # the student, the room made, the file and its row: all or nothing
            if any(have == digest for have, _, _ in self.registry.records.uploads(student)):
                return digest  # kept already: once per content
            self.registry.records.ensure_student(student)
            try:
                self.make_room(student, len(data), name)
            except QuotaExceeded:
                used = self.registry.records.disk_bytes(student)
                raise UploadError(
                    f"{name} ({len(data) / 2**20:.1f} MB) is not kept: your kept runs and files already take "
                    f"{used / 2**20:.1f} of your {self.quota / 2**20:.0f} MB. It is used until you leave; delete a "
                    "kept run to keep it."
                ) from None
            self.registry.work.on_rollback(functools.partial(self.storage.unwrite_upload, student, digest))
            self.storage.write_upload(student, data)
            self.registry.records.add_upload(student, digest, name, len(data))
        return digest

    def kept_texts(self, student: str) -> list[tuple[str, str, int]]:
        """``student``'s kept uploads, newest first: ``(sha256, the file's name, bytes)``."""
        with self.guard("list a student's kept texts"):
            return list(reversed(self.registry.records.uploads(student)))

    def kept_text(self, student: str, digest: str) -> str:
        """``student``'s kept upload ``digest``, as text. :class:`~llmviz.errors.UploadError` (one sentence, no path)
        when it is not theirs, or its file is gone or damaged (its bytes no longer hash to ``digest``)."""
        if digest not in {have for have, _, _ in self.kept_texts(student)}:
            raise UploadError("That text is not one of your kept texts.")
        try:
            data = self.storage.read_upload(student, digest)
        except (OSError, ValueError):
            data = None
        try:
            if data is None or content_hash(data) != digest:
                raise ValueError("missing or damaged")
            return data.decode("utf-8")  # the app keeps a file once it read as UTF-8 (corpus.validate_upload)
        except ValueError:  # UnicodeDecodeError too: a file kept by another client is refused the same way
            log.warning("a kept upload of %s cannot be read (missing, damaged or not UTF-8): %s", student, digest)
            raise UploadError(
                "That kept text cannot be read: its file is missing or damaged. Upload it again."
            ) from None

    def delete_run(self, student: str, run_id: str) -> bool:
        """Delete ``student``'s run with its files; False when it is not theirs."""
        if self.registry.records.run(student, run_id) is None:
            return False
        self.registry.records.delete_run(student, run_id)
        self.storage.delete_run(student, run_id)
        return True

    def expire(self) -> list[str]:
        """Delete runs nobody has touched for the retention time; returns their ids."""
        gone = []
        for record in self.registry.records.stale_runs(self.keep_s):
            if self.delete_run(record.student, record.id):
                gone.append(record.id)
        return gone


def quota_refusal(what: str, nbytes: int, used: int, quota: int, starting: bool = False) -> str:
    """Why ``what`` (``nbytes`` to keep) is refused with ``used`` of ``quota`` bytes taken: a run that does not start
    says so; deleting a kept run is suggested only where there is one and it would make room.

    >>> print(quota_refusal("Run 1", 3 * 2**20, 0, 2**20, starting=True))
    Run 1 did not start: it needs 3.0 MB of disk for its snapshots, more than your whole quota of 1 MB.
    >>> print(quota_refusal("Run 2", 2**19, 2**20, 2**20, starting=True))  # doctest: +NORMALIZE_WHITESPACE
    Run 2 did not start: it needs 0.5 MB of disk for its snapshots, and your kept runs and files already take 1.0 of
    your 1 MB. Delete a kept run to make room.
    >>> print(quota_refusal("notes.txt", 2**19, 2**20, 2**20))  # doctest: +NORMALIZE_WHITESPACE
    notes.txt (0.5 MB) is not kept: your kept runs and files already take 1.0 of your 1 MB. Delete a kept run to
    make room.
    """
    size, mb = f"{nbytes / 2**20:.1f} MB", f"{quota / 2**20:.0f} MB"
    if nbytes > quota:
        return (
            f"{what} did not start: it needs {size} of disk for its snapshots, more than your whole quota of {mb}."
            if starting
            else f"{what} ({size}) is not kept: it is bigger than your whole quota of {mb}."
        )
    taken = f"your kept runs and files already take {used / 2**20:.1f} of your {mb}. Delete a kept run to make room."
    if starting:
        return f"{what} did not start: it needs {size} of disk for its snapshots, and {taken}"
    return f"{what} ({size}) is not kept: {taken}"


def _nothing_held(_student: str, _run_id: str) -> contextlib.AbstractContextManager:
    """A process that trains nothing (the command line, a teacher's tool): nothing of the run is written here."""
    return contextlib.nullcontext()


def _asked(label: str, action: str, at_once: bool) -> str:
    """The sentence a control shows.

    >>> _asked("Run 1", "park", at_once=False)
    'Run 1 is asked to park: its process parks it after its current step.'
    """
    done = {"pause": "pauses", "resume": "goes on", "stop": "stops", "park": "parks"}[action]
    if at_once:
        return f"{label} {done} after its current step."
    return f"{label} is asked to {action}: its process {done.replace('goes on', 'resumes')} it after its current step."


_default: Lab | None = None
_default_lock = threading.Lock()


def default_lab() -> Lab:
    """The process's lab, from the settings (``LLMVIZ_DATABASE_URL``, ``LLMVIZ_RUNS_DIR``, the quota and retention).
    :class:`LabUnavailable` when its database cannot be opened (asked again on the next call)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Lab.at(runs_folder(), settings.get("LLMVIZ_DATABASE_URL"))
        return _default
