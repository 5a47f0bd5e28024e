"""The Embeddings page's lesson on positions, whole: the sinusoidal table, token + position = the input of block 0
(for your sentence through the picked model), and rotary positions (RoPE) with the scores that depend only on how far
apart two tokens are. Its sections own their widgets; the numbers come from llmviz.lessons.embeddings and
llmviz.lessons.architectures; stages/embeddings.py opens it as the tab Positions."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

import llmviz.lessons.quiz
from llmviz.lessons import architectures, defaults, embeddings, forward
from llmviz.tokenizers.ids import encode
from ui import boxes, charts, picker, sections, share, state
from ui.panels import quiz
from ui.panels.embeddings import signed_heatmap
from ui.sources import ModelView
from ui.text import literal_markdown


def sinusoidal_lines(encoding: torch.Tensor, shown: list[int]) -> go.Figure:
    """Chosen dimensions of the sinusoidal encoding along the positions."""
    figure = go.Figure()
    for dim in shown:
        figure.add_trace(
            go.Scatter(
                x=list(range(encoding.shape[0])),
                y=encoding[:, dim].tolist(),
                mode="lines",
                name=f"dim {dim} ({'sin' if dim % 2 == 0 else 'cos'})",
            )
        )
    figure.update_layout(height=360, xaxis_title="position", margin=charts.margins(10))
    return figure


def rope_angles_heatmap(angles: torch.Tensor) -> go.Figure:
    """The angle of every pair at every position, wrapped to [0, 2π)."""
    positions, half = angles.shape
    return charts.heatmap(
        torch.remainder(angles, 2 * math.pi),
        list(range(half)),
        list(range(positions)),
        colorscale="Twilight",
        text_format=None,
        zmin=0,
        zmax=2 * math.pi,
        title="angle of pair i at position p (mod 2π)",
        x_title="pair i",
        y_title="position p",
    )


def rope_circle(angles: torch.Tensor, pairs: list[int]) -> go.Figure:
    """A unit pair turned at positions 0…15, one line per pair."""
    figure = go.Figure()
    for pair in pairs:
        turned = angles[: min(angles.shape[0], 16), pair]
        figure.add_trace(
            go.Scatter(
                x=torch.cos(turned).tolist(),
                y=torch.sin(turned).tolist(),
                mode="lines+markers+text" if pair == 0 else "lines+markers",
                name=f"pair {pair}",
                text=[str(p) for p in range(len(turned))],
                textposition="top right",
            )
        )
    figure.update_layout(
        height=360,
        margin=charts.margins(30),
        title="a unit pair turned at positions 0…15 (numbers: pair 0)",
        xaxis=dict(range=[-1.2, 1.2], scaleanchor="y"),
        yaxis=dict(range=[-1.2, 1.2]),
    )
    return figure


def rope_pairs_table(angles, pairs: list[int], head_dim: int):
    """Each shown pair's dimensions, speed and wavelength."""
    frame = pd.DataFrame(
        {
            "pair i": pairs,
            "dimensions": [f"{i} and {i + head_dim // 2}" for i in pairs],
            "radians per position": [float(angles.frequencies[i]) for i in pairs],
            "positions per full turn": [float(angles.wavelengths[i]) for i in pairs],
        }
    )
    return frame.style.format({"radians per position": "{:.6f}", "positions per full turn": "{:,.1f}"})


def rope_distance_figure(by_distance: dict[int, tuple[float, float]]) -> go.Figure:
    """The rotated score against the distance m − n."""
    distances = list(by_distance)
    figure = go.Figure(go.Scatter(x=distances, y=[by_distance[d][0] for d in distances], mode="lines+markers"))
    figure.update_layout(
        height=360,
        margin=charts.margins(30),
        title="score against distance m − n",
        xaxis_title="distance m − n",
        yaxis_title="q·k",
    )
    return figure


def token_plus_position_view(
    tok: torch.Tensor, pos: torch.Tensor, tokens: list[str], model_label: str, learned: bool
) -> None:
    """The token rows, the position rows and their sum, side by side (the first 32 dimensions); ``tokens`` as the
    tokenizer prints them (a repeated token is numbered on the pictures' rows, and named as itself in their words)."""
    width = min(32, tok.shape[1])
    panels = st.columns(3)
    labels = charts.unique_labels(tokens)
    said = embeddings.token_position_words(tokens, tok[:, :width].tolist(), pos[:, :width].tolist())
    for panel, (title, matrix), sentence in zip(
        panels, [("token embedding", tok), ("+ position embedding", pos), ("= input to block 0", tok + pos)], said
    ):
        charts.show_in(
            panel,
            signed_heatmap(matrix[:, :width], list(range(width)), labels, title),
            width="stretch",
            words=sentence,
        )
    st.caption(
        (
            "GPT learns its position table instead of using sines"
            if learned
            else f"{model_label} adds the sinusoidal table above"
        )
        + f"; the first {width} of {tok.shape[1]} dimensions are shown."
    )


