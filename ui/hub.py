"""Pretrained models from the Hugging Face Hub as one more source of the shared model picker (keys ``hub:<name>``:
``hub:gpt2``, ``hub:smollm2-135m``, …), and the one-click offer of a bigger model that pages make.

GPT-2 small and SmolLM2-135M (``offered`` in :data:`llmviz.hub.download.MODELS`) are always listed: "download 548 MB"
until huggingface_hub has them in its cache, and — offline, or with ``HF_HUB_OFFLINE=1`` — listed as unavailable with
how to get them, so the shipped GPT stays the default and nothing fails. Picking one that is not downloaded starts its
download in the background, in a child process (:class:`llmviz.hub.download.BackgroundDownload`) that this browser
session owns: the sidebar shows its progress with a Cancel button, pages show the shipped GPT meanwhile, and the model
appears as soon as it is there. A download nobody waits for any more (cancelled, or every session that asked has
ended) stops. Larger models are listed once they are in the cache (``python -m llmviz gpt2 download gpt2-medium``,
``python -m llmviz hf download HuggingFaceTB/SmolLM2-360M``). The weights load once per server into llmviz's own GPT,
shared read-only by every session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.hub import download, gpt2, llama
from llmviz.hub.download import MODELS, BackgroundDownload, HubFiles, HubModel, running_download, start_download
from ui import state, streamlit_private
from ui.sources import Entry, ModelView, NotReady
from ui.text import literal_markdown

PREFIX = "hub"
REFRESH_S = 1.0  # how often a download's progress bar is redrawn


class DownloadPending(NotReady):
    """A picked pretrained model whose weights are still arriving: it stays picked, and appears once they are there."""


def files(model: HubModel) -> HubFiles:
    """What a checkpoint of the model's family consists of (and how to fetch it)."""
    return gpt2.FILES if model.family == "gpt2" else llama.FILES


def label(model: HubModel) -> str:
    """The model as the picker names it: "OpenAI GPT-2 small (124M)"."""
    return f"{model.maker} {model.title}"


def short_label(model: HubModel) -> str:
    """The model's name short enough for the picker's box beside what it costs: "GPT-2 small" (no maker, no size)."""
    return model.title.split(" (")[0]


def key(model: HubModel) -> str:
    return f"{PREFIX}:{model.name}"


def model_of(picker_key: str) -> HubModel | None:
    """The offered model a picker key (``hub:<name>``, perhaps with ``@step``) names, if any."""
    prefix, _, name = picker_key.partition(":")
    return MODELS.get(name.split("@", 1)[0]) if prefix == PREFIX else None


def online() -> bool:
    """Can this server download now? (``HF_HUB_OFFLINE`` unset and the Hub reachable: a quick, remembered check)"""
    return not download.hub_offline() and download.hub_reachable()


@st.cache_resource(show_spinner="Loading the pretrained model into llmviz's GPT (once per server)…", max_entries=2)
def _load(folder: str, name: str):
    """``(model, tokenizer, meta)`` from a cached snapshot folder: shared by all sessions, never changed."""
    model = MODELS[name]
    loaded, tokenizer, meta = (gpt2.load if model.family == "gpt2" else llama.load)(folder)
    for parameter in loaded.parameters():
        parameter.requires_grad_(False)
    return loaded.eval(), tokenizer, {**meta, "source": model.repo_id, "title": model.title}


def _session() -> str:
    context = streamlit_private.script_run_context()
    return context.session_id if context is not None else "no-session"


def _liveness(owner: str) -> bool | None:
    return streamlit_private.session_is_connected(owner)


def start(model: HubModel) -> BackgroundDownload:
    """The server's download of ``model``, with this browser session among those waiting for it."""
    return start_download(model, files(model), _session(), _liveness)


