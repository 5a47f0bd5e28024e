"""Streamlit helpers shared by the pages: the sidebar, error display, cached loaders.

Only rendering lives here and in ``pages/``; every number comes from ``llmviz``.
"""

from __future__ import annotations

import contextlib
import traceback
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from llmviz import corpus
from llmviz.device import available_devices, fresh_seed, pick_device
from llmviz.errors import LlmvizError
from ui import present, share
from ui.text import literal_markdown

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Stage:
    key: str
    title: str
    icon: str
    path: str  # page file, relative to the repository root
    blurb: str

    @property
    def exists(self) -> bool:
        return (ROOT / self.path).exists()


PIPELINE: list[Stage] = [
    Stage("text", "Text", ":material/description:", "pages/home.py", "a corpus: the raw material"),
    Stage("tokens", "Tokens", ":material/token:", "pages/tokens.py", "text → integer ids with BPE"),
    Stage("embeddings", "Embeddings", ":material/scatter_plot:", "pages/embeddings.py", "ids → vectors; cosine similarity"),
    Stage("attention", "Attention", ":material/visibility:", "pages/attention.py", "tokens look at each other: masks, heads"),
    Stage("model", "Model", ":material/account_tree:", "pages/model.py", "blocks, LayerNorm, GELU, parameters"),
    Stage("inside", "Inside the model", ":material/biotech:", "pages/inside.py",
          "logit lens, head detectors, per-token loss, induction heads"),
    Stage("training", "Loss & training", ":material/show_chart:", "pages/training.py", "cross-entropy, optimizers, live curves"),
    Stage("sampling", "Sampling", ":material/casino:", "pages/sampling.py", "temperature, top-k, top-p, beams"),
    Stage("adapt", "Adapt & serve", ":material/tune:", "pages/adapt.py",
          "fine-tuning, LoRA, quantization, less memory, serving"),
]


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


UPLOAD = "upload"


def sidebar() -> Settings:
    """The sidebar every page shares: the model picker, then corpus, seed and device."""
    from ui import picker

    keep_widget_values()
    with st.sidebar:
        present.switch()
        st.markdown("### Model")
        picker.sidebar()
        picker.jobs_panel()
        st.markdown("### Settings")
        names = [entry.name for entry in corpus.list_corpora()] + [UPLOAD]
        labels = {entry.name: entry.title for entry in corpus.list_corpora()} | {UPLOAD: "Your own text (upload)"}
        choice = st.selectbox("Corpus", names, format_func=lambda n: labels[n], **share.bind("corpus"))
        if choice == UPLOAD:
            _upload_widget()
        else:
            entry = corpus.info(choice)
            if entry.downloadable and not corpus.is_cached(choice):
                st.caption(f"{entry.title} is downloaded once from {entry.source}.")
                if st.session_state.get("cancel_download"):
                    st.info("Download cancelled: nothing was saved.")
                if st.button("Download it now", key="download_corpus"):
                    _download_with_progress(choice)
        seed = int(st.number_input("Random seed", min_value=0, max_value=2**31 - 1, value=1337, step=1,
                                **share.bind("seed")))
        deterministic = st.toggle(
            "Deterministic pages",
            value=True,
            key="deterministic",
            help="On: every random step (sampling, training, word2vec) starts from the seed above, so "
            "pressing a button twice gives the same result. Off: fresh randomness every time.",
        )
        devices = ["auto", *available_devices()]
        device_choice = st.selectbox(
            "Device",
            devices,
            key="device",
            format_func=lambda d: f"auto ({pick_device()})" if d == "auto" else d,
            help="CUDA or Apple MPS when present, else CPU.",
        )
    return Settings(corpus=choice, seed=seed, deterministic=deterministic, device=pick_device(device_choice))


KEEP = "keep_"


def keep_widget_values() -> None:
    """Widgets whose key starts with ``keep_`` keep their value when the student visits another page.

    Streamlit forgets a widget's value in any run that does not draw it; writing the value back in
    every run (app.py calls this before any page draws) keeps it.
    """
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(KEEP)]:
        st.session_state[key] = st.session_state[key]


def keep(name: str, **default) -> dict:
    """Widget arguments for a value that survives navigation: ``st.slider(..., **ui.keep("steps", value=300))``.

    The default is passed only the first time (Streamlit warns when a widget gets both a default and a
    value kept in session state)."""
    key = KEEP + name
    return {"key": key} if key in st.session_state else {"key": key, **default}


_ROUTER_KEY = "_llmviz_router_running"


@contextlib.contextmanager
def router_run():
    """Marks a run that went through app.py (see :func:`ensure_router`)."""
    st.session_state[_ROUTER_KEY] = True
    try:
        yield
    finally:
        st.session_state.pop(_ROUTER_KEY, None)


_ROUTER_RETRY_KEY = "_llmviz_router_retried"
RUN_APP_MESSAGE = ("This page is one stage of llmviz and needs the app around it (the shared sidebar and "
                   "navigation). Start the app with `streamlit run app.py` and open this page from its menu.")


