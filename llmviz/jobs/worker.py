"""The worker side of a job: the loop that trains (or runs a task) outside the server's interpreter.

:mod:`llmviz.jobs.supervisor` hands a worker one or more *runners* (a :class:`~llmviz.training.trainer.Trainer`, or a
task loop that yields ``(step, loss)``) and talks to it over a :class:`Channel`: the worker sends events (a step's
metrics, a snapshot of the weights, "paused", "done", …: :mod:`llmviz.jobs.events`) and receives controls
(:class:`~llmviz.jobs.events.Pause`, :class:`~llmviz.jobs.events.Resume`, :class:`~llmviz.jobs.events.Stop` for one
runner). A race is one worker with several runners, stepped in turn, so they advance together.

When every runner still going is paused, a worker of trainers **parks**: it sends each runner's whole state
(:class:`~llmviz.jobs.events.Parked`: the trainer with its model, optimizer, random streams and step) and exits, so a
paused run holds no process and no memory but its state; Resume starts a new worker from that state, which goes on
exactly as if it had never stopped. A worker of tasks waits instead (:class:`~llmviz.jobs.events.Idle`).

The same :func:`worker_main` runs in a worker **process** (the Streamlit server: training then competes
with page rendering only for the cores, never for the server's interpreter, and runs at a lower OS
priority; a thread of the process sends a :class:`~llmviz.jobs.events.Heartbeat` every few seconds) or in a
**thread** (the CLI, notebooks and unit tests, where objects need not be pickled).

>>> from llmviz.training.config import TrainConfig
>>> from llmviz.training.trainer import Trainer
>>> config = TrainConfig(model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=3,
...                      eval_interval=3)
>>> from llmviz.jobs.channels import thread_channel_pair
>>> ours, theirs = thread_channel_pair()
>>> worker_main(theirs, [TrainPayload(trainer=Trainer.from_text("hello world\\n" * 20, config))],
...             WorkerOptions(snapshot_latest_s=1e9))
>>> events = []
>>> while ours.poll(0):
...     events.append(ours.recv())
>>> [(type(e).__name__, e.step) for e in events if isinstance(e, (Step, Snapshot))]
[('Snapshot', 0), ('Step', 1), ('Snapshot', 1), ('Step', 2), ('Snapshot', 2), ('Step', 3), ('Snapshot', 3)]
>>> events[-1]
Done(index=0, state=<JobState.FINISHED: 'finished'>)
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch

from llmviz.errors import log_failure
from llmviz.jobs import runners
from llmviz.jobs.channels import Channel, PipeChannel, WorkerGone
from llmviz.jobs.events import (
    Control,
    Done,
    Failed,
    Heartbeat,
    Idle,
    Info,
    Parked,
    Pause,
    Paused,
    Result,
    Resume,
    Snapshot,
    Step,
    Stop,
)
from llmviz.lab.live_status import JobState
from llmviz.training.snapshots import is_snapshot_step, state_of

log = logging.getLogger(__name__)

# True in a worker process (process_entry): its runs own the process's default generators (Trainer.claim_process)
_OWN_PROCESS = False


# ---------------------------------------------------------------------------- what a worker is given


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker behaves (the same for all of its runners)."""

    sample_every: int = 0  # generate a sample every this many steps (0: never)
    sample_prompt: str = ""
    sample_tokens: int = 80
    snapshots: bool = True  # send snapshots of the weights (the CLI keeps none: its checkpoint is the result)
    snapshot_every: int = 0  # also every this many steps, besides the 1-2-5 series
    snapshot_latest_s: float = 2.0  # and the newest step at most this often, for pages that follow the run
    torch_threads: int = 0  # per worker process (0: leave torch's default)
    nice: int = 0  # raise the worker process's niceness by this much (lower OS priority than the pages)
    checkpoint: bool = True  # send a trainer's checkpoint file when it ends (for the Training page's download)
    park: bool = True  # trainers that are all paused give the worker back (their state is sent, the worker exits)
    park_as_bytes: bool = False  # a parked state is pickled (a worker process); else the live trainer (a thread)
    heartbeat_s: float = 0.0  # a worker process says it is alive this often (0: never; threads need not)
    # send a trainer's resume state (optimizer moments, random streams, metrics: Trainer.training_state) with its
    # first snapshot, the one it pauses or stops at, and the newest at most every resume_every_s (the lab keeps it)
    resume_state: bool = False
    resume_every_s: float = 10.0


