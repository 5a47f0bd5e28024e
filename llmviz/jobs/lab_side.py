"""The job manager's side that faces the lab (:mod:`llmviz.lab`): a part of :class:`~llmviz.jobs.manager.JobManager`
(``manager.lab_side``, the lab's :class:`~llmviz.lab.service.Controller`, on the manager's lock, ledger and sessions)
that shares the machine's slots with every app process through the registry, counts a student's runs in every
process, acts on the lab's controls (:class:`llmviz.lab.service.Controller`: pause, resume, stop, park a run this
process holds; Resume of a kept run trains the same run on here) and keeps the pages' older calls
(``kept_runs``, ``resume_kept``) as thin doors onto :class:`llmviz.lab.service.Lab`; controls have one public path,
:meth:`llmviz.lab.service.Lab.control`.

The registry's answers never block a training loop: a slot claim waits a fraction of a second for another process's
lock (:data:`llmviz.lab.slots.CLAIM_WAIT_S`) and tries again later, a slot is freed by the keeper's thread when the
database is locked, and a database that cannot answer leaves this process's own limits in charge.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from llmviz.errors import LlmvizError
from llmviz.jobs.resuming import resume_line, resume_plan, resume_point
from llmviz.lab import faults
from llmviz.lab.identity import student_key
from llmviz.lab.live_status import JobRefused
from llmviz.lab.records import MODEL_KINDS, RunRecord

if TYPE_CHECKING:
    from llmviz.jobs.admission import Claim, Ledger
    from llmviz.jobs.job import Group, Job
    from llmviz.jobs.keeping import Keeper
    from llmviz.jobs.sessions import Sessions

log = logging.getLogger(__name__)

ENDING_S = 2.0  # how long a Resume waits for a run that has just stopped here to end (it ends within a second)


class LabSide:
    """What :class:`~llmviz.jobs.manager.JobManager` does with the lab (see the module's docstring). ``submit``: the
    manager's :meth:`~llmviz.jobs.manager.JobManager.submit_training`, which trains a kept run on (Resume)."""

    def __init__(
        self,
        lock: Any,
        ledger: Ledger,
        sessions: Sessions,
        keeper: Keeper | None,
        submit: Callable[..., Job],
        max_running: int,
        runs_per_session: int | None,
    ):
        self._lock = lock
        self.ledger = ledger
        self.sessions = sessions
        self.keeper = keeper
        self._submit = submit
        self.max_running = max_running
        self.runs_per_session = runs_per_session
        self._full_students: dict[str, float] = {}  # client → when its share was found full in other processes

    def machine_slot(self, group: Group, claim: Claim) -> bool:
        """With a lab: one of the machine's slots (and its memory) for ``group``, counted over every app process
        in the lab's registry, within its student's share there; without one, this process's ledger is the whole
        story. A student whose share is full elsewhere is passed over for a moment (:meth:`full_elsewhere`), so
        the runs of others behind theirs start."""
        if self.keeper is None:
            return True
        registry, run_id = self.keeper.lab.registry, group.jobs[0].id
        try:
            got = registry.slots.claim(
                run_id, self.max_running, claim.memory, self.ledger.budget.memory, per_student=self.runs_per_session
            )
            if not got and self.runs_per_session is not None:
                if registry.slots.student_training(student_key(group.owner)) >= self.runs_per_session:
                    self._full_students[claim.client] = time.monotonic()
            return got
        except Exception as error:  # noqa: BLE001 - the database is out: this process's own limits still hold
            self.keeper.lab.faults.fail("claim a training slot", error)  # said once (a bug: with its traceback)
            return True

    def full_elsewhere(self, hold_s: float = 2.0) -> frozenset[str]:
        """Clients whose student trained their whole share (in other app processes) when last asked, less than
        ``hold_s`` seconds ago: under the lock."""
        now = time.monotonic()
        for client in [c for c, t in self._full_students.items() if now - t > hold_s]:
            del self._full_students[client]
        return frozenset(self._full_students)

    def free_machine_slot(self, group: Group) -> None:
        if self.keeper is not None:  # never waits for another process's lock: the keeper frees it later then
            self.keeper.free_slot(group.jobs[0].id)

    @staticmethod
    def student(owner: str) -> str:
        """The name ``owner``'s runs are kept under in the lab (:func:`llmviz.lab.identity.student_key`)."""
        return student_key(owner)

    def kept_runs(self, owner: str) -> list[RunRecord]:
        """``owner``'s language-model runs as the lab keeps them (every app process's, and those of earlier
        servers), oldest first; ``[]`` without a lab. Kept for the pages: :meth:`llmviz.lab.service.Lab.runs` is the
        door (a live run whose process has gone is marked interrupted there first)."""
        if self.keeper is None:
            return []
        views = self.keeper.lab.runs(student_key(owner), MODEL_KINDS)
        return sorted(
            (found for found in (self.keeper.lab.registry.records.run(v.student, v.id) for v in views) if found),
            key=lambda run: (run.created, run.id),
        )

    def keep_upload(self, owner: str, name: str, data: bytes) -> str | None:
        """Keep ``owner``'s uploaded file in the lab when it is uploaded (:meth:`llmviz.lab.service.Lab.keep_upload`:
        once per content, within their quota, else :class:`~llmviz.errors.UploadError`); None without a lab."""
        if self.keeper is None:
            return None
        return self.keeper.lab.keep_upload(student_key(owner), name, data)

    def _control(self, owner: str, run_id: str, action: str, by: str = "student") -> bool:
        """Tests' door only: pages and the CLI control runs through :meth:`llmviz.lab.service.Lab.control` (inside
        its guard) and nothing else. ``"pause"``, ``"resume"`` or ``"stop"`` ``owner``'s run ``run_id``: through
        ``Lab.control`` when this manager keeps its runs in a lab, else at once on a run this process holds. True when
        the run was acted on or asked to; False when it is not the owner's live run. A database fault raises
        :class:`~llmviz.lab.faults.LabUnavailable` (one sentence)."""
        if self.keeper is None:
            return self.act(student_key(owner), run_id, action, by, owner=owner)
        view = self.keeper.lab.run(student_key(owner), run_id)
        if view is None or not view.live:
            return False
        said = self.keeper.lab.control(student_key(owner), run_id, action, by=by)
        return not said.endswith("has just ended.")

    def act(self, student: str, run_id: str, action: str, by: str, owner: str | None = None) -> bool:
        """Pause, resume, stop or park ``student``'s run ``run_id`` now when this process holds it live (the lab's
        :class:`~llmviz.lab.service.Controller`); False otherwise."""
        job = self.sessions.get(owner, run_id) if owner is not None else self._job_of(student, run_id)
        if job is None or job.ended:
            return False
        if self.keeper is not None:
            if action == "park":
                self.keeper.park(job, by)
            else:
                self.keeper.changed_by(run_id, action, by)
        getattr(job, "stop" if action == "park" else action)()
        return True

    def holds(self, student: str, run_id: str) -> bool:
        """This process trains ``student``'s run ``run_id`` (the lab's :class:`~llmviz.lab.service.Controller`)."""
        job = self._job_of(student, run_id)
        return job is not None and not job.ended

    @contextlib.contextmanager
    def deleting(self, student: str, run_id: str) -> Iterator[None]:
        """While the lab deletes ``student``'s run ``run_id`` (its rows, then its folder): the keeper writes nothing
        (a flush under way ends first); once it is deleted, the run's job here is stopped, keeps nothing more and is
        forgotten (no page lists it). A deletion the database refuses leaves the job training as it was. A resume
        state written between the two once made the deleted run's folder again (and its row failed the foreign
        key)."""
        job = self._job_of(student, run_id)
        with self.keeper.holding() if self.keeper is not None else contextlib.nullcontext():
            yield  # the deletion; when it is refused (the database busy), the run goes on being kept
            if job is not None:
                job.discard()
                self.sessions.forget(job.owner, [run_id])
            if self.keeper is not None:
                self.keeper.forget(run_id)

    def _job_of(self, student: str, run_id: str) -> Job | None:
        return self.sessions.job_of(student, run_id, student_key)

    def resume_run(self, student: str, run_id: str, by: str = "student") -> Job:
        """The lab's :class:`~llmviz.lab.service.Controller`: train ``student``'s kept run on here (the owner is the
        student: the server's sessions are named by student id)."""
        return self.resume_kept(student, run_id, by)

    def resume_kept(self, owner: str, run_id: str, by: str = "student") -> Job:
        """Train ``owner``'s kept run ``run_id`` on (a parked, interrupted or stopped run whose text the lab keeps):
        the same run (its id, label, curve and snapshots), its resume step recorded. From its kept resume state,
        exactly as if it had never stopped (the weights, the optimizer's moments and step counts, the learning rate's
        step, the batches' and dropout's random streams, the metrics so far); a run kept before resume states were
        (or whose state was thinned) goes on from its last kept snapshot with its weights only, and its optimizer
        starts afresh (:func:`llmviz.jobs.resuming.resume_line`). :class:`JobRefused` (one line) when it cannot."""
        if self.keeper is None:
            raise JobRefused("That run is not one of your kept runs.")
        existing = self._job_of(student_key(owner), run_id)
        if existing is not None and not self._ended_and_kept(existing):
            fault = self.keeper.fault_of(run_id)
            if fault is not None:  # its last steps wait for the disk or the database: say that, not "a moment"
                raise faults.LabUnavailable(fault)
            raise JobRefused("That run is still going (or just ending) on this server: try again in a moment.")
        try:
            build, needs, step, kept = resume_plan(self.keeper.lab, student_key(owner), run_id)
        except LlmvizError as refused:
            raise JobRefused(str(refused)) from None
        return self._submit(
            owner, build=build, footprint=needs, label=kept.label, total=kept.total, resuming=(run_id, step, by),
            kind=kept.kind,
        )  # fmt: skip

    def _ended_and_kept(self, job: Job) -> bool:
        """This process's ``job`` of a kept run has ended and all of it is written. The record says a run stopped
        as soon as its worker does, a moment before its job ends and the keeper writes its last steps (within a
        second): a Resume pressed then waits up to :data:`ENDING_S` for the job and writes them now, rather than
        asking the student to try again (CI: a Resume right after a park). False while it runs on, or while its last
        steps cannot be written (:meth:`Keeper.fault_of` says why)."""
        assert self.keeper is not None
        if not job.wait(ENDING_S):
            return False
        if self.keeper.holds(job.id):
            self.keeper.flush()
        return not self.keeper.holds(job.id)

    def resume_line(self, owner: str, run_id: str) -> str:
        """What Resume will do with ``owner``'s kept run, in words (:func:`llmviz.jobs.resuming.resume_line`)."""
        kept = self.kept_run(owner, run_id)
        if kept is None or self.keeper is None:
            return ""
        registry = self.keeper.lab.registry
        step, _, state = resume_point(registry.records.snapshots(run_id), registry.records.resume_state(run_id))
        return resume_line(step, state is not None, kept.kind)

    def kept_run(self, owner: str, run_id: str) -> RunRecord | None:
        """``owner``'s kept run ``run_id`` (None when it is not theirs: a run id alone opens nothing)."""
        if self.keeper is None:
            return None
        return self.keeper.lab.registry.records.run(student_key(owner), run_id)

    def lab_runs_refusal(self, group: Group) -> str | None:
        """With a lab: the student's share counts their runs in every app process (a tab on the other process
        counts too); under the lock."""
        limit = self.runs_per_session
        if self.keeper is None or limit is None:
            return None
        try:
            elsewhere = self.keeper.lab.registry.slots.live_elsewhere(student_key(group.owner), self.keeper.holder)
        except Exception as error:  # noqa: BLE001 - the database is out: this process's own share still holds
            if faults.classify(error) is None:  # a database fault is logged once, by the engine's watch
                log.exception("could not count the student's runs in the lab's registry")
            return None
        here = len([c for c in self.ledger.of(group.client) if not c.stopping])
        if not elsewhere or here + elsewhere < 2 * limit:
            return None
        return (
            f"You already have {here + elsewhere} runs going (training, waiting or paused), {elsewhere} of them "
            f"served by another of this class's app processes. This server is shared: each student trains {limit} "
            f"{'run' if limit == 1 else 'runs'} at a time and keeps {limit} more waiting. Stop one of yours, or let "
            "it finish, before starting another."
        )
