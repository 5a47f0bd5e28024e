"""Training jobs: runs that train in background threads, outside any page's script run.

A :class:`JobManager` owns every job of a process (the Streamlit server has one, see
:func:`default_manager`; the CLI and notebooks make their own or use :func:`train_blocking`).

- A job belongs to one owner (a browser session id, or ``"cli"``); an owner only ever sees its own jobs.
- At most ``max_running`` jobs train at once (default: the number of CPU cores, env ``LLMVIZ_MAX_JOBS``);
  the others wait in a first-in first-out queue and know their place in it.
- Pause, Resume and Stop act between two steps: a stopped run keeps everything it learned.
- Progress, loss, samples and snapshots can be read from any thread at any time (:meth:`Job.status`).
- A job whose owner has gone (its browser tab closed) stops by itself: the manager's reaper asks a
  ``liveness`` function (the Streamlit runtime's session check) and, failing that, the last heartbeat.
- Torch threads: ``torch.set_num_threads`` is process-wide, so the manager sets it once, when its first
  job starts, to ``torch_threads`` (default: cores // max_running, env ``LLMVIZ_TORCH_THREADS``). With
  the default on a 2-core server that is 1 thread per op: two jobs fill the two cores and no single
  job can take the whole machine away from the pages.

>>> from llmviz.train import TrainConfig, Trainer
>>> config = TrainConfig(model="bigram-neural", tokenizer="char", context_size=8, batch_size=4, steps=5, eval_interval=5)
>>> manager = JobManager(max_running=1)
>>> job = manager.submit_training("notebook", Trainer.from_text("hello world\\n" * 20, config), label="demo")
>>> job.wait(timeout=60), job.status().state, job.status().step, job.snapshots.steps()
(True, 'finished', 5, [0, 1, 2, 5])
>>> manager.shutdown()
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch

from llmviz.errors import LlmvizError
from llmviz.snapshots import SnapshotStore, evict, session_cap_bytes

# the states a job goes through: queued → running ⇄ paused → finished | stopped | failed
QUEUED, RUNNING, PAUSED, FINISHED, STOPPED, FAILED = "queued", "running", "paused", "finished", "stopped", "failed"
DONE_STATES = (FINISHED, STOPPED, FAILED)


class JobRefused(LlmvizError):
    """A job cannot start (e.g. the session's snapshots would pass their memory cap)."""


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
            return f"waiting: number {self.queue_position} in the queue (the server trains a few runs at a time)"
        text = f"{self.state} · step {self.step}/{self.total}"
        if self.losses:
            text += f" · loss {self.losses[-1][1]:.3f}"
        if self.metrics:
            val = self.last_val_loss
            last = self.metrics[-1]
            # the perplexity here is e^(training loss) of the last step; the run table shows e^(validation loss)
            text += ((f" · validation {val:.3f}" if val is not None else "")
                     + f" · training perplexity {last.perplexity:,.1f}")
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
    """One background run: a training run (with snapshots and samples) or a small task loop.

    Created by :meth:`JobManager.submit_training` / :meth:`JobManager.submit_task`; pages and scripts
    control it with :meth:`pause`, :meth:`resume`, :meth:`stop` and read it with :meth:`status`.
    """

    def __init__(self, manager: JobManager, owner: str, label: str, kind: str, total: int,
                 work: Callable[[Job], Iterator[tuple[int, float]]], snapshots: bool = True):
        self.id = secrets.token_hex(5)  # URL-safe, unguessable
        self.owner = owner
        self.label = label
        self.kind = kind
        self.total = total
        self.created = time.time()
        self.trainer = None  # set for training jobs once built; pages read snapshots, not this
        self.snapshots: SnapshotStore | None = SnapshotStore() if kind == "train" and snapshots else None
        self._manager = manager
        self._work = work
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._state = QUEUED
        self._step = 0
        self._losses: list[tuple[int, float]] = []
        self._metrics: list = []
        self._samples: list[tuple[int, str]] = []
        self._error: str | None = None
        self._stop = threading.Event()
        self._paused = False
        self._done = threading.Event()
        self._started_at: float | None = None
        self._elapsed = 0.0
        self.loops_started = 0  # how many training loops ever ran for this job (always ≤ 1)
        self.thread = threading.Thread(target=manager._run, args=(self,), name=f"llmviz-job-{self.id}", daemon=True)

    # ---------------------------------------------------------------- control (any thread)

    def pause(self) -> None:
        with self._lock:
            if self._state not in DONE_STATES:
                self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            self._wake.notify_all()

    def stop(self) -> None:
        """Stop after the current step (or at once when queued or paused); what it learned is kept."""
        self._stop.set()
        with self._lock:
            self._wake.notify_all()
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

    def status(self) -> JobStatus:
        with self._lock:
            elapsed = self._elapsed + (time.perf_counter() - self._started_at if self._started_at else 0.0)
            return JobStatus(
                job_id=self.id, label=self.label, kind=self.kind, state=self._state, step=self._step,
                total=self.total, losses=tuple(self._losses), metrics=tuple(self._metrics),
                samples=tuple(self._samples), queue_position=self._manager.queue_position(self),
                error=self._error, snapshot_steps=tuple(self.snapshots.steps()) if self.snapshots else (),
                elapsed_s=elapsed,
            )

    # ---------------------------------------------------------------- used by the worker thread

    def _set_state(self, state: str) -> None:
        with self._lock:
            self._state = state
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

    def _add_sample(self, sample: tuple[int, str]) -> None:
        with self._lock:
            self._samples.append(sample)

    def _wait_while_paused(self) -> bool:
        """Block while paused; returns True when the job should go on."""
        with self._lock:
            while self._paused and not self._stop.is_set():
                self._wake.wait(timeout=1.0)
        return not self._stop.is_set()

    def __repr__(self) -> str:
        return f"Job({self.id}, {self.label!r}, owner={self.owner!r}, {self._state}, step {self._step}/{self.total})"


@dataclass
class _Session:
    jobs: dict[str, Job] = field(default_factory=dict)
    heartbeat: float = field(default_factory=time.monotonic)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


class JobManager:
    """Runs jobs in background threads: a FIFO queue in front of ``max_running`` slots, per-owner
    job lists, and a reaper that stops the jobs of owners that have gone.

    ``liveness(owner)`` returns True (alive), False (gone) or None (unknown); an owner that is not
    alive and has not sent a :meth:`heartbeat` for ``session_timeout`` seconds has its jobs stopped
    and forgotten. ``session_timeout=None`` never reaps (the CLI).
    """

    def __init__(self, max_running: int | None = None, torch_threads: int | None = None,
                 session_timeout: float | None = None, liveness: Callable[[str], bool | None] | None = None,
                 snapshot_cap_mb: float | None = None, latest_snapshot_s: float = 2.0, reap_interval: float = 2.0):
        if max_running is None:
            max_running = int(os.environ.get("LLMVIZ_MAX_JOBS", 0)) or _cpu_count()
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.max_running = max_running
        self.torch_threads = torch_threads
        self.session_timeout = session_timeout
        self.liveness = liveness
        self.snapshot_cap = session_cap_bytes(snapshot_cap_mb)
        self.latest_snapshot_s = latest_snapshot_s
        self.reap_interval = reap_interval
        self._lock = threading.RLock()
        self._slots = threading.Condition(self._lock)
        self._queue: deque[Job] = deque()
        self._running: set[Job] = set()
        self._sessions: dict[str, _Session] = {}
        self._threads_set = False
        self._reaper: threading.Thread | None = None
        self._closed = threading.Event()
        self.admitted: list[str] = []  # job ids in the order they got a slot (tests read it)

    # ---------------------------------------------------------------- submitting

    def submit_training(self, owner: str, trainer=None, *, build: Callable[[], object] | None = None,
                        label: str = "run", total: int | None = None, sample_every: int = 0,
                        sample_prompt: str = "", sample_tokens: int = 80, snapshots: bool = True,
                        snapshot_every: int = 0) -> Job:
        """Start training ``trainer`` (or the one ``build()`` makes in the job's thread, e.g. after
        training a BPE tokenizer) for its configured number of steps. ``snapshots=False`` keeps no weights
        (the CLI: its checkpoint is the result). ``snapshot_every`` > 0 keeps every such step too, besides
        the log-spaced series (for charts over training, e.g. an induction head forming)."""
        if (trainer is None) == (build is None):
            raise ValueError("give either a trainer or a build function")
        steps = total if total is not None else (trainer.config.steps if trainer is not None else 0)

        def work(job: Job) -> Iterator[tuple[int, float]]:
            if job.trainer is None:
                job.trainer = build()
                job.total = job.total or job.trainer.config.steps
                if job.snapshots is not None:
                    self._check_snapshot_room(job)
                    self._snapshot(job, force=True)
            last_latest = time.perf_counter()
            for metrics in job.trainer.run(should_stop=lambda: job.stop_requested):
                sample = None
                if sample_every and (metrics.step % sample_every == 0 or metrics.step == job.total):
                    sample = (metrics.step, job.trainer.generate_sample(sample_prompt, max_new_tokens=sample_tokens))
                job._record(metrics.step, metrics.train_loss, metrics, sample)
                now = time.perf_counter()
                on_schedule = job.snapshots.keeps(metrics.step) if job.snapshots is not None else False
                if on_schedule or now - last_latest > self.latest_snapshot_s:
                    self._snapshot(job)
                    last_latest = now
                yield metrics.step, metrics.train_loss

        job = Job(self, owner, label, "train", steps, work, snapshots=snapshots)
        if job.snapshots is not None:
            job.snapshots.every = max(0, int(snapshot_every))
        job.trainer = trainer
        if trainer is not None and snapshots:  # step 0 exists at once, so pages can show the run while it waits
            self._check_snapshot_room(job)
            self._snapshot(job, force=True)
        return self._start(job)

    def submit_task(self, owner: str, loop: Callable[[Callable[[], bool]], Iterator[tuple[int, float]]], *,
                    label: str, total: int) -> Job:
        """Run any loop that yields ``(step, loss)`` (e.g. the seed decoder's toy training) as a job;
        ``loop(should_stop)`` may check ``should_stop()`` itself, and is stopped between yields anyway."""

        def work(job: Job) -> Iterator[tuple[int, float]]:
            for step, loss in loop(lambda: job.stop_requested):
                job._record(step, loss)
                yield step, loss

        return self._start(Job(self, owner, label, "task", total, work))

    def _start(self, job: Job) -> Job:
        with self._lock:
            if self._closed.is_set():
                raise JobRefused("The job manager has shut down.")
            session = self._sessions.setdefault(job.owner, _Session())
            session.jobs[job.id] = job
            session.heartbeat = time.monotonic()
            self._set_torch_threads()
            self._ensure_reaper()
        job.thread.start()
        return job

    def _set_torch_threads(self) -> None:
        if not self._threads_set:
            self._threads_set = True
            threads = self.torch_threads or int(os.environ.get("LLMVIZ_TORCH_THREADS", 0))
            if threads:
                torch.set_num_threads(threads)

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
                return self._queue.index(job) + 1
            except ValueError:
                return None

    def queued(self) -> list[Job]:
        with self._lock:
            return list(self._queue)

    @property
    def running_count(self) -> int:
        with self._lock:
            return len(self._running)

    def snapshot_bytes(self, owner: str) -> int:
        return sum(job.snapshots.nbytes for job in self.jobs(owner) if job.snapshots is not None)

    # ---------------------------------------------------------------- slots (FIFO)

    def _acquire(self, job: Job) -> bool:
        """Wait for a slot, first come first served; False when the job was stopped while waiting."""
        with self._slots:
            self._queue.append(job)
            try:
                while not job.stop_requested and not self._closed.is_set():
                    if self._queue[0] is job and len(self._running) < self.max_running:
                        self._running.add(job)
                        self.admitted.append(job.id)
                        return True
                    self._slots.wait(timeout=1.0)
                return False
            finally:
                self._queue.remove(job)
                self._slots.notify_all()

    def _release(self, job: Job) -> None:
        with self._slots:
            self._running.discard(job)
            self._slots.notify_all()

    def _notify(self) -> None:
        with self._slots:
            self._slots.notify_all()

    # ---------------------------------------------------------------- the worker

    def _run(self, job: Job) -> None:
        holding = False
        try:
            holding = self._acquire(job)
            if not holding:
                job._set_state(STOPPED)
                return
            job._set_state(RUNNING)
            job.loops_started += 1
            for _ in job._work(job):
                if job.stop_requested:
                    break
                if job.paused:
                    self._snapshot(job)  # the weights where it paused, for the step slider (before "paused" shows)
                    job._set_state(PAUSED)
                    self._release(job)
                    holding = False
                    if not job._wait_while_paused():
                        break
                    job._set_state(QUEUED)
                    holding = self._acquire(job)
                    if not holding:
                        break
                    job._set_state(RUNNING)
            if job.stop_requested:
                job._set_state(STOPPED)
            else:
                job._set_state(FINISHED)
        except LlmvizError as error:
            with job._lock:
                job._error = str(error)
            job._set_state(FAILED)
        except Exception as error:  # noqa: BLE001 - shown to the student as one line, never a traceback
            with job._lock:
                job._error = f"{type(error).__name__}: {error}"
            job._set_state(FAILED)
        finally:
            try:
                if job.trainer is not None and job.snapshots is not None and job.snapshots.steps():
                    self._snapshot(job, force=True)  # the last step is always kept
            finally:
                if holding:
                    self._release(job)
                job._done.set()

    def _snapshot(self, job: Job, force: bool = False) -> None:
        trainer = job.trainer
        if trainer is None or job.snapshots is None:
            return
        if force or trainer.step != job.snapshots.last_step:
            job.snapshots.add(trainer.step, trainer.model)
        evict([j.snapshots for j in self.jobs(job.owner) if j.snapshots is not None], self.snapshot_cap)

    def _check_snapshot_room(self, job: Job) -> None:
        from llmviz.snapshots import state_bytes, state_of

        size = state_bytes(state_of(job.trainer.model))
        protected = 0
        for other in self.jobs(job.owner):
            if other is not job and other.snapshots is not None:
                protected += other.snapshots.protected_bytes()
        if protected + 2 * size > self.snapshot_cap:
            cap_mb = self.snapshot_cap / 2**20
            raise JobRefused(
                f"This run's snapshots ({2 * size / 2**20:.1f} MB at least) would not fit in this session's "
                f"{cap_mb:.0f} MB for snapshots next to your other runs: delete a run, or train a smaller model."
            )

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
        """Stop every job and wait for the threads (tests, notebooks)."""
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

    Its cap is env ``LLMVIZ_MAX_JOBS`` (default: CPU cores); torch threads per op env
    ``LLMVIZ_TORCH_THREADS`` (default: cores // cap, at least 1); a session that has gone for
    ``LLMVIZ_SESSION_TIMEOUT`` seconds (default 30) loses its jobs.
    """
    global _default
    with _default_lock:
        if _default is None:
            cap = int(os.environ.get("LLMVIZ_MAX_JOBS", 0)) or _cpu_count()
            threads = int(os.environ.get("LLMVIZ_TORCH_THREADS", 0)) or max(1, _cpu_count() // cap)
            _default = JobManager(max_running=cap, torch_threads=threads,
                                  session_timeout=float(os.environ.get("LLMVIZ_SESSION_TIMEOUT", 30)),
                                  liveness=liveness)
        elif liveness is not None and _default.liveness is None:
            _default.liveness = liveness
        return _default


def train_blocking(trainer, on_step: Callable[[JobStatus], None] | None = None, sample_every: int = 0,
                   manager: JobManager | None = None, poll_s: float = 0.2, snapshots: bool = False) -> Job:
    """Run ``trainer`` as a job and wait for it (the CLI and notebooks): ``on_step(status)`` is called
    as steps go by (at most every ``poll_s`` seconds, and once at the end); Ctrl-C stops the job after
    the current step and keeps what it learned. ``snapshots=True`` keeps log-spaced weights as the app does."""
    manager = manager or JobManager(max_running=1)
    job = manager.submit_training("cli", trainer, label="cli", sample_every=sample_every, snapshots=snapshots)
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
