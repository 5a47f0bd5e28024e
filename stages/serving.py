"""The Serving page: the KV cache growing while the model writes, paged attention's block tables, batching.

It opens on the KV cache of the model picked in the sidebar; paged attention and batching are tabs. Serving the
requests both ways several times (their tokens/s are a median with its spread) runs in a worker.
"""

import functools

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from llmviz.adapt import memory
from llmviz.generation import serving
from llmviz.lessons import adapting as adapt
from llmviz.lessons.defaults import DEFAULT_PROMPT
from llmviz.tokenizers.ids import encode
from ui import charts, picker, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.panels import runs as training
from ui.text import literal_markdown

ui.settings()
ui.page_header(
    "Serving a model: many requests, one GPU",
    "A served model writes one token at a time for many people at once. The KV cache keeps what each request has "
    "read, paged attention stores those caches in blocks, and batching keeps every slot busy.",
)

view = picker.current()
if not picker.gpt_or_note(view, "this page serves a GPT"):
    view = picker.shipped_default()
model, tokenizer = view.model, view.tokenizer
st.caption(f"Shown here: {literal_markdown(view.label)} · {model.num_parameters():,} parameters.")
picker.on_this_page([], reset=True)


@st.cache_data(show_spinner="Computing the answers…", max_entries=16)
def _questions(key: str, _model, _tokenizer) -> list:
    return [q for q in adapt.adapt_questions(_model, _tokenizer, DEFAULT_PROMPT) if q.kind == "kv-bytes"]


@st.cache_data(show_spinner=False, max_entries=16)
def _growth(key: str, prompt: str, new_tokens: int, _model, _tokenizer) -> serving.KVGrowth:
    ids = encode(_tokenizer, prompt) or [0]
    return serving.kv_growth(_model, ids[-_model.config.context_length // 2 :], new_tokens)


# ------------------------------------------------------------------ the KV cache (the key picture)
@sections.section("serving.kv_cache")
def kv_cache_section() -> None:
    per_token = serving.kv_bytes_per_token(model)
    with ui.friendly_errors("generating with the KV cache"):
        growth = _growth(view.content_key, DEFAULT_PROMPT, 60, model, tokenizer)
        figure = go.Figure(
            go.Scatter(
                x=growth.tokens, y=growth.cache_bytes, mode="lines+markers", name="measured (the cache's tensors)"
            )
        )
        figure.add_trace(
            go.Scatter(
                x=growth.tokens,
                y=[per_token * n for n in growth.tokens],
                mode="lines",
                line=dict(dash="dot"),
                name="formula",
            )
        )
        figure.update_layout(
            title="The KV cache while generating",
            xaxis_title="tokens in the cache",
            yaxis_title="bytes",
            height=340,
            margin=charts.margins(40),
            legend=dict(orientation="h", y=-0.25),
        )
        charts.show(figure, key=state.widget("kv_growth"))
    charts.latex(
        rf"\text{{KV bytes per token}} = 2 \times {model.config.n_layers} \text{{ layers}} \times "
        rf"({model.config.kv_heads} \text{{ key/value heads}} \times {model.config.head_dim}) \times "
        rf"{serving.kv_bytes_per_value(model)} \text{{ bytes}} = {charts.tex_int(per_token)}"
    )
    st.caption(
        f"After {growth.tokens[-1]} tokens the cache holds {memory.human_bytes(growth.cache_bytes[-1])}: each new "
        "token adds its key and value in every layer, so the next token reads them instead of computing them "
        "again. What the model wrote:"
    )
    st.code(tokenizer.decode(growth.generated), language=None, wrap_lines=True)


def kv_cache_part() -> None:
    st.subheader("The KV cache: what every request keeps")
    kv_cache_section()


# ------------------------------------------------------------------ paged attention
def _blocks_chart(cache: serving.PagedKVCache) -> go.Figure:
    """The physical blocks, 16 to a row, each coloured by the request that owns it (its number written in it)."""
    names = list(cache.tables)
    owner = {block: names[i] for i, table in enumerate(cache.tables.values()) for block in table}
    width = 16
    rows = -(-cache.num_blocks // width)
    grid = [
        [names.index(owner[b]) + 1 if (b := r * width + c) in owner else None for c in range(width)]
        for r in range(rows)
    ]
    labels = [
        [(f"{owner[b].split()[-1]}" if (b := r * width + c) in owner else "") for c in range(width)]
        for r in range(rows)
    ]
    figure = go.Figure(
        go.Heatmap(
            z=grid,
            colorscale="Turbo",
            text=labels,
            texttemplate="%{text}",
            customdata=[[r * width + c for c in range(width)] for r in range(rows)],
            hovertemplate="block %{customdata}: request %{text}<extra></extra>",
            showscale=False,
        )
    )
    figure.update_xaxes(  # each row names its blocks: a column is "+ n" from the row's first block
        tickmode="array", tickvals=list(range(width)), ticktext=[f"+{c}" for c in range(width)]
    )
    figure.update_yaxes(
        autorange="reversed",
        tickmode="array",
        tickvals=list(range(rows)),
        ticktext=[f"blocks {width * r}–{width * r + width - 1}" for r in range(rows)],
    )
    figure.update_layout(
        title="Physical blocks: the number is the request that owns it",
        height=110 + 45 * rows,
        margin=charts.margins(40),
    )
    return figure


@sections.section("serving.paged")
def paged_section() -> None:
    c1, c2 = st.columns([1, 3])
    block_size = c1.select_slider(
        "Block size (tokens)", [2, 4, 8, 16], value=4, key=state.widget("page_block"), persist_state="page"
    )
    lengths_text = c2.text_input(
        "Request lengths (tokens, comma-separated)",
        "13, 5, 22, 9",
        key=state.widget("page_lengths"),
        persist_state="page",
    )
    try:
        lengths = [int(x) for x in lengths_text.replace(" ", "").split(",") if x]
        if not lengths or any(n < 1 or n > 4096 for n in lengths) or len(lengths) > 12:
            raise ValueError
    except ValueError:
        st.warning("Give 1 to 12 whole numbers from 1 to 4096, separated by commas.")
        return
    cache = serving.paged_tables({f"request {i + 1}": n for i, n in enumerate(lengths)}, block_size)
    charts.show(_blocks_chart(cache), key=state.widget("page_blocks"))
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "request": name,
                    "tokens": cache.lengths[name],
                    "block table": table,
                    "unused slots": len(table) * block_size - cache.lengths[name],
                }
                for name, table in cache.tables.items()
            ]
        ),
        hide_index=True,
    )
    st.caption(
        f"Unused slots: {cache.wasted_slots()} of {cache.num_blocks * block_size} — only in each request's last "
        "block. Reserving every request's longest possible length up front would waste far more."
    )


