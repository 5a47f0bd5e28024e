"""Does a run overfit? Read from its metrics alone, so the CLI's summary and the Training page say the same.

A run overfits when it learns its training text by heart instead of what carries over to new text. Its
validation loss (on held-out text the model never trains on) tells, in either of two ways:

- **It rose well above its best** while the training loss went on falling. "Well": by at least
  ``max(RISE_NATS, RISE_SHARE × best)`` — 0.1 nats, or 5 % of the best when that is more — and in the last two
  evaluations, not one. llmviz evaluates on the same validation batches every time, so what moves the validation
  loss is the model, not the draw of batches; a step-to-step wobble of a converging run stays within a few
  hundredths of a nat, and a single high evaluation (a spike of the learning rate's warmup) is not a trend.
- **It is worse than guessing**: the last validation loss is above ln V, the loss of a uniform guess over the V
  tokens of the vocabulary, while the training loss is at least ``GAP_NATS`` (half a nat) below it. A model
  that learned nothing sits at about ln V on both; one that is worse than a guess on new text, but not on its
  training text, has memorised it.

>>> from types import SimpleNamespace as M
>>> history = [M(step=s, train_loss=t, val_loss=v) for s, t, v in [
...     (50, 4.0, 4.1), (100, 3.0, 3.4), (150, 2.0, 3.3), (200, 1.0, 3.6), (250, 0.5, 4.2)]]
>>> found = overfitting(history, vocab_size=512)
>>> found.best_step, found.best_val_loss, found.last_val_loss, round(found.rise, 2)
(150, 3.3, 4.2, 0.9)
>>> found.rose, found.worse_than_guessing  # ln 512 = 6.24
(True, False)
>>> overfitting(history[:3], vocab_size=512) is None  # still at its best
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RISE_NATS = 0.1  # a rise of the validation loss above its best that is not noise: at least this many nats …
RISE_SHARE = 0.05  # … or this share of the best, when that is more
GAP_NATS = 0.5  # worse than guessing on new text counts when the training loss is this far below
RECENT_STEPS = 10  # training losses are one batch each: compare means over this many steps


@dataclass(frozen=True)
class Overfitting:
    """What says a run overfits: its best and last validation loss, the training loss now, ln V, and which of the
    two signs it shows (:func:`overfitting` decides them)."""

    best_step: int
    best_val_loss: float
    last_step: int
    last_val_loss: float
    train_loss_now: float  # the mean of the last steps' training losses
    uniform_loss: float  # ln V: the loss of guessing uniformly over the vocabulary
    rose: bool  # the validation loss rose well above its best while the training loss fell
    worse_than_guessing: bool  # above ln V on held-out text, well below it on the training text

    @property
    def rise(self) -> float:
        return self.last_val_loss - self.best_val_loss

    def message(self, flags: bool = False) -> str:
        """What a student reads: what happened, in numbers, then what to do (``flags``: with the ``llmviz train``
        options that do it)."""
        if self.rose:
            what = (
                f"its validation loss rose from {self.best_val_loss:.3f} at step {self.best_step} to "
                f"{self.last_val_loss:.3f} at step {self.last_step} while its training loss fell to "
                f"{self.train_loss_now:.3f}"
            )
            if self.worse_than_guessing:
                what += (
                    f"; {self.last_val_loss:.3f} is worse than guessing uniformly over its vocabulary "
                    f"(ln V = {self.uniform_loss:.2f})"
                )
        else:
            what = (
                f"on text it did not train on, its loss ({self.last_val_loss:.3f}) is worse than guessing uniformly "
                f"over its vocabulary (ln V = {self.uniform_loss:.2f}), while its training loss is "
                f"{self.train_loss_now:.3f}"
            )
        advice = self.advice(flags)
        return f"This run overfits: {what}. It is learning its training text by heart: {advice}."

    def advice(self, flags: bool = False) -> str:
        """What to do about it.

        >>> found = Overfitting(150, 3.3, 250, 4.2, 0.5, 6.24, rose=True, worse_than_guessing=False)
        >>> found.advice()
        'train on more text, train for fewer steps (its best was at step 150), add dropout, or use a smaller model'
        >>> found.advice(flags=True)  # the options of llmviz train
        'train on more text, fewer steps (--steps 150), dropout (--dropout 0.1), or a smaller model (--layers, ...)'
        """
        if flags:
            return (
                f"train on more text, fewer steps (--steps {self.best_step}), dropout (--dropout 0.1), "
                "or a smaller model (--layers, --d-model)"
            )
        return (
            f"train on more text, train for fewer steps (its best was at step {self.best_step}), add dropout, "
            "or use a smaller model"
        )


def rise_threshold(best: float) -> float:
    """How far above its best a validation loss must rise to count: 0.1 nats, or 5 % of the best.

    >>> rise_threshold(1.2), rise_threshold(4.0)
    (0.1, 0.2)
    """
    return max(RISE_NATS, RISE_SHARE * best)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _recent_mean(trained: Sequence[Any], until: float) -> float:
    """The mean training loss of the last :data:`RECENT_STEPS` steps up to step ``until`` (inf: none)."""
    recent = [m.train_loss for m in trained if m.step <= until][-RECENT_STEPS:]
    return sum(recent) / len(recent) if recent else math.inf


def _rose_since_best(val_losses: Sequence[float], best_index: int) -> bool:
    """Whether the last two validation losses both stand well above the best (:func:`rise_threshold`), two or more
    evaluations after it.

    >>> _rose_since_best([2.0, 1.5, 1.7, 1.8], 1), _rose_since_best([2.0, 1.5, 1.7, 1.55], 1)
    (True, False)
    """
    best = val_losses[best_index]
    return best_index <= len(val_losses) - 3 and min(val_losses[-2:]) >= best + rise_threshold(best)


@dataclass(frozen=True)
class Point:
    """One step of a run's curve as the lab keeps it, in the shape :func:`overfitting` reads."""

    step: int
    train_loss: float
    val_loss: float | None


