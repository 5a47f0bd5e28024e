"""Training jobs: runs that train outside any page's script run, in worker processes on a server.

A :class:`JobManager` owns every job of a process (the Streamlit server has one, see
:func:`default_manager`; the CLI and notebooks make their own or use :func:`train_blocking`).

- **Where the work runs.** ``workers="process"`` (the server's default): each job trains in a worker process of
  its own (:mod:`llmviz.jobs.worker`), at a lower OS priority than page rendering, with its own torch threads; the
  worker hands back metrics and snapshots of the weights over a pipe, so every page still reads any step. A
  worker that dies gives its run a clear *failed* state and the server lives on. ``workers="thread"`` (the
  default for notebooks, the CLI and tests) runs the same worker loop in a thread of this process.
- **Owners.** A job belongs to one owner (a browser session id, or ``"cli"``); an owner only ever sees its own jobs.
- **Fair share.** At most ``max_running`` jobs train at once (default: the number of CPU cores, env
  ``LLMVIZ_MAX_JOBS``). With ``runs_per_session=R`` (the server: env ``LLMVIZ_RUNS_PER_SESSION``, default 1)
  an owner trains at most R at once and keeps at most R more waiting or paused; asking for more raises
  :class:`JobRefused` with the reason. Waiting jobs are admitted first come, first served, skipping owners
  that already train their share.
- **Races.** :meth:`JobManager.submit_race` trains several runners in one worker, a step of each in turn: one
  job slot, one share of the session, a curve per runner.
- **Control.** Pause, Resume and Stop act between two steps; a paused job gives its slot back; a stopped run
  keeps everything it learned.
- **Reading.** Progress, loss, samples and snapshots can be read from any thread at any time
  (:meth:`Job.status` is cached between changes, so many watchers cost little).
- **Snapshots** stay within the owner's memory cap (env ``LLMVIZ_SNAPSHOT_MB``) at every moment: a run is
  admitted only if its step 0 and newest snapshot fit beside the owner's other runs, and the others are
  evicted (log-spaced) before a new one is kept.
- **Sessions that end.** A job whose owner has gone (its browser tab closed) stops by itself: the manager's
  reaper asks a ``liveness`` function (the Streamlit runtime's session check) and, failing that, the last
  heartbeat.

>>> from llmviz.training.trainer import TrainConfig, Trainer
>>> config = TrainConfig(model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=5,
... eval_interval=5)
>>> manager = JobManager(max_running=1)
>>> job = manager.submit_training("notebook", Trainer.from_text("hello world\\n" * 20, config), label="demo")
>>> job.wait(timeout=60), job.status().state, job.status().step, job.snapshots.steps()
(True, 'finished', 5, [0, 1, 2, 5])
>>> manager.shutdown()
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import multiprocessing.context
import os
import pickle
import secrets
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from llmviz import settings
from llmviz.errors import LlmvizError
from llmviz.jobs.worker import (
    Channel,
    PipeChannel,
    RunInfo,
    TaskPayload,
    TrainPayload,
    WorkerGone,
    WorkerOptions,
    process_entry,
    thread_channel_pair,
    worker_main,
)
from llmviz.training.snapshots import SnapshotStore, evict, session_cap_bytes, state_of

log = logging.getLogger(__name__)

# the states a job goes through: queued → running ⇄ paused → finished | stopped | failed
QUEUED, RUNNING, PAUSED, FINISHED, STOPPED, FAILED = "queued", "running", "paused", "finished", "stopped", "failed"
DONE_STATES = (FINISHED, STOPPED, FAILED)


class JobRefused(LlmvizError):
    """A job cannot start: the session already trains its share, or its snapshots would pass their memory cap."""


@dataclass(frozen=True)
class JobStatus:
    """A consistent picture of a job at one moment, safe to render from any thread."""

    job_id: str
    label: str
    kind: str  # "train" (a Trainer) or "task" (any loop yielding (step, loss))
    state: str
    step: int
    total: int
    losses: tuple[tuple[int, float], ...]  # (step, training loss)
    metrics: tuple  # StepMetrics of a training job
    samples: tuple[tuple[int, str], ...]  # (step, generated text)
    queue_position: int | None  # 1 = next to start; None when not waiting
    error: str | None
    snapshot_steps: tuple[int, ...]
    elapsed_s: float
    version: int = 0  # grows with every change of the job (steps, snapshots, state): caches key on it
    waits_for_own_run: bool = False  # queued because its session already trains its share (not for a free slot)

    @property
    def done(self) -> bool:
        return self.state in DONE_STATES

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.total) if self.total else 0.0

    @property
    def last_val_loss(self) -> float | None:
        return next((m.val_loss for m in reversed(self.metrics) if m.val_loss is not None), None)

    def describe(self) -> str:
        """One line for a progress bar: "step 40/300 · loss 2.310 · …"."""
        if self.state == QUEUED:
            if self.waits_for_own_run:
                return (
                    "waiting: it starts when your run in training ends (each browser session trains one at a "
                    "time on a shared server)"
                )
            return f"waiting: number {self.queue_position or 1} in the queue (the server trains a few runs at a time)"
        state = "starting" if self.state == RUNNING and not self.losses else self.state  # the worker is on its way
        text = f"{state} · step {self.step}/{self.total}"
        if self.losses and math.isfinite(self.losses[-1][1]):
            text += f" · loss {self.losses[-1][1]:.3f}"
        if self.metrics:
            val = self.last_val_loss
            last = self.metrics[-1]
            # the perplexity here is e^(training loss) of the last step; the run table shows e^(validation loss)
            text += (
                f" · validation {val:.3f}" if val is not None else ""
            ) + f" · training perplexity {last.perplexity:,.1f}"
            if self.state == RUNNING:
                text += f" · {smoothed_rate([m.tokens_per_s for m in self.metrics]):,.0f} tokens/s"
        return text


def smoothed_rate(rates: list[float], window: int = 20) -> float:
    """The rate over the last ``window`` steps: their harmonic mean, i.e. total tokens / total time
    when every step has the same number of tokens. It is the real throughput of the last steps (a slow
    step, say one that also evaluates, counts for the time it took) and does not jump from step to step.

    >>> round(smoothed_rate([200.0, 33_000.0, 33_000.0, 33_000.0]), 1)
    785.7
    >>> round(smoothed_rate([1000.0] * 50), 6)
    1000.0
    >>> smoothed_rate([])
    0.0
    """
    recent = [rate for rate in rates[-window:] if rate > 0]
    return len(recent) / sum(1.0 / rate for rate in recent) if recent else 0.0


class Job:
    """One run as the pages see it: a training run (with snapshots, samples and its model's :class:`RunInfo`)
    or a small task loop (a BPE training, word2vec, …) whose return value is :attr:`result`.

    Created by :meth:`JobManager.submit_training`, :meth:`~JobManager.submit_race` and
    :meth:`~JobManager.submit_task`; pages and scripts control it with :meth:`pause`, :meth:`resume` and
    :meth:`stop` and read it with :meth:`status`. The work itself runs in the job's worker (a process on the
    server): :attr:`trainer` is set only when the worker is a thread of this process.
    """

    def __init__(
        self,
        manager: JobManager,
        group: _Group,
        index: int,
        owner: str,
        label: str,
        kind: str,
        total: int,
        snapshots: bool = True,
    ):
        self.id = secrets.token_hex(5)  # URL-safe, unguessable
        self.owner = owner
        self.label = label
        self.kind = kind
        self.total = total
        self.created = time.time()
        self.info: RunInfo | None = None  # the model and data of a training run (once built)
        self.trainer: Any = None  # the live Trainer, only with thread workers; pages read info and snapshots
        self.snapshots: SnapshotStore | None = SnapshotStore() if kind == "train" and snapshots else None
        self.result: Any = None  # a task's return value
        self.checkpoint: bytes | None = None  # a finished/stopped training run's checkpoint file
        self.loops_started = 0  # how many training loops ever ran for this job (always ≤ 1)
        self._manager = manager
        self._group = group
        self._index = index
        self._reserved = 0  # snapshot bytes this run is sure to need (step 0 + newest)
        self._lock = threading.Lock()
        self._state = QUEUED
        self._step = 0
        self._losses: list[tuple[int, float]] = []
        self._metrics: list = []
        self._samples: list[tuple[int, str]] = []
        self._error: str | None = None
        self._stop = threading.Event()
        self._paused = False  # asked to pause (the worker may still be finishing its step)
        self._pause_sent = False
        self._stop_sent = False
        self._done = threading.Event()
        self._started_at: float | None = None
        self._elapsed = 0.0
        self._version = 0
        self._frozen: tuple[int, tuple, tuple, tuple] | None = None

    # ---------------------------------------------------------------- control (any thread)

    def pause(self) -> None:
        with self._lock:
            if self._state not in DONE_STATES:
                self._paused = True
                self._version += 1
        self._group.forward(self)

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            self._version += 1
        self._group.wake()

    def stop(self) -> None:
        """Stop after the current step (or at once when queued or paused); what it learned is kept."""
        self._stop.set()
        with self._lock:
            self._version += 1
        self._group.forward(self)
        self._manager._notify()

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
            if self._state in DONE_STATES:
                return False
            return not (self._paused and self._state == PAUSED) or self._stop.is_set()

    @property
    def worker_pid(self) -> int | None:
        """The process id of this job's worker process (None with thread workers, or before it starts)."""
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
            queue_position=self._manager.queue_position(self) if state == QUEUED else None,
            waits_for_own_run=state == QUEUED and self._manager.share_is_full(self.owner),
            error=error,
            snapshot_steps=steps,
            elapsed_s=elapsed,
            version=version + (self.snapshots.version if self.snapshots is not None else 0),
        )

    # ---------------------------------------------------------------- used by the job's supervisor thread

    def _set_state(self, state: str) -> None:
        with self._lock:
            if self._state in DONE_STATES:
                return
            self._state = state
            self._version += 1
            if state == RUNNING and self._started_at is None:
                self._started_at = time.perf_counter()
            elif state != RUNNING and self._started_at is not None:
                self._elapsed += time.perf_counter() - self._started_at
                self._started_at = None

    def _record(self, step: int, loss: float, metrics=None, sample: tuple[int, str] | None = None) -> None:
        with self._lock:
            self._step = step
            self._losses.append((step, loss))
            if metrics is not None:
                self._metrics.append(metrics)
            if sample is not None:
                self._samples.append(sample)
            self._version += 1

    def _fail(self, message: str) -> None:
        with self._lock:
            self._error = self._error or message
        self._set_state(FAILED)

    def _end(self, state: str) -> None:
        self._set_state(state)
        self._done.set()

    @property
    def _state_now(self) -> str:
        with self._lock:
            return self._state

    def __repr__(self) -> str:
        return f"Job({self.id}, {self.label!r}, owner={self.owner!r}, {self._state}, step {self._step}/{self.total})"


