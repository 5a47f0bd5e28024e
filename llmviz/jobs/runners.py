"""The runner interface: what a run's worker (:mod:`llmviz.jobs.worker`) needs of the thing it trains.

A *runner* is any object with these parts (a :class:`typing.Protocol`: nothing to inherit, so a library module
such as :mod:`llmviz.interpret.sae` implements it without importing the jobs layer — arrows only point down):

=====================  ==========================================================================================
``kind``               what the run is, stored with it in the lab (:data:`llmviz.lab.records.KINDS`:
                       ``"training"``, ``"autoencoder"``, ``"sft"``, ``"dpo"``, …); a runner without one is
                       ``"training"``
``config.steps``       how many steps the run takes in all
``step``               the step it is at (0 before the first; a resumed runner starts where it stopped)
``model``              the ``nn.Module`` whose ``state_dict`` is snapshotted (the weights a page opens)
``history``            the metrics of the steps taken, each with ``.step`` and ``.train_loss`` (and ``.val_loss``
                       when measured): the run's curve
``run(should_stop,     yields one metrics object per step from :attr:`step` to ``config.steps``, checking
report_at)``           ``should_stop()`` between steps; ``report_at(step)``: steps the worker wants exact numbers at
``describe()``         a plain dict of :class:`~llmviz.jobs.events.RunInfo`'s fields (the model's description, its
                       config, tokenizer, sizes): what a page needs to know about it before a snapshot is opened
``footprint()``        optional: its memory estimate (:class:`llmviz.training.footprint.Footprint`), made without
                       training it (the server admits a run by it before anything is built)
``training_state()``   optional, with ``load_training_state(tensors, scalars)``: the optimizer's moments and random
                       streams, so a parked or interrupted run resumes exactly (the same run, the same curve)
``generate_sample()``  optional: a text sample (a language model's run)
=====================  ==========================================================================================

Every kind of run is a runner that says its kind and describes itself: a model's
:class:`~llmviz.training.trainer.Trainer` (``"training"``; LoRA, QAT and the memory lessons' runs are Trainers), the
names classifier's :class:`~llmviz.adapt.finetune.FineTuneTrainer` (``"finetune"``), the sparse autoencoder's
:class:`~llmviz.interpret.sae.SaeTrainer` (``"autoencoder"``), the assistant's :class:`~llmviz.adapt.sft.SftRunner`
and :class:`~llmviz.adapt.dpo.DpoRunner` (``"sft"``, ``"dpo"``: one loop, :class:`~llmviz.adapt.sft.TuningRunner`).
A task (a BPE, word vectors, a sweep) is no runner: a loop of ``(step, loss)`` submitted as a task
(:mod:`llmviz.training.tasks`). An example of the smallest runner:

>>> import torch
>>> from dataclasses import dataclass, field
>>> @dataclass
... class Metrics:
...     step: int
...     train_loss: float
...     val_loss: float | None = None
>>> @dataclass
... class Config:
...     steps: int = 3
>>> class Doubler:
...     kind = "training"
...     def __init__(self):
...         self.config, self.step, self.history = Config(), 0, []
...         self.model = torch.nn.Linear(1, 1)
...     def run(self, should_stop=lambda: False, report_at=None):
...         while self.step < self.config.steps and not should_stop():
...             self.step += 1
...             self.history.append(Metrics(self.step, 1.0 / self.step))
...             yield self.history[-1]
...     def describe(self):
...         return {"description": {"kind": "doubler"}, "config": self.config, "parameters": 2}
>>> runner = Doubler()
>>> isinstance(runner, Runner), kind_of(runner), [m.step for m in runner.run()]
(True, 'training', [1, 2, 3])
>>> facts(runner).parameters, facts(runner).description
(2, {'kind': 'doubler'})
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from llmviz.jobs.events import RunInfo


@runtime_checkable
class Runner(Protocol):
    """The parts every runner has (see the module's docstring for the optional ones)."""

    step: int
    model: Any
    history: list
    config: Any

    def run(
        self, should_stop: Callable[[], bool] = ..., report_at: Callable[[int], bool] | None = None
    ) -> Iterator[Any]: ...

    def describe(self) -> dict: ...


def kind_of(runner: object, default: str = "training") -> str:
    """The run kind ``runner`` says it is (``default`` when it says none).

    >>> kind_of(object()), kind_of(type("R", (), {"kind": "autoencoder"})())
    ('training', 'autoencoder')
    """
    kind = getattr(runner, "kind", None)
    return kind if isinstance(kind, str) and kind else default


def facts(runner: Any) -> RunInfo:
    """What a page needs to know about ``runner``'s model and data, from its ``describe()`` (a plain dict of
    :class:`RunInfo`'s fields; those it leaves out are measured or zero) and its ``kind``."""
    from llmviz.training.snapshots import state_bytes, state_of

    given = dict(runner.describe())
    return RunInfo(
        description=given.get("description", {}),
        config=given.get("config", getattr(runner, "config", None)),
        tokenizer=given.get("tokenizer"),
        vocab_size=int(given.get("vocab_size", 0)),
        parameters=int(given.get("parameters", sum(p.numel() for p in runner.model.parameters()))),
        train_tokens=int(given.get("train_tokens", 0)),
        val_tokens=int(given.get("val_tokens", 0)),
        snapshot_bytes=int(given.get("snapshot_bytes", state_bytes(state_of(runner.model)))),
        kind=kind_of(runner),
    )
