"""What a worker and the server say to each other: the events a worker sends and the controls it receives, each a
small frozen dataclass (never a positional tuple); the states a run goes through are the lab's
(:class:`llmviz.lab.live_status.JobState`).

A worker runs one or more *runners* (a trainer, or a task loop); every event and control names its runner by
``index``, its place in the worker. The server's side of the conversation is :mod:`llmviz.jobs.supervisor`, the
worker's is :mod:`llmviz.jobs.worker`.

>>> JobState.PAUSED.done, JobState.STOPPED.done, JobState.FINISHED == "finished"
(False, True, True)
>>> Step(0, step=3, loss=2.5)
Step(index=0, step=3, loss=2.5, metrics=None, sample=None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmviz.lab.live_status import JobState


@dataclass(frozen=True)
class RunInfo:
    """What a page needs to know about a run's model and data, as its runner describes itself
    (:func:`llmviz.jobs.runners.facts`; the runner itself stays in the worker)."""

    description: dict  # llmviz.training.checkpoint.model_description: rebuilds the architecture for a snapshot
    config: Any  # the TrainConfig
    tokenizer: Any
    vocab_size: int
    parameters: int
    train_tokens: int
    val_tokens: int
    snapshot_bytes: int  # the size of one snapshot of the weights
    kind: str = "training"  # what the lab keeps the run as (the runner says it: llmviz.jobs.runners.kind_of)


# ---------------------------------------------------------------------------- worker → server


@dataclass(frozen=True)
class Info:
    """The runner's model and data, when the worker built its trainer itself."""

    index: int
    info: RunInfo


@dataclass(frozen=True)
class Step:
    """One step was taken: its training loss, a trainer's metrics, and a sample when one was asked for."""

    index: int
    step: int
    loss: float
    metrics: Any = None  # a StepMetrics of a training run; None for a task
    sample: tuple[int, str] | None = None


@dataclass(frozen=True)
class Snapshot:
    """A CPU copy of the weights at ``step``; ``training``: the run's resume state at that step too (``(tensors,
    scalars)``: :meth:`llmviz.training.trainer.Trainer.training_state`), when the lab keeps one (None otherwise)."""

    index: int
    step: int
    state: dict
    training: tuple[dict, dict] | None = None


@dataclass(frozen=True)
class Paused:
    """The runner waits after ``step`` (None: a task, or a runner that had not started)."""

    index: int
    step: int | None


@dataclass(frozen=True)
class Idle:
    """Every runner still going is paused and cannot be parked (a task): the worker waits for a control."""


@dataclass(frozen=True)
class Parked:
    """Every runner still going is paused: this one's whole training state, to resume from in a new worker. The
    worker then exits, giving its memory back. ``state`` is bytes from a worker process (pickled by our own
    code, as every message on the pipe) or the live trainer from a worker thread."""

    index: int
    state: Any
    nbytes: int


@dataclass(frozen=True)
class Result:
    """A task's return value, or a trainer's checkpoint file (bytes)."""

    index: int
    value: Any


@dataclass(frozen=True)
class Failed:
    """The one line a page shows (the runner logged its own traceback where it happened)."""

    index: int
    message: str
    traceback: str = ""


@dataclass(frozen=True)
class Done:
    """The runner has ended, in ``state``; nothing more comes from it."""

    index: int
    state: JobState


@dataclass(frozen=True)
class Heartbeat:
    """A worker process is alive (sent every few seconds by a thread of its own, whatever its step is doing)."""


Event = Info | Step | Snapshot | Paused | Idle | Parked | Result | Failed | Done | Heartbeat


# ---------------------------------------------------------------------------- server → worker


@dataclass(frozen=True)
class Pause:
    """Pause runner ``index`` after its current step."""

    index: int


@dataclass(frozen=True)
class Resume:
    """Let a paused runner go on."""

    index: int


@dataclass(frozen=True)
class Stop:
    """End runner ``index`` after its current step, keeping what it made."""

    index: int


Control = Pause | Resume | Stop
