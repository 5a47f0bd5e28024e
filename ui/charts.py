"""Plotly figure builders shared by the pages (rendering only; the numbers come from llmviz)."""

from __future__ import annotations

import html

import plotly.graph_objects as go


def heatmap(matrix, x_labels=None, y_labels=None, title: str = "", colorscale: str = "Blues",
            zmid: float | None = None, text_format: str | None = ".2f", height: int | None = None,
            x_title: str = "", y_title: str = "", zmin=None, zmax=None) -> go.Figure:
    values = matrix.tolist() if hasattr(matrix, "tolist") else matrix
    rows = len(values)
    columns = len(values[0]) if rows else 0
    show_text = text_format is not None and rows * columns <= 400
    figure = go.Figure(go.Heatmap(
        z=values,
        x=[_label(s) for s in x_labels] if x_labels is not None else None,
        y=[_label(s) for s in y_labels] if y_labels is not None else None,
        colorscale=colorscale, zmid=zmid, zmin=zmin, zmax=zmax,
        texttemplate=f"%{{z:{text_format}}}" if show_text else None,
        hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>",
    ))
    figure.update_layout(title=title, height=height or max(260, min(700, 40 * rows + 120)),
                         margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                         xaxis_title=x_title, yaxis_title=y_title)
    figure.update_yaxes(autorange="reversed", type="category")
    figure.update_xaxes(type="category")
    return figure


def _label(value) -> str:
    return str(value)


def unique_labels(tokens: list[str]) -> list[str]:
    """Plotly merges equal category labels; number repeated tokens so each keeps its row."""
    seen: dict[str, int] = {}
    out = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        out.append(token if seen[token] == 1 else f"{token} ({seen[token]})")
    return out


def bar(labels, values, title: str = "", x_title: str = "", y_title: str = "", color: str = "#4c6ef5",
        text_format: str = ",.0f", horizontal: bool = False, height: int = 320) -> go.Figure:
    if horizontal:
        trace = go.Bar(y=list(labels), x=list(values), orientation="h", marker_color=color,
                       texttemplate=f"%{{x:{text_format}}}")
    else:
        trace = go.Bar(x=list(labels), y=list(values), marker_color=color, texttemplate=f"%{{y:{text_format}}}")
    figure = go.Figure(trace)
    figure.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=height,
                         margin=dict(l=10, r=10, t=40 if title else 10, b=10))
    return figure


PALETTE = ["#dbe4ff", "#d3f9d8", "#fff3bf", "#ffe3e3", "#e5dbff", "#c5f6fa", "#ffe8cc", "#f3f0ff"]


def token_chips(pieces: list[str], ids: list[int], tooltips: list[str] | None = None) -> str:
    """HTML: each token a coloured chip, its id (and more) on hover."""
    chips = []
    for number, (piece, token_id) in enumerate(zip(pieces, ids)):
        tip = html.escape(tooltips[number] if tooltips else f"id {token_id}")
        chips.append(
            f'<span title="{tip}" style="background:{PALETTE[number % len(PALETTE)]};border-radius:4px;'
            f'padding:1px 3px;margin:1px;display:inline-block;font-family:monospace;white-space:pre">'
            f"{html.escape(piece)}</span>"
        )
    return '<div style="line-height:1.9">' + "".join(chips) + "</div>"


def flow(steps: list[tuple[str, str, str]], direction: str = "column") -> str:
    """HTML boxes joined by arrows: (title, shape, detail) per step."""
    arrow = "↓" if direction == "column" else "→"
    boxes = []
    for title, shape, detail in steps:
        boxes.append(
            '<div style="border:2px solid #4c6ef5;border-radius:8px;padding:6px 10px;background:#eef3ff;">'
            f'<b>{html.escape(title)}</b> <code style="float:right">{html.escape(shape)}</code>'
            f'<div style="font-size:0.8rem;color:#495057">{html.escape(detail)}</div></div>'
        )
    joiner = f'<div style="text-align:center;color:#868e96">{arrow}</div>'
    return f'<div style="display:flex;flex-direction:{direction};gap:2px">' + joiner.join(boxes) + "</div>"
