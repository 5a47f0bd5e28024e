"""The Embeddings page: token vectors, positions, cosine similarity, projections, word2vec, real sentence embeddings."""

import functools
import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

import ui
from llmviz.errors import LlmvizError
from llmviz.jobs import tasks as lab_tasks
from llmviz.lessons import architectures
from llmviz.lessons import embeddings as emb
from llmviz.lessons import forward as views
from ui import charts, picker, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.panels import runs as training
from ui.text import literal_markdown, tidy_floats

settings = ui.settings()
ui.page_header(
    "Embeddings: tokens become vectors",
    "Each token id picks one row of a learned table: a vector. Tokens used alike get vectors that point the same way.",
)
# tokens of the Python manual the shipped GPT reads whole: function words, modal verbs and Python's nouns, which its
# table groups (is, are, be; must, can; class, instance; list, tuple)
DEFAULT_WORDS = " the a is are be must can will class instance function method list tuple value name"
DEFAULT_QUERY = " is"  # neighbours: are, was, be, then, will, must


# ------------------------------------------------------------------ worked example


@sections.section("embeddings.cosine")
def cosine_example() -> None:
    defaults = ["0.2, 0.4, 0.9", "0.1, 0.5, 0.8", "0.7, 0.2, 0.1"]
    names = ["v₁", "v₂", "v₃"]
    columns = st.columns(3)
    vectors = {}
    for column, name, default in zip(columns, names, defaults):
        raw = column.text_input(name, default, key=state.widget("vec_", name))
        try:
            vectors[name] = emb.parse_vector(raw)
        except LlmvizError as error:
            column.error(str(error))
    pair = st.radio(
        "Compare",
        [("v₁", "v₂"), ("v₁", "v₃"), ("v₂", "v₃")],
        horizontal=True,
        format_func=lambda p: f"{p[0]} and {p[1]}",
    )
    a_name, b_name = pair
    if a_name in vectors and b_name in vectors:
        a, b = vectors[a_name], vectors[b_name]
        try:
            parts = emb.cosine_parts(a, b)
        except LlmvizError as error:
            st.error(str(error))
            if a.shape == b.shape:
                st.metric("Euclidean distance", f"{emb.euclidean(a, b):.4f}")
        else:
            num = charts.tex_number
            products = " + ".join(f"({x:g})({y:g})" for x, y in zip(a.tolist(), b.tolist()))
            squares_a = " + ".join(f"{num(x)}^2" for x in a.tolist())
            squares_b = " + ".join(f"{num(y)}^2" for y in b.tolist())
            left, right = st.columns([3, 2])
            with left:
                distance_terms = " + ".join(f"({num(x)} - {num(y)})^2" for x, y in zip(a.tolist(), b.tolist()))
                charts.latex(
                    rf"{a_name} \cdot {b_name} = {products} = {parts.dot:.4f}",
                    rf"\lVert {a_name} \rVert = \sqrt{{{squares_a}}} = \sqrt{{{parts.norm_a**2:.4f}}} = "
                    rf"{parts.norm_a:.4f}",
                    rf"\lVert {b_name} \rVert = \sqrt{{{squares_b}}} = \sqrt{{{parts.norm_b**2:.4f}}} = "
                    rf"{parts.norm_b:.4f}",
                    rf"\cos\theta = \frac{{{parts.dot:.4f}}}{{{parts.norm_a:.4f} \times {parts.norm_b:.4f}}} = "
                    rf"{parts.cosine:.4f}"
                    rf"\quad\Rightarrow\quad \theta = {parts.angle_degrees:.1f}^\circ",
                    rf"d({a_name}, {b_name}) = \sqrt{{{distance_terms}}} = {parts.euclidean:.4f}",
                )
                if [round(x, 6) for x in a.tolist()] == [0.2, 0.4, 0.9] and a_name == "v₁":
                    st.info(
                        "Check the squares by hand: 0.2² = 0.04 (not 0.2), so ‖v₁‖² = 0.04 + 0.16 + 0.81 = 1.01. "
                        "Forgetting to square the 0.2 gives 1.17, and cosines that come out too low. Every number "
                        "above is computed."
                    )
            with right:
                theta = math.radians(parts.angle_degrees)
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
                        name=f"θ = {parts.angle_degrees:.1f}°",
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
                charts.show(figure, width="stretch")
                st.caption(
                    "The two directions, drawn in the plane they span (unit length): cosine only cares about the angle."
                )