def _main_script_is_a_page() -> bool:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    main = getattr(ctx, "main_script_path", None) if ctx is not None else None
    return bool(main) and Path(main).resolve().parent == ROOT / "pages"


def ensure_router() -> None:
    """Make sure a page runs under app.py's ``st.navigation``.

    Streamlit decides once per server process whether the app uses the old ``pages/``
    folder convention; until app.py has called ``st.navigation`` once, a visit straight to
    ``/tokens`` would run the page file alone, without the shared sidebar. When that
    happens, switch the process to ``st.navigation`` and run again through app.py — once.
    A page file started on its own (``streamlit run pages/home.py``) has no app.py to run
    through: it says so and stops instead of rerunning forever.
    """
    if st.session_state.get(_ROUTER_KEY):
        st.session_state.pop(_ROUTER_RETRY_KEY, None)
        return
    if _main_script_is_a_page() or st.session_state.get(_ROUTER_RETRY_KEY):
        st.session_state.pop(_ROUTER_RETRY_KEY, None)
        st.info(RUN_APP_MESSAGE)
        st.stop()
    from streamlit.runtime.pages_manager import PagesManager

    st.session_state[_ROUTER_RETRY_KEY] = True
    PagesManager.uses_pages_directory = False
    st.rerun()


def settings() -> Settings:
    """The sidebar's current values (for pages, after app.py drew the sidebar)."""
    ensure_router()
    state = st.session_state
    return Settings(
        corpus=state.get("corpus", "python-docs"),
        seed=int(state.get("seed", 1337)),
        deterministic=bool(state.get("deterministic", True)),
        device=pick_device(state.get("device", "auto")),
    )


def _download_with_progress(name: str) -> None:
    """Download a corpus with a progress bar and a Cancel button (a click reruns the script, which stops the
    download at its next progress update; nothing is saved)."""
    entry = corpus.info(name)
    bar = st.progress(0.0, text=f"Downloading {entry.title}…")
    st.button("Cancel", key="cancel_download", help="Stop the download; nothing is saved.")

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
    if st.session_state.get("corpus_upload") is None:
        st.session_state.pop("uploaded_corpus", None)


def _upload_widget() -> None:
    limit_mb = corpus.MAX_UPLOAD_BYTES // 2**20
    uploaded = st.file_uploader(
        f"A UTF-8 text file (at most {limit_mb} MB)", type=None, key="corpus_upload", on_change=_forget_removed_upload
    )
    if uploaded is not None:
        try:
            text = corpus.validate_upload(uploaded.name, uploaded.getvalue())
        except LlmvizError as error:
            st.error(literal_markdown(str(error)))  # the message quotes the file's name
        else:
            st.session_state["uploaded_corpus"] = (uploaded.name, text)
    if "uploaded_corpus" in st.session_state:
        name, text = st.session_state["uploaded_corpus"]
        st.caption(f"Using **{literal_markdown(name)}**: {len(text):,} characters.")


@st.cache_data(show_spinner="Loading the corpus…", max_entries=8)
def _load_registered(name: str) -> str:
    return corpus.load(name, download_if_missing=False)


def corpus_text(name: str | None = None) -> tuple[str, str] | None:
    """``(label, text)`` of the chosen corpus, or ``None`` after showing why not.

    The label is plain text (an uploaded file's name as it is): escape it with ``literal_markdown`` where it goes
    into Markdown (st.markdown, st.caption, st.info, a widget's label), and nowhere else (options, tables, URLs)."""
    name = name or settings().corpus
    if name == UPLOAD:
        if "uploaded_corpus" not in st.session_state:
            st.info("Upload a text file in the sidebar, or pick a built-in corpus.")
            return None
        name, text = st.session_state["uploaded_corpus"]
        return name, text  # the file's name as it is: a page escapes it where it renders Markdown
    try:
        return corpus.info(name).title, _load_registered(name)
    except LlmvizError as error:
        st.warning(f"{error} Use the sidebar to download it, or pick a built-in corpus.")
        return None


@contextlib.contextmanager
def friendly_errors(what: str = "this step"):
    """Show llmviz errors as ``st.error`` and anything unexpected without a traceback."""
    try:
        yield
    except LlmvizError as error:
        st.error(literal_markdown(str(error)))  # messages may quote the student's text or file names
    except Exception as error:  # noqa: BLE001 - a student never sees a traceback
        st.error(f"Something went wrong in {literal_markdown(what)}: {type(error).__name__}: "
                 f"{literal_markdown(str(error))}")
        with st.expander("Details for the teacher"):
            st.code("".join(traceback.format_exception_only(type(error), error)))


def page_header(title: str, caption: str) -> None:
    st.title(title)
    st.caption(caption)


def index_slider(label: str, count: int, key: str | None = None, where=None, **options) -> int:
    """A slider over ``0 … count - 1`` (a layer, a head, a position); with one choice there is nothing
    to slide (Streamlit refuses a slider from 0 to 0), so it says so and returns 0."""
    where = where or st
    if count <= 1:
        where.caption(f"{label}: 0 (the only one)")
        return 0
    return where.slider(label, 0, count - 1, 0, key=key, **options)
