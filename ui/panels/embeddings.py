"""The Embeddings page's figures and tables (stages/embeddings.py wires them; llmviz/lessons/embeddings.py and
llmviz/lessons/forward.py compute their numbers): the cosine worked out, the map of the token table and its vectors, and
what the page's other lessons share (:func:`signed_heatmap`, :func:`axis_ranges`). Those lessons draw beside it:
embeddings_positions.py, embeddings_word2vec.py, embeddings_sentences.py."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from llmviz.lessons import embeddings, forward
from ui import charts, scatter_labels, share
from ui.text import literal_markdown, tidy_floats


def cosine_latex(a: torch.Tensor, b: torch.Tensor, a_name: str, b_name: str, parts) -> list[str]:
    """The dot product, both lengths, the cosine, the angle and the distance of two vectors, worked out."""
    num = charts.tex_number
    products = " + ".join(f"({x:g})({y:g})" for x, y in zip(a.tolist(), b.tolist()))
    squares_a = " + ".join(f"{num(x)}^2" for x in a.tolist())
    squares_b = " + ".join(f"{num(y)}^2" for y in b.tolist())
    distance_terms = " + ".join(f"({num(x)} - {num(y)})^2" for x, y in zip(a.tolist(), b.tolist()))
    return [
        rf"{a_name} \cdot {b_name} = {products} = {parts.dot:.4f}",
        rf"\lVert {a_name} \rVert = \sqrt{{{squares_a}}} = \sqrt{{{parts.norm_a**2:.4f}}} = {parts.norm_a:.4f}",
        rf"\lVert {b_name} \rVert = \sqrt{{{squares_b}}} = \sqrt{{{parts.norm_b**2:.4f}}} = {parts.norm_b:.4f}",
        rf"\cos\theta = \frac{{{parts.dot:.4f}}}{{{parts.norm_a:.4f} \times {parts.norm_b:.4f}}} = "
        rf"{parts.cosine:.4f}"
        rf"\quad\Rightarrow\quad \theta = {parts.angle_degrees:.1f}^\circ",
        rf"d({a_name}, {b_name}) = \sqrt{{{distance_terms}}} = {parts.euclidean:.4f}",
    ]


def angle_figure(angle_degrees: float, a_name: str, b_name: str) -> go.Figure:
    """The two directions, drawn in the plane they span (unit length), and the angle between them."""
    theta = math.radians(angle_degrees)
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[0, 0],
            mode="lines+text",
            text=["", a_name],
            name=a_name,
            textposition="middle right",
            line=dict(width=4),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[0, math.cos(theta)],
            y=[0, math.sin(theta)],
            mode="lines+text",
            text=["", b_name],
            textposition="top center",
            name=b_name,
            line=dict(width=4),
        )
    )
    arc = [i / 40 * theta for i in range(41)]
    figure.add_trace(
        go.Scatter(
            x=[0.3 * math.cos(t) for t in arc],
            y=[0.3 * math.sin(t) for t in arc],
            mode="lines",
            name=f"θ = {angle_degrees:.1f}°",
            line=dict(dash="dot"),
        )
    )
    figure.update_layout(
        height=300,
        xaxis=dict(range=[-1.1, 1.3], visible=False),
        yaxis=dict(range=[-0.2, 1.1], visible=False, scaleanchor="x"),
        margin=charts.margins(10),
        legend=dict(orientation="h"),
    )
    return figure


def neighbour_table(tokenizer, found: forward.Neighbours) -> pd.DataFrame:
    return tidy_floats(
        pd.DataFrame({"token": [tokenizer.printable(i) for i in found.ids], "id": found.ids, "cosine": found.cosines})
    )


def show_neighbours(frame: pd.DataFrame, **options) -> None:
    """A table of nearest neighbours, every cosine to 4 decimals (a column of 0.57 beside 0.4519 read as if the two
    had been measured differently)."""
    st.dataframe(frame.style.format({"cosine": "{:.4f}"}), hide_index=True, width="stretch", **options)


GROUPS = {  # the map's layers, the most important last (drawn on top) and labelled first
    "common token": dict(size=5, color="#ced4da"),
    "your tokens": dict(size=11, color="#e8590c", line=dict(width=1, color="#343a40")),
    "nearest neighbours": dict(size=9, color="#2b8a3e"),
    "looked up": dict(size=14, color="#c2255c", symbol="diamond"),
}


def axis_ranges(coords: torch.Tensor) -> tuple[tuple[float, float], tuple[float, float]]:
    """The map's axes: every point with a margin of 6% (twice that above, where the labels are)."""
    x_low, x_high = (float(v) for v in coords[:, 0].aminmax())
    y_low, y_high = (float(v) for v in coords[:, 1].aminmax())
    pad_x, pad_y = 0.06 * (x_high - x_low or 1.0), 0.06 * (y_high - y_low or 1.0)
    return (x_low - pad_x, x_high + pad_x), (y_low - pad_y, y_high + 2 * pad_y)