def cosine_lesson() -> None:
    st.header("2. Cosine similarity, worked out")
    st.caption(
        "Three sentences as made-up 3-dimensional vectors (edit them): 'I love programming', 'I enjoy coding' "
        "and 'I dislike programming'."
    )
    cosine_example()


# ------------------------------------------------------------------ 2. token embeddings of the picked model
@st.cache_data(show_spinner=False, max_entries=128)
def neighbours_of(model_key: str, token: int, _table: torch.Tensor) -> views.Neighbours:
    return views.neighbours(_table, token, k=10)


@st.cache_data(show_spinner="Projecting the table…", max_entries=64)
def projection(model_key: str, ids: tuple[int, ...], dims: int, _table: torch.Tensor) -> views.Projection:
    return views.project(_table, list(ids), dims)


def neighbour_table(view: picker.ModelView, found: views.Neighbours) -> pd.DataFrame:
    return tidy_floats(
        pd.DataFrame(
            {"token": [view.tokenizer.printable(i) for i in found.ids], "id": found.ids, "cosine": found.cosines}
        )
    )


def show_neighbours(frame: pd.DataFrame, **options) -> None:
    """A table of nearest neighbours, every cosine to 4 decimals (a column of 0.57 beside 0.4519 read as if the two
    had been measured differently)."""
    st.dataframe(frame.style.format({"cosine": "{:.4f}"}), hide_index=True, width="stretch", **options)


def look_up_clicked(tokenizer) -> None:
    """A click on a token of the map: look up its nearest neighbours (the text box above the map takes it)."""
    chosen = state.value(state.widget("embedding_map")) or {}
    points = chosen.get("selection", {}).get("points", [])
    data = points[0].get("customdata") if points else None
    token = data[0] if isinstance(data, list) and data else data
    if isinstance(token, int | float):
        state.set_value("gpt_nn", tokenizer.decode([int(token)]))


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


def map_figure(view: picker.ModelView, projected: views.Projection, dims: int, groups: dict[int, str]) -> go.Figure:
    """The tokens as points: grey the common ones, then yours, the looked-up one and its neighbours, labelled where a
    label has room (the others by hovering)."""
    tokenizer, coords = view.tokenizer, projected.coords
    rows = {
        group: [r for r, token in enumerate(projected.ids) if groups.get(token, "common token") == group]
        for group in GROUPS
    }
    ranked = [r for group in reversed(list(GROUPS)) if group != "common token" for r in rows[group]]
    names = {r: tokenizer.printable(projected.ids[r]) for r in range(len(projected.ids))}
    # the plot is about 610 × 375 px on a screen 1400 px wide: the labels are spread for one of 560 × 340 (a screen of
    # about 1,300 px; on a smaller one, two labels may touch)
    x_range, y_range = axis_ranges(coords)
    places = charts.spread_labels(
        [float(coords[r, 0]) for r in ranked],
        [float(coords[r, 1]) for r in ranked],
        [names[r] for r in ranked],
        width_px=560,
        height_px=340,
        x_range=x_range,
        y_range=y_range,
    )
    placed = {r: place for r, place in zip(ranked, places) if place}
    figure = go.Figure()
    for group, marker in GROUPS.items():
        if not rows[group]:
            continue
        axes = dict(x=coords[rows[group], 0].tolist(), y=coords[rows[group], 1].tolist())
        if dims == 3:
            axes["z"] = coords[rows[group], 2].tolist()
        trace = go.Scatter3d if dims == 3 else go.Scatter
        figure.add_trace(
            trace(
                **axes,
                name=group,
                marker=marker,
                hovertext=[names[r] for r in rows[group]],
                hoverinfo="text",
                customdata=[projected.ids[r] for r in rows[group]],
                mode="markers" if group == "common token" else "markers+text",
                text=None if group == "common token" else [names[r] if r in placed else "" for r in rows[group]],
                textposition=[placed.get(r, "top center") for r in rows[group]],
            )
        )
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