@dataclass
class TrainPayload:
    """A runner that trains: a ready :class:`~llmviz.training.trainer.Trainer`, or a picklable ``build()`` that makes
    one in the worker (e.g. after training a tokenizer). A parked runner's payload also carries where it stopped:
    the newest step the server has a snapshot of, torch's global random state, and whether it is still paused."""

    trainer: Any = None
    build: Callable[[], Any] | None = None
    step_zero_kept: bool = False  # the server already keeps the trainer's first snapshot (it had the trainer)
    sent_step: int | None = None  # a parked runner: the newest step whose snapshot the server has
    torch_rng: torch.Tensor | None = None  # a parked runner: torch's global random state when it parked
    paused: bool = False  # starts paused (a race's runner that was paused when another resumed)


@dataclass(frozen=True)
class ParkedRunner:
    """A parked runner handed to a new worker: its state (a pickled :class:`TrainPayload` from a worker process, or
    the payload itself from a thread), whether it starts paused (a race's runner still paused when another resumed)
    and whether it was stopped while parked (its new worker then only makes its last snapshot and checkpoint)."""

    state: Any
    paused: bool = False
    stop: bool = False


@dataclass
class TaskPayload:
    """A runner that runs ``loop(should_stop)``, a generator of ``(step, loss)``; its return value is the result."""

    loop: Callable[[Callable[[], bool]], Iterator[tuple[int, float]]]
    returns_when_stopped: bool = False  # on Stop, let the loop return what it made so far (it checks should_stop)


# ---------------------------------------------------------------------------- runners


def failure_line(error: BaseException, step: int | None, where: str = "a job runner") -> str:
    """The one line a page shows for a runner's failure: the GPU running out of memory is said plainly (the worker
    then frees what the run held on the GPU), anything else is :func:`llmviz.errors.log_failure`'s line.

    >>> failure_line(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), 12)[:85]
    'The GPU ran out of memory at step 12 (CUDA out of memory. Tried to allocate 2.00 GiB)'
    """
    if isinstance(error, torch.OutOfMemoryError):
        where = f" at step {step}" if step is not None else " before the first step"
        first = str(error).split("\n", 1)[0].split(" (GPU", 1)[0]
        return (
            f"The GPU ran out of memory{where} ({first}): this run has ended and its memory is free for the "
            "others. Lower the batch size or the context, or train a smaller model."
        )
    return log_failure(where, error)


class _Runner:
    """One runner inside a worker: steps on demand, pauses, stops, and reports through the channel."""

    can_park = False

    def __init__(self, index: int, channel: Channel, options: WorkerOptions):
        self.index = index
        self.channel = channel
        self.options = options
        self.paused = False
        self.done = False
        self.started = False
        self.stop_requested = False

    @property
    def step(self) -> int | None:
        return None

    def start(self) -> None:
        """Prepare before the first step (may raise: the runner then fails)."""
        self.started = True

    def advance(self) -> None:
        """Take one step; raise StopIteration when there is none left."""
        raise NotImplementedError

    def pause(self) -> None:
        """The runner waits after its current step (a trainer snapshots the step it paused at)."""
        self.paused = True
        self.channel.send(Paused(self.index, self.step))

    def park(self, as_bytes: bool) -> None:
        raise NotImplementedError

    def finish(self, state: JobState) -> None:
        """End the runner: what it made is sent, then :class:`Done`."""
        if self.done:
            return
        self.done = True
        self.channel.send(Done(self.index, state))

    def fail(self, error: BaseException) -> None:
        """Log the failure here, where its traceback is (a worker process's log goes to the server's stderr), and
        send the server the one line its page shows (the server logs that line with the job's id)."""
        message = failure_line(error, self.step, f"job runner {self.index}")
        if isinstance(error, torch.OutOfMemoryError):
            log.error("job runner %s ran out of GPU memory: %s", self.index, error)
        self.channel.send(Failed(self.index, message))
        self.finish(JobState.FAILED)