def inward_place(x: float, y: float, x_range: tuple[float, float], y_range: tuple[float, float]) -> str:
    """A label's place that points into the plot from a point near its edge (Plotly's ``textposition``).

    >>> inward_place(0.95, 0.5, (0.0, 1.0), (0.0, 1.0)), inward_place(0.02, 0.97, (0.0, 1.0), (0.0, 1.0))
    ('top left', 'bottom right')
    """
    across = (x - x_range[0]) / ((x_range[1] - x_range[0]) or 1.0)
    up = (y - y_range[0]) / ((y_range[1] - y_range[0]) or 1.0)
    vertical = "bottom" if up > 0.85 else "top"
    horizontal = "left" if across > 0.85 else "right" if across < 0.15 else "center"
    return f"{vertical} {horizontal}"


def _map_trace(group: str, rows: list[int], projected: forward.Projection, dims: int, names, placed):
    coords = projected.coords
    axes = dict(x=coords[rows, 0].tolist(), y=coords[rows, 1].tolist())
    if dims == 3:
        axes["z"] = coords[rows, 2].tolist()
    trace = go.Scatter3d if dims == 3 else go.Scatter
    return trace(
        **axes,
        name=group,
        marker=GROUPS[group],
        hovertext=[names[r] for r in rows],
        hoverinfo="text",
        customdata=[projected.ids[r] for r in rows],
        mode="markers" if group == "common token" else "markers+text",
        text=None if group == "common token" else [names[r] if r in placed else "" for r in rows],
        textposition=[placed.get(r, "top center") for r in rows],
    )


def _map_rows(ids: list[int], groups: dict[int, str]) -> dict[str, list[int]]:
    """The rows of the projection in each of the map's groups (a token not in ``groups`` is a common token)."""
    return {group: [r for r, token in enumerate(ids) if groups.get(token, "common token") == group] for group in GROUPS}


def _map_labels(coords, ranked: list[int], names: dict[int, str], always: list[int]) -> dict[int, str]:
    """Where the map names its points (row → Plotly's ``textposition``): the ``ranked`` rows where a label has room,
    and the ``always`` rows (the token asked about and its nearest neighbour) even by the plot's edge, placed inward
    there."""
    # the plot is about 610 × 375 px on a screen 1400 px wide: the labels are spread for one of 560 × 340 (a screen of
    # about 1,300 px; on a smaller one, two labels may touch)
    x_range, y_range = axis_ranges(coords)
    places = scatter_labels.spread_labels(
        [float(coords[r, 0]) for r in ranked],
        [float(coords[r, 1]) for r in ranked],
        [names[r] for r in ranked],
        width_px=560,
        height_px=340,
        x_range=x_range,
        y_range=y_range,
    )
    placed = {r: place for r, place in zip(ranked, places) if place}
    for r in always:
        placed.setdefault(r, inward_place(float(coords[r, 0]), float(coords[r, 1]), x_range, y_range))
    return placed


def map_figure(tokenizer, projected: forward.Projection, dims: int, groups: dict[int, str]) -> go.Figure:
    """The tokens as points: grey the common ones, then yours, the looked-up one and its neighbours, labelled where a
    label has room (the others by hovering)."""
    coords = projected.coords
    rows = _map_rows(projected.ids, groups)
    ranked = [r for group in reversed(list(GROUPS)) if group != "common token" for r in rows[group]]
    names = {r: tokenizer.printable(projected.ids[r]) for r in range(len(projected.ids))}
    x_range, y_range = axis_ranges(coords)
    placed = _map_labels(coords, ranked, names, rows["looked up"] + rows["nearest neighbours"][:1])
    figure = go.Figure()
    for group in GROUPS:
        if rows[group]:
            figure.add_trace(_map_trace(group, rows[group], projected, dims, names, placed))
    figure.update_layout(
        height=560 if dims == 3 else 480,
        margin=charts.margins(30),
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0),
    )
    if dims == 2:  # the axes' ranges fixed (Plotly's own grow with the labels): the labels were spread for them
        figure.update_layout(
            xaxis=dict(title=dict(text="PC1"), range=list(x_range)),
            yaxis=dict(title=dict(text="PC2"), range=list(y_range)),
            clickmode="event+select",
        )
    return figure


def map_words(tokenizer, projected: forward.Projection, groups: dict[int, str]) -> str:
    """The map's sentence (``embeddings.map_words``) from the points it draws: each group's count, the looked-up
    token's point and its nearest neighbours' points."""
    rows = _map_rows(projected.ids, groups)
    point = {r: projected.coords[r].tolist() for r in range(len(projected.ids))}
    name = {r: tokenizer.printable(projected.ids[r]) for r in point}
    asked = rows["looked up"][:1]
    return embeddings.map_words(
        {group: len(members) for group, members in rows.items()},
        (name[asked[0]], point[asked[0]]) if asked else None,
        [(name[r], point[r]) for r in rows["nearest neighbours"]],
    )


