"""Where the model picker's entries come from (:mod:`ui.sources` declares what a source is): the shipped models, the
pretrained MiniLM, the student's runs as the lab keeps them, checkpoints in the runs folder, and the class's runs for
the teacher; each registered with the picker when this module is first imported (:mod:`ui.picker_sidebar` imports
it, and ``ui`` imports that for every page)."""

from __future__ import annotations

import functools
import hashlib
import urllib.parse
from dataclasses import asdict
from pathlib import Path

import streamlit as st
import torch.nn as nn

from llmviz.errors import CheckpointError, LlmvizError, log_failure
from llmviz.lab.live import LiveRun
from llmviz.models.charlevel import CHAR_MODEL_TITLES
from llmviz.paths import DATA, runs_folder
from llmviz.training.checkpoint import (
    ListedCheckpoint,
    checkpoint_signature,
    inspect_checkpoint,
    list_checkpoints,
    load_checkpoint,
    model_description,
    model_from_description,
)
from llmviz.training.checkpoint_steps import STEPS_DIR, checkpoint_steps, load_step_into
from llmviz.training.snapshots import load_into
from ui import hub, identity, lab, picker, state
from ui.labels import run_label
from ui.sources import Entry, ModelView, NotReady, register_source
from ui.text import literal_markdown

# ---------------------------------------------------------------------------- materialising models


def _freeze(model: nn.Module) -> nn.Module:
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)  # a shared model is never trained or changed
    return model


def _family(meta: dict) -> str:
    kind = meta.get("model", {}).get("kind")
    return "gpt" if kind == "gpt" else "charlevel" if kind == "char" else str(kind or "gpt")


@st.cache_resource(show_spinner="Loading the model…", max_entries=16)
def _checkpoint(path: str, signature: tuple):
    """``(model, tokenizer, meta)`` of a checkpoint folder or file, shared and read-only; ``signature`` (its files'
    sizes, times and inodes) makes a checkpoint rewritten in place a new entry."""
    model, tokenizer, meta = load_checkpoint(path)
    return _freeze(model), tokenizer, meta


def weights_id(signature: tuple) -> str:
    """A short stable id of a checkpoint's files' signature (``ModelView.weights``).

    >>> weights_id((1, 2)) == weights_id((1, 2)) != weights_id((1, 3))
    True
    """
    return hashlib.sha256(repr(signature).encode()).hexdigest()[:16]


@st.cache_resource(show_spinner="Loading this step's weights…", max_entries=48)
def _run_model(run_id: str, step: int, _description: dict, _state: dict) -> nn.Module:
    """A fresh eval-mode copy of a run's weights at one snapshot step (the training model, in its worker
    process, is never shown)."""
    return load_into(model_from_description(_description), _state)


@st.cache_resource(show_spinner="Loading the pretrained MiniLM (22M parameters)…")
def _minilm():
    from llmviz.models.minilm import MiniLM

    return MiniLM()


# ---------------------------------------------------------------------------- built-in sources


class ShippedSource:
    """The checkpoints in data/ (the shipped GPT first)."""

    prefix = "shipped"

    def names(self) -> list[str]:
        if not DATA.exists():
            return []
        names = sorted(p.name for p in DATA.iterdir() if (p / "checkpoint.json").exists())
        return sorted(names, key=lambda n: n != picker.SHIPPED_GPT)

    def entries(self) -> list[Entry]:
        out = []
        for name in self.names():
            if name == picker.SHIPPED_GPT:
                out.append(
                    Entry(
                        f"shipped:{name}",
                        "Shipped GPT · Python manual",
                        "gpt",
                        note="Shipped with llmviz: a small GPT trained on the Python reference manual.",
                    )
                )
            elif name.startswith(
                picker.SHIPPED_GPT + "-"
            ):  # the shipped GPT tuned (the Tuning page's SFT and DPO models)
                tuned = name.removeprefix(picker.SHIPPED_GPT + "-").upper()
                out.append(
                    Entry(
                        f"shipped:{name}",
                        f"Shipped GPT · {tuned} tuned",
                        "gpt",
                        note=f"Shipped with llmviz: the shipped GPT after {tuned} on questions about the manual.",
                    )
                )
            else:
                kind = name.removeprefix("names-")
                steps = tuple(kept_steps(DATA / name))
                out.append(
                    Entry(
                        f"shipped:{name}",
                        f"Shipped {name}",
                        "charlevel",
                        note=f"Shipped with llmviz: a character-level {CHAR_MODEL_TITLES.get(kind, kind)} "
                        "trained on first names"
                        + (f", with its weights at steps {', '.join(map(str, steps))}." if steps else "."),
                        steps=steps,
                    )
                )
        return out

    def load(self, key: str, step: int | None) -> ModelView:
        name = key.split(":", 1)[1]
        if name not in self.names():
            raise LlmvizError(f"data/{name} is not a shipped checkpoint.")
        label = next(e.label for e in self.entries() if e.key == key)
        return checkpoint_view(key, label, DATA / name, step)