def curve_points(rows: Sequence[tuple]) -> list[Point]:
    """A run's ``(step, training loss, validation loss)`` rows (its curve as the lab keeps it: a run drawn after a
    restart, or trained by another app process) as :func:`overfitting` reads them; a step without a training loss
    has none to compare (nan).

    >>> curve_points([(1, 3.0, None), (2, None, 2.6)])
    [Point(step=1, train_loss=3.0, val_loss=None), Point(step=2, train_loss=nan, val_loss=2.6)]
    """
    return [Point(int(step), math.nan if loss is None else float(loss), val) for step, loss, val in rows]


def overfitting(metrics: Sequence[Any], vocab_size: int) -> Overfitting | None:
    """An :class:`Overfitting` when a run's ``metrics`` (each with ``step``, ``train_loss`` and ``val_loss``, None
    on steps without an evaluation: :class:`~llmviz.training.trainer.StepMetrics`) show that it overfits, else
    None. ``vocab_size``: the V of ln V (0 when unknown). Pure: the CLI and the Training page call it on the same
    numbers."""
    evaluated = [m for m in metrics if _finite(m.val_loss)]
    trained = [m for m in metrics if math.isfinite(m.train_loss)]
    if not evaluated or not trained:
        return None
    best_index = min(range(len(evaluated)), key=lambda i: (evaluated[i].val_loss, i))
    best, last = evaluated[best_index], evaluated[-1]
    train_now = _recent_mean(trained, math.inf)
    train_at_best = _recent_mean(trained, best.step)
    # the last two evaluations are both well above the best, and the training loss went on falling
    rose = _rose_since_best([m.val_loss for m in evaluated], best_index) and train_now < train_at_best
    uniform = math.log(vocab_size) if vocab_size >= 2 else math.inf  # an unknown vocabulary: no ln V to compare
    worse = last.val_loss > uniform and last.val_loss - train_now >= GAP_NATS
    if not (rose or worse):
        return None
    return Overfitting(best.step, best.val_loss, last.step, last.val_loss, train_now, uniform, rose, worse)