def signed_heatmap(matrix, x_labels, y_labels, title: str, **options) -> go.Figure:
    """A heatmap of signed numbers: red below zero, blue above (no numbers written unless asked)."""
    return charts.heatmap(
        matrix, x_labels, y_labels, colorscale="RdBu", zmid=0, title=title, **{"text_format": None, **options}
    )


def cosine_view(a: torch.Tensor, b: torch.Tensor, a_name: str, b_name: str, parts) -> None:
    """Two vectors' cosine worked out (left) and their angle drawn (right)."""
    left, right = st.columns([3, 2])
    with left:
        charts.latex(*cosine_latex(a, b, a_name, b_name, parts))
        if [round(x, 6) for x in a.tolist()] == [0.2, 0.4, 0.9] and a_name == "v₁":
            st.info(
                "Check the squares by hand: 0.2² = 0.04 (not 0.2), so ‖v₁‖² = 0.04 + 0.16 + 0.81 = 1.01. "
                "Forgetting to square the 0.2 gives 1.17, and cosines that come out too low. Every number "
                "above is computed."
            )
    with right:
        charts.show(
            angle_figure(parts.angle_degrees, a_name, b_name),
            width="stretch",
            words=embeddings.angle_words(parts.angle_degrees, a_name, b_name),
        )
        st.caption("The two directions, drawn in the plane they span (unit length): cosine only cares about the angle.")


def token_vectors(tokenizer, table: torch.Tensor, ids: list[int]) -> None:
    """Your tokens' rows as numbers, and how alike each two are."""
    st.subheader("Your tokens' vectors")
    labels = charts.unique_labels([tokenizer.printable(i) for i in ids])
    vectors_ = embeddings.lookup(table, ids)
    one_hot = embeddings.one_hot_lookup(table, ids)
    st.markdown(
        f"Lookup two ways — `table[ids]` and `one_hot(ids) @ table` — largest difference: "
        f"**{float((one_hot - vectors_).abs().max()):.1e}** (the same rows)."
    )
    shown_dims = min(48, table.shape[1])
    left, right = st.columns(2)
    charts.show_in(
        left,
        signed_heatmap(
            vectors_[:, :shown_dims],
            list(range(shown_dims)),
            labels,
            f"vectors (first {shown_dims} dimensions)",
            x_title="dimension",
            height=440,
        ),
        width="stretch",
        words=embeddings.vectors_words(labels, vectors_[:, :shown_dims].tolist()),
    )
    with right:
        if len(ids) >= 2:
            cosines = embeddings.cosine_matrix(vectors_)
            charts.show_in(
                right,
                signed_heatmap(
                    cosines,
                    labels,
                    labels,
                    "cosine similarity",
                    text_format=".2f" if len(ids) <= 12 else None,
                    height=440,
                ),
                width="stretch",
                words=embeddings.cosine_words(labels, cosines.tolist()),
            )
            with st.expander("Work out one cell: two of your tokens' cosine"):
                worked_pair(vectors_, labels)
        else:
            st.info("Add a second token to compare.")


def worked_pair(vectors_: torch.Tensor, labels: list[str]) -> None:
    """One cell of the cosine matrix worked out: two of the student's tokens (the first two unless chosen), their dot
    product over every dimension, both lengths and the cosine (the cell's number)."""
    c1, c2 = st.columns(2)
    first = c1.selectbox("Work out", range(len(labels)), 0, format_func=labels.__getitem__, **share.bind("cos_a"))
    second = c2.selectbox("and", range(len(labels)), 1, format_func=labels.__getitem__, **share.bind("cos_b"))
    a, b = vectors_[first].double(), vectors_[second].double()  # (d,), (d,)
    parts = embeddings.cosine_parts(a, b)
    shown = 3  # the first terms of each sum, then its total over all d dimensions
    products = " + ".join(f"({x:.3f})({y:.3f})" for x, y in zip(a[:shown].tolist(), b[:shown].tolist()))
    charts.latex(
        rf"a \cdot b = {products} + \dots \;(\text{{{len(a)} terms}}) = {parts.dot:.4f}",
        rf"\lVert a \rVert = {parts.norm_a:.4f},\quad \lVert b \rVert = {parts.norm_b:.4f}",
        rf"\cos\theta = \frac{{{parts.dot:.4f}}}{{{parts.norm_a:.4f} \times {parts.norm_b:.4f}}} = {parts.cosine:.4f}",
    )
    st.caption(f"a = {literal_markdown(labels[first])}, b = {literal_markdown(labels[second])}: their cell above.")
