"""OpenAI's GPT-2 as one more source of the shared model picker (keys ``hub:gpt2``, ``hub:gpt2-medium``, …).

GPT-2 small is always listed: "download 548 MB once" until huggingface_hub has it in its
cache, and — offline or with ``HF_HUB_OFFLINE=1`` — listed as unavailable with how to get it,
so the shipped GPT stays the default and nothing fails. Larger GPT-2s are listed once they
are in the cache (``python -m llmviz gpt2 download gpt2-medium``). The weights load once per
server into llmviz's own GPT (:mod:`llmviz.hub.gpt2`), shared read-only by every session.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.hub import gpt2
from ui.sources import Entry, ModelView

PREFIX = "hub"


@st.cache_resource(show_spinner="Loading GPT-2 into llmviz's GPT (once per server)…", max_entries=2)
def _load(folder: str, name: str):
    """``(model, tokenizer, meta)`` from a cached snapshot folder: shared by all sessions, never changed."""
    model, tokenizer, meta = gpt2.load(folder)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    hub = gpt2.HUB_MODELS.get(name)
    meta = {**meta, "source": name, "title": hub.title if hub else name}
    return model.eval(), tokenizer, meta


def _label(name: str) -> str:
    hub = gpt2.HUB_MODELS.get(name)
    return f"OpenAI {hub.title}" if hub else f"GPT-2 · {name}"


class GPT2Source:
    """GPT-2 from the Hugging Face Hub (see the module docstring); family "gpt": it is llmviz's GPT."""

    prefix = PREFIX

    def entries(self):
        out = []
        for name, hub in gpt2.HUB_MODELS.items():
            cached = gpt2.is_cached(name)
            if cached:
                out.append(
                    Entry(
                        f"{PREFIX}:{name}",
                        _label(name),
                        "gpt",
                        note=f"OpenAI's pretrained {hub.title}, from the Hugging Face cache.",
                    )
                )
            elif name == gpt2.DEFAULT_MODEL:  # the larger ones appear once downloaded
                if gpt2.hub_offline() or not gpt2.hub_reachable():
                    out.append(
                        Entry(
                            f"{PREFIX}:{name}",
                            _label(name),
                            "gpt",
                            available=False,
                            note=f"offline, not downloaded: run `python -m llmviz gpt2 download` once "
                            f"online ({hub.download})",
                        )
                    )
                else:
                    out.append(
                        Entry(
                            f"{PREFIX}:{name}",
                            f"{_label(name)} — download {hub.download} once",
                            "gpt",
                            note=f"Picking it downloads {hub.download} once from the Hugging Face Hub.",
                        )
                    )
        return out

    def load(self, key: str, step: int | None):
        name = key.split(":", 1)[1]
        if name not in gpt2.HUB_MODELS:
            raise LlmvizError(f"{name!r} is not a GPT-2 llmviz offers.")
        folder = gpt2.cached_folder(name)
        if folder is None:
            hub = gpt2.HUB_MODELS[name]
            with st.spinner(f"Downloading {hub.title} ({hub.download}, once) from the Hugging Face Hub…"):
                folder = gpt2.download(name)  # raises GPT2Unavailable (an LlmvizError) offline
        model, tokenizer, meta = _load(str(folder), name)
        return ModelView(key, _label(name), model, tokenizer, meta, "gpt", weights=Path(folder).name)  # its revision
