"""How a kept run goes on (Resume): the plan of a parked, interrupted or stopped run of the lab (its build, memory
estimate and step), the trainer it goes on as in its worker, and what Resume does in words. A run goes on from what
the lab keeps of it: a training run from its text (kept by content hash: :data:`TEXT_FIELD` in its config), its
settings, its newest snapshot and its resume state (:func:`resumed_trainer`: exactly as if it had never stopped); an
SFT or DPO run from its sets and settings (:mod:`llmviz.adapt.tuning_runs`). :func:`recipe_text` finds the text a
run built in its worker trains on, which the keeper keeps so that the run can be resumed.
"""

from __future__ import annotations

import logging

from llmviz.errors import LlmvizError
from llmviz.lab.service import Lab
from llmviz.lab.storage import file_words, read_kept_file

log = logging.getLogger(__name__)
TEXT_FIELD = "text_sha256"  # the run's config in the registry names its text by content hash (llmviz.lab.storage)


def recipe_text(build: object) -> str | None:
    """The text a run built in its worker trains on, when ``build`` is ``functools.partial(build_trainer, text,
    config)`` (the pages' runs: :func:`ui.panels.runs.planned`) or a resumed run's, or an SFT or DPO run's sets
    (``functools.partial(tuning_runs.build, kind, text, …)``: :mod:`llmviz.adapt.tuning_runs`); None otherwise."""
    import functools

    from llmviz.adapt import tuning_runs
    from llmviz.training.trainer import build_trainer

    if not isinstance(build, functools.partial):
        return None
    if build.func in (build_trainer, resumed_trainer) and build.args:
        text = build.args[0]
    elif build.func in (tuning_runs.build, tuning_runs.resumed) and len(build.args) > 1:
        text = build.args[1]
    else:
        return None
    return text if isinstance(text, str) else None


def resume_plan(lab: Lab, student: str, run_id: str):
    """How ``student``'s kept run ``run_id`` goes on: ``(build, footprint, step, record)`` — a picklable ``build()``
    that makes its trainer in the worker (:func:`resumed_trainer`), its memory estimate, the step it goes on from,
    and its row. :class:`~llmviz.errors.LlmvizError` (one line) when it cannot: not theirs, not resumable, its text
    or snapshot no longer kept."""
    import functools

    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import vocab_bound
    from llmviz.training.footprint import of_config

    with lab.guard("read a kept run"):
        kept = lab.registry.records.run(student, run_id)
        files = lab.registry.records.snapshots(run_id) if kept is not None else []
        resume = lab.registry.records.resume_state(run_id) if kept is not None else None
    if kept is None:
        raise LlmvizError("That run is not one of your kept runs.")
    if kept.kind in ("sft", "dpo"):
        return _tuning_plan(lab, kept, files)
    digest = kept.config.get(TEXT_FIELD)
    if kept.state not in ("parked", "interrupted", "stopped") or not files or not digest:
        raise LlmvizError(f"{kept.label} cannot be resumed (it has no kept text or snapshot, or it is {kept.state}).")
    try:
        text = lab.storage.read_upload(student, digest).decode()
    except (OSError, ValueError):
        raise LlmvizError(f"The text of {kept.label} is no longer kept, so it cannot be resumed.") from None
    config = TrainConfig.from_dict({k: v for k, v in kept.config.items() if k != TEXT_FIELD})
    needs = of_config(config, vocab_bound(text, config), text_bytes=len(text.encode()))
    step, snapshot, state = resume_point(files, resume)
    assert snapshot is not None and step is not None  # it has snapshots
    return functools.partial(resumed_trainer, text, snapshot, state), needs, step, kept


def _tuning_plan(lab: Lab, kept, files: list[tuple[int, str, int]]):
    """:func:`resume_plan` for an SFT or DPO run (:mod:`llmviz.adapt.tuning_runs`): its newest kept snapshot, a DPO
    run's step-0 snapshot (its reference), its kept sets and settings; its memory estimate as the page made it."""
    import functools

    from llmviz.adapt import tuning_runs
    from llmviz.models.gpt import GPTConfig
    from llmviz.training.footprint import fine_tuning

    digest = kept.config.get(TEXT_FIELD)
    if kept.state not in ("parked", "interrupted", "stopped") or not files or not digest:
        raise LlmvizError(f"{kept.label} cannot be resumed (it has no kept sets or snapshot, or it is {kept.state}).")
    reference = next((path for step, path, _ in files if step == 0), None)
    if kept.kind == "dpo" and reference is None:
        raise LlmvizError(f"{kept.label} cannot be resumed: its first snapshot, its reference model, is not kept.")
    try:
        text = lab.storage.read_upload(kept.student, digest).decode()
        tuning_runs.read_sets(text)
        config = tuning_runs.settings_of(kept.kind, kept.config)
        _, meta = lab.storage.read_snapshot(files[-1][1])
        gpt = GPTConfig(**meta["model"]["config"])  # its sizes, nothing allocated
    except (OSError, ValueError, KeyError, TypeError, LlmvizError):
        raise LlmvizError(
            f"The sets or the snapshot of {kept.label} are no longer kept, so it cannot be resumed."
        ) from None
    step = files[-1][0]
    needs = fine_tuning(
        gpt,
        _tuning_train_config(config, gpt),
        what=f"{kept.kind.upper()} on a kept run",
        text_bytes=0,
        copies=1 if kept.kind == "dpo" else 0,
    )
    build = functools.partial(
        tuning_runs.resumed, kept.kind, text, dict(kept.config), files[-1][1], reference if kept.kind == "dpo" else None
    )
    return build, needs, step, kept