def rope_scores(scores) -> None:
    """The rotated scores at every (m, n), against the distance m − n, and the equation that says why."""
    num = charts.tex_number
    left, right = st.columns(2)
    shown = scores.scores.shape[0]
    charts.show_in(
        left,
        signed_heatmap(
            scores.scores,
            list(range(shown)),
            list(range(shown)),
            "rotated q at m · rotated k at n",
            x_title="key position n",
            y_title="query position m",
            height=420,
        ),
        width="stretch",
        words=embeddings.rope_scores_words(scores.scores.tolist()),
    )
    with right:
        distances = list(scores.by_distance)
        charts.show(
            rope_distance_figure(scores.by_distance),
            width="stretch",
            words=embeddings.rope_distance_words(distances, [scores.by_distance[d][0] for d in distances]),
        )
    low = scores.by_distance[3][0]
    spread = max(high - low_ for low_, high in scores.by_distance.values())
    charts.equation(
        rf"(R_m q)^\top (R_n k) = q^\top R_{{n-m}}\, k:\quad "
        rf"s(3, 0) = s(10, 7) = s({shown - 1}, {shown - 4}) = {num(low, '.4f')}"
        rf"\qquad \text{{unrotated: }} q \cdot k = {num(scores.plain, '.4f')}"
    )
    st.caption(
        f"The largest spread along any diagonal is {spread:.1e} (float32 rounding). Learned positions give "
        "each position its own vector, so nothing forces this; with RoPE 'how far apart' is built in."
    )


@st.cache_data(show_spinner=False, max_entries=64)
def input_rows(model_key: str, sentence: str, _view: ModelView):
    ids = encode(_view.tokenizer, sentence)
    rows = forward.input_embeddings(_view.model, ids)
    return ids[: len(rows[0])] if rows else ids, rows


@sections.section("embeddings.sinusoidal")
def sinusoidal() -> None:
    c1, c2 = st.columns(2)
    positions = c1.slider("Positions", 2, 256, 64, **share.bind("sin_positions"))
    d_model = c2.slider("d_model", 2, 256, 64, step=2, **share.bind("sin_d_model"))
    encoding = embeddings.sinusoidal_encoding(positions, d_model)
    left, right = st.columns(2)
    charts.show_in(
        left,
        signed_heatmap(
            encoding,
            list(range(d_model)),
            list(range(positions)),
            "PE[pos, i]",
            x_title="dimension i",
            y_title="position",
        ),
        width="stretch",
        words=embeddings.encoding_words(encoding.tolist()),
    )
    with right:
        default = [d for d in (0, 1, 4, 10) if d < d_model]
        shown = st.multiselect("Dimensions", list(range(d_model)), default=default, **share.bind("sin_dims"))
        charts.show(
            sinusoidal_lines(encoding, shown),
            width="stretch",
            words=embeddings.sinusoid_words(d_model, shown, positions),
        )
    st.latex(
        r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\quad "
        r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)"
    )
    if d_model >= 4 and positions >= 2:
        charts.equation(
            rf"PE_{{(1,\,2)}} = \sin\!\left(\frac{{1}}{{10000^{{2/{d_model}}}}}\right) = {float(encoding[1, 2]):.4f}"
        )