@sections.section("embeddings.projection")
def embedding_map(view: picker.ModelView, table: torch.Tensor, ids: list[int]) -> None:
    """The key picture: the table's tokens as a 2D/3D map, the looked-up token and its nearest neighbours. The map's
    switch, the looked-up token and a click on the map re-draw only this part."""
    tokenizer = view.tokenizer
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    query_text = c1.text_input("Nearest neighbours of", DEFAULT_QUERY, **share.bind("gpt_nn"))
    dims = c2.radio("Projection", [2, 3], horizontal=True, format_func=lambda d: f"{d}D PCA")
    query_ids = views.encode(tokenizer, query_text)
    found = neighbours_of(view.content_key, query_ids[0], table) if query_ids else None
    groups = {token: "your tokens" for token in ids}
    groups |= {token: "nearest neighbours" for token in (found.ids if found else [])}
    groups |= {token: "looked up" for token in query_ids[:1]}
    population = views.common_tokens(table.shape[0])
    projected = projection(view.content_key, tuple(dict.fromkeys(population + list(groups))), dims, table)
    left, right = st.columns([3, 1])
    with left:
        charts.show(
            map_figure(view, projected, dims, groups),
            width="stretch",
            **(
                dict(
                    key=state.widget("embedding_map"),
                    on_select=functools.partial(look_up_clicked, tokenizer),
                    selection_mode="points",
                )
                if dims == 2
                else {}
            ),
        )
    with right:
        if len(query_ids) != 1:
            st.warning(
                f"{literal_markdown(repr(query_text))} is {len(query_ids)} tokens for this tokenizer; the neighbours "
                "of its first token are shown."
                if query_ids
                else "Type a token to look up."
            )
        if found is not None:
            st.markdown(f"**Nearest to {literal_markdown(repr(tokenizer.printable(query_ids[0])))}**")
            show_neighbours(neighbour_table(view, found))
    st.caption(
        f"{literal_markdown(view.label)}: a {table.shape[0]:,} × {table.shape[1]} table, one learned row per token. "
        f"{len(population)} common tokens (grey), yours, the looked-up token and its nearest neighbours, projected on "
        f"the {dims} directions of largest spread ({projected.explained:.0%} of the variance)"
        + (": click a point to look it up, hover a grey one for its token. " if dims == 2 else ". ")
        + f"Neighbours by cosine in all {table.shape[1]} dimensions need not look close in {dims}D."
    )


@sections.section("embeddings.neighbours_before_after")
def neighbours_before_after(query_text: str) -> None:
    """The nearest neighbours of one token at step 0 and at the picked step."""

    def render(shown: picker.ModelView, column: str) -> None:
        table = views.embedding_table(shown.model)
        query_ids = views.encode(shown.tokenizer, query_text)
        if table is None or not query_ids:
            st.info("Nothing to compare here.")
            return
        show_neighbours(
            neighbour_table(shown, neighbours_of(shown.content_key, query_ids[0], table)),
            key=state.widget("nn_", column),
        )

    picker.before_after(render, what="the nearest neighbours")


