"""The worker side of a job: the loop that trains (or runs a task) outside the server's interpreter.

:mod:`llmviz.jobs.manager` hands a worker one or more *runners* (a :class:`~llmviz.training.trainer.Trainer`, or a
task loop
that yields ``(step, loss)``) and talks to it over a :class:`Channel`: the worker sends events (a step's
metrics, a snapshot of the weights, "paused", "done", …) and receives controls (``pause``/``resume``/``stop``
for one runner). A race is one worker with several runners, stepped in turn, so they advance together.

The same :func:`worker_main` runs in a worker **process** (the Streamlit server: training then competes
with page rendering only for the cores, never for the server's interpreter, and runs at a lower OS
priority) or in a **thread** (the CLI, notebooks and unit tests, where objects need not be pickled).

Events, as tuples (``i`` is the runner's index in the worker):

- ``("info", i, RunInfo)``: the runner's model and data, when the worker built its trainer itself;
- ``("step", i, step, loss, metrics | None, sample | None)``;
- ``("snapshot", i, step, state_dict)``: a CPU copy of the weights at ``step``;
- ``("paused", i, step)`` / ``("idle",)``: a runner waits; every runner waits (the slot can go);
- ``("result", i, value)``: a task's return value, or a trainer's checkpoint file (bytes);
- ``("failed", i, message, traceback_text)``: the one line a page shows (a runner logs its own failure, with the
  traceback, through :func:`llmviz.errors.log_failure`, and sends an empty ``traceback_text``); ``("done", i, state)``.

>>> from llmviz.training.trainer import TrainConfig, Trainer
>>> config = TrainConfig(model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=3,
...                      eval_interval=3)
>>> ours, theirs = thread_channel_pair()
>>> worker_main(theirs, [TrainPayload(trainer=Trainer.from_text("hello world\\n" * 20, config))],
...             WorkerOptions(snapshot_latest_s=1e9))
>>> events = []
>>> while ours.poll(0):
...     events.append(ours.recv())
>>> [(e[0], e[2]) for e in events if e[0] in ("step", "snapshot")]
[('snapshot', 0), ('step', 1), ('snapshot', 1), ('step', 2), ('snapshot', 2), ('step', 3), ('snapshot', 3)]
>>> events[-1]
('done', 0, 'finished')
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from llmviz.errors import LlmvizError, log_failure
from llmviz.training.snapshots import is_snapshot_step, state_of

log = logging.getLogger(__name__)

FINISHED, STOPPED, FAILED = "finished", "stopped", "failed"
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


@dataclass
class TrainPayload:
    """A runner that trains: a ready :class:`~llmviz.training.trainer.Trainer`, or a picklable ``build()`` that makes
    one in the worker (e.g. after training a tokenizer)."""

    trainer: Any = None
    build: Callable[[], Any] | None = None
    step_zero_kept: bool = False  # the server already keeps the trainer's first snapshot (it had the trainer)


@dataclass
class TaskPayload:
    """A runner that runs ``loop(should_stop)``, a generator of ``(step, loss)``; its return value is the result."""

    loop: Callable[[Callable[[], bool]], Iterator[tuple[int, float]]]
    returns_when_stopped: bool = False  # on Stop, let the loop return what it made so far (it checks should_stop)


@dataclass(frozen=True)
class RunInfo:
    """What a page needs to know about a training run's model and data (the trainer itself stays in the worker)."""

    description: dict  # llmviz.training.trainer.model_description: rebuilds the architecture for a snapshot
    config: Any  # the TrainConfig
    tokenizer: Any
    vocab_size: int
    parameters: int
    train_tokens: int
    val_tokens: int
    snapshot_bytes: int  # the size of one snapshot of the weights

    @classmethod
    def of(cls, trainer) -> RunInfo:
        from llmviz.training.checkpoint import model_description
        from llmviz.training.snapshots import state_bytes

        dataset = trainer.dataset
        return cls(
            description=model_description(trainer.model),
            config=trainer.config,
            tokenizer=dataset.tokenizer,
            vocab_size=dataset.vocab_size,
            parameters=sum(p.numel() for p in trainer.model.parameters()),
            train_tokens=len(dataset.train_ids),
            val_tokens=len(dataset.val_ids),
            snapshot_bytes=state_bytes(state_of(trainer.model)),
        )


# ---------------------------------------------------------------------------- channels


class WorkerGone(LlmvizError):
    """The other end of a channel has gone (a worker process that died, or a server that closed)."""


class Channel:
    """One end of a two-way message line: ``send``, ``poll(timeout)``, ``recv``."""

    def send(self, message) -> None:
        raise NotImplementedError

    def poll(self, timeout: float = 0.0) -> bool:
        raise NotImplementedError

    def recv(self):
        raise NotImplementedError

    def close(self) -> None:
        pass


