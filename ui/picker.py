"""THE model picker: one place in the shared sidebar decides which model every page shows.

Pages ask :func:`current` for a :class:`ModelView` (and :func:`baseline` for the same run at step 0);
they never load models themselves. Entries come from a registry of *sources* (:func:`register_source`):

- ``shipped:<name>``   the checkpoints in data/ (the shipped GPT is the default),
- ``pretrained:minilm`` the pretrained all-MiniLM-L6-v2 encoder (when its package is installed),
- ``run:<run_id>@<step>`` this browser session's training runs, at any kept snapshot step,
- ``dir:<name>``       checkpoint folders (or .safetensors files) under ``runs/`` or env ``LLMVIZ_RUNS_DIR``.

A new kind of model (e.g. GPT-2 from the Hugging Face hub) is one more :class:`Source` registered with
:func:`register_source`: it lists its :class:`Entry`\\ s and loads a key into a :class:`ModelView`.

Every model handed out is cached with ``st.cache_resource`` keyed by what fixes its weights (a run's id and step, a
checkpoint's files' signature), is in eval mode with gradients off, and is shared between pages and sessions: never
mutate it. A page caching anything computed from a model keys it on ``view.content_key``, which changes whenever the
weights do.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import streamlit as st
import torch.nn as nn

from llmviz import settings
from llmviz.errors import LlmvizError, log_failure
from llmviz.jobs.job import Job
from llmviz.jobs.manager import JobManager, default_manager
from llmviz.models.charlevel import CHAR_MODEL_TITLES
from llmviz.paths import DATA, runs_folder
from llmviz.training.checkpoint import (
    ListedCheckpoint,
    checkpoint_signature,
    list_checkpoints,
    load_checkpoint,
    model_description,
    model_from_description,
)
from llmviz.training.snapshots import load_into
from ui import identity, lab, state, streamlit_private
from ui.labels import run_label
from ui.sources import (  # noqa: F401 - public names of ui.picker
    SOURCES,
    Entry,
    ModelView,
    NotReady,
    Source,
    register_source,
)
from ui.text import literal_markdown

SHIPPED_GPT = "gpt-python-docs"
DEFAULT_KEY = f"shipped:{SHIPPED_GPT}"


# ---------------------------------------------------------------------------- session and jobs


def tab_id() -> str:
    """The browser tab (Streamlit session) this script run belongs to."""
    ctx = streamlit_private.script_run_context()
    return ctx.session_id if ctx is not None else "no-session"


def session_id() -> str:
    """The owner of this page run's jobs: the *student* (:mod:`ui.identity`: the browser's secret, or the logged-in
    user), so every tab, reload and link of one student shows the same runs, and a restarted server too (the lab,
    :mod:`llmviz.lab`, keeps them)."""
    if streamlit_private.script_run_context() is None:
        return "no-session"
    student = identity.student_id()
    identity.register_tab(student, tab_id())
    return student


def client_id() -> str:
    """Whose shares (runs, queue, memory) this page run counts in: the student (``LLMVIZ_SHARE_BY=student``, the
    default; ``session`` is its old name), or the address of their computer (``address``: every browser of one
    computer shares one share, Streamlit's ``st.context.ip_address``; the student where the address is unknown)."""
    if settings.get("LLMVIZ_SHARE_BY") != "address":
        return session_id()
    address = st.context.ip_address if streamlit_private.script_run_context() is not None else None
    if not streamlit_private.address_believed(tab_id()):  # connected before the app said whom to trust (ui.routing)
        address = None
    return f"address {address}" if isinstance(address, str) and address else session_id()  # (AppTest: a mock)


def _session_alive(owner: str) -> bool | None:
    """Has the student ``owner`` a tab connected to this server (Streamlit's own answer for each of their tabs)?"""
    return identity.student_alive(owner)


def manager() -> JobManager:
    """The server's job manager (shared by all sessions; each sees only its own jobs), told which student this
    session belongs to (:func:`client_id`): shares count students, not tabs."""
    found = default_manager(liveness=_session_alive)
    found.bind(session_id(), client_id())
    return found


def my_jobs(kind: str | None = "train") -> list[Job]:
    found = manager().jobs(session_id())
    return [job for job in found if kind is None or job.kind == kind]


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
        return sorted(names, key=lambda n: n != SHIPPED_GPT)

    def entries(self) -> list[Entry]:
        out = []
        for name in self.names():
            if name == SHIPPED_GPT:
                out.append(
                    Entry(
                        f"shipped:{name}",
                        "Shipped GPT · Python manual",
                        "gpt",
                        note="Shipped with llmviz: a small GPT trained on the Python reference manual.",
                    )
                )
            elif name.startswith(SHIPPED_GPT + "-"):  # the shipped GPT tuned (the Tuning page's SFT and DPO models)
                tuned = name.removeprefix(SHIPPED_GPT + "-").upper()
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
                out.append(
                    Entry(
                        f"shipped:{name}",
                        f"Shipped {name}",
                        "charlevel",
                        note=f"Shipped with llmviz: a character-level {CHAR_MODEL_TITLES.get(kind, kind)} "
                        "trained on first names.",
                    )
                )
        return out

    def load(self, key: str, step: int | None) -> ModelView:
        name = key.split(":", 1)[1]
        if name not in self.names():
            raise LlmvizError(f"data/{name} is not a shipped checkpoint.")
        path = DATA / name
        signature = checkpoint_signature(path)
        model, tokenizer, meta = _checkpoint(str(path), signature)
        label = next(e.label for e in self.entries() if e.key == key)
        return ModelView(key, label, model, tokenizer, meta, _family(meta), weights=weights_id(signature))


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


def _run_entry(view, number: int, job: Job | None, kept: list[int]) -> Entry:
    """One run in the picker: ``view`` (the lab's record, None without a lab), its live ``job`` in this process
    (None: another's, or ended), its ``kept`` snapshot steps; listed without steps while none exists."""
    label = run_label(view.label if view else job.label, view.created if view else job.created, number)
    memory = job.snapshots.steps() if job is not None and job.snapshots is not None and job.info is not None else []
    steps = tuple(sorted({*kept, *memory}))
    if not steps:  # queued, preparing, or no snapshot kept yet: listed (the Train button picks it at once)
        step = view.step if view is not None else 0
        note = (
            "Preparing (tokenizer, first snapshot): pages show the shipped GPT until its step 0 exists."
            if step == 0
            else f"No snapshot of it is kept yet (it is at step {step}): pages show the shipped GPT until one is."
        )
        return Entry(f"run:{(view or job).id}", label, "pending", note=note)
    kind = view.model if view is not None else job.info.description["kind"]
    note = literal_markdown(label) + (f" ({lab.state_text(view)})" if view is not None and job is None else "")
    return Entry(f"run:{(view or job).id}", label, "gpt" if kind == "gpt" else "charlevel", note=note, steps=steps)


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
        jobs = {job.id: job for job in my_jobs(None)}
        out = [
            _run_entry(view, number, jobs.get(view.id), by_run.get(view.id, []))
            for number, view in enumerate(views, start=1)
        ]
        listed = {view.id for view in views}
        for number, job in enumerate(my_jobs("train"), start=len(out) + 1):  # the lab cannot be read: this process's
            if job.id in listed or job.id in autoencoders or (job.info and job.info.description.get("kind") == "sae"):
                continue
            out.append(_run_entry(None, number, job, []))
        return out

    def load(self, key: str, step: int | None) -> ModelView:
        run_id = key.split(":", 1)[1]
        job = manager().get(session_id(), run_id)  # only this student's runs resolve
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
        number = next((n for n, mine in enumerate(my_jobs("train"), start=1) if mine.id == job.id), None)
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
    select(f"class:{run_id}" + (f"@{step}" if step is not None else ""))


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
            )
            for item in self.listing()
        ]

    def load(self, key: str, step: int | None) -> ModelView:
        name = key.split(":", 1)[1]
        path = self.paths().get(name)  # only names found by listing the folder: no path tricks
        if path is None:
            raise LlmvizError(f"No readable checkpoint named {urllib.parse.unquote(name)!r} in the runs folder.")
        signature = checkpoint_signature(path)
        model, tokenizer, meta = _checkpoint(str(path), signature)
        return ModelView(
            key,
            f"Checkpoint {path.name}",
            model,
            tokenizer,
            meta,
            _family(meta),
            step=meta.get("step"),
            weights=weights_id(signature),
        )


