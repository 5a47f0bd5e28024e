"""A run's live state, as the lab names it for every layer: the states a run goes through (:class:`JobState`), a
consistent picture of a live run at one moment (:class:`JobStatus`, what a page draws each second), a run a worker
builds (:class:`Planned`), what a task's result is kept as (:class:`KeptResult`) and a refusal to start one
(:class:`JobRefused`).

The jobs layer (:mod:`llmviz.jobs`) makes and changes them; pages read them through the lab's door to its live runs
(:mod:`llmviz.lab.live`). They live here, in the lab, so that a page names them without reaching the jobs layer.

>>> JobState.PAUSED.done, JobState.STOPPED.done, JobState.FINISHED == "finished"
(False, True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from llmviz.errors import LlmvizError

if TYPE_CHECKING:
    from llmviz.training.footprint import Footprint


class JobState(StrEnum):
    """queued → running ⇄ paused → finished | stopped | failed. A string enum: ``JobState.RUNNING == "running"``."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def done(self) -> bool:
        """Has the job ended (it will never change again)?"""
        return self in (JobState.FINISHED, JobState.STOPPED, JobState.FAILED)


@dataclass(frozen=True)
class JobStatus:
    """A consistent picture of a job at one moment, safe to render from any thread."""

    job_id: str
    label: str
    kind: str  # "train" (a Trainer) or "task" (any loop yielding (step, loss))
    state: JobState
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
    waits_for_own_run: bool = False  # queued because its student already trains their share (not for a free slot)
    waits_for_memory: bool = False  # queued because the server's memory for training is in use
    # (step, validation loss) as the lab's record keeps them: a kept run's, which has no per-step metrics
    val_losses: tuple[tuple[int, float], ...] = ()
    # the run kind's own measures as the record keeps them, ``(name, ((step, value), …))``: a kept run's
    series: tuple[tuple[str, tuple[tuple[int, float], ...]], ...] = ()

    @property
    def done(self) -> bool:
        return self.state.done

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.total) if self.total else 0.0

    @property
    def last_val_loss(self) -> float | None:
        """The newest validation loss: from the run's metrics while a worker reports them, else as the record keeps
        it (a kept run: after a restart, from another app process).

        >>> JobStatus("r1", "run", "train", JobState.FINISHED, 40, 40, ((40, 2.5),), (), (), None, None, (), 1.0,
        ...           val_losses=((20, 2.9), (40, 2.7))).last_val_loss
        2.7
        """
        found = next((m.val_loss for m in reversed(self.metrics) if m.val_loss is not None), None)
        if found is None and not self.metrics and self.val_losses:
            return self.val_losses[-1][1]
        return found

    def measured(self, name: str) -> list[tuple[int, float]]:
        """``(step, value)`` of the measure ``name`` at the steps that have it (a classifier's held-out accuracy): from
        the run's metrics while a worker reports them, else as the record keeps them.

        >>> JobStatus("r1", "run", "train", JobState.FINISHED, 4, 4, (), (), (), None, None, (), 1.0,
        ...           series=(("val_accuracy", ((2, 0.5), (4, 0.75))),)).measured("val_accuracy")
        [(2, 0.5), (4, 0.75)]
        """
        if self.metrics:
            return [(m.step, value) for m in self.metrics if (value := getattr(m, name, None)) is not None]
        return list(dict(self.series).get(name, ()))

    def _waiting(self) -> str:
        """Why a queued run waits, in one line."""
        if self.waits_for_own_run:
            return (
                "waiting: it starts when your run in training ends (each student trains one at a "
                "time on a shared server)"
            )
        if self.waits_for_memory:
            return "waiting: the memory this server trains in is in use; it starts as soon as enough is free"
        return f"waiting: number {self.queue_position or 1} in the queue (the server trains a few runs at a time)"

    def describe(self) -> str:
        """One line for a progress bar: "step 40/300 · loss 2.310 · …"."""
        if self.state == JobState.QUEUED:
            return self._waiting()
        # the worker is on its way
        state = "starting" if self.state == JobState.RUNNING and not self.losses else self.state.value
        text = f"{state} · step {self.step}/{self.total}"
        if self.losses and math.isfinite(self.losses[-1][1]):
            text += f" · loss {self.losses[-1][1]:.3f}"
        if self.metrics and hasattr(self.metrics[-1], "summary"):  # a run that words its own progress
            text += f" · {self.metrics[-1].summary()}"
        elif self.metrics:
            val = self.last_val_loss
            last = self.metrics[-1]
            # the perplexity here is e^(training loss) of the last step; the run table shows e^(validation loss)
            text += (
                f" · validation {val:.3f}" if val is not None else ""
            ) + f" · training perplexity {last.perplexity:,.1f}"
            if self.state == JobState.RUNNING:
                text += f" · {smoothed_rate([m.tokens_per_s for m in self.metrics]):,.0f} tokens/s"
        elif self.val_losses:  # a kept run: the record's newest validation loss
            text += f" · validation {self.val_losses[-1][1]:.3f}"
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


@dataclass(frozen=True)
class Planned:
    """A training run built in its worker, never in the server: ``build()`` (picklable, e.g. a ``functools.partial``
    of a module-level function) makes the Trainer there; ``footprint`` is its memory estimate, made without building
    it (:mod:`llmviz.training.footprint`); ``steps`` its length."""

    build: Callable[[], Any]
    footprint: Footprint
    steps: int


@dataclass(frozen=True)
class KeptResult:
    """What the lab keeps of a task's result (a BPE tokenizer, word vectors: what a student made on a page), so that a
    reload, another tab or a restarted server gives it back. ``task`` names it (``"bpe"``, ``"word2vec"``: the page
    that made it asks for its newest by this name); ``facts`` (JSON: what it was made from, its corpus's name, its
    settings) go into the run's row; ``encode(result)`` gives ``(tensors, meta)``, written as the run's one kept
    file in safetensors (never unpickled) when the task ends with a result: the tensors, and ``meta`` (JSON) in its
    metadata. It stays in the server (the worker never sees it); the page decodes the file itself.

    >>> KeptResult("bpe", {"vocab_size": 300}, encode=lambda merges: ({}, {})).facts
    {'vocab_size': 300}
    """

    task: str
    facts: dict
    encode: Callable[[Any], tuple[dict, dict]]


class JobRefused(LlmvizError):
    """A job cannot start: the student already trains their share, its memory or its snapshots would not fit."""