class _QueueChannel(Channel):
    """Between two threads of one process: messages are passed as they are (nothing is pickled)."""

    _CLOSED = object()

    def __init__(self, inbox: queue.Queue, outbox: queue.Queue):
        self.inbox, self.outbox = inbox, outbox
        self._peeked: list = []

    def send(self, message) -> None:
        self.outbox.put(message)

    def poll(self, timeout: float = 0.0) -> bool:
        if self._peeked:
            return True
        try:
            self._peeked.append(self.inbox.get(timeout=timeout) if timeout > 0 else self.inbox.get_nowait())
        except queue.Empty:
            return False
        return True

    def recv(self):
        message = self._peeked.pop() if self._peeked else self.inbox.get()
        if message is self._CLOSED:
            self.inbox.put(message)  # stays closed for every later read
            raise WorkerGone("the other side has gone")
        return message

    def close(self) -> None:
        self.outbox.put(self._CLOSED)


def thread_channel_pair() -> tuple[Channel, Channel]:
    """Two connected channels for a worker thread: what one sends, the other receives."""
    a: queue.Queue = queue.Queue()
    b: queue.Queue = queue.Queue()
    return _QueueChannel(a, b), _QueueChannel(b, a)


class PipeChannel(Channel):
    """Between two processes over a ``multiprocessing`` pipe. Messages are pickled by our own code on both
    ends (never a file from elsewhere); tensors travel as bytes, so no shared-memory handle outlives a message."""

    def __init__(self, connection):
        self.connection = connection

    def send(self, message) -> None:
        try:
            self.connection.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        except (BrokenPipeError, ConnectionError, OSError) as error:
            raise WorkerGone(str(error)) from error

    def poll(self, timeout: float = 0.0) -> bool:
        try:
            return self.connection.poll(timeout)
        except (BrokenPipeError, ConnectionError, OSError, EOFError):
            return True  # recv() will say it has gone

    def recv(self):
        try:
            return pickle.loads(self.connection.recv_bytes())
        except (EOFError, BrokenPipeError, ConnectionError, OSError) as error:
            raise WorkerGone(str(error) or "the pipe was closed") from error

    def close(self) -> None:
        self.connection.close()


# ---------------------------------------------------------------------------- runners


class _Runner:
    """One runner inside a worker: steps on demand, pauses, stops, and reports through the channel."""

    def __init__(self, index: int, channel: Channel, options: WorkerOptions):
        self.index = index
        self.channel = channel
        self.options = options
        self.paused = False
        self.done = False
        self.stop_requested = False

    def send(self, kind: str, *values) -> None:
        self.channel.send((kind, self.index, *values))

    def start(self) -> None:
        """Prepare before the first step (may raise: the runner then fails)."""

    def advance(self) -> None:
        """Take one step; raise StopIteration when there is none left."""
        raise NotImplementedError

    def on_pause(self) -> None:
        """Called when the runner is paused (a trainer snapshots the step it paused at)."""

    def finish(self, state: str) -> None:
        """End the runner: what it made is sent, then ``("done", i, state)``."""
        if self.done:
            return
        self.done = True
        self.send("done", state)

    def fail(self, error: BaseException) -> None:
        """Log the failure here, where its traceback is (a worker process's log goes to the server's stderr), and
        send the server the one line its page shows (the server logs that line with the job's id)."""
        message = log_failure(f"job runner {self.index}", error)
        self.send("failed", message, "")
        self.finish(FAILED)


class _TrainRunner(_Runner):
    def __init__(self, index: int, channel: Channel, options: WorkerOptions, payload: TrainPayload):
        super().__init__(index, channel, options)
        self.payload = payload
        self.trainer = payload.trainer
        self.iterator: Iterator | None = None
        # the newest step whose snapshot was sent (the server keeps step 0 itself when it had the trainer)
        self.sent_step: int | None = self.trainer.step if payload.step_zero_kept and self.trainer is not None else None
        self.sent_at = time.perf_counter()

    def start(self) -> None:
        if self.trainer is None:
            if self.payload.build is None:
                raise ValueError("a TrainPayload needs a trainer or a build() that makes one")
            self.trainer = self.payload.build()
            self.send("info", RunInfo.of(self.trainer))
        if _OWN_PROCESS and hasattr(self.trainer, "claim_process"):
            self.trainer.claim_process()  # fused dropout from the run's own stream (Trainer.claim_process)
        if self.options.snapshots:
            self.snapshot()  # step 0 (or the step a resumed trainer starts at)
        # on a GPU the trainer reads its losses back every few steps: it stops at the steps kept or sampled here
        self.iterator = self.trainer.run(should_stop=lambda: self.stop_requested, report_at=self.reports_at)

    def reports_at(self, step: int) -> bool:
        every = self.options.sample_every
        return self.on_schedule(step) or bool(every and step % every == 0)

    def snapshot(self) -> None:
        if not self.options.snapshots or self.trainer is None or self.sent_step == self.trainer.step:
            return
        self.send("snapshot", self.trainer.step, state_of(self.trainer.model))
        self.sent_step = self.trainer.step
        self.sent_at = time.perf_counter()

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
        self.send("step", metrics.step, metrics.train_loss, metrics, sample)
        if self.on_schedule(metrics.step) or time.perf_counter() - self.sent_at > self.options.snapshot_latest_s:
            self.snapshot()

    def on_pause(self) -> None:
        self.snapshot()  # the weights where it paused, for the step slider (sent before "paused")

    def finish(self, state: str) -> None:
        if self.done:
            return
        if self.trainer is not None:
            try:
                self.snapshot()  # the last step is always kept
                if self.options.checkpoint and state != FAILED:
                    from llmviz.training.checkpoint import checkpoint_file_bytes

                    self.send("result", checkpoint_file_bytes(self.trainer))
            except WorkerGone:
                raise
            except Exception as error:  # noqa: BLE001 - the run itself ended well; say what could not be kept
                log.warning("could not send the end of run %s: %s", self.index, error)
        super().finish(state)