class _Group:
    """The jobs that share one worker and one job slot (one job, or every runner of a race)."""

    def __init__(self, owner: str):
        self.id = secrets.token_hex(5)
        self.owner = owner
        self.jobs: list[Job] = []
        self.payloads: list = []
        self.payload_bytes: bytes | None = None  # pickled at submit time (process workers)
        self.options = WorkerOptions()
        self.process = None  # a multiprocessing.Process with process workers
        self.idle = False  # every runner is paused: the worker waits and the slot was given back
        self.thread: threading.Thread | None = None
        self.channel: Channel | None = None  # set once the worker runs
        self._send_lock = threading.Lock()
        self._wake = threading.Event()

    def wake(self) -> None:
        self._wake.set()

    def send(self, message: tuple) -> None:
        with self._send_lock:
            if self.channel is not None:
                self.channel.send(message)

    def forward(self, job: Job) -> None:
        """Send ``job``'s pending stop or pause to the worker now (it acts after the step in progress); a resume
        waits for the supervisor, which may first have to wait for a slot."""
        with self._send_lock:
            if self.channel is not None and not job._done.is_set():
                try:
                    if job.stop_requested and not job._stop_sent:
                        job._stop_sent = True
                        self.channel.send(("stop", job._index))
                    elif job.paused and not job._pause_sent and not job._stop_sent:
                        job._pause_sent = True
                        self.channel.send(("pause", job._index))
                except WorkerGone:
                    pass  # the supervisor finds out and says so
        self.wake()

    @property
    def done(self) -> bool:
        return all(job._done.is_set() for job in self.jobs)

    @property
    def stopping(self) -> bool:
        return all(job.stop_requested or job._done.is_set() for job in self.jobs)


