"""The Serving page's figures and tables (``stages/serving.py`` wires them; ``llmviz/lessons/serving.py`` computes the
numbers): the KV cache growing, paged attention's physical blocks and block tables, and the batching comparison."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.adapt import memory
from llmviz.generation.serving import KVGrowth, PagedKVCache
from llmviz.lessons import serving
from ui import charts, share, state
from ui.sources import ModelView


@st.cache_data(show_spinner="Computing the answers…", max_entries=16)
def questions(key: str, prompt: str, _model, _tokenizer) -> list:
    return serving.questions(_model, _tokenizer, prompt)


@st.cache_data(show_spinner=False, max_entries=16)
def growth(key: str, prompt: str, new_tokens: int, _model, _tokenizer) -> KVGrowth:
    return serving.growth(_model, _tokenizer, prompt, new_tokens)


def kv_growth(view: ModelView, prompt: str) -> None:
    """The cache's bytes measured while the model writes, against the formula, beside the same cache stored other
    ways (the controls under the chart pick how many tokens and which), and what it wrote."""
    model, tokenizer = view.model, view.tokenizer
    per_token = serving.bytes_per_token(model)
    picture = st.container()  # the chart first: its controls under it (the page's words before its picture stay few)
    c1, c2 = st.columns([1, 2])
    new_tokens = c1.slider(
        "Tokens to write",
        *serving.GROWTH_RANGE,
        serving.GROWTH_TOKENS,
        step=10,
        **share.bind("kv_growth_tokens"),
        persist_state="page",
    )
    variants = c2.multiselect(
        "Beside it, the same cache stored as",
        list(serving.VARIANTS),
        default=list(serving.VARIANTS),
        format_func=serving.VARIANTS.get,
        **share.bind("kv_variants"),
        persist_state="page",
    )
    found = growth(view.content_key, prompt, int(new_tokens), model, tokenizer)
    others = {serving.VARIANTS[v]: serving.variant_bytes_per_token(model, v) for v in variants}
    with picture:
        charts.show(
            growth_chart(found, per_token, others),
            key=state.widget("kv_growth"),
            words=serving.kv_growth_words(found.tokens, found.cache_bytes, per_token, others),
        )
    st.subheader("The bytes per token, with this model's numbers")  # a slide of its own in presenter mode
    explain_growth(view, found, per_token)


def growth_chart(found: KVGrowth, per_token: int, others: dict[str, int]) -> go.Figure:
    """Measured bytes against tokens, the formula's line, and a dashed line per other way to store the cache."""
    figure = go.Figure(
        go.Scatter(x=found.tokens, y=found.cache_bytes, mode="lines+markers", name="measured (the cache's tensors)")
    )
    figure.add_trace(
        go.Scatter(
            x=found.tokens,
            y=[per_token * n for n in found.tokens],
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
    for name, bytes_each in others.items():
        figure.add_trace(
            go.Scatter(
                x=found.tokens,
                y=[bytes_each * n for n in found.tokens],
                mode="lines",
                line=dict(dash="dash"),
                name=f"{name}: {bytes_each:,} B a token",
            )
        )
    return figure


def explain_growth(view: ModelView, found: KVGrowth, per_token: int) -> None:
    """The formula with the model's numbers, what the cache holds at the end, and the text the model wrote."""
    model, tokenizer = view.model, view.tokenizer
    charts.latex(
        rf"\text{{KV bytes per token}} = 2 \times {model.config.n_layers} \text{{ layers}} \times "
        rf"({model.config.kv_heads} \text{{ key/value heads}} \times {model.config.head_dim}) \times "
        rf"{serving.bytes_per_value(model)} \text{{ bytes}} = {charts.tex_int(per_token)}"
    )
    st.caption(
        f"After {found.tokens[-1]} tokens the cache holds {memory.human_bytes(found.cache_bytes[-1])}: each new "
        "token adds its key and value in every layer, so the next token reads them instead of computing them "
        "again. What the model wrote:"
    )
    st.code(tokenizer.decode(found.generated), language=None, wrap_lines=True)


def blocks_chart(cache: PagedKVCache) -> go.Figure:
    """The physical blocks, 16 to a row, each coloured by the request that owns it (its number written in it)."""
    width = serving.BLOCKS_PER_ROW
    grid, labels = serving.block_grid(cache, width)
    rows = len(grid)
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


def block_tables(cache: PagedKVCache) -> None:
    """The physical blocks, each request's block table, and the slots left unused."""
    charts.show(
        blocks_chart(cache),
        key=state.widget("page_blocks"),
        words=serving.blocks_words(serving.block_grid(cache, serving.BLOCKS_PER_ROW)[0]),
    )
    st.dataframe(pd.DataFrame(serving.table_rows(cache)), hide_index=True)
    st.caption(
        f"Unused slots: {cache.wasted_slots()} of {cache.num_blocks * cache.block_size} — only in each request's "
        "last block. Reserving every request's longest possible length up front would waste far more."
    )


def batching_chart(found: serving.Batching) -> go.Figure:
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


def batching(found: serving.Batching) -> None:
    """Both policies' waits and finishes, their steps, slot use and tokens/s."""
    policies = {
        policy: ([r.wait_steps for r in result.requests], [r.finish_step for r in result.requests])
        for policy, result in found.results.items()
    }
    charts.show(batching_chart(found), key=state.widget("batching"), words=serving.batching_words(policies))
    st.dataframe(pd.DataFrame(serving.policy_rows(found)), hide_index=True)
    st.caption(
        f"Requests want {', '.join(map(str, serving.WANTED))} new tokens; all arrive together. A static batch holds "
        "its slots until its longest request ends (finished slots compute padding); continuous batching hands a "
        "free slot to the next request at once. Steps are the same in every run; the seconds are not (a shared "
        f"server), so tokens/s is the median of {found.repeats} runs of each policy, taken in turn, with the "
        "lowest and highest."
    )