def _tuning_train_config(config, gpt):
    """The TrainConfig a tuning run's memory estimate reads (its batch of 16 windows of the model's context)."""
    from llmviz.training.config import TrainConfig

    return TrainConfig(
        model="gpt-micro",
        tokenizer="bpe",
        context_length=min(128, gpt.context_length),
        batch_size=config.batch_size,
        steps=config.steps,
        lr=config.lr,
        warmup_steps=max(1, config.steps // 10),
        eval_interval=max(1, config.steps // 10),
        eval_batches=2,
        seed=config.seed,
        device="cpu",
        grad_clip=1.0,
    )


def resume_point(
    snapshots: list[tuple[int, str, int]], resume: tuple[int, str, int] | None
) -> tuple[int | None, str | None, str | None]:
    """Where a kept run goes on from: ``(step, snapshot path, resume state path)``, from the registry's ``(step,
    path, bytes)`` of its snapshots and of its resume state. The resume state's step when its snapshot is kept (the
    optimizer goes on), else the last snapshot with no resume state (weights only: the optimizer starts afresh).

    >>> resume_point([(0, "s0", 1), (40, "s40", 1), (42, "s42", 1)], (40, "r40", 2))
    (40, 's40', 'r40')
    >>> resume_point([(0, "s0", 1), (42, "s42", 1)], None)
    (42, 's42', None)
    """
    by_step = {step: path for step, path, _ in snapshots}
    if resume is not None and resume[0] in by_step:
        return resume[0], by_step[resume[0]], resume[1]
    if not snapshots:
        return None, None, None
    return snapshots[-1][0], snapshots[-1][1], None


def resume_line(step: int | None, exact: bool, kind: str = "training") -> str:
    """What Resume does with a kept run of ``kind``, in words (the Training page shows it beside the button).

    >>> print(resume_line(40, True)[:68])
    Resume trains it on from step 40 with its optimizer's state, exactly
    >>> "the optimizer starts afresh" in resume_line(42, False)
    True

    An SFT or DPO run (:func:`llmviz.adapt.tuning_runs.resumed`) never keeps its optimizer's state, and its batches
    are drawn from a new stream seeded by its seed and the step it goes on from:

    >>> print(resume_line(12, False, "sft"))  # doctest: +NORMALIZE_WHITESPACE
    Resume trains it on from step 12 with the weights of its newest kept snapshot. An SFT run keeps no optimizer
    state, so AdamW's running averages start afresh; and its batches are drawn afresh from its seed and step 12, so
    from there they come in another order than if it had never stopped. The same run goes on.
    """
    if step is None:
        return "It has no kept snapshot to resume from."
    if kind in ("sft", "dpo"):
        against = " against its reference, the model it started from (its step-0 snapshot)" if kind == "dpo" else ""
        return (
            f"Resume trains it on from step {step} with the weights of its newest kept snapshot{against}. An "
            f"{kind.upper()} run keeps no optimizer state, so AdamW's running averages start afresh; and its batches "
            f"are drawn afresh from its seed and step {step}, so from there they come in another order than if it "
            "had never stopped. The same run goes on."
        )
    if exact:
        return (
            f"Resume trains it on from step {step} with its optimizer's state, exactly as if it had never stopped "
            "(the same weights, Adam's running averages, learning-rate step, batches and dropout): the same run "
            "goes on."
        )
    return (
        f"Resume trains it on from step {step} with its weights only: this run's optimizer state is not kept (it "
        "was kept before optimizer states were, or its state was thinned for the disk quota), so the optimizer "
        "starts afresh (Adam's running averages rebuilt from zero); the same run goes on."
    )


def resumed_trainer(text: str, snapshot_path: str, resume_path: str | None = None):
    """A Trainer that goes on from a kept snapshot (made in the resumed run's worker): the snapshot's weights,
    tokenizer, config and step, and with ``resume_path`` (the run's resume state at that step:
    :meth:`~llmviz.training.trainer.Trainer.training_state`, a safetensors file) its optimizer's moments and step
    counts, random streams and metrics so far, so that it goes on exactly as if it had never stopped. Without one (a
    run kept before resume states were) the optimizer's state starts afresh and the learning-rate schedule goes on
    from the step."""
    from llmviz.errors import CheckpointError
    from llmviz.training.checkpoint import load_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import prepare_data
    from llmviz.training.trainer import Trainer, dropout_seed

    try:
        model, tokenizer, meta = load_checkpoint(snapshot_path)
    except CheckpointError:
        log.warning("%s cannot be read", file_words(snapshot_path))
        raise CheckpointError("The run's kept snapshot is damaged, so it cannot be resumed.") from None
    config = TrainConfig.from_dict(meta["train_config"])
    trainer = Trainer(config, prepare_data(text, config, tokenizer))
    trainer.model.load_state_dict(model.state_dict())
    trainer.step = int(meta["step"])
    scalars: dict = {}
    if resume_path is not None:
        try:
            tensors, scalars = read_kept_file(None, resume_path)
        except CheckpointError:  # damaged: it goes on from the intact weights, its optimizer afresh
            log.warning("%s cannot be read: resuming with the weights only", file_words(resume_path))
            resume_path = None
    if resume_path is None or scalars.get("step") != trainer.step:
        trainer.dropout_generator.manual_seed(dropout_seed(config.seed, 0, trainer.step))
        return trainer
    trainer.load_training_state(tensors, scalars)
    return trainer