@dataclass
class _Session:
    jobs: dict[str, Job] = field(default_factory=dict)
    heartbeat: float = field(default_factory=time.monotonic)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


_CONTEXT: multiprocessing.context.BaseContext | None = None
_CONTEXT_LOCK = threading.Lock()


def _process_context():
    """forkserver where the platform has it (a worker then starts in milliseconds, with torch already
    imported, and never inherits the server's threads); spawn elsewhere (Windows).

    multiprocessing would also import the parent's ``__main__`` in every worker (and in the forkserver); in a
    Streamlit server that is whichever page script ran last, in a test a temporary script: a worker needs only
    llmviz, so :func:`_main_module_hidden` hides it while a worker (or the forkserver) starts."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            methods = multiprocessing.get_all_start_methods()
            if "forkserver" in methods and sys.platform != "win32":
                forkserver = multiprocessing.get_context("forkserver")
                # torch.optim builds its first optimizer by importing torch._dynamo (~0.9 CPU-s): once, here,
                # rather than in every worker
                forkserver.set_forkserver_preload(["llmviz.jobs.worker", "llmviz.training.trainer", "torch._dynamo"])
                _CONTEXT = forkserver
            else:
                _CONTEXT = multiprocessing.get_context("spawn")
        return _CONTEXT


def _thread_worker(channel: Channel, payloads: list, options: WorkerOptions) -> None:
    try:
        worker_main(channel, payloads, options)
    except Exception:  # noqa: BLE001 - a bug in the loop itself: the supervisor sees the channel close
        log.exception("worker thread failed")
    finally:
        channel.close()


_MAIN_LOCK = threading.Lock()


@contextlib.contextmanager
def _main_module_hidden():
    """While a worker process (or the forkserver) starts, ``sys.modules["__main__"]`` is an empty module, so
    multiprocessing gives the child no main script to import again. Put back unless a Streamlit script run has
    replaced it meanwhile (each script run installs its own ``__main__``)."""
    stub = types.ModuleType("__main__")
    with _MAIN_LOCK:
        previous = sys.modules.get("__main__")
        sys.modules["__main__"] = stub
        try:
            yield
        finally:
            if sys.modules.get("__main__") is stub and previous is not None:
                sys.modules["__main__"] = previous


def warm_up_workers() -> None:
    """Start the worker processes' forkserver now, in the background (it imports torch once, which takes a few
    seconds), so the first student who presses Train gets a worker at once. No-op where there is no forkserver."""

    def start() -> None:
        context = _process_context()
        if context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            try:
                with _main_module_hidden():
                    forkserver.ensure_running()
            except Exception:  # noqa: BLE001 - the first job will try again, and say why if it cannot
                log.exception("could not start the workers' forkserver")

    threading.Thread(target=start, name="llmviz-forkserver-warm-up", daemon=True).start()


class JobManager:
    """Runs jobs in workers (processes or threads): a fair queue in front of ``max_running`` slots, per-owner
    job lists and shares, snapshot caps, and a reaper that stops the jobs of owners that have gone.

    ``liveness(owner)`` returns True (alive), False (gone) or None (unknown); an owner that is not
    alive and has not sent a :meth:`heartbeat` for ``session_timeout`` seconds has its jobs stopped
    and forgotten. ``session_timeout=None`` never reaps (the CLI).
    """

    def __init__(
        self,
        max_running: int | None = None,
        torch_threads: int | None = None,
        session_timeout: float | None = None,
        liveness: Callable[[str], bool | None] | None = None,
        snapshot_cap_mb: float | None = None,
        latest_snapshot_s: float = 2.0,
        reap_interval: float = 2.0,
        workers: str = "thread",
        runs_per_session: int | None = None,
        nice: int = 10,
    ):
        if max_running is None:
            max_running = settings.get_or("LLMVIZ_MAX_JOBS", _cpu_count)
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        if workers not in ("thread", "process"):
            raise ValueError("workers must be 'thread' or 'process'")
        if runs_per_session is not None and runs_per_session < 1:
            raise ValueError("runs_per_session must be at least 1 (or None: no limit)")
        self.max_running = max_running
        self.torch_threads = torch_threads
        self.session_timeout = session_timeout
        self.liveness = liveness
        self.snapshot_cap = session_cap_bytes(snapshot_cap_mb)
        self.latest_snapshot_s = latest_snapshot_s
        self.reap_interval = reap_interval
        self.workers = workers
        self.runs_per_session = runs_per_session
        self.nice = nice
        self._lock = threading.RLock()
        self._slots = threading.Condition(self._lock)
        self._queue: deque[_Group] = deque()
        self._running: set[_Group] = set()
        self._sessions: dict[str, _Session] = {}
        self._reaper: threading.Thread | None = None
        self._closed = threading.Event()
        self.admitted: list[str] = []  # job ids in the order they got a slot (tests read it)

    # ---------------------------------------------------------------- submitting

    def submit_training(
        self,
        owner: str,
        trainer=None,
        *,
        build: Callable[[], object] | None = None,
        label: str = "run",
        total: int | None = None,
        sample_every: int = 0,
        sample_prompt: str = "",
        sample_tokens: int = 80,
        snapshots: bool = True,
        snapshot_every: int = 0,
        checkpoint: bool = True,
    ) -> Job:
        """Start training ``trainer`` (or the one ``build()`` makes in the worker, e.g. after training a BPE
        tokenizer) for its configured number of steps. ``snapshots=False`` keeps no weights (the CLI: its
        checkpoint is the result). ``snapshot_every`` > 0 keeps every such step too, besides the log-spaced
        series (for charts over training, e.g. an induction head forming). ``checkpoint=False``: no single-file
        checkpoint is made when the run ends (the CLI saves its own). With process workers ``trainer`` and
        ``build`` are pickled: they must not hold lambdas or open files."""
        if (trainer is None) == (build is None):
            raise ValueError("give either a trainer or a build function")
        options = self._options(
            sample_every=sample_every,
            sample_prompt=sample_prompt,
            sample_tokens=sample_tokens,
            snapshots=snapshots,
            snapshot_every=snapshot_every,
            checkpoint=checkpoint,
        )
        [job] = self._submit(owner, [(label, trainer, build, total)], options)
        return job

    def submit_race(
        self,
        owner: str,
        runners: list[tuple[str, object]],
        *,
        sample_every: int = 0,
        sample_prompt: str = "",
        sample_tokens: int = 80,
        snapshots: bool = True,
    ) -> list[Job]:
        """Train ``(label, trainer)`` runners side by side in one worker (a step of each in turn): one slot and one
        share of the session for the whole race, one :class:`Job` (curve, snapshots, controls) per runner."""
        if not runners:
            raise ValueError("a race needs at least one runner")
        options = self._options(
            sample_every=sample_every,
            sample_prompt=sample_prompt,
            sample_tokens=sample_tokens,
            snapshots=snapshots,
            snapshot_every=0,
        )
        return self._submit(owner, [(label, trainer, None, None) for label, trainer in runners], options)

    def submit_task(
        self,
        owner: str,
        loop: Callable[[Callable[[], bool]], Iterator[tuple[int, float]]],
        *,
        label: str,
        total: int,
        returns_when_stopped: bool = False,
    ) -> Job:
        """Run any loop that yields ``(step, loss)`` (a BPE training, word2vec, a toy decoder) as a job; its
        return value becomes :attr:`Job.result`. ``loop(should_stop)`` may check ``should_stop()`` itself, and is
        stopped between yields anyway. With process workers ``loop`` must be picklable (a module-level function
        or a ``functools.partial`` of one). ``returns_when_stopped``: a Stop lets the loop return what it made so
        far (it must check ``should_stop()``; see :mod:`llmviz.jobs.tasks`)."""
        group = _Group(owner)
        group.options = self._options(snapshots=False, checkpoint=False)
        job = Job(self, group, 0, owner, label, "task", total, snapshots=False)
        group.jobs.append(job)
        group.payloads.append(TaskPayload(loop, returns_when_stopped))
        self._enter(group)
        return job

    def _options(self, **values) -> WorkerOptions:
        threads = self.torch_threads or settings.get("LLMVIZ_TORCH_THREADS") or 0
        if self.workers == "process" and not threads:
            threads = max(1, _cpu_count() // self.max_running)
        return WorkerOptions(
            snapshot_latest_s=self.latest_snapshot_s,
            torch_threads=threads if self.workers == "process" else 0,
            nice=self.nice if self.workers == "process" else 0,
            **values,
        )

    def _submit(
        self, owner: str, runners: list[tuple[str, Any, Callable | None, int | None]], options: WorkerOptions
    ) -> list[Job]:
        group = _Group(owner)
        group.options = options
        for index, (label, trainer, build, total) in enumerate(runners):
            steps = total if total is not None else (trainer.config.steps if trainer is not None else 0)
            job = Job(self, group, index, owner, label, "train", steps, snapshots=options.snapshots)
            if job.snapshots is not None:
                job.snapshots.every = max(0, int(options.snapshot_every))
            if trainer is not None:
                job.info = RunInfo.of(trainer)
                job._reserved = 2 * job.info.snapshot_bytes if job.snapshots is not None else 0
                if self.workers == "thread":
                    job.trainer = trainer
            group.jobs.append(job)
            group.payloads.append(
                TrainPayload(
                    trainer=trainer, build=build, step_zero_kept=trainer is not None and job.snapshots is not None
                )
            )
        self._enter(group)
        return group.jobs

    def _enter(self, group: _Group) -> None:
        """Check the owner's share and snapshot room, keep step 0, and start the group's supervisor."""
        if self.workers == "process":
            try:
                group.payload_bytes = pickle.dumps(group.payloads, protocol=pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, AttributeError, TypeError) as error:
                raise JobRefused(f"This job cannot be sent to a worker process ({error}).") from error
        with self._lock:
            if self._closed.is_set():
                raise JobRefused("The job manager has shut down.")
            self._check_share(group.owner)
            self._check_snapshot_room(group.owner, group.jobs)
            session = self._sessions.setdefault(group.owner, _Session())
            for job in group.jobs:
                session.jobs[job.id] = job
            session.heartbeat = time.monotonic()
            for job, payload in zip(group.jobs, group.payloads):
                if isinstance(payload, TrainPayload) and payload.trainer is not None and job.snapshots is not None:
                    # step 0 exists at once, so pages can show the run while it waits
                    self._keep_snapshot(job, payload.trainer.step, state_of(payload.trainer.model))
            self._ensure_reaper()
        if self.workers == "process":
            group.payloads = []  # what the worker needs travels as bytes; the server keeps no trainer
        group.thread = threading.Thread(
            target=self._supervise, args=(group,), daemon=True, name=f"llmviz-job-{group.jobs[0].id}"
        )
        group.thread.start()

    def _groups(self, owner: str) -> list[_Group]:
        session = self._sessions.get(owner)
        seen: dict[str, _Group] = {}
        for job in session.jobs.values() if session else ():
            seen.setdefault(job._group.id, job._group)
        return list(seen.values())

    def share(self, owner: str) -> tuple[int, int]:
        """``(training now, waiting or paused)`` runs of ``owner`` (a race counts once)."""
        with self._lock:
            groups = [g for g in self._groups(owner) if not g.done]
            running = sum(1 for g in groups if g in self._running)
            return running, len(groups) - running

    def _check_share(self, owner: str) -> None:
        limit = self.runs_per_session
        if limit is None:
            return
        unfinished = [g for g in self._groups(owner) if not g.done and not g.stopping]
        if len(unfinished) >= 2 * limit:
            runs = "run" if limit == 1 else "runs"
            raise JobRefused(
                f"You already have {len(unfinished)} runs going (training, waiting or paused). This server is shared: "
                f"each browser session trains {limit} {runs} at a time and keeps {limit} more waiting. Stop one of "
                "yours, or let it finish, before starting another (a race counts as one run)."
            )

    def _check_snapshot_room(self, owner: str, new: list[Job]) -> None:
        """Refuse runs whose step 0 and newest snapshot would not fit beside the owner's other runs."""
        needed = sum(job._reserved for job in new)
        if not needed:
            return
        session = self._sessions.get(owner)
        held = 0
        for other in session.jobs.values() if session else ():
            if other.snapshots is not None and all(other is not job for job in new):
                held += max(other._reserved if not other._done.is_set() else 0, other.snapshots.protected_bytes())
        if held + needed > self.snapshot_cap:
            cap_mb = self.snapshot_cap / 2**20
            raise JobRefused(
                f"This run's snapshots ({needed / 2**20:.1f} MB at least) would not fit in this session's "
                f"{cap_mb:.0f} MB for snapshots next to your other runs: delete a run, or train a smaller model."
            )

    def _keep_snapshot(self, job: Job, step: int, state: dict) -> None:
        """Keep ``state`` as ``job``'s snapshot at ``step``, evicting the owner's others first: under the manager's
        lock, so nobody ever sees the owner above the cap."""
        if job.snapshots is None:
            return
        with self._lock:
            session = self._sessions.get(job.owner)
            stores = [j.snapshots for j in (session.jobs.values() if session else [job]) if j.snapshots is not None]
            if job.snapshots not in stores:
                stores.append(job.snapshots)
            job.snapshots.add_state(step, state)
            left = evict(stores, self.snapshot_cap)
            if left:
                log.warning(
                    "snapshots of %s are %d bytes above the cap (only step 0 and newest steps are left)",
                    job.owner,
                    left,
                )

    # ---------------------------------------------------------------- reading (per owner)

    def jobs(self, owner: str) -> list[Job]:
        """The owner's jobs, oldest first (never anyone else's)."""
        with self._lock:
            session = self._sessions.get(owner)
            return list(session.jobs.values()) if session else []

    def get(self, owner: str, job_id: str) -> Job | None:
        with self._lock:
            session = self._sessions.get(owner)
            return session.jobs.get(job_id) if session else None

    def remove(self, owner: str, job_id: str) -> None:
        """Stop a job (if it runs) and forget it with its snapshots."""
        with self._lock:
            session = self._sessions.get(owner)
            job = session.jobs.pop(job_id, None) if session else None
        if job is not None:
            job.stop()

    def heartbeat(self, owner: str) -> None:
        with self._lock:
            if owner in self._sessions:
                self._sessions[owner].heartbeat = time.monotonic()

    def end_session(self, owner: str) -> None:
        """Stop every job of ``owner`` and forget them (a closed browser tab)."""
        with self._lock:
            session = self._sessions.pop(owner, None)
        for job in session.jobs.values() if session else ():
            job.stop()

    def queue_position(self, job: Job) -> int | None:
        with self._lock:
            try:
                return self._queue.index(job._group) + 1
            except ValueError:
                return None

    def share_is_full(self, owner: str) -> bool:
        """Does ``owner`` already train as many runs as a session may (so its waiting runs wait for its own)?"""
        with self._lock:
            return self.runs_per_session is not None and self._running_of(owner) >= self.runs_per_session

    @property
    def waiting_count(self) -> int:
        """Runs waiting for a slot, all owners together (a race counts once)."""
        with self._lock:
            return len(self._queue)

    def queued(self) -> list[Job]:
        """Every job waiting for a slot, in the order they wait (all owners: for "N waiting" lines)."""
        with self._lock:
            return [job for group in self._queue for job in group.jobs]

    @property
    def running_count(self) -> int:
        """Runs training now, all owners together (a race counts once: it holds one slot)."""
        with self._lock:
            return len(self._running)

    def snapshot_bytes(self, owner: str) -> int:
        with self._lock:
            return sum(job.snapshots.nbytes for job in self.jobs(owner) if job.snapshots is not None)

    # ---------------------------------------------------------------- slots (fair FIFO)

    def _running_of(self, owner: str) -> int:
        return sum(1 for group in self._running if group.owner == owner)

    def _next_admissible(self) -> _Group | None:
        if len(self._running) >= self.max_running:
            return None
        for group in self._queue:
            if self.runs_per_session is None or self._running_of(group.owner) < self.runs_per_session:
                return group
        return None

    def _acquire(self, group: _Group, give_up: Callable[[], bool]) -> bool:
        """Wait for a slot, first come first served among owners with room in their share; False when
        ``give_up()`` turned true (stopped) or the manager shut down while waiting."""
        with self._slots:
            self._queue.append(group)
            try:
                while not give_up() and not self._closed.is_set():
                    if self._next_admissible() is group:
                        self._running.add(group)
                        self.admitted.extend(job.id for job in group.jobs)
                        return True
                    self._slots.wait(timeout=0.5)
                return False
            finally:
                self._queue.remove(group)
                self._slots.notify_all()

    def _release(self, group: _Group) -> None:
        with self._slots:
            self._running.discard(group)
            self._slots.notify_all()

    def _notify(self) -> None:
        with self._slots:
            self._slots.notify_all()

    # ---------------------------------------------------------------- the supervisor (one thread per group)

    def _launch(self, group: _Group) -> Channel:
        if self.workers == "process":
            context = _process_context()
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(
                target=process_entry,
                args=(theirs, group.payload_bytes, group.options),
                name=f"llmviz-worker-{group.jobs[0].id}",
                daemon=True,
            )
            with _main_module_hidden():
                process.start()
            theirs.close()
            group.payload_bytes = None
            group.process = process
            return PipeChannel(ours)
        ours, theirs = thread_channel_pair()
        threading.Thread(
            target=_thread_worker,
            args=(theirs, group.payloads, group.options),
            daemon=True,
            name=f"llmviz-worker-{group.jobs[0].id}",
        ).start()
        return ours

    def _forward(self, group: _Group) -> list[Job]:
        """Send the controls pressed before the worker ran; returns the jobs that want to resume."""
        resuming = []
        for job in group.jobs:
            if job._done.is_set():
                continue
            group.forward(job)
            if not job.stop_requested and not job.paused and job._pause_sent:
                resuming.append(job)
        return resuming

    def _supervise(self, group: _Group) -> None:  # noqa: C901 - TODO(jobs)
        channel: Channel | None = None
        holding = False
        try:
            holding = self._acquire(group, give_up=lambda: group.stopping)
            if not holding:
                for job in group.jobs:
                    job._end(STOPPED)
                return
            for job in group.jobs:
                job._set_state(RUNNING)
                job.loops_started += 1
            channel = self._launch(group)
            with group._send_lock:
                group.channel = channel
            while not group.done:
                resuming = self._forward(group)
                if resuming and group.idle:  # every runner was paused: the slot was given back, so wait for one
                    for job in resuming:
                        job._set_state(QUEUED)
                    holding = self._acquire(
                        group,
                        give_up=lambda: (
                            not any(not j.paused and not j.stop_requested and not j._done.is_set() for j in group.jobs)
                        ),
                    )
                    if holding:
                        group.idle = False
                    resuming = [job for job in resuming if not job.paused and not job.stop_requested]
                    if not holding:
                        for job in resuming:
                            job._set_state(PAUSED)
                        continue
                for job in resuming:
                    job._pause_sent = False
                    group.send(("resume", job._index))
                    job._set_state(RUNNING)
                group._wake.clear()
                if not channel.poll(0.05):
                    self._check_alive(group, channel)
                    group._wake.wait(0.05)
                    continue
                holding = self._handle(group, channel.recv(), holding)
        except WorkerGone:
            self._worker_died(group)
        except Exception as error:  # noqa: BLE001 - the server lives on: the runs fail with one line each
            log.exception("job supervisor of %s failed", [job.id for job in group.jobs])
            for job in group.jobs:
                if not job._done.is_set():
                    job._fail(f"{type(error).__name__}: {error}")
        finally:
            if holding:
                self._release(group)
            for job in group.jobs:
                if not job._done.is_set():
                    job._end(STOPPED if job.stop_requested else FAILED)
            if channel is not None:
                with group._send_lock:
                    group.channel = None
                channel.close()
            if group.process is not None:
                group.process.join(timeout=5)
                if group.process.is_alive():
                    group.process.kill()
                    group.process.join(timeout=5)

    def _check_alive(self, group: _Group, channel: Channel) -> None:
        process = group.process
        if process is not None and not process.is_alive() and not channel.poll(0):
            raise WorkerGone(f"exit code {process.exitcode}")

    def _worker_died(self, group: _Group) -> None:
        process = group.process
        code = process.exitcode if process is not None else None
        if process is not None and code is None:
            process.join(timeout=2)
            code = process.exitcode
        how = f" (exit code {code})" if code is not None else ""
        log.error("worker of jobs %s stopped unexpectedly%s", [job.id for job in group.jobs], how)
        for job in group.jobs:
            if job._done.is_set():
                continue
            kept = (
                f" Its snapshots up to step {job.snapshots.last_step} are kept."
                if (job.snapshots is not None and job.snapshots.last_step)
                else ""
            )
            job._fail(
                f"The process training this run stopped unexpectedly{how}: it may have run out of memory or "
                f"been ended from outside.{kept}"
            )
            job._done.set()

    def _handle(self, group: _Group, event: tuple, holding: bool) -> bool:
        kind = event[0]
        if kind == "idle":
            if any(job._state_now == RUNNING for job in group.jobs):
                return holding  # a resume crossed this message: the worker is busy again
            group.idle = True
            if holding:
                self._release(group)
            return False
        job = group.jobs[event[1]]
        if kind == "step":
            _, _, step, loss, metrics, sample = event
            job._record(step, loss, metrics, sample)
        elif kind == "snapshot":
            self._keep_snapshot(job, event[2], event[3])
        elif kind == "info":
            job.info = event[2]
            if job.snapshots is not None:
                job._reserved = 2 * job.info.snapshot_bytes
                try:
                    with self._lock:
                        self._check_snapshot_room(job.owner, [job])
                except JobRefused as refused:
                    job._fail(str(refused))
                    job.stop()
        elif kind == "paused":
            if job._pause_sent and job.paused:
                job._set_state(PAUSED)
        elif kind == "result":
            if job.kind == "train" and isinstance(event[2], bytes):
                job.checkpoint = event[2]
            else:
                job.result = event[2]
        elif kind == "failed":
            _, _, message, trace = event
            log.error("job %s (%s) failed: %s\n%s", job.id, job.label, message, trace)
            with job._lock:
                job._error = message
        elif kind == "done":
            job._end(FAILED if event[2] == FAILED or job._error else event[2])
        return holding

    # ---------------------------------------------------------------- ended sessions

    def _ensure_reaper(self) -> None:
        if self.session_timeout is None or (self._reaper is not None and self._reaper.is_alive()):
            return
        self._reaper = threading.Thread(target=self._reap_forever, name="llmviz-job-reaper", daemon=True)
        self._reaper.start()

    def _reap_forever(self) -> None:
        while not self._closed.wait(self.reap_interval):
            self.reap()

    def reap(self) -> list[str]:
        """Stop and forget the jobs of owners that have gone; returns those owners."""
        now = time.monotonic()
        gone = []
        with self._lock:
            owners = list(self._sessions.items())
        for owner, session in owners:
            alive = self.liveness(owner) if self.liveness is not None else None
            if alive:
                session.heartbeat = now  # a live browser session counts as a heartbeat
                continue
            if now - session.heartbeat > (self.session_timeout or math.inf):
                gone.append(owner)
        for owner in gone:
            self.end_session(owner)
        return gone

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every job and wait for the workers (tests, notebooks)."""
        self._closed.set()
        with self._lock:
            jobs = [job for session in self._sessions.values() for job in session.jobs.values()]
        for job in jobs:
            job.stop()
        self._notify()
        for job in jobs:
            job.wait(timeout)


_default: JobManager | None = None
_default_lock = threading.Lock()


def default_manager(liveness: Callable[[str], bool | None] | None = None) -> JobManager:
    """The process's manager (the Streamlit server shares one between all sessions).

    - env ``LLMVIZ_WORKERS``: ``process`` (default: every job trains in a worker process) or ``thread``;
    - env ``LLMVIZ_MAX_JOBS``: runs training at once on the server (default: CPU cores);
    - env ``LLMVIZ_RUNS_PER_SESSION``: runs one browser session trains at once, and keeps waiting (default 1;
      0: no limit);
    - env ``LLMVIZ_TORCH_THREADS``: torch threads of each worker (default: cores // runs at once, at least 1);
    - env ``LLMVIZ_SESSION_TIMEOUT``: a session that has gone this many seconds (default 30) loses its jobs.
    """
    global _default
    with _default_lock:
        if _default is None:
            cap = settings.get_or("LLMVIZ_MAX_JOBS", _cpu_count)
            threads = settings.get_or("LLMVIZ_TORCH_THREADS", lambda: max(1, _cpu_count() // cap))
            per_session = settings.get("LLMVIZ_RUNS_PER_SESSION")
            _default = JobManager(
                max_running=cap,
                torch_threads=threads,
                session_timeout=settings.get("LLMVIZ_SESSION_TIMEOUT"),
                liveness=liveness,
                workers=settings.get("LLMVIZ_WORKERS"),
                runs_per_session=per_session if per_session > 0 else None,
            )
            if _default.workers == "process":
                warm_up_workers()
        elif liveness is not None and _default.liveness is None:
            _default.liveness = liveness
        return _default


def train_blocking(
    trainer,
    on_step: Callable[[JobStatus], None] | None = None,
    sample_every: int = 0,
    manager: JobManager | None = None,
    poll_s: float = 0.2,
    snapshots: bool = False,
) -> Job:
    """Run ``trainer`` as a job and wait for it (the CLI and notebooks): ``on_step(status)`` is called
    as steps go by (at most every ``poll_s`` seconds, and once at the end); Ctrl-C stops the job after
    the current step and keeps what it learned. ``snapshots=True`` keeps log-spaced weights as the app does."""
    manager = manager or JobManager(max_running=1)
    job = manager.submit_training(
        "cli", trainer, label="cli", sample_every=sample_every, snapshots=snapshots, checkpoint=False
    )  # the CLI writes its own checkpoint folder
    seen = -1
    try:
        while not job.wait(poll_s):
            status = job.status()
            if on_step is not None and status.step != seen:
                seen = status.step
                on_step(status)
    except KeyboardInterrupt:
        job.stop()
        job.wait()
    status = job.status()
    if on_step is not None and status.step != seen:
        on_step(status)
    if status.state == FAILED:
        raise LlmvizError(status.error or "training failed")
    return job