def checkpoint_view(key: str, label: str, path: Path, step: int | None, says_step: bool = False) -> ModelView:
    """The checkpoint at ``path`` as the picker hands it out: at ``step`` (its nearest kept step at or before it;
    None: its own) where it keeps earlier steps (``steps/``), else as saved (``says_step``: its view says the step
    it was saved at; a shipped model's says none)."""
    signature = checkpoint_signature(path)
    model, tokenizer, meta = _checkpoint(str(path), signature)
    steps = kept_steps(path)
    if not steps:
        own = meta.get("step") if says_step else None
        return ModelView(key, label, model, tokenizer, meta, _family(meta), step=own, weights=weights_id(signature))
    shown = steps[-1] if step is None else max((s for s in steps if s <= step), default=steps[0])
    if shown != steps[-1]:  # an earlier step's weights, kept beside the checkpoint (steps/)
        model = _checkpoint_step(str(path), signature, shown)
    meta = {**meta, "step": shown, "snapshot_steps": steps}
    return ModelView(
        key if shown == steps[-1] else f"{key}@{shown}",
        label,
        model,
        tokenizer,
        meta,
        _family(meta),
        step=shown,
        weights=weights_id(signature),
    )


def kept_steps(path: Path) -> list[int]:
    """The steps checkpoint ``path`` can be shown at: its kept steps (``steps/``, written by ``train --keep-steps``)
    and its own last one; ``[]`` when it keeps none."""
    if not (path / STEPS_DIR).is_dir():  # most keep none: nothing is read
        return []
    return list(_steps_of(str(path), checkpoint_signature(path)))


@functools.lru_cache(maxsize=16)
def _steps_of(path: str, signature: tuple) -> tuple[int, ...]:
    """:func:`kept_steps` of a checkpoint's files as ``signature`` saw them (its description read once: the same
    for every student)."""
    try:  # the description read within its size limit, regular files only (inspect_checkpoint)
        final = int(inspect_checkpoint(path)[0].get("step") or 0) or None
    except (OSError, CheckpointError):
        return ()
    if final is None:  # no step of its own: its kept steps could not be told from its final weights
        return ()
    return tuple(checkpoint_steps(path, final))


@st.cache_resource(show_spinner="Loading this step's weights…", max_entries=16)
def _checkpoint_step(path: str, signature: tuple, step: int) -> nn.Module:
    """A checkpoint's model at one of its kept earlier steps (float16 on disk, float32 here), read-only."""
    model, _, _ = load_checkpoint(path)
    return _freeze(load_step_into(model, path, step))


class MiniLMSource:
    """The pretrained sentence encoder (a bidirectional model: for embeddings and attention, not sampling)."""

    prefix = "pretrained"

    def entries(self) -> list[Entry]:
        from llmviz.models.minilm import PretrainedUnavailable, model_folder

        try:
            model_folder()
        except PretrainedUnavailable:
            return []
        return [
            Entry(
                "pretrained:minilm",
                "MiniLM (pretrained encoder)",
                "minilm",
                note="The pretrained sentence encoder all-MiniLM-L6-v2: it reads both ways and does not generate text.",
            )
        ]

    def load(self, key: str, step: int | None) -> ModelView:
        if key != "pretrained:minilm":
            raise LlmvizError(f"Unknown pretrained model {key!r}.")
        model = _minilm()
        return ModelView(
            key,
            "MiniLM (pretrained encoder)",
            model,
            model.tokenizer,
            {"config": asdict(model.config)},
            "minilm",
        )


class RunNotReady(NotReady):
    """A run of this session that has no snapshot yet (queued or preparing): it stays picked."""


