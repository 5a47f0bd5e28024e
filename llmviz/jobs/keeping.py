"""Keeping a manager's runs in the lab (:mod:`llmviz.lab`): the registry's rows and the snapshot files follow the
jobs in memory, so a reload, another tab, another app process of the machine and a restarted server list the same
runs at the same steps.

One :class:`Keeper` per :class:`~llmviz.jobs.manager.JobManager`: the manager tells it of every new group
(:meth:`Keeper.enter`), and its thread writes what changed once a second (new curve points, samples, the step and
state, snapshots not on disk yet), so training never waits for the database. It also says the process is alive
(:meth:`Registry.beat`) and marks runs of processes that have gone as interrupted.

A run whose student has gone is *parked*: the manager stops it (its last step is snapshotted) and the keeper writes
``parked`` instead of ``stopped``. A run is kept on disk with its log-spaced snapshots and its last one; the
"latest" snapshots a live run makes every few seconds replace each other. A run the lab can resume (its text is kept)
also keeps one *resume state* (:meth:`llmviz.training.trainer.Trainer.training_state`: the optimizer's moments, the
random streams, the metrics so far) beside the snapshot of its step, replaced as newer ones arrive and dropped when
the run finishes, so that :func:`llmviz.jobs.resuming.resumed_trainer` goes on exactly as if it had never stopped.
"""

from __future__ import annotations

import functools
import json
import logging
import threading

from llmviz.errors import LlmvizError, UploadError
from llmviz.jobs.kept_rows import (
    Kept,
    Written,
    ask,
    config_of,
    description_values,
    measures_of,
    replaced_latest,
    run_kind,
    snapshot_meta,
    state_values,
)
from llmviz.lab import faults
from llmviz.lab.holders import this_holder
from llmviz.lab.identity import student_key
from llmviz.lab.live_status import JobState
from llmviz.lab.rebuild import Guard, write_run_file
from llmviz.lab.records import RunRecord
from llmviz.lab.service import RESULT_FORMAT, Lab, QuotaExceeded
from llmviz.lab.slots import CLAIM_WAIT_S

log = logging.getLogger(__name__)
CLOSE_WAIT_S = 15.0  # how long close() waits for the keeper's thread to end its pass (a write may wait on a lock)