def token_vectors(view: picker.ModelView, table: torch.Tensor, ids: list[int]) -> None:
    """Your tokens' rows as numbers, and how alike each two are."""
    tokenizer = view.tokenizer
    st.subheader("Your tokens' vectors")
    labels = charts.unique_labels([tokenizer.printable(i) for i in ids])
    vectors_ = emb.lookup(table, ids)
    one_hot = emb.one_hot_lookup(table, ids)
    st.markdown(
        f"Lookup two ways — `table[ids]` and `one_hot(ids) @ table` — largest difference: "
        f"**{float((one_hot - vectors_).abs().max()):.1e}** (the same rows)."
    )
    shown_dims = min(48, table.shape[1])
    left, right = st.columns(2)
    charts.show_in(
        left,
        charts.heatmap(
            vectors_[:, :shown_dims],
            list(range(shown_dims)),
            labels,
            colorscale="RdBu",
            zmid=0,
            text_format=None,
            title=f"vectors (first {shown_dims} dimensions)",
            x_title="dimension",
            height=440,
        ),
        width="stretch",
    )
    with right:
        if len(ids) >= 2:
            charts.show_in(
                right,
                charts.heatmap(
                    emb.cosine_matrix(vectors_),
                    labels,
                    labels,
                    colorscale="RdBu",
                    zmid=0,
                    title="cosine similarity",
                    text_format=".2f" if len(ids) <= 12 else None,
                    height=440,
                ),
                width="stretch",
            )
        else:
            st.info("Add a second token to compare.")


@sections.section("embeddings.tokens")
def token_embeddings() -> None:
    view = picker.current()
    st.header("1. The embedding space of the picked model")
    table = views.embedding_table(view.model) if view.family != "minilm" else None
    if table is None:
        st.info(
            f"{literal_markdown(view.label)} has no token-embedding table of its own to show here (it counts pairs "
            "or is a sentence encoder): pick a GPT or one of your runs in the sidebar. MiniLM's sentence embeddings "
            "are in the tab Sentence embeddings below."
        )
        return
    typed = st.text_input(
        "Tokens to compare", DEFAULT_WORDS, help="Words are split into the model's tokens.", **share.bind("words")
    )
    share.carried_note("words")
    ids = list(dict.fromkeys(views.encode(view.tokenizer, typed)))[:24]
    embedding_map(view, table, ids)
    if not ids:
        st.warning("Type some text: there are no tokens to compare.")
    else:
        token_vectors(view, table, ids)
    if view.run_id is not None:  # a run has steps: its table at step 0 was random
        query_text = state.value("gpt_nn") or DEFAULT_QUERY
        st.subheader("Step 0 vs step N: the nearest neighbours")
        st.caption(
            "At step 0 the table is random, so the neighbours are arbitrary; training pulls tokens used alike together."
        )
        if box := sections.lazy("Compare step 0 with the picked step", "embeddings_before_after"):
            with box:
                neighbours_before_after(query_text)


# ------------------------------------------------------------------ 3. positions
@st.cache_data(show_spinner=False, max_entries=64)
def input_rows(model_key: str, sentence: str, _view: picker.ModelView):
    ids = views.encode(_view.tokenizer, sentence)
    rows = views.input_embeddings(_view.model, ids)
    return ids[: len(rows[0])] if rows else ids, rows