class _TrainRunner(_Runner):
    can_park = True

    def __init__(self, index: int, channel: Channel, options: WorkerOptions, payload: TrainPayload):
        super().__init__(index, channel, options)
        self.payload = payload
        self.trainer = payload.trainer
        self.paused = payload.paused
        self.iterator: Iterator | None = None
        # the newest step whose snapshot the server has (it keeps step 0 itself when it had the trainer)
        self.sent_step: int | None = payload.sent_step
        if self.sent_step is None and payload.step_zero_kept and self.trainer is not None:
            self.sent_step = self.trainer.step
        self.sent_at = time.perf_counter()
        self.resume_step: int | None = None  # the newest step whose resume state the server has
        self.resume_at = 0.0
        # the newest step whose point on the loss curve the server has
        self.curve_step = self.trainer.step if self.trainer is not None else 0

    @property
    def step(self) -> int | None:
        return self.trainer.step if self.trainer is not None else None

    def send_unsent_steps(self) -> None:
        """The steps the trainer has read back but not yet yielded (on a GPU it reads them every few steps): their
        points on the loss curve, sent before a pause, a stop or a park, so that the curve reaches the step the
        snapshot holds."""
        if self.trainer is None:
            return
        unsent = []
        for metrics in reversed(self.trainer.history):
            if metrics.step <= self.curve_step:
                break
            unsent.append(metrics)
        for metrics in reversed(unsent):
            self.channel.send(Step(self.index, metrics.step, metrics.train_loss, metrics, None))
            self.curve_step = metrics.step

    def start(self) -> None:
        super().start()
        if self.payload.torch_rng is not None:
            torch.set_rng_state(self.payload.torch_rng)  # where the parked worker left torch's own stream
        if self.trainer is None:
            if self.payload.build is None:
                raise ValueError("a TrainPayload needs a trainer or a build() that makes one")
            self.trainer = self.payload.build()
            self.curve_step = self.trainer.step
            self.payload = replace(self.payload, build=None)  # what it was built from (a picked model) can go
            self.channel.send(Info(self.index, runners.facts(self.trainer)))
        if _OWN_PROCESS and hasattr(self.trainer, "claim_process"):
            self.trainer.claim_process()  # fused dropout from the run's own stream (Trainer.claim_process)
        if self.options.snapshots:
            self.snapshot(resumable=True)  # step 0 (or the step a resumed trainer starts at)
        # on a GPU the trainer reads its losses back every few steps: it stops at the steps kept or sampled here
        self.iterator = self.trainer.run(should_stop=lambda: self.stop_requested, report_at=self.reports_at)

    def reports_at(self, step: int) -> bool:
        every = self.options.sample_every
        return self.on_schedule(step) or bool(every and step % every == 0)

    def snapshot(self, resumable: bool = False) -> None:
        """Send the weights at this step (once per step); ``resumable``: with the run's resume state, when the lab
        keeps one (:attr:`WorkerOptions.resume_state`), even if this step's weights were sent already."""
        if not self.options.snapshots or self.trainer is None:
            return
        step = self.trainer.step
        resumable = resumable and self.options.resume_state and hasattr(self.trainer, "training_state")
        if self.sent_step == step and not (resumable and self.resume_step != step):
            return
        training = self.trainer.training_state() if resumable else None
        self.channel.send(Snapshot(self.index, step, state_of(self.trainer.model), training))
        self.sent_step = step
        self.sent_at = time.perf_counter()
        if resumable:
            self.resume_step, self.resume_at = step, self.sent_at

    def resume_due(self) -> bool:
        return time.perf_counter() - self.resume_at >= self.options.resume_every_s

    def on_schedule(self, step: int) -> bool:
        every = self.options.snapshot_every
        return is_snapshot_step(step) or (every > 0 and step % every == 0)

    def advance(self) -> None:
        if self.iterator is None:
            raise RuntimeError("advance() before start()")
        metrics = next(self.iterator)
        sample = None
        every = self.options.sample_every
        if every and (metrics.step % every == 0 or metrics.step == self.trainer.config.steps):
            text = self.trainer.generate_sample(self.options.sample_prompt, max_new_tokens=self.options.sample_tokens)
            sample = (metrics.step, text)
        self.channel.send(Step(self.index, metrics.step, metrics.train_loss, metrics, sample))
        self.curve_step = metrics.step
        if self.on_schedule(metrics.step) or time.perf_counter() - self.sent_at > self.options.snapshot_latest_s:
            self.snapshot(resumable=self.resume_due())

    def pause(self) -> None:
        if self.started:
            self.send_unsent_steps()
            self.snapshot(resumable=True)  # the weights where it paused, for the step slider (sent before Paused)
        super().pause()

    def park(self, as_bytes: bool) -> None:
        """Send everything this runner needs to go on in another worker, and let go of it here."""
        self.send_unsent_steps()
        payload = TrainPayload(
            trainer=self.trainer,
            build=self.payload.build if self.trainer is None else None,
            sent_step=self.sent_step,
            torch_rng=torch.get_rng_state(),
            paused=True,
        )
        state: Any = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL) if as_bytes else payload
        self.channel.send(Parked(self.index, state, len(state) if as_bytes else 0))
        self.trainer = self.iterator = None
        self.done = True  # this worker is finished with it; the server holds what it needs

    def finish(self, state: JobState) -> None:
        if self.done:
            return
        if self.trainer is not None:
            try:
                self.send_unsent_steps()
                # the last step is always kept; a stopped (or parked) run with what resuming it needs
                self.snapshot(resumable=state == JobState.STOPPED)
                if self.options.checkpoint and state != JobState.FAILED:
                    from llmviz.training.checkpoint import checkpoint_file_bytes

                    self.channel.send(Result(self.index, checkpoint_file_bytes(self.trainer)))
            except WorkerGone:
                raise
            except Exception as error:  # noqa: BLE001 - the run itself ended well; say what could not be kept
                log.warning("could not send the end of run %s: %s", self.index, error)
        super().finish(state)

    def fail(self, error: BaseException) -> None:
        super().fail(error)
        self.trainer = self.iterator = None  # a run out of GPU memory frees it for the other runners
        if isinstance(error, torch.OutOfMemoryError) and torch.cuda.is_available():
            torch.cuda.empty_cache()


