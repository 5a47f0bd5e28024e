"""Cached loading of the models the app ships and the ones trained in this session."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from llmviz.train import load_checkpoint

DATA = Path(__file__).resolve().parent.parent / "data"
SHIPPED_GPT = "gpt-python-docs"


def shipped_names() -> list[str]:
    return sorted(p.name for p in DATA.iterdir() if (p / "checkpoint.json").exists()) if DATA.exists() else []


@st.cache_resource(show_spinner="Loading the model…")
def shipped(name: str):
    """``(model, tokenizer, meta)`` of a checkpoint in data/: shared by all sessions, read-only."""
    model, tokenizer, meta = load_checkpoint(DATA / name)
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)  # a shared model is never trained or changed
    return model, tokenizer, meta


def shipped_gpt_or_stop():
    """The shipped GPT, or a warning that ends the page here when data/ lacks it."""
    if SHIPPED_GPT not in shipped_names():
        st.warning(f"The shipped GPT (data/{SHIPPED_GPT}) is missing: run scripts/train_shipped_models.sh to re-create it.")
        st.stop()
    return shipped(SHIPPED_GPT)


def session_models() -> dict[str, tuple]:
    """Models trained in this browser session (Training page): name → (model, tokenizer, meta)."""
    return st.session_state.setdefault("trained_models", {})


def model_choices(kind: str | None = None) -> dict[str, str]:
    """label → key for pickers: shipped first, then this session's models."""
    choices = {}
    for name in shipped_names():
        if kind == "gpt" and not name.startswith("gpt"):
            continue
        choices[f"shipped: {name}"] = f"shipped:{name}"
    for name in session_models():
        choices[f"this session: {name}"] = f"session:{name}"
    return choices


def load_choice(key: str):
    if key.startswith("shipped:"):
        return shipped(key.split(":", 1)[1])
    return session_models()[key.split(":", 1)[1]]


@st.cache_resource(show_spinner="Loading the pretrained MiniLM (22M parameters)…")
def minilm():
    """The pretrained encoder, loaded once per server, lazily, and never changed."""
    from llmviz.pretrained import MiniLM

    return MiniLM()
