"""The model in the URL: ``?model=<key>`` selects the sidebar's model when a session opens, and the sidebar's
choice is written back, so a copied link opens the same model.

The key goes through ``ui.picker.select``: a run that is not one of this student's (runs belong to the student, in
every tab of theirs), or a model this server does not have, falls back to the shipped model, with a notice among
the link's (:func:`model_notice`, through ``ui.share.notice``). app.py calls :func:`restore_model` before the sidebar
draws the picker and :func:`record_model` after.
"""

from __future__ import annotations

import streamlit as st

from llmviz.errors import log_failure
from ui import link_params, picker, share, state


def restore_model() -> None:
    """Before the sidebar draws the picker: select the model named by ``?model=`` (once per session)."""
    if state.LINK_MODEL_APPLIED.get():
        return
    state.LINK_MODEL_APPLIED.set(True)
    wanted = st.query_params.get("model")
    if not wanted:
        return
    wanted = link_params.short(wanted, 200)
    picker.select(wanted)
    shown = picker.current(mark=False)
    text = model_notice(wanted, shown.key, shown.label, {entry.key: entry for entry in picker.entries()})
    if text:
        share.notice(text)


def model_notice(wanted: str, shown_key: str, shown_label: str, listed: dict) -> str | None:
    """What to say when a link's ``model=`` was not what the page shows (None: it is, whatever the step): the
    reason that holds for that kind of model, never "another student's run" for a model that is not a run.

    >>> model_notice("dir:lora@3", "dir:lora", "Checkpoint lora", {})  # a checkpoint has one step: it is shown
    >>> model_notice("run:ab12@50", "shipped:gpt", "Shipped GPT", {})  # doctest: +ELLIPSIS
    'model = “run:ab12@50” is not available here: a training run opens only for the student who trained it...'
    >>> from types import SimpleNamespace  # the student's own run, listed, whose snapshot did not open: said once
    >>> model_notice("run:ab12@50", "shipped:gpt", "Shipped GPT", {"run:ab12": SimpleNamespace(available=True)})
    >>> model_notice("dir:gone", "shipped:gpt", "Shipped GPT", {})
    'model = “dir:gone” is not available on this server: showing Shipped GPT.'
    """
    wanted_base = (picker.parse_key(wanted) or (wanted, None))[0]
    if wanted_base == (picker.parse_key(shown_key) or (shown_key, None))[0]:
        return None
    start = f"model = “{link_params.short(wanted)}”"
    entry = listed.get(wanted_base)
    if wanted_base.startswith("run:") and entry is not None and entry.available:
        return None  # one of the student's own runs that did not open (a damaged snapshot): said where it failed
    if wanted_base.startswith("run:") and entry is None:
        why = (
            "is not available here: a training run opens only for the student who trained it (in any tab of "
            "theirs), and it is not one of your runs"
        )
    elif entry is not None and not entry.available:
        why = f"is not available here ({link_params.short(entry.note, 160)})"
    else:
        why = "is not available on this server"
    return f"{start} {why}: showing {shown_label}."


def record_model() -> None:
    """After the sidebar drew the picker: write the chosen model's key to the URL."""
    try:
        key = picker.current(mark=False).key  # the address only: this is not the page drawing the model
        if key == picker.DEFAULT_KEY:
            st.query_params.pop("model", None)
        elif st.query_params.get("model") != key:
            st.query_params["model"] = key
    except Exception as error:  # noqa: BLE001 - the page is drawn; the address keeps its model, the log says why
        log_failure("writing the model to the address", error)
