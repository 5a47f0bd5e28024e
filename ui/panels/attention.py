"""The Attention page's figures and tables (stages/attention.py wires them; llmviz/lessons/attention.py computes
their numbers), and its grouped-query lesson whole (the KV cache a model keeps with fewer key/value heads)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

import llmviz.lessons.attention
import llmviz.lessons.quiz
from llmviz.errors import ConfigError
from llmviz.lessons import architectures
from llmviz.models.gpt import GPTConfig
from ui import charts, sections, share
from ui.panels import quiz
from ui.text import tidy_floats


def matrix_table(matrix: torch.Tensor, rows, columns=None) -> pd.DataFrame:
    values = matrix.detach().numpy()
    columns = columns or [f"d{j}" for j in range(values.shape[1])]
    return tidy_floats(pd.DataFrame(values, index=list(rows), columns=list(columns)))


def show_matrix(where, matrix: torch.Tensor, rows) -> None:
    """A small matrix as a table, every number to 4 decimals (a column format: no pandas Styler to render)."""
    frame = matrix_table(matrix, rows)
    where.dataframe(
        frame,
        width="stretch",
        column_config={name: st.column_config.NumberColumn(format="%.4f") for name in frame.columns},
    )


def journey_heatmap(weights: torch.Tensor, tokens: list[str]) -> go.Figure:
    """The weights of attention without trainable weights, softmax(x_i · x_j) per row."""
    return charts.heatmap(
        weights,
        tokens,
        tokens,
        title="attention weights = softmax(x_i · x_j) per row",
        x_title="key",
        y_title="query",
    )


def embeddings_table(embeddings: torch.Tensor, tokens: list[str]):
    """The hand-picked 3-dimensional embeddings, two decimals."""
    return tidy_floats(pd.DataFrame(embeddings.numpy(), index=tokens, columns=["x", "y", "z"])).style.format("{:.2f}")


def worked_row(journey: torch.Tensor, simple: dict[str, torch.Tensor], query: int) -> list[str]:
    """The LaTeX lines of one row of attention without weights: the dot products, the softmax and the context
    vector of ``query`` (``simple`` is :func:`llmviz.models.attention.simple_self_attention` of ``journey``)."""
    num = charts.tex_number
    x_q = journey[query]
    dots = " + ".join(f"{num(a, '.2f')}\\cdot{num(b, '.2f')}" for a, b in zip(x_q.tolist(), journey[0].tolist()))
    scores = simple["scores"][query]
    total = float(simple["softmax_denominators"][query])
    z = simple["context"][query]
    return [
        rf"\omega_{{{query},0}} = x_{{{query}}} \cdot x_0 = {dots} = {float(simple['scores'][query, 0]):.4f}",
        r"\omega_{" + str(query) + r"} = [" + ", ".join(f"{v:.4f}" for v in scores.tolist()) + "]",
        rf"\alpha_{{{query},j}} = \frac{{e^{{\omega_{{{query},j}}}}}}{{\sum_k e^{{\omega_{{{query},k}}}}}},\quad "
        rf"\textstyle\sum_k e^{{\omega_{{{query},k}}}} = {total:.4f}",
        r"\alpha_{" + str(query) + r"} = [" + ", ".join(f"{v:.4f}" for v in simple["weights"][query].tolist()) + "]",
        rf"z_{{{query}}} = \sum_j \alpha_{{{query},j}}\, x_j = [" + ", ".join(f"{v:.4f}" for v in z.tolist()) + "]",
    ]


def toy_steps_figure(
    steps: dict[str, torch.Tensor], head: int, tokens: list[str], scaled: bool, causal: bool, columns: int
) -> go.Figure:
    """One head's four steps (scores, scaled, masked, softmax) as one figure of four panels (a browser draws it far
    faster than four)."""
    d_k = steps["Q_heads"].shape[-1]
    masked = steps["masked_scores"][head].clone()
    return charts.heatmap_panels(
        [
            dict(matrix=steps["scores"][head], x_labels=tokens, y_labels=tokens, title="Q Kᵀ"),
            dict(
                matrix=steps["scaled_scores"][head],
                x_labels=tokens,
                y_labels=tokens,
                title=f"÷ √{d_k}" if scaled else "not scaled",
            ),
            dict(
                matrix=masked.masked_fill(~torch.isfinite(masked), float("nan")),
                x_labels=tokens,
                y_labels=tokens,
                title="masked (blank = −∞)" if causal else "no mask",
            ),
            dict(  # as many digits as the worked α under the chart: a row's shown weights sum to 1 (0.500 + 0.499
                # + 0.000 did not, beside α = 0.5005)
                matrix=steps["weights"][head],
                x_labels=tokens,
                y_labels=tokens,
                title="softmax weights (rows sum to 1)",
                zmin=0,
                zmax=1,
                text_format=".4f",
            ),
        ],
        columns=columns,
    )


def head_split_tables(shapes: dict[str, torch.Tensor]) -> tuple[pd.DataFrame, pd.DataFrame, list[pd.DataFrame]]:
    """The input (1, 3, 8), its ``.view`` per head as lists, and each head after ``.transpose(1, 2)``."""
    rows = ["t0", "t1", "t2"]
    split = shapes["viewed"]
    viewed = pd.DataFrame(
        {f"head {head}": [str(split[0, t, head].int().tolist()) for t in range(3)] for head in range(2)}, index=rows
    )
    heads = [tidy_floats(pd.DataFrame(shapes["transposed"][0, head].numpy(), index=rows)) for head in range(2)]
    return tidy_floats(pd.DataFrame(shapes["input"][0].numpy(), index=rows)), viewed, heads


def masks_figure(variants: dict[str, tuple[torch.Tensor, list[str], list[str]]], columns: int) -> go.Figure:
    """The weights under each mask, one panel each (:func:`llmviz.lessons.attention.mask_variants`)."""
    panels = [
        dict(matrix=weights, x_labels=keys, y_labels=queries, title=name, zmin=0, zmax=1, text_format=".2f")
        for name, (weights, keys, queries) in variants.items()
    ]
    return charts.heatmap_panels(panels, columns=columns)


def token_labels(tokenizer, ids: list[int]) -> list[str]:
    return charts.unique_labels([tokenizer.printable(i) for i in ids])


STRONG = 0.25  #: a weight at least this large is written in its cell (one decimal), up to MOST_WRITTEN tokens
MOST_WRITTEN = 24


def strong_weights(pattern, most: int = MOST_WRITTEN) -> list[list[str]] | None:
    """The text of a pattern's cells: a weight of :data:`STRONG` or more with one decimal, the others blank, so the
    cells that matter say their number as well as their colour; None past ``most`` tokens (cells too small).

    >>> strong_weights([[1.0, 0.0], [0.7, 0.3]])
    [['1.0', ''], ['0.7', '0.3']]
    """
    rows = [[float(v) for v in row] for row in (pattern.tolist() if hasattr(pattern, "tolist") else pattern)]
    if len(rows) > most:
        return None
    return [[f"{v:.1f}" if v >= STRONG else "" for v in row] for row in rows]


def pattern_heatmap(pattern, labels: list[str], title: str):
    figure = charts.heatmap(
        pattern,
        labels,
        labels,
        title=title,
        text_format=None,
        x_title="key (attended to)",
        y_title="query",
        zmin=0,
        zmax=1,
        height=max(400, 18 * len(labels) + 180),
    )
    if (written := strong_weights(pattern)) is not None:  # colour is not the only signal (issue 70)
        figure.update_traces(text=written, texttemplate="%{text}", textfont_size=10)
    return figure


def _weight_lines(pattern, labels: list[str], queries) -> list[go.Scatter]:
    """Lines of similar weight share one trace (fast to build and draw)."""
    buckets: dict[int, tuple[list, list]] = {}
    for i in queries:
        for j in range(len(labels)):
            weight = float(pattern[i, j])
            if weight > 0.02:
                xs, ys = buckets.setdefault(min(10, round(weight * 10)), ([], []))
                xs += [0, 1, None]
                ys += [-i, -j, None]
    return [
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            hoverinfo="skip",
            line=dict(width=1 + 8 * bucket / 10, color=f"rgba(76,110,245,{min(1, 0.2 + bucket / 10)})"),
        )
        for bucket, (xs, ys) in sorted(buckets.items())
    ]


def lines_figure(pattern, labels: list[str], query) -> go.Figure:
    figure = go.Figure()
    queries = range(len(labels)) if query == "all" else [query]
    for trace in _weight_lines(pattern, labels, queries):
        figure.add_trace(trace)
    picked = set(queries)
    figure.add_trace(
        go.Scatter(
            x=[-0.02] * len(labels),
            y=[-i for i in range(len(labels))],
            text=labels,
            mode="text",
            textposition="middle left",
            hoverinfo="skip",
            textfont=dict(color=["#212529" if i in picked else "#adb5bd" for i in range(len(labels))]),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[1.02] * len(labels),
            y=[-i for i in range(len(labels))],
            text=labels,
            mode="text",
            textposition="middle right",
            hoverinfo="skip",
        )
    )
    figure.update_layout(
        showlegend=False,
        height=max(320, 22 * len(labels) + 40),
        xaxis_visible=False,
        yaxis_visible=False,
        margin=charts.margins(10),
        xaxis_range=[-0.5, 1.5],
        yaxis_range=[-len(labels) + 0.4, 1.4],
        annotations=[
            dict(x=0, y=0.9, text="<b>query</b>", showarrow=False, xanchor="right"),
            dict(x=1, y=0.9, text="<b>key</b>", showarrow=False, xanchor="left"),
        ],
    )
    return figure


def kv_heads_figure(owner: list[int]) -> go.Figure:
    """Which key/value head each query head reads (:func:`llmviz.lessons.attention.kv_owner`), one colour a group."""
    figure = go.Figure(
        go.Heatmap(
            z=[owner],
            x=[f"Q{h}" for h in range(len(owner))],
            y=["reads K/V head"],
            text=[[f"K{j} V{j}" for j in owner]],
            texttemplate="%{text}",
            colorscale="Viridis",
            showscale=False,
        )
    )
    figure.update_layout(height=140, margin=charts.margins(10))
    return figure


# ------------------------------------------------------------------ grouped-query attention
@sections.section("attention.grouped_query")
def grouped_query() -> None:
    st.markdown(
        "While a model generates, it keeps every earlier token's keys and values (the **KV cache**) so "
        "they are not computed again. With many heads and long texts that cache fills the memory. "
        "**Grouped-query attention** keeps every query head but lets a group of them read the **same** key "
        "and value head; **multi-query attention** is the extreme, one key/value head for all."
    )
    c1, c2, c3 = st.columns(3)
    n_heads = c1.select_slider("Query heads", [4, 8, 12, 16, 32], value=12, **share.bind("query_heads"))
    kv_choices = [d for d in range(1, n_heads + 1) if n_heads % d == 0]
    n_kv_heads = c2.select_slider(
        "Key/value heads",
        kv_choices,
        value=kv_choices[len(kv_choices) // 2],
        help="As many as the query heads: multi-head (GPT-2). Fewer: grouped-query "
        "(Llama 2 70B, Llama 3, Qwen2, SmolLM2). One: multi-query.",
        **share.bind("gqa_kv_heads"),
    )
    tokens = c3.select_slider(
        "Tokens in the cache",
        [1024, 2048, 4096, 8192, 32768, 131072],
        value=8192,
        format_func=lambda t: f"{t:,}",
        **share.bind("gqa_tokens"),
    )
    try:
        config = GPTConfig(d_model=64 * n_heads, n_heads=n_heads, n_kv_heads=n_kv_heads, n_layers=24, dropout=0.0)
    except ConfigError as error:
        st.error(str(error))
        return
    quiz.section("gqa", lambda: [llmviz.lessons.quiz.kv_cache_question(n_heads, n_kv_heads, tokens)])
    owner = llmviz.lessons.attention.kv_owner(config)
    charts.show(kv_heads_figure(owner), width="stretch", words=llmviz.lessons.attention.kv_words(owner))
    st.caption(
        f"{architectures.attention_kind(config).capitalize()}: query heads of one colour share one key head and one "
        f"value head. Each "
        "query head still computes its own pattern over the shared keys."
    )
    st.subheader("The KV cache, counted")  # a slide of its own in presenter mode
    st.dataframe(pd.DataFrame(llmviz.lessons.attention.kv_cache_rows(config, tokens)), hide_index=True, width="stretch")
    st.caption("W_K + W_V per layer: the parameters of the key and value projections of one block.")
    saved = 1 - n_kv_heads / n_heads
    charts.equation(
        rf"\text{{KV bytes}} = 2 \times L \times H_{{kv}} \times d_{{head}} \times \text{{tokens}} \times 2"
        rf" = 2 \times 24 \times {n_kv_heads} \times 64 \times {tokens:,} \times 2"
        rf" = {architectures.kv_cache_bytes(config, tokens, 'bf16'):,}\ \text{{bytes}}"
    )
    st.caption(
        f"A model of 24 layers with head_dim 64 in bf16 (2 bytes a number). {n_kv_heads} key/value heads "
        f"instead of {n_heads} keep {saved:.0%} less in the cache"
        + (". " if saved else " (none saved: this is multi-head attention). ")
        + "Real models: "
        + llmviz.lessons.attention.real_models_kv()
        + "."
    )


def grouped_query_lesson() -> None:
    st.header("6. Grouped-query attention: heads that share keys and values")
    st.caption(
        "Modern models (Llama 2 70B, Llama 3, Qwen2) let several query heads share one key head and one value "
        "head, so that the KV cache kept while generating takes a fraction of the memory."
    )
    grouped_query()