class _TaskRunner(_Runner):
    def __init__(self, index: int, channel: Channel, options: WorkerOptions, payload: TaskPayload):
        super().__init__(index, channel, options)
        self.payload = payload
        self.iterator = payload.loop(lambda: self.stop_requested)
        self.last_step: int | None = None

    @property
    def step(self) -> int | None:
        return self.last_step

    def finish(self, state: JobState) -> None:
        if state == JobState.STOPPED and self.payload.returns_when_stopped and not self.done:
            try:  # the loop sees should_stop() and returns what it made so far
                while True:
                    self.advance()
            except StopIteration:
                pass
            except WorkerGone:
                raise
            except Exception as error:  # noqa: BLE001
                log.warning("task %s failed while stopping: %s", self.index, error)
        super().finish(state)

    def advance(self) -> None:
        try:
            step, loss = next(self.iterator)
        except StopIteration as end:
            if end.value is not None:
                self.channel.send(Result(self.index, end.value))
            raise
        self.last_step = step
        self.channel.send(Step(self.index, step, float(loss)))


class _Ended(_Runner):
    """The place of a runner that ended before its worker was started again (a parked race's finished runner)."""

    def __init__(self, index: int, channel: Channel, options: WorkerOptions):
        super().__init__(index, channel, options)
        self.done = True


def _runner(index: int, channel: Channel, options: WorkerOptions, payload) -> _Runner:
    if payload is None:
        return _Ended(index, channel, options)
    if isinstance(payload, ParkedRunner):
        state = payload.state
        resumed = pickle.loads(state) if isinstance(state, bytes) else state  # pickled by the worker that parked it
        runner = _TrainRunner(index, channel, options, replace(resumed, paused=payload.paused))
        runner.stop_requested = payload.stop
        return runner
    if isinstance(payload, TrainPayload):
        return _TrainRunner(index, channel, options, payload)
    if isinstance(payload, TaskPayload):
        return _TaskRunner(index, channel, options, payload)
    raise TypeError(f"unknown payload {type(payload).__name__}")


# ---------------------------------------------------------------------------- the loop


