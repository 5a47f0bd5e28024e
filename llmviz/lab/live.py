"""The runs this process trains, as one student's page sees them: the lab's door to its live runs.

The lab's record (:class:`llmviz.lab.service.Lab`: the registry and the run files) is what a run *is*, from any app
process, after any restart. A run training in *this* process is also a job of its trainer
(:class:`~llmviz.lab.trainer.Trainer`: the jobs layer's manager, of which the lab imports nothing), whose curve,
samples and snapshots are in memory a second before the keeper writes them: the pages' one-second refresh reads them
here, and every submit goes through here too.
Pages, panels and the picker ask :class:`StudentRuns` (``ui.picker.runs()``) and never hold a job manager, a
job or a worker (``tests/project/test_lab_door.py`` checks it): what they get is a :class:`LiveRun`, a read-only
view with no controls of its own. Every control, of a run of this process or of another, goes through the lab's one
control path (:meth:`llmviz.lab.service.Lab.control`, inside its guard; ``ui.lab.control`` in the app).

A :class:`StudentRuns` is bound to one student (``owner``: the app's student id) and the client whose share its
runs count in (the student, or their computer's address: ``LLMVIZ_SHARE_BY``); it sees and starts only that
student's runs, whatever id a page passes. It works when the lab's database cannot be read too (training goes on in
this process; the record catches up when the database is back).

The names a page needs beside it (a run's state, its status, a run a worker builds, a refusal) are the lab's too:
:mod:`llmviz.lab.live_status`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from llmviz.lab.live_status import JobStatus
from llmviz.lab.trainer import Job, Trainer
from llmviz.lab.trainer import trainer as process_trainer


class LiveRun:
    """A run of this process (a job of its manager), read-only: its id, label and kind, its status (state, step,
    curve, samples: :class:`JobStatus`, read in one go), what a task made (:attr:`result`), what the page that
    started it noted (:attr:`info`) and its snapshots in memory. Two views of one job are equal."""

    __slots__ = ("_job",)

    def __init__(self, job: Job):
        self._job = job

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LiveRun) and other._job is self._job

    def __hash__(self) -> int:
        return id(self._job)

    def __repr__(self) -> str:
        return f"LiveRun({self.id!r}, {self.label!r}, {self.kind!r})"

    @property
    def id(self) -> str:
        return self._job.id

    @property
    def label(self) -> str:
        return self._job.label

    @property
    def kind(self) -> str:
        """``"train"`` (a training run or one runner of a race) or ``"task"`` (a loop: BPE, word2vec, a sweep)."""
        return self._job.kind

    @property
    def created(self) -> float:
        return self._job.created

    @property
    def info(self) -> Any:
        """What the worker reported of a training run once it was built (its model and data: a
        :class:`~llmviz.jobs.events.RunInfo`), None before."""
        return self._job.info

    @property
    def result(self) -> Any:
        """A task's return value (also when it was stopped, for a task that returns what it made)."""
        return self._job.result

    @property
    def checkpoint(self) -> Any:
        """A finished training run's single-file checkpoint (its bytes, for a download), or None."""
        return self._job.checkpoint

    @property
    def snapshots(self):
        """The run's snapshots in this process (:class:`~llmviz.training.snapshots.SnapshotStore`), or None."""
        return self._job.snapshots

    @property
    def changing(self) -> bool:
        """A control was asked and the worker has not acted on it yet (the page disables the buttons meanwhile)."""
        return self._job.changing

    @property
    def paused(self) -> bool:
        return self._job.paused

    @property
    def ended(self) -> bool:
        return self._job.ended

    def status(self) -> JobStatus:
        """The run's state, step, total, curve, samples and error, read in one go."""
        return self._job.status()


def _view(job: Job | None) -> LiveRun | None:
    return LiveRun(job) if job is not None else None


