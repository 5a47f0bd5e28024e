"""The Serving page: the KV cache growing while the model writes, paged attention's block tables, batching.

It opens on the KV cache of the model picked in the sidebar; paged attention and batching are tabs. Serving the
requests both ways several times (their tokens/s are a median with its spread) runs in a worker. This file wires the
sections; ui/panels/serving.py draws them and llmviz/lessons/serving.py computes their numbers.
"""

import functools

import streamlit as st

from llmviz.lessons import adapting
from llmviz.lessons.defaults import DEFAULT_PROMPT
from llmviz.lessons.serving import BATCHING_REPEATS, WANTED, batching_steps, is_quick, paged, parse_lengths
from ui import boxes, picker, sections, share, shared_sidebar
from ui.errors import friendly_errors
from ui.panels import quiz, runs, serving
from ui.text import literal_markdown
from ui.widgets import page_header

shared_sidebar.settings()
page_header(
    "Serving a model: many requests, one GPU",
    "Each request keeps a KV cache of what it has read; paged attention and batching share one GPU among many.",
)

view = picker.current()
if not picker.gpt_or_note(view, "this page serves a GPT"):
    view = picker.shipped_default()
model, tokenizer = view.model, view.tokenizer
st.caption(f"{literal_markdown(view.label)} · {model.num_parameters():,} parameters.")
picker.on_this_page([], reset=True)


# ------------------------------------------------------------------ the KV cache (the key picture)
@sections.section("serving.kv_cache")
def kv_cache_section() -> None:
    with friendly_errors("generating with the KV cache"):
        serving.kv_growth(view, DEFAULT_PROMPT)


def kv_cache_part() -> None:
    st.subheader("The KV cache: what every request keeps")
    kv_cache_section()


# ------------------------------------------------------------------ paged attention
@sections.section("serving.paged")
def paged_section() -> None:
    c1, c2 = st.columns([1, 3])
    block_size = c1.select_slider(
        "Block size (tokens)", [2, 4, 8, 16], value=4, **share.bind("page_block"), persist_state="page"
    )
    lengths_text = boxes.text_input(
        "Request lengths (tokens, comma-separated)",
        "13, 5, 22, 9",
        500,
        "The list of lengths",
        where=c2,
        **share.bind("page_lengths"),
        persist_state="page",
    )
    try:
        lengths = parse_lengths(lengths_text)
    except ValueError as error:
        st.warning(str(error))
        return
    serving.block_tables(paged(lengths, block_size))


def paged_part() -> None:
    st.subheader("Paged attention: block tables")
    paged_section()


# ------------------------------------------------------------------ batching
@sections.section("serving.batching")
def batching_section() -> None:
    slots = st.slider("Slots (requests served at once)", 1, 4, 2, **share.bind("batch_slots"), persist_state="page")
    small = is_quick(model)
    found = runs.computed(
        "batching",
        ("batching", view.content_key, int(slots), WANTED, BATCHING_REPEATS),
        functools.partial(batching_steps, model=model, tokenizer=tokenizer, slots=int(slots), lengths=WANTED),
        label=f"Serving the six requests both ways, {BATCHING_REPEATS} times",
        footprint=adapting.task_footprint("batching", "the batching comparison", model),
        total=BATCHING_REPEATS,
        start=None if small else "Serve the six requests both ways",
    )
    if found is None:
        if not small:
            st.caption("A large model takes a while for 128 generated tokens: press the button to run it.")
        return
    with friendly_errors("serving the requests"):
        serving.batching(found)


def batching_part() -> None:
    st.subheader("Static vs continuous batching (real generation)")
    batching_section()


PARTS = {"The KV cache": kv_cache_part, "Paged attention": paged_part, "Batching": batching_part}
with friendly_errors("the questions"):
    quiz.section("serving", lambda: serving.questions(view.content_key, DEFAULT_PROMPT, model, tokenizer))
sections.parts(PARTS, share.bind("serving_part"))