class _Worker:
    """Steps its runners in turn, obeying the controls that arrive between two steps."""

    def __init__(self, channel: Channel, payloads: list, options: WorkerOptions):
        self.channel = channel
        self.options = options
        self.runners = [_runner(index, channel, options, payload) for index, payload in enumerate(payloads)]
        payloads.clear()  # the runners hold them now: a built trainer lets go of what built it

    def run(self) -> None:
        try:
            while self.turn():
                pass
        except WorkerGone:
            return  # the server has gone: nothing is left to report to

    def turn(self) -> bool:
        """One round: the controls that arrived, then a step of every runner that goes. False when it is over."""
        self.take_controls()
        going = [runner for runner in self.runners if not runner.done]
        if not going:
            return False
        runnable = [runner for runner in going if not runner.paused]
        if runnable:
            for runner in runnable:
                self.step(runner)
            return True
        return self.rest(going)

    def take_controls(self) -> None:
        """Obey the controls that arrived; a runner stopped while parked ends at once (its end kept, no step
        taken)."""
        while self.channel.poll(0):
            self.obey(self.channel.recv())
        for runner in self.runners:
            if runner.stop_requested and not runner.done:  # stopped while parked: keep its end, take no step
                runner.finish(JobState.STOPPED)

    def rest(self, going: list[_Runner]) -> bool:
        """Every runner still ``going`` is paused: park them all where the options allow and all can (False: this
        worker is over), else say so and wait for a control, a resume (the slot is ours again) or a stop (True)."""
        if self.options.park and all(runner.can_park for runner in going):
            for runner in going:
                runner.park(self.options.park_as_bytes)
            return False
        self.channel.send(Idle())
        self.obey(self.channel.recv())  # wait for a control: a resume (the slot is ours again) or a stop
        return True

    def step(self, runner: _Runner) -> None:
        try:
            if not runner.started:
                runner.start()
            runner.advance()
        except StopIteration:
            runner.finish(JobState.FINISHED)
        except WorkerGone:
            raise
        except Exception as error:  # noqa: BLE001 - logged with its traceback here, its one line sent to the server
            runner.fail(error)

    def obey(self, control: Control) -> None:
        runner = self.runners[control.index]
        if runner.done:
            return
        if isinstance(control, Pause) and not runner.paused:
            runner.pause()
        elif isinstance(control, Resume):
            runner.paused = False
        elif isinstance(control, Stop):
            runner.stop_requested = True
            runner.finish(JobState.STOPPED)


def worker_main(channel: Channel, payloads: list, options: WorkerOptions) -> None:
    """Run ``payloads`` (one runner each; None for a runner that has already ended) to the end, stepping them in
    turn, obeying the channel's controls; a closed channel stops every runner (the server has gone). When every
    runner still going is paused, trainers park (:class:`Parked`, then the worker returns) and tasks wait
    (:class:`Idle`, then a control)."""
    _Worker(channel, payloads, options).run()


def _beat(channel: Channel, every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        try:
            channel.send(Heartbeat())
        except WorkerGone:
            return


def claim_process(options: WorkerOptions) -> None:
    """Make this process a worker's own (a worker process, or a Ray actor's process): its niceness, its torch
    threads, and its runs own the process's default random generators."""
    if options.nice and hasattr(os, "nice"):
        try:
            os.nice(options.nice)
        except OSError:
            pass
    if options.torch_threads:
        torch.set_num_threads(options.torch_threads)
    global _OWN_PROCESS
    _OWN_PROCESS = True


def serve(channel: Channel, payloads: list, options: WorkerOptions) -> None:
    """:func:`worker_main` with a heartbeat every ``options.heartbeat_s`` from a thread of its own (alive whatever a
    step is doing: a big step can take long), then the channel closed."""
    beating = threading.Event()
    if options.heartbeat_s > 0:
        threading.Thread(target=_beat, args=(channel, options.heartbeat_s, beating), daemon=True).start()
    try:
        worker_main(channel, payloads, options)
    finally:
        beating.set()
        channel.close()


def send_start_failure(channel: Channel, error: BaseException) -> None:
    """A worker that cannot even start says so once (its first runner fails with the reason)."""
    try:
        channel.send(Failed(0, f"The worker could not start: {type(error).__name__}: {error}"))
        channel.send(Done(0, JobState.FAILED))
    except WorkerGone:
        pass  # nobody is left to tell


def process_entry(connection, options: WorkerOptions) -> None:
    """The entry point of a worker process (started by :mod:`llmviz.jobs.processes`): its payloads, pickled, are
    the first message on the pipe."""
    claim_process(options)
    channel = PipeChannel(connection)
    try:
        payloads = pickle.loads(connection.recv_bytes())
    except (EOFError, OSError):
        return  # the server has gone before it sent the work
    except Exception as error:  # noqa: BLE001 - cannot even start: say so once for every runner
        log_failure("a worker process's start", error)
        send_start_failure(channel, error)
        return
    serve(channel, payloads, options)


def thread_options(options: WorkerOptions) -> WorkerOptions:
    """``options`` for a worker thread: nothing pickled, no heartbeat, no niceness or thread count of its own."""
    return replace(options, park_as_bytes=False, heartbeat_s=0.0, nice=0, torch_threads=0)