class HubSource:
    """Pretrained models from the Hugging Face Hub (see the module docstring); family "gpt": each is llmviz's GPT."""

    prefix = PREFIX

    def entries(self) -> list[Entry]:
        out = []
        for model in MODELS.values():
            if files(model).is_cached(model.repo_id):
                note = f"{model.maker}'s pretrained {model.title}, from the Hugging Face cache."
                out.append(Entry(key(model), label(model), "gpt", note=note))
            elif model.offered:
                out.append(self._offer(model))
        return out

    @staticmethod
    def _offer(model: HubModel) -> Entry:
        under_way = running_download(model)
        if under_way is not None and not under_way.status().finished:
            return Entry(
                key(model), f"{short_label(model)}: downloading…", "gpt", note=under_way.status().describe(model)
            )
        if not online():
            command = f"{files(model).command} {model.repo_id}"
            note = f"offline, not downloaded: run `{command}` once online ({model.download})"
            return Entry(key(model), label(model), "gpt", available=False, note=note)
        note = f"Picking it downloads {model.download} once from the Hugging Face Hub, in the background."
        return Entry(key(model), f"{short_label(model)}: get {model.download}", "gpt", note=note)  # fits the box

    def load(self, picker_key: str, step: int | None) -> ModelView:
        model = model_of(picker_key)
        if model is None:
            raise LlmvizError(f"{picker_key.split(':', 1)[-1]!r} is not a pretrained model llmviz offers.")
        folder = files(model).cached_folder(model.repo_id)
        if folder is None:
            if not model.offered or not online():  # a larger one is downloaded from the command line, never by a link
                raise LlmvizError(
                    f"{model.title} is not downloaded here: `{files(model).command} {model.repo_id}` fetches it "
                    f"once ({model.download})."
                )
            status = start(model).status()
            if status.state in ("failed", "cancelled"):
                raise LlmvizError(status.message)
            raise DownloadPending(
                f"{model.title} is downloading ({model.download}, once): the sidebar shows its progress."
            )
        loaded, tokenizer, meta = _load(str(folder), model.name)
        return ModelView(
            key(model), label(model), loaded, tokenizer, meta, "gpt", weights=Path(folder).name
        )  # revision


# ---------------------------------------------------------------------------- progress in the sidebar


def sidebar_progress(picked: str, pick: Callable[[str | None], None]) -> None:
    """Under the picker: the picked pretrained model's download, with its progress and a Cancel button, refreshed
    while it runs; when it ends, the whole page is drawn again (on the model, or back on the shipped GPT with the
    reason). ``pick(key)`` picks a model (None: the default)."""
    model = model_of(picked)
    if model is None or files(model).is_cached(model.repo_id) or not online():
        return
    start(model)
    st.fragment(_progress, run_every=REFRESH_S)(model.name, pick)


def _progress(name: str, pick: Callable[[str | None], None]) -> None:
    model = MODELS[name]
    under_way = running_download(model)
    if under_way is None:
        return
    status = under_way.status()
    if status.state == "done":
        st.rerun(scope="app")  # the page is drawn again, on the model
    if status.finished:  # failed or cancelled: back on the shipped GPT, with the reason
        state.PICKER_NOTICE.set(f"{label(model)}: {status.message}")
        pick(None)
        st.rerun(scope="app")
    st.progress(status.fraction, text=literal_markdown(status.describe(model)))
    if st.button("Cancel the download", key=state.widget("hub_cancel_", name)):
        under_way.release(_session())
        if under_way.status().finished:
            state.PICKER_NOTICE.set(f"Cancelled the download of {model.title}: the shipped GPT is shown.")
        else:  # another session still waits for it: this one stops waiting
            state.PICKER_NOTICE.set(f"You stopped waiting for {model.title}; another session still downloads it.")
        pick(None)
        st.rerun(scope="app")


# ---------------------------------------------------------------------------- the offer a page makes


def offer(reason: str, picked: str, pick: Callable[[str | None], None], page: str) -> None:
    """A note for a page where a bigger pretrained model shows the lesson better: ``reason`` says why, and under it
    one button per offered model — show it (in the cache), download it (online: its size; it is picked at once and
    the sidebar shows the progress), or, offline, how to get it. Nothing when a pretrained model is already picked."""
    if model_of(picked) is not None:
        return
    offered = [model for model in MODELS.values() if model.offered]
    can_download = online()
    st.info(reason)
    columns = st.columns(len(offered))
    for column, model in zip(columns, offered, strict=True):
        widget = state.widget("hub_offer_", page, model.name)
        if files(model).is_cached(model.repo_id):
            clicked = column.button(f"Show {model.title}", key=widget)
        elif can_download:
            clicked = column.button(
                f"Download {model.title} ({model.download})",
                key=widget,
                help="Fetched once from the Hugging Face Hub, in the background: the sidebar shows the progress "
                "and can cancel it; the page shows the model once it is there.",
            )
        else:
            clicked = False
            column.caption(
                f"{model.title}: not downloaded, and this server is offline. Online, "
                f"`{files(model).command} {model.repo_id}` fetches it once ({model.download})."
            )
        if clicked:  # the whole page is drawn again on it (also from inside a section that reruns alone)
            if not files(model).is_cached(model.repo_id):
                start(model)
            pick(key(model))
            st.rerun(scope="app")