class _TaskRunner(_Runner):
    def __init__(self, index: int, channel: Channel, options: WorkerOptions, payload: TaskPayload):
        super().__init__(index, channel, options)
        self.payload = payload
        self.iterator = payload.loop(lambda: self.stop_requested)

    def finish(self, state: str) -> None:
        if state == STOPPED and self.payload.returns_when_stopped and not self.done:
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
                self.send("result", end.value)
            raise
        self.send("step", step, float(loss), None, None)


def _runner(index: int, channel: Channel, options: WorkerOptions, payload) -> _Runner:
    if isinstance(payload, TrainPayload):
        return _TrainRunner(index, channel, options, payload)
    if isinstance(payload, TaskPayload):
        return _TaskRunner(index, channel, options, payload)
    raise TypeError(f"unknown payload {type(payload).__name__}")


# ---------------------------------------------------------------------------- the loop


def worker_main(channel: Channel, payloads: list, options: WorkerOptions) -> None:  # noqa: C901 - TODO(jobs)
    """Run ``payloads`` (one runner each) to the end, stepping them in turn, obeying the channel's controls.

    Controls: ``("pause", i)``, ``("resume", i)``, ``("stop", i)``; a closed channel stops every runner (the
    server has gone). When every runner still going is paused the worker says ``("idle",)`` and waits.
    """
    runners = [_runner(index, channel, options, payload) for index, payload in enumerate(payloads)]
    started: set[int] = set()

    def obey(message) -> None:
        kind, index = message[0], message[1]
        runner = runners[index]
        if runner.done:
            return
        if kind == "pause" and not runner.paused:
            runner.paused = True
            if index in started:
                runner.on_pause()
            runner.send("paused", getattr(getattr(runner, "trainer", None), "step", None))
        elif kind == "resume":
            runner.paused = False
        elif kind == "stop":
            runner.stop_requested = True
            runner.finish(STOPPED)

    try:
        while True:
            while channel.poll(0):
                obey(channel.recv())
            going = [runner for runner in runners if not runner.done]
            if not going:
                return
            runnable = [runner for runner in going if not runner.paused]
            if not runnable:
                channel.send(("idle",))
                obey(channel.recv())  # wait for a control: a resume (the slot is ours again) or a stop
                continue
            for runner in runnable:
                try:
                    if runner.index not in started:
                        started.add(runner.index)
                        runner.start()
                    runner.advance()
                except StopIteration:
                    runner.finish(FINISHED)
                except WorkerGone:
                    raise
                except Exception as error:  # noqa: BLE001 - logged with its traceback here, its one line sent to the server
                    runner.fail(error)
    except WorkerGone:
        return  # the server has gone: nothing is left to report to


def process_entry(connection, payload_bytes: bytes, options: WorkerOptions) -> None:
    """The entry point of a worker process (started by :class:`llmviz.jobs.manager.JobManager` with
    ``workers="process"``)."""
    if options.nice and hasattr(os, "nice"):
        try:
            os.nice(options.nice)
        except OSError:
            pass
    if options.torch_threads:
        torch.set_num_threads(options.torch_threads)
    global _OWN_PROCESS
    _OWN_PROCESS = True
    channel = PipeChannel(connection)
    try:
        payloads = pickle.loads(payload_bytes)
    except Exception as error:  # noqa: BLE001 - cannot even start: say so once for every runner
        log_failure("a worker process's start", error)
        channel.send(("failed", 0, f"The worker could not start: {type(error).__name__}: {error}", ""))
        channel.send(("done", 0, FAILED))
        return
    worker_main(channel, payloads, options)
    channel.close()
