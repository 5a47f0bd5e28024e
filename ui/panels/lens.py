"""The logit lens's two charts (Inside the model), drawn from an ``llmviz.interpret.lens.LogitLens``.

A grid of 32 positions × 5 rows in one page-wide chart leaves about 25 px per cell, and Plotly shrinks the
top token in it to about 6 px. So the grid shows a window of at most :data:`WINDOW` positions (a slider moves
it along the sentence) with its text at a fixed 14 px, and the per-layer chart draws one position, picked by
the student, in colour with a legend, the window's other positions as thin grey lines and the mean over every
position in black.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import plotly.graph_objects as go

from llmviz.interpret.lens import LogitLens
from ui import charts

WINDOW = 10  #: positions in one view of the grid (about 100 px a cell on a laptop, readable on a projector)
CELL_FONT = 14  #: px: the top token in each cell


def window(total: int, start: int, width: int = WINDOW) -> range:
    """The positions shown: ``width`` of them from ``start``, kept inside ``0 … total − 1``.

    >>> window(32, 0), window(32, 28), window(6, 3)
    (range(0, 10), range(22, 32), range(0, 6))
    """
    width = max(1, min(width, total))
    start = max(0, min(start, total - width))
    return range(start, start + width)


def grid_figure(
    lens: LogitLens, tokens: list[str], columns: list[str], name: Callable[[int], str], positions: range
) -> go.Figure:
    """Rows: after the embedding and after every block; columns: the positions in ``positions``.

    ``tokens``: the printable tokens; ``columns``: the same, made unique (Plotly merges equal labels);
    ``name``: a token id's printable text.
    """
    shown = list(positions)
    rows = range(len(lens.layer_names))
    hover = [
        [
            f"after {lens.layer_names[row]}, reading {html.escape(repr(tokens[position]))}:<br>"
            + "<br>".join(
                f"{html.escape(repr(name(int(lens.top_ids[row, position, k]))))} "
                f"{float(lens.top_probs[row, position, k]):.1%}"
                for k in range(lens.top_ids.shape[-1])
            )
            + (
                f"<br>true next {html.escape(repr(tokens[position + 1]))}: {float(lens.true_probs[row, position]):.1%}"
                if position + 1 < len(tokens)
                else ""
            )
            for position in shown
        ]
        for row in rows
    ]
    figure = go.Figure(
        go.Heatmap(
            z=lens.top_probs[:, shown, 0].tolist(),
            x=[columns[p] for p in shown],
            y=lens.layer_names,
            text=[[name(int(lens.top_ids[row, p, 0])) for p in shown] for row in rows],
            customdata=hover,
            texttemplate="%{text}",
            textfont=dict(size=CELL_FONT),
            colorscale="Blues",
            zmin=0,
            zmax=1,
            colorbar=dict(title="p(top)"),
            hovertemplate="%{customdata}<extra></extra>",
        )
    )
    figure.update_layout(
        height=110 + 44 * len(lens.layer_names),
        margin=charts.margins(10),
        xaxis_title="reading this token…",
        yaxis_title="…after",
    )
    figure.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=13))
    figure.update_xaxes(type="category", dtick=1, tickfont=dict(size=13))
    return figure


def true_token_figure(
    lens: LogitLens, tokens: list[str], columns: list[str], positions: range, picked: int
) -> go.Figure:
    """p(true next token) layer by layer: position ``picked`` in colour, the window's others in grey, the mean
    over every position in black; a legend names the three."""
    true = lens.true_probs  # (L+1, T-1)
    figure = go.Figure()
    others = [p for p in positions if p < true.shape[1] and p != picked]
    for number, position in enumerate(others):
        figure.add_trace(
            go.Scatter(
                x=lens.layer_names,
                y=true[:, position].tolist(),
                mode="lines",
                line=dict(color="#ced4da", width=1.5),
                legendgroup="others",
                name="the other positions shown",
                showlegend=number == 0,
                hovertemplate=f"{html.escape(columns[position])} → "
                f"{html.escape(tokens[position + 1])}: %{{y:.1%}}<extra></extra>",
            )
        )
    figure.add_trace(
        go.Scatter(
            x=lens.layer_names,
            y=true.mean(-1).tolist(),
            mode="lines+markers",
            name=f"mean over all {true.shape[1]} positions",
            line=dict(color="black", width=3, dash="dash"),
        )
    )
    if 0 <= picked < true.shape[1]:
        figure.add_trace(
            go.Scatter(
                x=lens.layer_names,
                y=true[:, picked].tolist(),
                mode="lines+markers",
                name=f"{columns[picked]} → {tokens[picked + 1]}",
                line=dict(color="#e8590c", width=4),
                marker=dict(size=9),
            )
        )
    figure.update_layout(
        height=340,
        margin=charts.margins(40),
        yaxis_title="p(true next token)",
        title="Probability of the token that really comes next, layer by layer",
        yaxis=dict(range=[0, 1]),
        showlegend=True,
        legend=dict(orientation="h", y=-0.18),
    )
    return figure