def checkpoint_folder(view: ModelView) -> Path | None:
    """The folder of a checkpoint picked from the runs folder (a ``dir:`` key), else None."""
    if not view.key.startswith("dir:"):
        return None
    return RunsDirSource().paths().get(view.key.split(":", 1)[1].split("@", 1)[0])


from ui import hub  # noqa: E402 - pretrained models from the Hugging Face Hub (hub:gpt2, hub:smollm2-135m, …)

for _source in (ShippedSource(), MiniLMSource(), hub.HubSource(), RunSource(), RunsDirSource(), ClassSource()):
    register_source(_source)


# ---------------------------------------------------------------------------- keys


_KEY = re.compile(r"^(?P<prefix>[a-z0-9_-]+):(?P<name>[^@]+)(?:@(?P<step>\d{1,9}))?$")


def parse_key(key: str) -> tuple[str, int | None] | None:
    """``"run:ab12@50"`` → ``("run:ab12", 50)``; None for anything malformed.

    >>> parse_key("run:ab12@50"), parse_key("shipped:gpt-python-docs"), parse_key("../etc")
    (('run:ab12', 50), ('shipped:gpt-python-docs', None), None)
    """
    match = _KEY.match(key or "")
    if not match:
        return None
    step = match.group("step")
    return f"{match.group('prefix')}:{match.group('name')}", int(step) if step is not None else None


