"""Thin compatibility layer over :mod:`ui.picker` (THE model picker) for pages not yet converted.

New code calls ``ui.picker.current()`` / ``ui.picker.load(key)``; nothing here keeps models of its own.
"""

from __future__ import annotations

from ui import picker

DATA = picker.DATA
SHIPPED_GPT = picker.SHIPPED_GPT


def shipped_names() -> list[str]:
    return picker.ShippedSource().names()


def shipped(name: str):
    """``(model, tokenizer, meta)`` of a checkpoint in data/: shared by all sessions, read-only."""
    view = picker.load(f"shipped:{name}")
    return view.model, view.tokenizer, view.meta


def shipped_gpt_or_stop():
    """The shipped GPT, or a warning that ends the page here when data/ lacks it."""
    view = picker.shipped_default()
    return view.model, view.tokenizer, view.meta


def model_choices(kind: str | None = None) -> dict[str, str]:
    """label → key of the picker's entries (runs at their newest step); ``kind="gpt"``: GPTs only."""
    return {entry.label: entry.key for entry in picker.entries()
            if entry.available and entry.family in ("gpt", "charlevel") and (kind != "gpt" or entry.family == "gpt")}


def load_choice(key: str):
    view = picker.load(key)
    return view.model, view.tokenizer, view.meta


def minilm():
    """The pretrained encoder, loaded once per server, lazily, and never changed."""
    return picker.load("pretrained:minilm").model