def paged_part() -> None:
    st.subheader("Paged attention: block tables")
    paged_section()


# ------------------------------------------------------------------ batching
WANTED = (24, 4, 16, 6, 10, 4)  # new tokens each of the six requests wants


def _batching_chart(found: adapt.Batching) -> go.Figure:
    figure = go.Figure()
    for (policy, result), colour in zip(found.results.items(), ("#f76707", "#4c6ef5"), strict=True):
        names = [r.name for r in result.requests]
        figure.add_trace(
            go.Bar(
                x=names,
                y=[r.wait_steps for r in result.requests],
                name=f"{policy}: wait",
                marker_color=colour,
                legendgroup=policy,
                offsetgroup=policy,
            )
        )
        figure.add_trace(
            go.Scatter(
                x=names,
                y=[r.finish_step for r in result.requests],
                mode="markers",
                marker=dict(size=11, color=colour, line=dict(width=1, color="white")),
                name=f"{policy}: finished",
                legendgroup=policy,
                offsetgroup=policy,
            )
        )
    figure.update_layout(
        title="Steps each request waited for a slot (bars) and the step it finished (dots)",
        height=360,
        barmode="group",
        scattermode="group",  # each policy's dot over its own bar: equal steps no longer hide one
        margin=charts.margins(60),
        legend=dict(orientation="h", y=-0.2),
        yaxis_title="step",
    )
    return figure


@sections.section("serving.batching")
def batching_section() -> None:
    slots = st.slider("Slots (requests served at once)", 1, 4, 2, key=state.widget("batch_slots"), persist_state="page")
    small = model.num_parameters() <= adapt.QUICK_PARAMETERS
    found = training.computed(
        "batching",
        ("batching", view.content_key, int(slots), WANTED, adapt.BATCHING_REPEATS),
        functools.partial(adapt.batching_steps, model=model, tokenizer=tokenizer, slots=int(slots), lengths=WANTED),
        label=f"Serving the six requests both ways, {adapt.BATCHING_REPEATS} times",
        footprint=adapt.task_footprint("batching", "the batching comparison", model),
        total=adapt.BATCHING_REPEATS,
        start=None if small else "Serve the six requests both ways",
    )
    if found is None:
        if not small:
            st.caption("A large model takes a while for 128 generated tokens: press the button to run it.")
        return
    with ui.friendly_errors("serving the requests"):
        charts.show(_batching_chart(found), key=state.widget("batching"))
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "policy": policy,
                        "steps": result.steps,
                        "slot use": f"{result.utilisation:.0%}",
                        "tokens": result.useful_tokens,
                        "tokens/s: median (lowest–highest)": found.rates[policy].text(),
                    }
                    for policy, result in found.results.items()
                ]
            ),
            hide_index=True,
        )
        st.caption(
            f"Requests want {', '.join(map(str, WANTED))} new tokens; all arrive together. A static batch holds its "
            "slots until its longest request ends (finished slots compute padding); continuous batching hands a "
            "free slot to the next request at once. Steps are the same in every run; the seconds are not (a shared "
            f"server), so tokens/s is the median of {found.repeats} runs of each policy, taken in turn, with the "
            "lowest and highest."
        )


def batching_part() -> None:
    st.subheader("Static vs continuous batching (real generation)")
    batching_section()


PARTS = {"The KV cache": kv_cache_part, "Paged attention": paged_part, "Batching": batching_part}
with ui.friendly_errors("the questions"):
    quiz_ui.section("serving", lambda: _questions(view.content_key, model, tokenizer))
sections.parts(PARTS, share.bind("serving_part"))