def load(key: str) -> ModelView:
    """The :class:`ModelView` of any key (raises :class:`LlmvizError` when it cannot be had)."""
    parsed = parse_key(key)
    if parsed is None or parsed[0].split(":", 1)[0] not in SOURCES:
        raise LlmvizError(f"Unknown model {key!r}.")
    base, step = parsed
    return SOURCES[base.split(":", 1)[0]].load(base, step)


def entries() -> list[Entry]:
    out = []
    for source in list(SOURCES.values()):
        try:
            out.extend(source.entries())
        except Exception as error:  # noqa: BLE001 - one broken source must not take the picker down
            log_failure(f"listing the models of {type(source).__name__}", error)
    return out


# ---------------------------------------------------------------------------- the contract


def _refuse(entry: Entry) -> None:
    """An entry listed as unavailable was picked: keep the current pick (or the default) and say why."""
    state.PICKER_NOTICE.set(f"{entry.label} is not available here: {entry.note} The shipped GPT stays selected.")
    state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)  # redraw the picker on the kept pick
    if state.PICKED.get(default=DEFAULT_KEY) == entry.key:
        state.PICKED.set(DEFAULT_KEY)


def select(key: str) -> None:
    """Choose a model programmatically (links, buttons); an unknown key falls back to the shipped GPT
    with a notice on the next :func:`current`."""
    parsed = parse_key(key)
    known = {entry.key: entry for entry in entries()}
    if parsed is not None and parsed[0] in known and not known[parsed[0]].available:
        state.PICKED.set(DEFAULT_KEY)
        _refuse(known[parsed[0]])  # listed but not here (GPT-2 offline): say why, as the entry does
        return
    if parsed is None or parsed[0] not in known:
        state.PICKED.set(DEFAULT_KEY)
        state.PICKER_NOTICE.set(
            "That model is a training run of another student (a run opens only for the student who trained it), "
            "so the shipped GPT is shown."
            if parsed is not None and parsed[0].startswith("run:")
            else "That model is not on this server, so the shipped GPT is shown."
        )
    else:
        base, step = parsed
        state.PICKED.set(base)
        if base.startswith(("run:", "class:")):
            steps = known[base].steps
            state.PICKED_STEPS.setdefault()[base] = None if step is None or step >= steps[-1] else step
    state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)


def _pick(key: str | None) -> None:
    """Pick ``key`` (None: the shipped GPT); the picker is drawn anew on it."""
    if key is not None:
        select(key)
        return
    state.PICKED.set(DEFAULT_KEY)
    state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)


def offer_bigger_model(reason: str, page: str) -> None:
    """For a page where a bigger pretrained model shows the lesson better than the picked one: ``reason`` in a note,
    and one button per offered model (GPT-2 small, SmolLM2-135M) that shows it, or downloads it (with its size; the
    sidebar shows the progress and can cancel it), or, offline, says how to get it. Nothing when one is picked.
    ``page`` names the page (it keeps the buttons of two pages apart). Not in presenter mode: a slide keeps to its
    picture (the teacher picks a model in the sidebar)."""
    from ui import present

    if present.enabled():
        return
    hub.offer(reason, state.PICKED.get(default=DEFAULT_KEY), _pick, page)


def selected_key() -> str:
    """The key :func:`current` will resolve (base key plus ``@step`` for runs)."""
    base = state.PICKED.get(default=DEFAULT_KEY)
    if base.startswith(("run:", "class:")):
        step = state.PICKED_STEPS.get().get(base)
        return base if step is None else f"{base}@{step}"
    return base