class Keeper:
    """Writes a manager's runs into ``lab`` (see the module's docstring)."""

    def __init__(self, lab: Lab, interval: float = 1.0):
        self.lab = lab
        self.interval = interval
        self.holder = this_holder()
        self._kept: dict[str, Kept] = {}
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one flush at a time: the thread's and close()'s would write rows twice
        self._closed = threading.Event()
        self._woken = threading.Event()  # a pass now, not at the next interval (wake)
        self._unfreed: set[str] = set()  # runs whose slot could not be freed yet (the database was locked)
        self.interrupted: list[str] = []
        self.guard = Guard(lab, on_rebuilt=self.restate)  # run.json in each run folder; a lost database rebuilt
        self.guard.start()
        try:  # the runs of processes that have gone (a locked database: the thread's next pass marks them)
            self.interrupted = lab.registry.liveness.interrupt_orphans()
        except Exception as error:  # noqa: BLE001 - logged once; the server starts all the same
            self.lab.faults.fail("mark the runs of processes that have gone", error)
        self._thread = threading.Thread(target=self._forever, name="llmviz-lab-keeper", daemon=True)
        self._thread.start()

    def enter(
        self,
        jobs: list,
        texts: list[str | None] | None = None,
        needs: list[int] | None = None,
        resumed: tuple[int, str] | None = None,
    ) -> None:
        """Record new jobs (a group's) in the registry, before any is queued, as one unit of work
        (:meth:`llmviz.lab.work.UnitOfWork.transaction`): the student, the room made for them, their kept texts and
        their rows are written together or not at all, so a fault between the parts leaves nothing half-written.
        ``texts``: the text each trains on, where known (kept by content hash within the student's quota, so the run
        can be resumed); ``needs``: the bytes each must keep at least (its last snapshot, and its resume state): the
        student's older snapshots are thinned to make room, and a run that still would not fit is
        refused (:class:`~llmviz.lab.service.QuotaExceeded`) before anything is written. ``resumed``: ``(step, by)``
        for a kept run going on (the same run: its row is queued again, the step recorded).
        :class:`~llmviz.lab.service.LabUnavailable` (one sentence) when the database cannot record them."""
        texts = texts or [None] * len(jobs)
        needs = needs or [0] * len(jobs)
        student = student_key(jobs[0].owner)
        with self.lab.guard("record a new run", writes=True), self.lab.registry.work.transaction():
            self.lab.registry.records.ensure_student(student)
            self.lab.make_room(student, sum(needs), jobs[0].label, starting=True)
            digests = [self._keep_text(student, job.label, text) for job, text in zip(jobs, texts, strict=True)]
            if resumed is not None:
                self.lab.registry.records.mark_resumed(jobs[0].id, resumed[0], self.holder, by=resumed[1])
            else:
                self.lab.registry.records.add_runs(
                    [self._record(job, student, d) for job, d in zip(jobs, digests, strict=True)]
                )
            on_disk = (
                {step: path for step, path, _ in self.lab.registry.records.snapshots(jobs[0].id)} if resumed else {}
            )
        with self._lock:
            for job, digest in zip(jobs, digests, strict=True):
                self._kept[job.id] = Kept(
                    job,
                    student,
                    text_sha256=digest,
                    on_disk=dict(on_disk),
                    state="queued",
                    generation=self.lab.generation,
                )

    def _record(self, job, student: str, digest: str | None) -> RunRecord:
        model = job.info.description.get("kind", "") if job.info is not None else ""
        config = config_of(job, digest)  # settings, text, a kept task's name, its section's note
        return RunRecord(
            id=job.id,
            student=student,
            kind=run_kind(job),
            label=job.label,
            state="queued",
            total=job.total,
            model=str(model),
            config=config,
            created=job.created,
            holder=self.holder,
        )

    def discard(self, jobs: list) -> None:
        """Forget jobs just recorded that were refused after all (their rows and files go)."""
        for job in jobs:
            self.forget(job.id)
            try:
                self.lab.delete_run(student_key(job.owner), job.id)
            except Exception:  # noqa: BLE001 - the database went away meanwhile: the run shows as interrupted
                log.warning("could not remove the refused run %s from the lab", job.id)

    def _keep_text(self, student: str, label: str, text: str | None) -> str | None:
        if text is None:
            return None
        try:  # kept at upload time already, most often: then this only finds it
            return self.lab.keep_upload(student, f"the text of {label}", text.encode())
        except UploadError as refused:  # over the student's quota: the run trains, but cannot be resumed
            log.info("%s", refused)
            return None

    def park(self, job, by: str = "server") -> None:
        """``job`` ends as parked (resumable), not stopped: its student has gone (``by`` the server), or the teacher
        parked it."""
        with self._lock:
            kept = self._kept.get(job.id)
            if kept is not None:
                ask(kept, "park", by)

    def changed_by(self, job_id: str, action: str, by: str) -> None:
        """``by`` asked for ``action`` on ``job_id`` (written with the state it leads to)."""
        with self._lock:
            kept = self._kept.get(job_id)
            if kept is not None:
                ask(kept, action, by)

    def holds(self, job_id: str) -> bool:
        """Is ``job_id`` still being written (its last steps not yet in the registry)?"""
        with self._lock:
            return job_id in self._kept

    def fault_of(self, job_id: str) -> faults.Fault | None:
        """Why ``job_id``'s last steps are not yet written: the lab fault its last flush met (None: it was written,
        or the keeper no longer holds it)."""
        with self._lock:
            kept = self._kept.get(job_id)
        return kept.fault if kept is not None else None

    def forget(self, job_id: str) -> None:
        with self._lock:
            self._kept.pop(job_id, None)

    def holding(self) -> threading.Lock:
        """Held, no flush runs (one under way ends first): for a deletion, which nothing may write behind."""
        return self._flushing

    def flush(self) -> None:
        """Write what changed since the last flush (the keeper's thread calls it every ``interval`` seconds; one
        flush at a time)."""
        with self._flushing:
            self._flush_all()

    def mirror(self) -> None:
        """Write the run files (``run.json``) of the rows that changed, never while a run is being deleted: a file
        written beside a deletion made its folder again (CI: an empty folder left of a deleted run)."""
        with self._flushing:
            self.guard.sync()

    def _flush_all(self) -> None:
        with self._lock:
            kept = list(self._kept.values())
        try:
            self.lab.check_database()
        except LlmvizError:  # the database file was removed: nothing is written until it is back (logged once)
            return
        for entry in kept:
            try:
                if entry.generation != self.lab.generation:
                    self._record_again(entry)
                done = self._flush_one(entry)
            except Exception as error:  # noqa: BLE001 - a full disk or a busy database: try again next time
                if self._row_gone(entry):  # deleted (from another process) while it trained: not a fault
                    self._let_go(entry)
                elif faults.classify(error) is None:
                    log.exception("could not keep run %s", entry.job.id)
                else:  # logged once while the fault lasts (with a count when it clears), not every second
                    entry.fault = self.lab.faults.fail("keep a run's steps", error)
                continue
            entry.fault = None
            self.lab.faults.cleared()
            if done:
                self.forget(entry.job.id)

    def _record_again(self, entry: Kept) -> None:
        """The database file was replaced (restored or rebuilt) while ``entry`` trained: where its row is missing,
        it is recorded again and its curve, samples and snapshots written from the start (nothing is lost)."""
        if self.lab.registry.records.run(entry.student, entry.job.id) is None:
            self.lab.registry.records.ensure_student(entry.student)
            self.lab.registry.records.add_run(self._record(entry.job, entry.student, entry.text_sha256))
            entry.points = entry.samples = 0
            entry.on_disk, entry.resume_step, entry.state, entry.version = {}, None, "", -1
        entry.generation = self.lab.generation

    def _let_go(self, entry: Kept) -> None:
        """``entry``'s run was deleted while it trained: its job keeps nothing more, and the files this flush wrote
        after the deletion (its folder made again) go too."""
        entry.job.discard()
        self.forget(entry.job.id)
        try:
            self.lab.storage.delete_run(entry.student, entry.job.id)
        except OSError:
            log.warning("could not remove the files of deleted run %s", entry.job.id)

    def _row_gone(self, entry: Kept) -> bool:
        try:
            return self.lab.registry.records.run(entry.student, entry.job.id) is None
        except Exception:  # noqa: BLE001 - the database still cannot answer (its fault is logged already)
            log.debug("could not tell whether run %s is still recorded", entry.job.id)
            return False

    def _flush_one(self, entry: Kept) -> bool:
        """Write what changed in ``entry``'s job since its last flush as one unit of work: its new snapshot and resume
        files first (no lock held while they are written), then, in one transaction, their rows, its curve, samples,
        result and row. A process killed or a fault in between leaves the record as the last flush left it (the files
        of a unit rolled back are removed), never a snapshot's row ahead of its run's step (issue 68). True once the
        job has ended and all of it is written (its slot freed)."""
        job = entry.job
        ended = job.ended
        if job.version == entry.version and not ended:
            return False
        taken = job.take_resume_state()  # before its status: the resume state's step is never beyond the row's
        status = job.status()
        finishing = ended and status.state in (JobState.FINISHED, JobState.FAILED)
        before = entry.copy()
        written = Written()
        try:
            if not finishing:
                self._write_resume_files(entry, taken, written)
            self._write_snapshot_files(entry, status.step, written)
            with self.lab.registry.work.transaction():
                values = self._write_rows(entry, status, written, ended)
        except BaseException:
            entry.restore(before)
            written.remove(self.lab.storage)
            if not finishing:
                job.give_back_resume_state(taken)
            raise
        entry.version = status.version
        if ended:  # committed: its slot is given back (on the slots' own connection; a fault: the next flush again)
            self.lab.registry.slots.free(job.id)
        if "state_by" in values or ended:  # its state changed: its folder's run.json says so too
            self._write_run_record(entry)
        return ended

    def _write_rows(self, entry: Kept, status, written: Written, ended: bool) -> dict:
        """The rows of one flush (inside its unit of work); returns the values written to the run's row."""
        job, records = entry.job, self.lab.registry.records
        finishing = ended and status.state in (JobState.FINISHED, JobState.FAILED)
        for step, path, nbytes in written.snapshots:
            records.add_snapshot(job.id, step, path, nbytes)
            entry.on_disk[step], entry.wrote = path, True
        if written.resume is not None:
            step, path, nbytes = written.resume
            older = records.set_resume(job.id, step, path, nbytes)
            if older:
                self.lab.registry.work.after_commit(functools.partial(self.lab.storage.delete_file, older))
            entry.resume_step = step
        if finishing:
            self._drop_resume(entry)
        self._drop_replaced(entry, status.step)
        self._flush_curve(entry, status)
        values = {**state_values(entry, status), **description_values(entry)}
        if ended:  # before its state says it ended: a reader then finds it (its result too) within the quota
            self._flush_result(entry, status.step)
            self._thin(entry)
        records.update_run(job.id, **values)  # in the same transaction as its snapshots' rows
        if entry.wrote:
            self._thin(entry)
        return values

    def _flush_curve(self, entry: Kept, status) -> None:
        """Write the curve's points (each with its validation loss, where measured) and the samples that ``status``
        has beyond those written already."""
        registry, job_id = self.lab.registry, entry.job.id
        vals = {m.step: m.val_loss for m in status.metrics if getattr(m, "val_loss", None) is not None}
        new = status.losses[entry.points :]
        first = new[0][0] if new else None
        measures = {m.step: measures_of(m) for m in status.metrics if first is not None and m.step >= first}
        registry.records.add_points(job_id, [(step, loss, vals.get(step)) for step, loss in new], measures=measures)
        entry.points = len(status.losses)
        for step, text in status.samples[entry.samples :]:
            registry.records.add_sample(job_id, step, text)
        entry.samples = len(status.samples)

    def _drop_resume(self, entry: Kept) -> None:
        """The run finished or failed: it will not be resumed, so its optimizer state leaves the quota."""
        entry.job.take_resume_state()
        self.lab.drop_resume(entry.job.id)
        entry.resume_step = None

    def _thin(self, entry: Kept) -> None:
        """The quota is a limit: the student's oldest snapshots go first (:meth:`llmviz.lab.service.Lab.thin`)."""
        self.lab.thin(entry.student)
        entry.wrote = False

    def _write_run_record(self, entry: Kept) -> None:
        """The run folder's ``run.json`` at once when its state changed (the guard's sync writes the others): one
        writer and one format, :func:`llmviz.lab.rebuild.write_run_file`, which a rebuild reads."""
        found = self.lab.registry.records.run(entry.student, entry.job.id)
        if found is not None:
            write_run_file(self.lab, found)

    def _write_resume_files(self, entry: Kept, taken, written: Written) -> None:
        """Write the run's newest resume state (its optimizer's moments, random streams and metrics so far) beside
        the snapshot of its step (files only: their rows, which replace its older one, are the unit's): only for a run
        the lab can resume (its text is kept)."""
        job = entry.job
        if taken is None or job.info is None or job.discarded or entry.text_sha256 is None:
            return
        step, weights, tensors, scalars = taken
        if entry.meta is None:
            entry.meta = snapshot_meta(job.info, job.label)
        storage = self.lab.storage
        if step not in entry.on_disk:
            written.snapshot(step, *storage.write_snapshot(entry.student, job.id, step, weights, entry.meta))
        path, nbytes = storage.write_resume(entry.student, job.id, step, tensors, scalars)
        written.resume = (step, path, nbytes)
        written.new_resume = step != entry.resume_step  # a file of its own (the same step's is kept on a rollback)

    def _flush_result(self, entry: Kept, step: int) -> None:
        """Write an ended task's result as its run's one kept file (:class:`~llmviz.lab.live_status.KeptResult`:
        safetensors, at its last step, in the snapshot table: the quota, Delete and the run folder cover it), once.
        A result over the student's quota is not kept (logged; the page that made it still holds it)."""
        job = entry.job
        keep = getattr(job, "keep", None)
        if keep is None or job.result is None or job.discarded or entry.result_kept or step in entry.on_disk:
            return
        try:
            tensors, meta = keep.encode(job.result)
        except Exception:  # noqa: BLE001 - a result its encoder cannot write: the run is kept without it
            log.exception("could not encode the result of task %s", job.id)
            entry.result_kept = True
            return
        nbytes = sum(t.numel() * t.element_size() for t in tensors.values()) + len(json.dumps(meta))
        try:
            self.lab.make_room(entry.student, nbytes, job.label)
        except QuotaExceeded as refused:
            log.warning("the result of task %s is not kept: %s", job.id, refused)
            entry.result_kept = True
            return
        meta = {"format": RESULT_FORMAT, "version": 1, "task": keep.task, **keep.facts, **meta}
        path, written = self.lab.storage.write_snapshot(entry.student, job.id, step, tensors, meta)
        undo = functools.partial(self.lab.storage.delete_file, path)
        self.lab.registry.work.on_rollback(undo)  # no file that no row names
        self.lab.registry.records.add_snapshot(job.id, step, path, written)
        entry.on_disk[step] = path
        entry.result_kept = True

    def _write_snapshot_files(self, entry: Kept, upto: int, written: Written) -> None:
        """Write the run's snapshots not on disk yet, up to step ``upto`` (the step its row says: never beyond); their
        rows are the unit's. A snapshot evicted from memory meanwhile is skipped."""
        job = entry.job
        if job.snapshots is None or job.info is None or job.discarded:
            return
        if entry.meta is None:
            entry.meta = snapshot_meta(job.info, job.label)
        for step in job.snapshots.steps():
            if step > upto or step in entry.on_disk or step in written.steps():
                continue
            try:
                state = job.snapshots.get(step)
            except KeyError:
                continue  # evicted meanwhile
            written.snapshot(step, *self.lab.storage.write_snapshot(entry.student, job.id, step, state, entry.meta))

    def _drop_replaced(self, entry: Kept, upto: int) -> None:
        """The "latest" snapshots a newer one replaced: their rows go in the unit, their files once it is committed."""
        job = entry.job
        if job.snapshots is None or job.info is None or job.discarded:
            return
        steps = [step for step in job.snapshots.steps() if step <= upto]
        for step in replaced_latest(entry.on_disk, steps, entry.resume_step):
            path = entry.on_disk.pop(step)
            self.lab.registry.records.drop_snapshot(job.id, step)
            self.lab.registry.work.after_commit(functools.partial(self.lab.storage.delete_file, path))

    def act_on_requests(self) -> list[str]:
        """Pause, resume, stop or park the runs of this process that another process asked about through the
        registry (the student's tab served by another app process, the teacher's class view); returns their ids."""
        acted = []
        for run_id, action, by in self.lab.registry.mailbox.take_requests_by(self.holder):
            if self.act(run_id, action, by):
                acted.append(run_id)
        return acted

    def act(self, run_id: str, action: str, by: str) -> bool:
        """Pause, resume, stop or park this process's run ``run_id`` now (``by`` whom: written with its state);
        False when this process does not hold it live."""
        with self._lock:
            kept = self._kept.get(run_id)
        if kept is None or kept.job.ended:
            return False
        with self._lock:
            ask(kept, action, by)
        if action in ("park", "stop"):
            kept.job.stop()
        else:
            getattr(kept.job, action)()  # pause or resume
        return True

    def free_slot(self, run_id: str) -> None:
        """Give ``run_id``'s machine slot back (at once, or by the keeper's thread when the database is locked: the
        caller, a run's supervisor, never waits for another process's lock)."""
        try:
            self.lab.registry.slots.free(run_id, wait_s=CLAIM_WAIT_S)
        except Exception as error:  # noqa: BLE001 - locked or unreachable: the keeper's thread tries again
            self.lab.faults.fail("free a training slot", error)
            with self._lock:
                self._unfreed.add(run_id)

    def _free_later(self) -> None:
        with self._lock:
            pending, self._unfreed = set(self._unfreed), set()
        for run_id in pending:
            self.free_slot(run_id)

    def restate(self) -> None:
        """The database was rebuilt from the run folders: write every live run's curve and samples afresh (what the
        folders did not have yet is added; what they had is left alone); a run younger than its run.json gets its
        rows again."""
        with self._lock:
            kept = list(self._kept.values())
        registry = self.lab.registry
        for entry in kept:
            entry.points = entry.samples = 0
            entry.version = -1
            entry.described = False
            if registry.records.run(entry.student, entry.job.id) is None:
                registry.records.ensure_student(entry.student)
                registry.records.add_runs([self._record(entry.job, entry.student, entry.text_sha256)])
                for step, path in sorted(entry.on_disk.items()):
                    registry.records.add_snapshot(entry.job.id, step, path, int(self.lab.storage.fs.size(path)))

    def wake(self) -> None:
        """Make the keeper's thread start its next pass now (a task's result a reload may ask for at once); the caller
        never waits for the database (a locked one would hold it)."""
        self._woken.set()

    def _forever(self) -> None:
        beats, failing = 0, False
        while True:
            self._woken.wait(self.interval)
            self._woken.clear()
            if self._closed.is_set():
                break
            try:  # the thread never ends on a fault: every run of the process would stop being kept
                beats = self._round(beats)
            except Exception:  # noqa: BLE001 - logged once until a round goes through again
                if not failing:
                    log.exception("the lab's keeper could not finish its round; it tries again every second")
                failing = True
            else:
                if failing:
                    log.warning("the lab's keeper finishes its rounds again")
                failing = False

    def _round(self, beats: int) -> int:
        """One second's round: recover the database if it needs it, act on other processes' requests, write what
        changed, mirror the run files and (every ten rounds) say this process is alive; returns the rounds done."""
        if not self.guard.tick():
            return beats  # the database is out: said once; nothing is lost (the jobs keep their steps)
        try:
            self.act_on_requests()
            self._free_later()
        except Exception as error:  # noqa: BLE001 - logged once while the fault lasts
            self.lab.faults.fail("read the lab's requests", error)
        self.flush()
        self.mirror()
        beats += 1
        if beats % 10 == 0:
            try:
                self.lab.registry.liveness.beat(self.holder)
                self.lab.registry.liveness.interrupt_orphans()
                if beats % 600 == 10:  # soon after the start, then every ten minutes: the retention time
                    self.lab.expire()
            except Exception as error:  # noqa: BLE001
                self.lab.faults.fail("say this process is alive", error)
        return beats

    def close(self) -> None:
        """The last rows and run files written; then the thread ends and the database's connections close, so a SQLite
        file is whole by itself (checkpointed, no ``-wal`` left beside it) once the process has gone."""
        self.flush()
        self.mirror()
        self._closed.set()
        self._woken.set()
        if self._thread is not threading.current_thread():
            self._thread.join(CLOSE_WAIT_S)
        self.lab.registry.dispose()
