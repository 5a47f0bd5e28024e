"""SFT and DPO as lab runs that resume like a training run: the same run goes on from its kept snapshot after a
Pause that ended the server, the teacher's Park or an interruption.

A training run is rebuilt from its text and settings (:func:`llmviz.jobs.resuming.resumed_trainer`); an SFT or DPO
run from the same two things: its **sets** (the instruction or preference rows it trains and is measured on, kept
in the lab as one JSON text, by content hash, like a training run's text: :func:`sets_text`) and its **settings**
(:class:`~llmviz.adapt.sft.SftConfig` or :class:`~llmviz.adapt.dpo.DpoConfig`, as the lab keeps them), and the
weights of its newest kept snapshot. A DPO run also needs its **reference**, the model it started from, frozen: that
is its own step-0 snapshot (at step 0 the policy is the reference), which the lab thins last.

What goes on exactly and what does not: the weights and the step go on; the optimizer (AdamW's running averages)
starts afresh, and the batches are drawn from a stream seeded by the run's seed and the step it goes on from (a
training run keeps its optimizer's state as well; an SFT or DPO run of a few hundred steps does not need it).

    >>> text = sets_text([{"prompt": "a", "response": "b"}], [{"prompt": "c", "response": "d"}])
    >>> read_sets(text)
    ([{'prompt': 'a', 'response': 'b'}], [{'prompt': 'c', 'response': 'd'}])
    >>> settings_of("dpo", {"beta": 0.2, "steps": 40, "text_sha256": "…"}).beta
    0.2
"""

from __future__ import annotations

import dataclasses
import json

from llmviz.adapt.dpo import DpoConfig, DpoRunner
from llmviz.adapt.sft import SftConfig, SftRunner, copy_model
from llmviz.errors import CheckpointError, LlmvizError
from llmviz.models.gpt import GPT
from llmviz.tokenizers.base import Tokenizer

SETS_FORMAT = "llmviz-tuning-sets"
KINDS = {"sft": (SftConfig, SftRunner), "dpo": (DpoConfig, DpoRunner)}  # the lab's kind → settings, trainer


def sets_text(train: list[dict], validation: list[dict]) -> str:
    """The run's training and validation rows as one JSON text (what the lab keeps by content hash)."""
    return json.dumps({"format": SETS_FORMAT, "train": train, "validation": validation}, ensure_ascii=False)


def read_sets(text: str) -> tuple[list[dict], list[dict]]:
    """``(train, validation)`` rows from :func:`sets_text`'s text; :class:`LlmvizError` (one line) for another."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("format") != SETS_FORMAT:
        raise LlmvizError("The run's kept sets are not an SFT or DPO run's, so it cannot be resumed.")
    train, validation = data.get("train"), data.get("validation")
    if not isinstance(train, list) or not isinstance(validation, list):
        raise LlmvizError("The run's kept sets are damaged, so it cannot be resumed.")
    return train, validation


def settings_of(kind: str, values: dict) -> SftConfig | DpoConfig:
    """The run's settings from what the lab keeps of them (other keys, such as its text's hash, left out)."""
    config_class = KINDS[kind][0]
    names = {f.name for f in dataclasses.fields(config_class)}
    return config_class(**{name: value for name, value in values.items() if name in names})


def build(kind: str, text: str, config: SftConfig | DpoConfig, tokenizer: Tokenizer, model) -> SftRunner | DpoRunner:
    """A new SFT or DPO run's trainer (made in its worker: ``functools.partial(build, kind, text, …)`` is what the
    Tuning page submits, and :func:`llmviz.jobs.resuming.recipe_text` finds ``text`` in it, so the lab keeps it)."""
    train, validation = read_sets(text)
    return KINDS[kind][1](config, tokenizer, model, train, validation)  # type: ignore[arg-type]


def resumed(kind: str, text: str, values: dict, snapshot: str, reference: str | None = None):
    """An SFT or DPO run going on from its kept ``snapshot`` (a safetensors file of the lab), with its ``reference``
    (a DPO run's step-0 snapshot): made in the resumed run's worker."""
    from llmviz.training.checkpoint import load_checkpoint

    try:
        model, tokenizer, meta = load_checkpoint(snapshot)
        frozen = load_checkpoint(reference)[0] if reference is not None else None
    except CheckpointError:
        raise CheckpointError("The run's kept snapshot is damaged, so it cannot be resumed.") from None
    trainer = build(kind, text, settings_of(kind, values), tokenizer, model)
    trainer.step = int(meta.get("step", 0))
    trainer.generator.manual_seed(trainer.config.seed + trainer.step)  # the batches go on, not again from step 1
    if isinstance(trainer, DpoRunner) and isinstance(frozen, GPT):
        trainer.reference = copy_model(frozen, trainer.config.device).eval()
        for parameter in trainer.reference.parameters():
            parameter.requires_grad_(False)
        trainer.before = trainer.held_out()  # the held-out pairs where it goes on, against its own reference
    return trainer