@sections.section("embeddings.sinusoidal")
def sinusoidal() -> None:
    c1, c2 = st.columns(2)
    positions = c1.slider("Positions", 2, 256, 64)
    d_model = c2.slider("d_model", 2, 256, 64, step=2)
    encoding = emb.sinusoidal_encoding(positions, d_model)
    left, right = st.columns(2)
    charts.show_in(
        left,
        charts.heatmap(
            encoding,
            list(range(d_model)),
            list(range(positions)),
            colorscale="RdBu",
            zmid=0,
            text_format=None,
            title="PE[pos, i]",
            x_title="dimension i",
            y_title="position",
        ),
        width="stretch",
    )
    with right:
        shown = st.multiselect("Dimensions", list(range(d_model)), default=[d for d in (0, 1, 4, 10) if d < d_model])
        figure = go.Figure()
        for dim in shown:
            figure.add_trace(
                go.Scatter(
                    x=list(range(positions)),
                    y=encoding[:, dim].tolist(),
                    mode="lines",
                    name=f"dim {dim} ({'sin' if dim % 2 == 0 else 'cos'})",
                )
            )
        figure.update_layout(height=360, xaxis_title="position", margin=charts.margins(10))
        charts.show(figure, width="stretch")
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
    sentence = st.text_input("Sentence", "for x in range(10):")
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
        width = min(32, tok.shape[1])
        labels = charts.unique_labels([view.tokenizer.printable(i) for i in sentence_ids])
        panels = st.columns(3)
        for panel, (title, matrix) in zip(
            panels, [("token embedding", tok), ("+ position embedding", pos), ("= input to block 0", tok + pos)]
        ):
            charts.show_in(
                panel,
                charts.heatmap(
                    matrix[:, :width],
                    list(range(width)),
                    labels,
                    colorscale="RdBu",
                    zmid=0,
                    text_format=None,
                    title=title,
                ),
                width="stretch",
            )
        learned = getattr(getattr(view.model, "config", None), "positions", "learned") == "learned"
        st.caption(
            (
                "GPT learns its position table instead of using sines"
                if learned
                else f"{view.label} adds the sinusoidal table above"
            )
            + f"; the first {width} of {tok.shape[1]} dimensions are shown."
        )


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
    positions = c3.slider("Positions", 8, 256, 64, step=8)
    angles, scores = rope_numbers(head_dim, theta, positions)
    left, right = st.columns(2)
    wrapped = torch.remainder(angles.angles, 2 * math.pi)
    charts.show_in(
        left,
        charts.heatmap(
            wrapped,
            list(range(head_dim // 2)),
            list(range(positions)),
            colorscale="Twilight",
            text_format=None,
            zmin=0,
            zmax=2 * math.pi,
            title="angle of pair i at position p (mod 2π)",
            x_title="pair i",
            y_title="position p",
        ),
        width="stretch",
    )
    pairs = sorted({0, 1, head_dim // 8, head_dim // 2 - 1})
    with right:
        figure = go.Figure()
        for pair in pairs:
            turned = angles.angles[: min(positions, 16), pair]
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
        charts.show(figure, width="stretch")
    st.subheader("Each pair turns at its own speed")  # a slide of its own in presenter mode
    frame = pd.DataFrame(
        {
            "pair i": pairs,
            "dimensions": [f"{i} and {i + head_dim // 2}" for i in pairs],
            "radians per position": [float(angles.frequencies[i]) for i in pairs],
            "positions per full turn": [float(angles.wavelengths[i]) for i in pairs],
        }
    )
    st.dataframe(
        frame.style.format({"radians per position": "{:.6f}", "positions per full turn": "{:,.1f}"}),
        hide_index=True,
        width="stretch",
    )
    num = charts.tex_number
    pair = pairs[1]
    charts.equation(
        rf"\text{{angle}}(p, i) = p \cdot \theta^{{-2i/d_{{head}}}}:\quad "
        rf"\text{{angle}}(3, {pair}) = 3 \cdot {theta:,.0f}^{{-{2 * pair}/{head_dim}}} "
        rf"= {3 * float(angles.frequencies[pair]):.4f}\ \text{{radians}}"
    )
    quiz_ui.section("rope", lambda: [architectures.rope_question(head_dim, theta)])
    st.subheader("The score depends only on how far apart")
    st.markdown(
        "Put the **same** query and key at every pair of positions (m for the query, n for the key) and "
        "take their dot product after rotating: every diagonal (the same distance m − n) holds one number, "
        "because turning both by m and n leaves only the turn by m − n between them."
    )
    left, right = st.columns(2)
    shown = scores.scores.shape[0]
    charts.show_in(
        left,
        charts.heatmap(
            scores.scores,
            list(range(shown)),
            list(range(shown)),
            colorscale="RdBu",
            zmid=0,
            text_format=None,
            title="rotated q at m · rotated k at n",
            x_title="key position n",
            y_title="query position m",
            height=420,
        ),
        width="stretch",
    )
    with right:
        distances = list(scores.by_distance)
        figure = go.Figure(
            go.Scatter(x=distances, y=[scores.by_distance[d][0] for d in distances], mode="lines+markers")
        )
        figure.update_layout(
            height=360,
            margin=charts.margins(30),
            title="score against distance m − n",
            xaxis_title="distance m − n",
            yaxis_title="q·k",
        )
        charts.show(figure, width="stretch")
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


def positions_lesson() -> None:
    st.header("3. Positions: sinusoidal, learned and rotary (RoPE)")
    sinusoidal()
    token_plus_position()
    rotary_positions()


# ------------------------------------------------------------------ 4. word2vec
@sections.section("embeddings.word2vec")
def word2vec_explorer() -> None:
    """Neighbours, analogies and the map of the trained word vectors: their inputs re-draw only this part."""
    label, trained = state.W2V.get()
    vectors_ = trained.model.center.weight.detach()
    vocab = trained.vocabulary
    asked = state.W2V_STEPS.get(default=trained.step)
    st.caption(
        f"Trained on {literal_markdown(label)} for {trained.step} steps ({len(vocab.words):,} words, loss "
        f"{trained.loss:.3f})."
        + (
            f" Stopped at step {trained.step} of {asked}: the vectors learned so far are kept."
            if trained.step < asked
            else ""
        )
    )
    left, right = st.columns(2)
    labelled: set[int] = set(range(min(40, len(vocab.words))))
    looked_up: list[int] = []  # the looked-up word and its neighbours, in orange and labelled first
    with left:
        word = st.text_input("Nearest neighbours of", emb.opening_word(vocab.words), **share.bind("w2v_nn"))
        key = word.strip().lower()
        if key not in vocab.index:
            st.warning(
                f"{literal_markdown(repr(word))} is not in the vocabulary (only the {len(vocab.words):,} most common "
                f"words are)."
            )
        else:
            neighbours = emb.nearest_neighbours(vectors_, vectors_[vocab.index[key]], 10, {vocab.index[key]})
            looked_up = [vocab.index[key], *(i for i, _ in neighbours)]
            labelled |= set(looked_up)
            st.dataframe(
                tidy_floats(
                    pd.DataFrame(
                        {"word": [vocab.words[i] for i, _ in neighbours], "cosine": [s for _, s in neighbours]}
                    )
                ),
                hide_index=True,
                width="stretch",
            )
        st.markdown("**Analogy** a − b + c")
        a1, a2, a3 = st.columns(3)
        words = [a1.text_input("a", "function"), a2.text_input("b", "functions"), a3.text_input("c", "methods")]
        missing = [w for w in words if w.strip().lower() not in vocab.index]
        if missing:
            st.warning(f"Not in the vocabulary: {literal_markdown(', '.join(missing))}.")
        else:
            i, j, k = (vocab.index[w.strip().lower()] for w in words)
            st.dataframe(
                tidy_floats(
                    pd.DataFrame([{"word": vocab.words[r], "cosine": s} for r, s in emb.analogy(vectors_, i, j, k)])
                ),
                hide_index=True,
                width="stretch",
            )
    with right:
        shown_rows = sorted(set(range(min(300, len(vocab.words)))) | labelled)
        coords, ratio = emb.pca(vectors_[shown_rows], 2)
        where = {r: n for n, r in enumerate(shown_rows)}
        ranked = list(dict.fromkeys(looked_up + sorted(labelled)))  # which labels have the first claim to room
        x_range, y_range = axis_ranges(coords)
        places = charts.spread_labels(  # the plot: about 440 × 450 px on a screen 1400 px wide
            [float(coords[where[r], 0]) for r in ranked],
            [float(coords[where[r], 1]) for r in ranked],
            [vocab.words[r] for r in ranked],
            width_px=380,
            height_px=400,
            char_px=6.0,
            x_range=x_range,
            y_range=y_range,
        )
        named = {r: place for r, place in zip(ranked, places) if place}
        highlight = set(looked_up)
        figure = go.Figure(
            go.Scatter(
                x=coords[:, 0].tolist(),
                y=coords[:, 1].tolist(),
                mode="markers+text",
                text=[vocab.words[r] if r in named else "" for r in shown_rows],
                textposition=[named.get(r, "top center") for r in shown_rows],
                textfont=dict(size=10),
                hovertext=[vocab.words[r] for r in shown_rows],
                hoverinfo="text",
                marker=dict(
                    size=[10 if r in highlight else 6 for r in shown_rows],
                    color=[
                        "#e8590c" if r in highlight else "#4c6ef5" if r in labelled else "#ced4da" for r in shown_rows
                    ],
                ),
            )
        )
        figure.update_layout(
            height=520,
            margin=charts.margins(10),
            xaxis=dict(title=dict(text="PC1"), range=list(x_range)),
            yaxis=dict(title=dict(text="PC2"), range=list(y_range)),
        )
        charts.show(figure, width="stretch")
        st.caption(
            f"The {len(shown_rows)} most common words, PCA to 2D ({float(ratio.sum()):.0%} of the variance): the "
            "looked-up word and its neighbours in orange, the 40 most common words in blue, each labelled where its "
            "label does not cover another; hover any dot for its word."
        )


def word2vec_lesson() -> None:
    st.header("4. Word2vec: learn word vectors live")
    loaded = ui.corpus_text()
    if loaded is None:
        return
    corpus_label, text = loaded
    c1, c2, c3, c4 = st.columns(4)
    dim = c1.slider("Vector size", 8, 128, 32, step=8)
    window = c2.slider("Window", 1, 5, 2)
    steps = c3.slider("Steps", 100, 5000, 1500, step=100)
    vocab_size = c4.slider("Vocabulary (most common words)", 200, 5000, 2000, step=100)
    if st.button("Train word2vec", type="primary", key=state.widget("train_w2v")):
        try:  # trains as a job of this session (a worker process), like every run
            job = picker.manager().submit_task(
                picker.session_id(),
                functools.partial(
                    lab_tasks.word2vec_training,
                    text=text[:2_000_000],
                    dim=dim,
                    window=window,
                    steps=steps,
                    max_vocab=vocab_size,
                    seed=settings.run_seed(),
                ),
                label=f"word2vec · {dim} dimensions · {corpus_label}",
                total=steps,
                returns_when_stopped=True,
                footprint=lab_tasks.word2vec_footprint(len(text[:2_000_000]), window),
            )
        except LlmvizError as error:
            st.warning(str(error))
        else:
            state.W2V_JOB.set(dict(id=job.id, corpus=corpus_label, steps=steps))
    spec = state.W2V_JOB.get()
    ended = training.follow_task(
        state.W2V_JOB,
        name="embeddings.w2v_job",
        describe=lambda status: (
            f"step {status.step}/{status.total}"
            + (f" · loss {status.losses[-1][1]:.3f}" if status.losses else " · building the vocabulary…")
        ),
    )
    if ended is not None:
        status = ended.status()
        if ended.result is None:
            st.error(status.error or f"Word2vec ended before its first step ({status.describe()}).")
        else:
            state.W2V.set((spec["corpus"], ended.result))
            state.W2V_STEPS.set(spec["steps"])
    if state.W2V.present():
        word2vec_explorer()


# ------------------------------------------------------------------ 5. MiniLM sentence embeddings


@st.cache_data(show_spinner="Running MiniLM…", max_entries=32)
def sentence_vectors(sentences: tuple[str, ...]):
    minilm = picker.load("pretrained:minilm").model
    batch = minilm.tokenize(list(sentences))
    return list(batch.truncated), list(batch.unknown), minilm.encode(list(sentences))


@sections.section("embeddings.minilm")
def sentence_embeddings() -> None:
    default_sentences = (
        "I love programming\nI enjoy coding\nI dislike programming\nThe weather is lovely today\n"
        "Python is a programming language"
    )
    minilm_sentences(default_sentences)


def minilm_lesson() -> None:
    st.header("5. Real sentence embeddings (pretrained MiniLM)")
    st.caption(
        "all-MiniLM-L6-v2: mean of the token vectors over the sentence, scaled to length 1. Cosine similarity of "
        "two sentences is then just their dot product."
    )
    sentence_embeddings()


def minilm_sentences(default_sentences: str) -> None:
    typed = st.text_area("One sentence per line", default_sentences, height=140)
    sentences = [line.strip() for line in typed.splitlines()]
    empty = sum(1 for s in sentences if not s)
    sentences = [s for s in sentences if s][:30]
    if empty:
        st.info(f"{empty} empty line(s) were skipped.")
    if not sentences:
        st.warning("Type at least one sentence.")
    else:
        with ui.friendly_errors("the MiniLM encoder"):
            truncated, unknowns, vectors_ = sentence_vectors(tuple(sentences))
            for sentence, cut, unknown in zip(sentences, truncated, unknowns):
                if cut:
                    st.warning(
                        f"{literal_markdown(repr(sentence[:40]))}… is longer than 256 wordpieces: {cut} were cut off."
                    )
                if unknown:
                    st.info(
                        f"{literal_markdown(repr(sentence[:40]))} has {unknown} piece(s) outside the vocabulary: "
                        f"they became [UNK]."
                    )
            short = charts.unique_labels([s if len(s) <= 30 else s[:28] + "…" for s in sentences])
            numbered = [f"S{n + 1}" for n in range(len(sentences))]
            left, right = st.columns(2)
            # rows carry the sentence, columns its number: long labels on both axes squash the matrix to nothing
            charts.show_in(
                left,
                charts.heatmap(
                    emb.cosine_matrix(vectors_),
                    numbered,
                    [f"S{n + 1} · {s}" for n, s in enumerate(short)],
                    colorscale="RdBu",
                    zmid=0,
                    zmin=-1,
                    zmax=1,
                    title="cosine similarity",
                    height=max(320, 34 * len(sentences) + 140),
                ),
                width="stretch",
            )
            with right:
                if len(sentences) < 2:
                    st.info("A projection needs at least two sentences.")
                else:
                    coords, _ = emb.pca(vectors_, 2)
                    figure = go.Figure(
                        go.Scatter(
                            x=coords[:, 0].tolist(),
                            y=coords[:, 1].tolist(),
                            mode="markers+text",
                            text=numbered,
                            hovertext=short,
                            hoverinfo="text",
                            textposition="top center",
                        )
                    )
                    figure.update_layout(height=420, margin=charts.margins(10), xaxis_title="PC1", yaxis_title="PC2")
                    charts.show(figure, width="stretch")
            if {"I love programming", "I dislike programming"} <= set(sentences):
                i, j = sentences.index("I love programming"), sentences.index("I dislike programming")
                st.markdown(
                    f"The made-up vectors of section 2 make 'I love programming' and 'I dislike programming' "
                    "dissimilar; the real model "
                    f"gives them a cosine of **{emb.cosine_parts(vectors_[i], vectors_[j]).cosine:.3f}**: they share "
                    f"a topic and most "
                    "words, and this model was trained to match topics more than sentiment."
                )


# ------------------------------------------------------------------ the page: the map first, the lessons one click away
token_embeddings()
LINKED = {"Positions": ("head_dim", "rope_theta")}  # a link that sets these opens their tab
LESSONS = {
    "Cosine similarity": cosine_lesson,
    "Positions": positions_lesson,
    "Word2vec": word2vec_lesson,
    "Sentence embeddings": minilm_lesson,
}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("embeddings_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
