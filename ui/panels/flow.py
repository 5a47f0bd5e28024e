"""The flow: one forward pass of the picked model as an animated, interactive picture (the Model page's key picture,
small on Home). A Streamlit Custom Components v2 component (no iframe): its JavaScript is the ES modules in
``ui/components/flow/`` (``main.js`` imports the others; the browser loads each file from the server, no bundle) and
its CSS ``flow.css``; its numbers come from :func:`llmviz.lessons.flow.flow_payload` (the model's own
``run_with_cache``). Hover, Play/Step and the sampling sliders run in the browser; opening a block sends its number
back (state ``block``), which keeps it open when the page redraws."""

from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

from llmviz.lessons import flow
from llmviz.lessons.flow import MAX_FLOW_TOKENS
from ui import present, state, streamlit_private
from ui.sources import ModelView

HERE = Path(__file__).resolve().parent.parent / "components" / "flow"


@functools.cache
def component():
    """The component, made at the first draw: on the running server, which serves ``HERE``'s files (without a
    server there is nowhere to serve them from)."""
    name = streamlit_private.serve_component_folder("llmviz", "flow", HERE)
    # isolate_styles=False: the picture lives in the page's DOM (every rule of flow.css is under .lvf), so the page's
    # own measures (words before the first picture, screenshots, the browser tests) see it as they see any element
    return st.components.v2.component(name, js="main.js", css="flow.css", isolate_styles=False)


@st.cache_data(show_spinner=False, max_entries=32)
def payload(model_key: str, ids: tuple[int, ...], _view: ModelView) -> dict:
    """The flow's numbers for ``ids`` through the picked model, cached by its weights id and the ids."""
    return flow.flow_payload(_view.model, _view.tokenizer, list(ids), step=_view.step)


def steps_note(view: ModelView) -> str | None:
    """What the sidebar's step slider does here: replay the sentence at another snapshot of the run, or another
    kept step of a shipped model (None for a model without them, such as the shipped GPT)."""
    steps = view.meta.get("snapshot_steps") or []
    if view.step is None or len(steps) < 2:
        return None
    whose = "this run" if view.run_id is not None else "this model's training"
    return (
        f"Step {view.step} of {whose} ({len(steps)} snapshots, steps {steps[0]}–{steps[-1]}): move the sidebar's "
        "step slider to replay this sentence at another step and watch attention sharpen."
    )


def cut_note(drawn: dict) -> str | None:
    """A caption when the sentence was cut to the tokens the flow draws (its last ones), and why: the flow's own
    bound, or the model's window (a bigram reads one token)."""
    kept, cut = len(drawn["ids"]), drawn["cut"]
    if not cut:
        return None
    last = "the last token is" if kept == 1 else f"the last {kept} tokens are"
    earlier = "1 earlier one" if cut == 1 else f"{cut} earlier ones"
    why = (
        "the flow draws at most that many"
        if kept >= MAX_FLOW_TOKENS
        else f"this model reads {'one token' if kept == 1 else f'{kept} tokens'} at a time"
    )
    return f"Only {last} drawn ({earlier} left out): {why}."


def open_block(key: str) -> int | None:
    """The block the student opened in the flow (its component state), kept open when the flow is drawn again."""
    value = state.value(key)
    block = value.get("block") if hasattr(value, "get") else getattr(value, "block", None)
    return block if isinstance(block, int) and not isinstance(block, bool) else None


def draw(view: ModelView, ids: list[int], key: str, compact: bool = False) -> dict:
    """Mount the flow for ``ids`` through ``view``'s model; returns the payload drawn (tests read it back).
    ``compact``: Home's small copy (no sampling sliders, no block opened under it)."""
    data = payload(view.content_key, tuple(ids), view)
    block = open_block(key)
    big = present.enabled()
    streamlit_private.serve_component_folder("llmviz", "flow", HERE)  # on this run's server (AppTest: a new one)
    component()(
        key=key,
        data={
            "sig": f"{view.content_key}|{','.join(map(str, data['ids']))}|{big}",
            "payload": data,
            "open": block,
            "compact": compact,
            "big": big,  # presenter mode: type of 14 px and more
        },
        default={"block": None},
        on_block_change=lambda: None,
    )
    return data
