"""The Attention page's figures and tables (stages/attention.py wires them; llmviz/lessons/attention.py computes
their numbers)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from ui import charts
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


def pattern_heatmap(pattern, labels: list[str], title: str):
    return charts.heatmap(
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