def _run_entry(view, number: int, job: LiveRun | None, kept: list[int]) -> Entry:
    """One run in the picker: ``view`` (the lab's record, None without a lab), its live ``job`` in this process
    (None: another's, or ended), its ``kept`` snapshot steps; listed without steps while none exists."""
    label = run_label(view.label if view else job.label, view.created if view else job.created, number)
    memory = job.snapshots.steps() if job is not None and job.snapshots is not None and job.info is not None else []
    steps = tuple(sorted({*kept, *memory}))
    if not steps:  # queued, preparing, or no snapshot kept yet: listed (the Train button picks it at once)
        return _pending_entry(f"run:{(view or job).id}", label, view.step if view is not None else 0)
    kind = view.model if view is not None else job.info.description["kind"]
    note = literal_markdown(label) + (f" ({lab.state_text(view)})" if view is not None and job is None else "")
    return Entry(f"run:{(view or job).id}", label, "gpt" if kind == "gpt" else "charlevel", note=note, steps=steps)


def _pending_entry(key: str, label: str, step: int) -> Entry:
    """A run listed before any snapshot of it is kept (at ``step``: 0 while it prepares), which pages cannot show."""
    note = (
        "Preparing (tokenizer, first snapshot): pages show the shipped GPT until its step 0 exists."
        if step == 0
        else f"No snapshot of it is kept yet (it is at step {step}): pages show the shipped GPT until one is."
    )
    return Entry(key, label, "pending", note=note)


class RunSource:
    """This session's training runs (jobs), at any of their snapshot steps."""

    prefix = "run"

    def entries(self) -> list[Entry]:
        """The student's runs of a model as the lab keeps them (every app process's, earlier servers'), numbered
        oldest first, at their kept steps (a run this process trains: at its newest snapshots too); with no lab,
        this process's runs."""
        autoencoders = state.SAE_RUNS.setdefault()  # a sparse autoencoder's run is not a model to pick
        views = [view for view in lab.runs() if view.id not in autoencoders and view.model != "sae"][::-1]
        by_run = lab.snapshots_by_run() if views else {}
        jobs = {job.id: job for job in picker.my_runs(None)}
        out = [
            _run_entry(view, number, jobs.get(view.id), by_run.get(view.id, []))
            for number, view in enumerate(views, start=1)
        ]
        listed = {view.id for view in views}
        for number, job in enumerate(
            picker.my_runs("train"), start=len(out) + 1
        ):  # the lab cannot be read: this process's
            if job.id in listed or job.id in autoencoders or (job.info and job.info.description.get("kind") == "sae"):
                continue
            out.append(_run_entry(None, number, job, []))
        return out

    def load(self, key: str, step: int | None) -> ModelView:
        run_id = key.split(":", 1)[1]
        job = picker.runs().live(run_id)  # only this student's runs resolve
        in_memory = job.snapshots.steps() if job is not None and job.snapshots is not None else []
        if job is None or job.info is None or not in_memory or (step is not None and step < in_memory[0]):
            return load_kept(run_id, step)  # as the lab keeps it (a resumed run's earlier steps too)
        step, weights = job.snapshots.resolve(step)
        kept = job.snapshots.steps()
        model = _run_model(job.id, step, job.info.description, weights)
        meta = {
            "train_config": asdict(job.info.config),
            "model": model_description(model),
            "step": step,
            "label": job.label,
            "snapshot_steps": kept,
        }
        number = next((n for n, mine in enumerate(picker.my_runs("train"), start=1) if mine.id == job.id), None)
        return ModelView(
            f"run:{job.id}@{step}",
            run_label(job.label, job.created, number, step),
            model,
            job.info.tokenizer,
            meta,
            _family(meta),
            step=step,
            run_id=job.id,
        )


@st.cache_resource(show_spinner="Loading this step's weights…", max_entries=32)
def _kept_model(owner: str, run_id: str, step: int, nbytes: int):
    """``(model, tokenizer, meta)`` of a kept snapshot (safetensors: no pickle), shared and read-only."""
    from llmviz.tokenizers.saved import tokenizer_from_dict

    state_dict, meta = lab.open_snapshot(run_id, step, owner)
    model = load_into(model_from_description(meta["model"]), state_dict)
    return _freeze(model), tokenizer_from_dict(meta["tokenizer"]), meta


