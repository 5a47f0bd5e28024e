"""The sidebar every page shares (the model picker, then corpus, seed and device), its values, and the
chosen corpus's text."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from llmviz.data import corpus
from llmviz.device import available_devices, fresh_seed, pick_device
from llmviz.errors import LlmvizError, UploadError
from ui import lab, picker, picker_sidebar, present, share, state
from ui.corpora import UPLOAD, corpus_labels
from ui.routing import ensure_router
from ui.text import literal_markdown


@dataclass(frozen=True)
class Settings:
    """The shared sidebar's values."""

    corpus: str
    seed: int
    deterministic: bool
    device: str

    def run_seed(self) -> int:
        """The seed for one random action (Generate, Train, word2vec): the sidebar's seed when
        "Deterministic pages" is on (the same result every time), a fresh one when it is off."""
        return self.seed if self.deterministic else fresh_seed()


def sidebar() -> Settings:
    """The sidebar every page shares: the model picker, then corpus, seed and device."""

    state.keep_kept_values()
    with st.sidebar:
        present.switch()
        st.markdown("### Model")
        picker_sidebar.sidebar()
        picker_sidebar.jobs_panel()
        st.markdown("### Settings")
        labels = corpus_labels()
        choice = st.selectbox("Corpus", list(labels), format_func=lambda n: labels[n], **share.bind("corpus"))
        if choice == UPLOAD:
            _upload_widget()
        else:
            entry = corpus.info(choice)
            if entry.downloadable and not corpus.is_cached(choice):
                st.caption(f"{entry.title} is downloaded once from {entry.source}.")
                if state.value(state.widget("cancel_download")):
                    st.info("Download cancelled: nothing was saved.")
                if st.button("Download it now", key=state.widget("download_corpus")):
                    _download_with_progress(choice)
        seed = int(
            st.number_input("Random seed", min_value=0, max_value=2**31 - 1, value=1337, step=1, **share.bind("seed"))
        )
        deterministic = st.toggle(
            "Deterministic pages",
            value=True,
            key=state.widget("deterministic"),
            help="On: every random step (sampling, training, word2vec) starts from the seed above, so "
            "pressing a button twice gives the same result. Off: fresh randomness every time.",
        )
        devices = ["auto", *available_devices()]
        device_choice = st.selectbox(
            "Device",
            devices,
            key=state.widget("device"),
            format_func=lambda d: f"auto ({pick_device()})" if d == "auto" else d,
            help="CUDA or Apple MPS when present, else CPU.",
        )
    return Settings(corpus=choice, seed=seed, deterministic=deterministic, device=pick_device(device_choice))


def settings() -> Settings:
    """The sidebar's current values (for pages, after app.py drew the sidebar)."""
    ensure_router()
    return Settings(
        corpus=state.value("corpus", "python-docs"),
        seed=int(state.value("seed", 1337)),
        deterministic=bool(state.value(state.widget("deterministic"), True)),
        device=pick_device(state.value(state.widget("device"), "auto")),
    )


def _download_with_progress(name: str) -> None:
    """Download a corpus with a progress bar and a Cancel button (a click reruns the script, which stops the
    download at its next progress update; nothing is saved)."""
    entry = corpus.info(name)
    bar = st.progress(0.0, text=f"Downloading {entry.title}…")
    st.button("Cancel", key=state.widget("cancel_download"), help="Stop the download; nothing is saved.")

    def report(received: int, total: int | None) -> None:
        share = min(1.0, received / total) if total else 0.0
        bar.progress(share, text=f"Downloading {entry.title}: {received / 1e6:.2f} of {(total or 0) / 1e6:.2f} MB")

    try:
        corpus.download(name, progress=report)
    except LlmvizError as error:
        bar.empty()
        st.error(str(error))
    else:
        bar.empty()
        st.success("Downloaded and verified.")


def _forget_removed_upload() -> None:
    """The × on the uploader removes the file: stop using it (a page change keeps it, as it calls nothing)."""
    if state.value(state.widget("corpus_upload")) is None:
        state.UPLOADED_CORPUS.pop()


def _keep_upload(name: str, text: str) -> None:
    """Keep a new upload in the student's lab at once (by content hash, within their quota): a run on it can be
    resumed after a restart. Over the quota, one line says so; the file is still used in this tab."""
    try:
        picker.runs().keep_upload(name, text.encode())
    except UploadError as refused:
        lab.warn(str(refused))


def _upload_widget() -> None:
    limit_mb = corpus.MAX_UPLOAD_BYTES // 2**20
    uploaded = st.file_uploader(
        f"A UTF-8 text file (at most {limit_mb} MB)",
        type=None,
        key=state.widget("corpus_upload"),
        on_change=_forget_removed_upload,
    )
    if uploaded is not None:
        try:
            corpus.check_upload_size(uploaded.name, uploaded.size)  # before its bytes are read
            text = corpus.validate_upload(uploaded.name, uploaded.getvalue())
        except LlmvizError as error:
            st.error(literal_markdown(str(error)))  # the message quotes the file's name
        else:
            if not state.UPLOADED_CORPUS.present() or state.UPLOADED_CORPUS.get() != (uploaded.name, text):
                _keep_upload(uploaded.name, text)
            state.UPLOADED_CORPUS.set((uploaded.name, text))
    if not state.UPLOADED_CORPUS.present():
        _offer_kept_texts()
    if state.UPLOADED_CORPUS.present():
        name, text = state.UPLOADED_CORPUS.get()
        st.caption(f"Using **{literal_markdown(name)}**: {len(text):,} characters.")


def _offer_kept_texts() -> None:
    """A text this student uploaded before (the lab keeps it: after a reload, in another tab, after a restart) is one
    choice away; a file that can no longer be read is said in one sentence."""
    kept = lab.kept_texts()
    if not kept:
        return
    names = {digest: f"{name} ({nbytes / 1024:,.1f} KB)" for digest, name, nbytes in kept}
    chosen = st.selectbox(
        "Or a text you uploaded before",
        [None, *names],
        format_func=lambda digest: "—" if digest is None else names[digest],
        key=state.widget("kept_text"),
    )
    if chosen is None:
        return
    try:
        text = lab.kept_text(chosen)
    except UploadError as refused:
        lab.warn(str(refused))
        return
    if text is not None:
        state.UPLOADED_CORPUS.set((next(name for digest, name, _ in kept if digest == chosen), text))


@st.cache_data(show_spinner="Loading the corpus…", max_entries=8)
def _load_registered(name: str) -> str:
    return corpus.load(name, download_if_missing=False)


def corpus_text(name: str | None = None) -> tuple[str, str] | None:
    """``(label, text)`` of the chosen corpus, or ``None`` after showing why not.

    The label is plain text (an uploaded file's name as it is): escape it with ``literal_markdown`` where it goes
    into Markdown (st.markdown, st.caption, st.info, a widget's label), and nowhere else (options, tables, URLs)."""
    name = name or settings().corpus
    if name == UPLOAD:
        if not state.UPLOADED_CORPUS.present():
            st.info("Upload a text file in the sidebar, or pick a built-in corpus.")
            return None
        name, text = state.UPLOADED_CORPUS.get()
        return name, text  # the file's name as it is: a page escapes it where it renders Markdown
    try:
        return corpus.info(name).title, _load_registered(name)
    except LlmvizError as error:
        st.warning(f"{error} Use the sidebar to download it, or pick a built-in corpus.")
        return None