def current(mark: bool = True) -> ModelView:
    """What the shared sidebar picker selects (default: the shipped GPT).

    A run that follows its newest snapshot resolves to the step the sidebar slider shows, so a snapshot
    taken while the page draws never makes the page disagree with the sidebar.
    """
    if mark:  # this page draws the picked model: following a run redraws it
        state.MODEL_USED.set(True)
    key = selected_key()
    if key.startswith("run:") and "@" not in key and key in state.SHOWN_NEWEST.get():
        key = f"{key}@{state.SHOWN_NEWEST.get()[key]}"
    try:
        return load(key)
    except NotReady as error:  # keep the pick: a run appears once its step 0 exists, a download once it is done
        # said once a page run, by the first section that draws the model (not where a link asks for its address)
        if mark and state.NOT_READY_SAID.get() != str(error):
            state.NOT_READY_SAID.set(str(error))
            st.info(f"{error} The shipped GPT is shown until then.")
        return shipped_default()
    except LlmvizError as error:
        if key != DEFAULT_KEY:
            state.PICKED.set(DEFAULT_KEY)
            state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)  # redraw the picker on the default
            st.info(f"{error} The shipped GPT is shown.")  # a run deleted or damaged, GPT-2 not downloaded: why
        return shipped_default()


def is_gpt(view: ModelView) -> bool:
    """Whether the picked model is a GPT (llmviz's GPT: shipped, a run, GPT-2, a Llama-family model)."""
    return view.family == "gpt" and hasattr(getattr(view.model, "config", None), "n_layers")


def gpt_or_note(view: ModelView, needs: str) -> bool:
    """True when ``view`` is a GPT; otherwise one note saying what this section needs (``needs``: "the logit lens reads
    a GPT's residual stream") and what to pick instead, and False."""
    if is_gpt(view):
        return True
    st.info(
        f"{needs[:1].upper() + needs[1:]}; **{literal_markdown(view.label)}** is not a GPT. Pick the shipped GPT or "
        "one of your GPT runs in the sidebar."
    )
    return False


def shipped_default() -> ModelView:
    """The shipped GPT, or a warning that ends the page here when data/ lacks it."""
    try:
        return load(DEFAULT_KEY)
    except LlmvizError:
        st.warning(
            f"The shipped GPT (data/{SHIPPED_GPT}) is missing: run scripts/train_shipped_models.sh to re-create it."
        )
        st.stop()


def baseline(view: ModelView | None = None) -> ModelView | None:
    """``view`` (default: the picked model) at step 0, for "step 0 vs step N" views; None when it is not a run."""
    view = view or current()
    if view.run_id is None:
        return None
    try:
        return load(f"run:{view.run_id}@0")
    except LlmvizError:
        return None


def before_after(
    render: Callable[[ModelView, str], None], *, what: str = "this view", view: ModelView | None = None
) -> None:
    """Draw ``render(view, column_key)`` twice, side by side: the run at step 0 and at its step N.

    ``view``: the model the page shows (default: the picked one; a page that shows another, e.g. the shipped
    GPT instead of an encoder, passes it). ``column_key`` ("step0" / "stepN") keeps widget keys apart. When
    the view is not a run, one column says how to get a comparison and the other shows the view.
    """
    view = view or current()
    start = baseline(view)
    left, right = st.columns(2)
    with left:
        if start is None:
            st.info(
                f"Train a run on the Training page and pick it in the sidebar to compare {what} at step 0 "
                "(random weights) with a later step."
            )
        else:
            st.markdown(f"**Step 0** (initial weights) · {literal_markdown(start.label.rsplit(' · ', 1)[0])}")
            render(start, "step0")
    with right:
        st.markdown(f"**{'Step ' + str(view.step) if view.step is not None else literal_markdown(view.label)}**")
        render(view, "stepN")


# ---------------------------------------------------------------------------- what each page shows of the lab


def page_of_this_run() -> str:
    """The page this script run draws (its script hash): the sidebar leaves a page's own runs to the page."""
    ctx = streamlit_private.script_run_context()
    return getattr(ctx, "page_script_hash", "") if ctx is not None else ""


def on_this_page(job_ids: list[str], reset: bool = False) -> None:
    """Record the runs this page draws live, so the sidebar does not report them a second time, at other moments
    (it names them and says their progress is on the page). ``reset``: a page's first call in its run."""
    page = page_of_this_run()
    found = state.RUNS_ON_PAGE.get()
    kept = set(found["ids"]) if found and found["page"] == page and not reset else set()
    state.RUNS_ON_PAGE.set({"page": page, "ids": kept | set(job_ids)})


def shown_on_page() -> set[str]:
    """The ids of the runs the page drawn now shows live (for the sidebar)."""
    found = state.RUNS_ON_PAGE.get()
    return set(found["ids"]) if found and found["page"] == page_of_this_run() else set()