def load_kept(run_id: str, step: int | None, kept=None, prefix: str = "run") -> ModelView:
    """This student's kept run ``run_id`` at ``step`` (its nearest kept snapshot at or before it; the last one when
    ``step`` is None), read through the lab. ``kept``: the teacher's class row of another student's run."""
    owner = kept.student if kept is not None else lab.student()
    kept = kept or lab.run(run_id)
    if kept is None:
        raise LlmvizError("That run is not one of your runs.")
    files = lab.snapshots(run_id, owner)
    if not files:
        raise RunNotReady(f"{kept.label} has no snapshot kept yet.")
    chosen = files[-1] if step is None else next((f for f in reversed(files) if f.step <= step), files[0])
    try:
        model, tokenizer, file_meta = _kept_model(owner, run_id, chosen.step, chosen.nbytes)
    except (KeyError, ValueError) as error:  # a snapshot whose metadata is not a model's
        log_failure(f"reading step {chosen.step} of run {run_id}", error)
        raise LlmvizError(f"The snapshot at step {chosen.step} of {kept.label} is not a model to show.") from None
    meta = {
        "train_config": file_meta.get("train_config", {}),
        "model": file_meta["model"],
        "step": chosen.step,
        "label": kept.label,
        "snapshot_steps": [f.step for f in files],
    }
    return ModelView(
        f"{prefix}:{run_id}@{chosen.step}",
        run_label(kept.label, kept.created, None, chosen.step),
        model,
        tokenizer,
        meta,
        _family(meta),
        step=chosen.step,
        run_id=run_id,
    )


class ClassSource:
    """The run the teacher puts on the projector (the class view's "Show on the projector"): any student's kept run,
    for the teacher's browser only; nobody else's picker lists or loads a ``class:`` key."""

    prefix = "class"

    def entries(self) -> list[Entry]:
        run_id = state.PROJECTED.get()
        if not run_id or not identity.is_teacher():
            return []
        found = lab.teacher_run(run_id)
        steps = tuple(f.step for f in lab.snapshots(run_id, found.student)) if found is not None else ()
        if not steps:
            return []
        label = f"On the projector · {found.label}"
        return [Entry(f"class:{run_id}", label, "gpt" if found.model == "gpt" else "charlevel", steps=steps)]

    def load(self, key: str, step: int | None) -> ModelView:
        run_id = key.split(":", 1)[1]
        if not identity.is_teacher():
            raise LlmvizError("Only the teacher's browser opens another student's run.")
        found = lab.teacher_run(run_id)
        if found is None:
            raise LlmvizError("That run is no longer kept.")
        return load_kept(run_id, step, kept=found, prefix="class")


def project(run_id: str, step: int | None) -> None:
    """The teacher's picker shows ``run_id`` at ``step`` on every page (the class view's button)."""
    state.PROJECTED.set(run_id)
    picker.select(f"class:{run_id}" + (f"@{step}" if step is not None else ""))


class RunsDirSource:
    """Checkpoints trained with ``python -m llmviz train --out runs/<name>`` (or in ``LLMVIZ_RUNS_DIR``)."""

    prefix = "dir"

    def listing(self) -> list[ListedCheckpoint]:
        """Every entry of the runs folder, each checked by llmviz (a bad one is listed with its problem)."""
        return list_checkpoints(runs_folder())

    def paths(self) -> dict[str, Path]:
        return {urllib.parse.quote(item.name, safe=""): item.path for item in self.listing() if item.readable}

    def entries(self) -> list[Entry]:
        return [
            Entry(
                f"dir:{urllib.parse.quote(item.name, safe='')}",
                f"Checkpoint {item.name}",
                "gpt",
                note="" if item.readable else f"unreadable: {item.problem}",
                available=item.readable,
                steps=tuple(kept_steps(item.path)) if item.readable and item.path.is_dir() else (),
            )
            for item in self.listing()
        ]

    def load(self, key: str, step: int | None) -> ModelView:
        name = key.split(":", 1)[1]
        path = self.paths().get(name)  # only names found by listing the folder: no path tricks
        if path is None:
            raise LlmvizError(f"No readable checkpoint named {urllib.parse.unquote(name)!r} in the runs folder.")
        return checkpoint_view(key, f"Checkpoint {path.name}", path, step, says_step=True)


def checkpoint_folder(view: ModelView) -> Path | None:
    """The folder of a checkpoint picked from the runs folder (a ``dir:`` key), else None."""
    if not view.key.startswith("dir:"):
        return None
    return RunsDirSource().paths().get(view.key.split(":", 1)[1].split("@", 1)[0])


for _source in (ShippedSource(), MiniLMSource(), hub.HubSource(), RunSource(), RunsDirSource(), ClassSource()):
    register_source(_source)