class StudentRuns:
    """One student's runs in this process: reading them, starting them, and every control, through this process's
    job manager (see the module's docstring). ``owner`` is the app's student id; ``client`` whose share their runs
    count in (None: as the student's last page run said, else the student)."""

    def __init__(self, manager: Trainer, owner: str, client: str | None = None):
        self._manager = manager
        self.owner = owner
        if client is not None:  # a page run says whose share it counts in; a control alone leaves that as it is
            manager.bind(owner, client)

    # ------------------------------------------------------------------ reading

    def live(self, run_id: str) -> LiveRun | None:
        """The student's run ``run_id`` in this process (None when this process does not hold it, or it is not
        theirs: a run id alone opens nothing)."""
        return _view(self._manager.get(self.owner, run_id or ""))

    def live_runs(self, kind: str | None = "train") -> list[LiveRun]:
        """The student's runs in this process, oldest first; ``kind``: only ``"train"`` or ``"task"`` (None: both)."""
        return [LiveRun(job) for job in self._manager.jobs(self.owner) if kind is None or job.kind == kind]

    def heartbeat(self) -> None:
        """The student's page is still open here (the manager stops the runs of a student gone for
        ``LLMVIZ_SESSION_TIMEOUT``)."""
        self._manager.heartbeat(self.owner)

    def resume_line(self, run_id: str) -> str:
        """What Resume will do with the student's kept run, in words ("" when the lab does not keep it)."""
        return self._manager.resume_line(self.owner, run_id)

    @property
    def runs_per_student(self) -> int | None:
        """How many runs one student trains at a time (as many more may wait); None: no limit."""
        return self._manager.runs_per_session

    def share(self) -> tuple[int, int]:
        """``(training now, waiting or paused)`` runs of the student's share here (a race counts once)."""
        return self._manager.share(self.owner)

    def memory_line(self) -> tuple[int, int | None, int, int | None]:
        """``(bytes the student's share counts, that share or None, bytes this process's training holds, its budget
        or None)``."""
        return self._manager.memory_line(self.owner)

    def here(self) -> tuple[int, int, int]:
        """This process's runs, every student's: ``(training now, waiting, at most at once)``."""
        return self._manager.running_count, self._manager.waiting_count, self._manager.max_running

    def run_devices(self) -> list[str]:
        """The devices a run may train on, best first (a Ray cluster's, or this machine's)."""
        return self._manager.run_devices()

    def where_runs_train(self) -> str | None:
        """One line on the cluster that trains the runs; None when they train on this machine."""
        return self._manager.where_runs_train()

    # ------------------------------------------------------------------ starting

    def submit_training(self, trainer=None, **options) -> LiveRun:
        """Start a training run (:meth:`llmviz.jobs.manager.JobManager.submit_training`'s options); it is recorded
        in the lab before it is queued. :class:`~llmviz.lab.live_status.JobRefused` (one line) when it cannot start."""
        return LiveRun(self._manager.submit_training(self.owner, trainer, **options))

    def submit_race(self, runners: list[tuple[str, Any]], **options) -> list[LiveRun]:
        """Start ``(label, trainer or Planned)`` runners side by side in one worker, one run each."""
        return [LiveRun(job) for job in self._manager.submit_race(self.owner, runners, **options)]

    def submit_task(self, loop: Callable[[Callable[[], bool]], Iterator[tuple[int, float]]], **options) -> LiveRun:
        """Run a loop that yields ``(step, loss)`` (a BPE training, word2vec, a sweep) as a run of kind task; what it
        returns is :attr:`LiveRun.result`."""
        return LiveRun(self._manager.submit_task(self.owner, loop, **options))

    def keep_upload(self, name: str, data: bytes) -> str | None:
        """Keep a text the student uploaded in the lab (their quota counts it); the name it is kept under."""
        return self._manager.keep_upload(self.owner, name, data)


def student_runs(owner: str, client: str | None = None, liveness: Callable[[str], bool | None] | None = None):
    """:class:`StudentRuns` for ``owner`` on this process's trainer (:func:`llmviz.lab.trainer.trainer`: one per
    process, shared by every page run; ``liveness``: whether a student still has a tab open, for the trainer made by
    the first call)."""
    return StudentRuns(process_trainer(liveness=liveness), owner, client)
