"""Thin compatibility layer over :mod:`ui.picker` (THE model picker) for pages not yet converted.

New code calls ``ui.picker.current()`` / ``ui.picker.load(key)``; nothing here keeps models of its own.
"""

from __future__ import annotations

from ui import picker

DATA = picker.DATA
SHIPPED_GPT = picker.SHIPPED_GPT


def shipped_gpt_or_stop():
    """The shipped GPT, or a warning that ends the page here when data/ lacks it."""
    view = picker.shipped_default()
    return view.model, view.tokenizer, view.meta