@sections.section("embeddings.token_plus_position")
def token_plus_position() -> None:
    view = picker.current()
    positions = getattr(getattr(view.model, "config", None), "positions", "learned")
    tables = {"learned": "learned tables", "sinusoidal": "learned token table, sinusoidal positions"}.get(positions)
    st.subheader(
        f"Token + position = input, for your sentence ({literal_markdown(view.label)}"
        + (f"'s {tables})" if tables else ")")
    )
    opening = state.follow_default("positions_text", view.tokenizer, *defaults.openings(defaults.POSITIONS_TEXT))
    sentence = boxes.text_input("Sentence", opening, 500, "Your sentence", **share.bind("positions_text"))
    if view.family == "minilm":
        st.info("MiniLM adds a position and a segment vector too; this view shows GPTs' two tables.")
        return
    sentence_ids, rows = input_rows(view.content_key, sentence, view)
    if not sentence_ids:
        st.warning("Type a sentence.")
    elif rows is None:
        st.info(
            f"{literal_markdown(view.label)} adds no position table (it reads a fixed window or a running state): "
            f"pick a GPT."
        )
    elif getattr(getattr(view.model, "config", None), "positions", "learned") in ("rope", "none"):
        kind = view.model.config.positions
        st.info(
            f"{literal_markdown(view.label)} adds no position vector to its token vectors: "
            + (
                "it rotates each query and key by its position inside attention (RoPE, next section)."
                if kind == "rope"
                else "it has no position information at all (NoPE): only the causal mask "
                "tells it which tokens came first."
            )
        )
    else:
        tok, pos = rows
        tokens = [view.tokenizer.printable(i) for i in sentence_ids]
        learned = getattr(getattr(view.model, "config", None), "positions", "learned") == "learned"
        token_plus_position_view(tok, pos, tokens, view.label, learned)


@st.cache_data(show_spinner=False, max_entries=16)
def rope_numbers(head_dim: int, theta: float, positions: int):
    return (
        architectures.rope_angles(head_dim, theta, positions),
        architectures.rope_scores(head_dim, theta, min(positions, 48)),
    )


@sections.section("embeddings.rope")
def rotary_positions() -> None:
    st.subheader("Rotary positions (RoPE): turning instead of adding")
    st.markdown(
        "Llama, Qwen, Mistral and SmolLM add **no** position vector. Inside attention they split each query "
        "and key (head_dim numbers) into pairs and **turn** every pair by an angle: position × its "
        "frequency. Pair 0 turns fast, the last pair barely moves, like the hands of a clock."
    )
    c1, c2, c3 = st.columns(3)
    head_dim = c1.select_slider("head_dim", [8, 16, 32, 64, 128], value=64, **share.bind("head_dim"))
    theta = c2.select_slider(
        "Base θ",
        [100.0, 10_000.0, 100_000.0, 500_000.0, 1_000_000.0],
        value=10_000.0,
        **share.bind("rope_theta"),
        format_func=lambda t: f"{t:,.0f}",
        help="10,000 in the RoPE paper and Llama 2, 100,000 in SmolLM2, 500,000 in Llama 3, "
        "1,000,000 in Qwen2: a larger base turns the slow pairs slower still.",
    )
    positions = c3.slider("Positions", 8, 256, 64, step=8, **share.bind("rope_positions"))
    angles, scores = rope_numbers(head_dim, theta, positions)
    left, right = st.columns(2)
    charts.show_in(
        left,
        rope_angles_heatmap(angles.angles),
        width="stretch",
        words=embeddings.rope_angle_words(angles.frequencies.tolist()),
    )
    pairs = sorted({0, 1, head_dim // 8, head_dim // 2 - 1})
    last = min(angles.angles.shape[0], 16) - 1
    with right:
        charts.show(
            rope_circle(angles.angles, pairs),
            width="stretch",
            words=embeddings.rope_circle_words(
                pairs, [float(angles.angles[last, p]) / (2 * math.pi) for p in pairs], last
            ),
        )
    st.subheader("Each pair turns at its own speed")  # a slide of its own in presenter mode
    st.dataframe(rope_pairs_table(angles, pairs, head_dim), hide_index=True, width="stretch")
    pair = pairs[1]
    charts.equation(
        rf"\text{{angle}}(p, i) = p \cdot \theta^{{-2i/d_{{head}}}}:\quad "
        rf"\text{{angle}}(3, {pair}) = 3 \cdot {theta:,.0f}^{{-{2 * pair}/{head_dim}}} "
        rf"= {3 * float(angles.frequencies[pair]):.4f}\ \text{{radians}}"
    )
    quiz.section("rope", lambda: [llmviz.lessons.quiz.rope_question(head_dim, theta)])
    st.subheader("The score depends only on how far apart")
    st.markdown(
        "Put the **same** query and key at every pair of positions (m for the query, n for the key) and "
        "take their dot product after rotating: every diagonal (the same distance m − n) holds one number, "
        "because turning both by m and n leaves only the turn by m − n between them."
    )
    rope_scores(scores)


def positions_lesson() -> None:
    st.header("3. Positions: sinusoidal, learned and rotary (RoPE)")
    sinusoidal()
    token_plus_position()
    rotary_positions()
