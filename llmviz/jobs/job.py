"""A job (:class:`Job`, read through :class:`~llmviz.lab.live_status.JobStatus`) and the group of jobs that share one
worker (:class:`Group`).

Pages see a job only through the lab's door (:class:`llmviz.lab.live.LiveRun`, read-only); the manager's
controls call :meth:`Job.pause`, :meth:`Job.resume` and :meth:`Job.stop`, and the methods under "used by the
supervisor" are the only way :mod:`llmviz.jobs.supervisor` and :mod:`llmviz.jobs.manager` change a job.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any, Protocol

from llmviz.jobs.channels import Channel, WorkerGone
from llmviz.jobs.events import Control, Pause, RunInfo, Stop
from llmviz.jobs.worker import WorkerOptions
from llmviz.lab.live_status import JobState, JobStatus
from llmviz.training.snapshots import SnapshotStore


class Board(Protocol):
    """What a job asks of its manager's queue (:class:`llmviz.jobs.fair_queue.FairQueue`)."""

    def waits_for(self, group: Group) -> str | None: ...

    def queue_position(self, job: Job) -> int | None: ...

    def stopping(self, group: Group) -> None: ...


class Job:
    """One run as the pages see it: a training run (with snapshots, samples and its model's :class:`RunInfo`)
    or a small task loop (a BPE training, word2vec, …) whose return value is :attr:`result`.

    Created by :meth:`JobManager.submit_training`, :meth:`~JobManager.submit_race` and
    :meth:`~JobManager.submit_task`; pages and scripts control it with :meth:`pause`, :meth:`resume` and
    :meth:`stop` and read it with :meth:`status`. The work itself runs in the job's worker (a process on the
    server): :attr:`trainer` is set only when the worker is a thread of this process.

    The methods under "used by the supervisor" are the only way the manager and the supervisor change a job.
    """

    def __init__(
        self, manager: Board, group: Group, index: int, label: str, kind: str, total: int, run_id: str | None = None
    ):
        self.id = run_id or secrets.token_hex(5)  # URL-safe, unguessable; a resumed run keeps its id
        self.owner = group.owner
        self.label = label
        self.kind = kind
        self.run_kind: str | None = None  # what the lab keeps it as (llmviz.lab.records.KINDS); None: inferred
        self.total = total
        self.created = time.time()
        self.info: RunInfo | None = None  # the model and data of a training run (once built)
        self.trainer: Any = None  # the live Trainer, only with thread workers; pages read info and snapshots
        self.snapshots: SnapshotStore | None = None  # a training run's kept weights (None: a task, or none kept)
        self.result: Any = None  # a task's return value
        self.keep: Any = None  # a task's KeptResult: what the lab keeps of its result (llmviz.lab.live_status)
        self.section: dict | None = None  # the page section that started it (llmviz.lab.views.section_of)
        self.checkpoint: bytes | None = None  # a finished/stopped training run's checkpoint file
        self.loops_started = 0  # how many training loops ever ran for this job (always ≤ 1)
        self.reserved_snapshot_bytes = 0  # snapshot bytes this run is sure to need (step 0 + newest)
        self._manager = manager
        self._group = group
        self._index = index
        self._lock = threading.Lock()
        self._state = JobState.QUEUED
        self._step = 0
        self._losses: list[tuple[int, float]] = []
        self._metrics: list = []
        self._samples: list[tuple[int, str]] = []
        self._error: str | None = None
        self._stop = threading.Event()
        self._paused = False  # asked to pause (the worker may still be finishing its step)
        self._pause_sent = False  # the worker knows it is paused
        self._stop_sent = False
        self._discarded = False  # its session has gone: nothing is kept, a parked state is dropped
        self._parked: Any = None  # every runner was paused: the state a new worker resumes from
        self._parked_bytes = 0
        self._resume: tuple[int, dict, dict, dict] | None = None  # (step, weights, tensors, scalars) for the lab
        self._done = threading.Event()
        self._started_at: float | None = None
        self._elapsed = 0.0
        self._version = 0
        self._frozen: tuple[int, tuple, tuple, tuple] | None = None

    # ---------------------------------------------------------------- control (any thread)

    def pause(self) -> None:
        with self._lock:
            if not self._state.done:
                self._paused = True
                self._version += 1
        self._group.forward(self)

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            self._version += 1
        self._group.wake()

    def stop(self) -> None:
        """Stop after the current step (or at once when queued); what it learned is kept."""
        self._stop.set()
        with self._lock:
            self._version += 1
        self._manager.stopping(self._group)
        self._group.forward(self)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job has ended; True when it has."""
        return self._done.wait(timeout)

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    @property
    def paused(self) -> bool:
        with self._lock:
            return self._paused

    @property
    def changing(self) -> bool:
        """True while the job's status can change with no button pressed: it is queued or training, or has been
        asked to pause (or stop) and is finishing its step. A page redraws a changing job every few seconds; a
        paused or ended one stays still until a button changes it."""
        with self._lock:
            if self._state.done:
                return False
            return not (self._paused and self._state == JobState.PAUSED) or self._stop.is_set()

    @property
    def worker_pid(self) -> int | None:
        """The process id of this job's worker process (None with thread workers, before it starts, or while the
        run is paused: a paused run has no worker)."""
        process = self._group.process
        return process.pid if process is not None else None

    @property
    def version(self) -> int:
        """Grows with every change (a step, a snapshot, a state): a cheap way to know whether to redraw."""
        with self._lock:
            return self._version + (self.snapshots.version if self.snapshots is not None else 0)

    def status(self) -> JobStatus:
        with self._lock:
            elapsed = self._elapsed + (time.perf_counter() - self._started_at if self._started_at else 0.0)
            if self._frozen is None or self._frozen[0] != self._version:
                self._frozen = (self._version, tuple(self._losses), tuple(self._metrics), tuple(self._samples))
            _, losses, metrics, samples = self._frozen
            state, step, error, version = self._state, self._step, self._error, self._version
        steps = tuple(self.snapshots.steps()) if self.snapshots is not None else ()
        waits = self._manager.waits_for(self._group) if state == JobState.QUEUED else None
        return JobStatus(
            job_id=self.id,
            label=self.label,
            kind=self.kind,
            state=state,
            step=step,
            total=self.total,
            losses=losses,
            metrics=metrics,
            samples=samples,
            queue_position=self._manager.queue_position(self) if state == JobState.QUEUED else None,
            waits_for_own_run=waits == "own run",
            waits_for_memory=waits == "memory",
            error=error,
            snapshot_steps=steps,
            elapsed_s=elapsed,
            version=version + (self.snapshots.version if self.snapshots is not None else 0),
        )

    # ---------------------------------------------------------------- used by the supervisor and the manager

    @property
    def group(self) -> Group:
        return self._group

    @property
    def index(self) -> int:
        """Its place in its worker (a race's runners are 0, 1, …)."""
        return self._index

    @property
    def state(self) -> JobState:
        with self._lock:
            return self._state

    @property
    def error(self) -> str | None:
        with self._lock:
            return self._error

    @property
    def ended(self) -> bool:
        return self._done.is_set()

    @property
    def discarded(self) -> bool:
        return self._discarded

    def set_state(self, state: JobState) -> None:
        with self._lock:
            if self._state.done:
                return
            self._state = state
            self._version += 1
            if state == JobState.RUNNING and self._started_at is None:
                self._started_at = time.perf_counter()
            elif state != JobState.RUNNING and self._started_at is not None:
                self._elapsed += time.perf_counter() - self._started_at
                self._started_at = None

    def record(self, step: int, loss: float, metrics=None, sample: tuple[int, str] | None = None) -> None:
        with self._lock:
            self._step = step
            self._losses.append((step, loss))
            if metrics is not None:
                self._metrics.append(metrics)
            if sample is not None:
                self._samples.append(sample)
            self._version += 1

    def set_error(self, message: str) -> None:
        with self._lock:
            self._error = message

    def fail(self, message: str) -> None:
        """End the job as failed with ``message`` (a first error already recorded is kept)."""
        with self._lock:
            self._error = self._error or message
        self.end(JobState.FAILED)

    def end(self, state: JobState) -> None:
        self.set_state(state)
        self._done.set()

    def take_control(self) -> Control | None:
        """The stop or pause to send to the worker now, if one is pending (it is then marked as sent)."""
        with self._lock:
            if self._done.is_set():
                return None
            if self._stop.is_set() and not self._stop_sent:
                self._stop_sent = True
                return Stop(self._index)
            if self._paused and not self._pause_sent and not self._stop_sent:
                self._pause_sent = True
                return Pause(self._index)
        return None

    @property
    def wants_resume(self) -> bool:
        """Its worker holds it paused, but the student has pressed Resume."""
        with self._lock:
            return self._pause_sent and not self._paused and not self._stop.is_set() and not self._done.is_set()

    @property
    def paused_in_worker(self) -> bool:
        with self._lock:
            return self._paused and self._pause_sent and not self._stop.is_set()

    @property
    def wants_to_run(self) -> bool:
        """A parked job that needs a worker again: resumed, or stopped (its worker makes its last snapshot and
        checkpoint)."""
        with self._lock:
            return not self._done.is_set() and self._parked is not None and (not self._paused or self._stop.is_set())

    def mark_resumed(self) -> None:
        with self._lock:
            self._pause_sent = False

    def park(self, state: Any, nbytes: int) -> None:
        with self._lock:
            self._parked, self._parked_bytes = state, nbytes

    @property
    def parked_state(self) -> Any:
        with self._lock:
            return self._parked

    @property
    def parked_bytes(self) -> int:
        with self._lock:
            return self._parked_bytes

    def take_parked(self) -> Any:
        """The parked state, handed to a new worker (the job no longer holds it)."""
        with self._lock:
            state, self._parked, self._parked_bytes = self._parked, None, 0
            return state

    def offer_resume_state(self, step: int, weights: dict, training: tuple[dict, dict]) -> None:
        """The worker sent the run's resume state at ``step`` (with that step's weights): held until the lab's keeper
        takes it (:meth:`take_resume_state`, within a second), a newer one replacing it."""
        with self._lock:
            self._resume = (step, weights, *training)

    def take_resume_state(self) -> tuple[int, dict, dict, dict] | None:
        """``(step, weights, tensors, scalars)`` of the newest resume state not yet taken (the job lets go of it)."""
        with self._lock:
            taken, self._resume = self._resume, None
            return taken

    def give_back_resume_state(self, taken: tuple[int, dict, dict, dict] | None) -> None:
        """A resume state :meth:`take_resume_state` gave that could not be written (the flush was rolled back): the
        next one writes it, unless a newer one came meanwhile (a parked run's last state is not lost to a locked
        database)."""
        with self._lock:
            if self._resume is None:
                self._resume = taken

    def relaunched(self) -> None:
        """A new worker has this job's state, told whether it is paused and whether it was stopped."""
        with self._lock:
            self._stop_sent = self._stop.is_set()
            self._pause_sent = self._paused

    def discard(self) -> None:
        """Stop, and keep nothing more (its session has gone): a parked state is dropped, not resumed to save."""
        self._discarded = True
        self.stop()
        self._group.wake()

    def kept_snapshots_line(self) -> str:
        """ " Its snapshots up to step N are kept." (or "" when it has none past step 0)."""
        last = self.snapshots.last_step if self.snapshots is not None else None
        return f" Its snapshots up to step {last} are kept." if last else ""

    def __repr__(self) -> str:
        return f"Job({self.id}, {self.label!r}, owner={self.owner!r}, {self._state}, step {self._step}/{self.total})"


class Group:
    """The jobs that share one worker and one job slot (one job, or every runner of a race)."""

    def __init__(self, owner: str, client: str, options: WorkerOptions):
        self.id = secrets.token_hex(5)
        self.owner = owner
        self.client = client
        self.options = options
        self.jobs: list[Job] = []
        self.payloads: list[Any] = []  # objects (thread workers) until the worker starts
        self.payload_bytes: bytes | None = None  # process workers: pickled at submit time
        self.process: Any = None  # a multiprocessing.Process with process workers (a RayWorkerHandle with Ray)
        self.ray_wanted: dict[str, int] = {}  # Ray workers: the resources its actor asks for (ray_executor)
        self.idle = False  # every runner is paused, the worker waits (tasks) and the slot was given back
        self.thread: threading.Thread | None = None
        self.channel: Channel | None = None  # set while a worker runs
        self._send_lock = threading.Lock()
        self._wake = threading.Event()

    def wake(self) -> None:
        self._wake.set()

    def clear_wake(self) -> None:
        self._wake.clear()

    def wait_wake(self, timeout: float) -> None:
        """Wait until a control is pressed (or ``timeout``), and take the wake-up."""
        self._wake.wait(timeout)
        self._wake.clear()

    def send(self, message) -> None:
        with self._send_lock:
            if self.channel is not None:
                self.channel.send(message)

    def forward(self, job: Job) -> None:
        """Send ``job``'s pending stop or pause to the worker now (it acts after the step in progress); a resume
        waits for the supervisor, which may first have to wait for a slot."""
        with self._send_lock:
            if self.channel is not None and not job.ended:
                control = job.take_control()
                try:
                    if control is not None:
                        self.channel.send(control)
                except WorkerGone:
                    pass  # the supervisor finds out and says so
        self.wake()

    def attach(self, channel: Channel | None) -> None:
        with self._send_lock:
            self.channel = channel

    @property
    def done(self) -> bool:
        return all(job.ended for job in self.jobs)

    @property
    def stopping(self) -> bool:
        return all(job.stop_requested or job.ended for job in self.jobs)
