"""Inside the model's reading tabs: the logit lens, the head detectors and the loss per token (``stages/inside.py``
wires them; the numbers come from ``llmviz.interpret``).

The logit lens: a grid of 32 positions × 5 rows in one page-wide chart leaves about 25 px per cell, and Plotly shrinks
the top token in it to about 6 px. So the grid shows a window of at most :data:`WINDOW` positions (a slider moves it
along the sentence) with its text at a fixed 14 px, and the per-layer chart draws one position, picked by the student,
in colour with a legend, the window's other positions as thin grey lines and the mean over every position in black.
Its window and followed position are link parameters (``lens_from``, ``lens_follow``) of the picked model's column.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.interpret import induction
from llmviz.interpret.lens import LogitLens
from llmviz.lessons import inside
from llmviz.lessons.defaults import opening_sentence
from ui import boxes, charts, share, state
from ui.panels.inside import label
from ui.stages import ROOT
from ui.text import literal_html, tidy_floats

# a token's background at the worst loss of the text (fainter for a lower loss): the text stays >= 4.5:1 on it
# (5.8:1; the former rgb(224, 49, 49) was 4.2:1; tests/project/test_colours.py)
LOSS_SHADE = (250, 82, 82)

# ------------------------------------------------------------------ the logit lens

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


@st.cache_data(show_spinner="Reading every layer…", max_entries=64)
def _lens(key: str, ids: tuple[int, ...], _model) -> LogitLens:
    return inside.logit_lens(_model, list(ids))


@st.cache_data(show_spinner="Measuring every head…", max_entries=64)
def cached_head_scores(key: str, _model) -> tuple[list[int], dict]:
    return inside.head_scores(_model)


@st.cache_data(show_spinner="Scoring every token…", max_entries=64)
def _losses(key: str, ids: tuple[int, ...], _model):
    return inside.token_losses(_model, list(ids))


def tied_head_note(view, found: LogitLens, ids: list[int]) -> str:
    """Why the embedding row predicts the token it reads (a tied head), when it mostly does."""
    share, probability = inside.echoes_itself(found, ids)
    if share < 0.5:
        return ""
    tied = bool(getattr(view.model.config, "tie_weights", False))
    return (
        f" The first row (the embedding) predicts the token it reads at {share:.0%} of positions "
        f"(p ≈ {probability:.2f}): "
        + (
            "this model's output head is **tied** to its embedding ($W_U = W_E^\\top$), and a token's own vector "
            "scores highest against its own row. It says nothing yet about the next token."
            if tied
            else "a token's vector has not yet been moved towards what comes next."
        )
    )


def render_lens(view, column: str) -> None:
    ids, note = inside.tokens_of(
        view.tokenizer,
        view.model.config,
        boxes.held(
            "lens_text", opening_sentence(view.tokenizer, inside.DEFAULT_SENTENCE), inside.TEXT_LIMITS["lens_text"]
        ),
        32,
    )
    if len(ids) < 2:
        st.warning("Type at least two tokens: the lens shows what each position predicts comes next.")
        return
    if note:
        st.caption(note)
    lens = _lens(view.content_key, tuple(ids), view.model)
    tokens = [label(view, i) for i in ids]
    columns = charts.unique_labels(tokens)
    grid = st.container()  # the grid first, the slider that moves it along the sentence under it
    sentence = hash(tuple(ids))  # the lens's settings belong to the sentence they were chosen on
    start = lens_start(len(ids), column, sentence)
    positions = window(len(ids), start)
    shown, rows = list(positions), range(len(lens.layer_names))
    said = inside.lens_words(  # the grid's words, from the numbers it draws: its cells' top tokens and p
        list(lens.layer_names),
        [columns[p] for p in shown],
        [[label(view, int(lens.top_ids[row, p, 0])) for p in shown] for row in rows],
        lens.top_probs[:, shown, 0].tolist(),
    )
    charts.show_in(
        grid,
        grid_figure(lens, tokens, columns, lambda i: label(view, i), positions),
        width="stretch",
        key=state.widget("lens_grid_", column),
        words=said,
    )
    final_norm = "RMSNorm" if getattr(view.model.config, "norm", "") == "rmsnorm" else "LayerNorm"
    grid.markdown(  # under the grid: the page opens on the picture
        f"Each row reads the residual stream after that block through the model's **final {final_norm} and output "
        "head**, $\\text{softmax}(W_U\\,\\mathrm{Norm}_f(x_\\ell))$, as if the later blocks were skipped. The last row "
        "is the model's own prediction; hover a cell for the top 5." + tied_head_note(view, lens, ids)
    )
    st.subheader("Layer by layer: the token that really comes next")
    followed = [p for p in positions if p + 1 < len(ids)]
    # first the position the model gets most right in the end: its line climbs layer by layer
    best = max(followed, key=lambda p: float(lens.true_probs[-1, p]))
    picked = st.selectbox(
        "Follow one position",
        followed,
        index=followed.index(best),
        format_func=lambda p: f"{columns[p]} → {tokens[p + 1]}",
        help="Its line is drawn in colour; the other positions of the grid in grey.",
        **lens_binding(
            "lens_follow",
            column,
            state.widget("lens_follow_", column, hash((tuple(ids), start))),
            followed,
            best,
            sentence,
        ),
    )
    charts.show(
        true_token_figure(lens, tokens, columns, positions, picked),
        width="stretch",
        key=state.widget("lens_true_", column),
        words=inside.true_next_words(
            lens.layer_names, lens.true_probs.tolist(), picked, f"{columns[picked]} → {tokens[picked + 1]}"
        ),
    )


LINKED_COLUMN = "stepN"  # the picked model's column (alone, or step N beside step 0): its lens settings are in the link


def lens_binding(name: str, column: str, own_key: str, allowed, fallback, sentence: int) -> dict:
    """The widget arguments of a logit-lens setting: the link parameter ``name`` for the picked model's column (kept
    when the student switches tabs and back, and in a copied link; a value chosen on another sentence, or one the
    new sentence has no room for, goes back to ``fallback``, so the page shows what a link to it reopens),
    ``own_key`` for step 0's."""
    if column != LINKED_COLUMN:
        return {"key": own_key}
    chosen_on = state.LENS_SENTENCE.setdefault()
    moved_on = chosen_on.get(name, sentence) != sentence  # a link's value, on the first run, is the sentence's own
    if state.has_value(name) and (moved_on or state.value(name) not in allowed):
        state.set_value(name, fallback)
    chosen_on[name] = sentence
    return share.bind(name)


def lens_start(length: int, column: str, sentence: int) -> int:
    """The first position the grid shows: 0 for a sentence that fits, else the slider's (drawn under the grid)."""
    if length <= WINDOW:
        return 0
    last = length - WINDOW  # a readable window of the sentence, moved along it
    return int(
        st.slider(
            "Positions shown, from",
            0,
            last,
            0,
            help=f"The grid shows {WINDOW} positions at a time: slide along the sentence.",
            **lens_binding(
                "lens_from", column, state.widget("lens_from_", column, length), range(last + 1), 0, sentence
            ),
        )
    )


def render_heads(view, column: str) -> None:
    tokens, scores = cached_head_scores(view.content_key, view.model)
    kind = state.value("detector") or inside.clearest_detector(scores, tokens)
    values = scores[kind]  # (L, H)
    layers, count = values.shape
    chance = inside.uniform_score(kind, tokens)
    top = max(float(values.max()), 2 * chance, 0.1)  # the scale ends at the best head: it stands out
    figure = charts.heatmap(
        values,
        x_labels=[f"head {h}" for h in range(count)],
        y_labels=[f"layer {layer}" for layer in range(layers)],
        zmin=0,
        zmax=top,
        text_format=".2f",
        x_title="head",
        y_title="layer",
    )
    charts.show(
        figure,
        width="stretch",
        key=state.widget("heads_", column),
        words=inside.detector_words(kind, values.tolist(), chance),
    )
    best = inside.best_heads(values)
    st.caption(
        "Highest: "
        + ", ".join(f"layer {layer} head {head} ({score:.2f})" for score, layer, head in best)
        + f". A head that spreads its attention evenly scores about {chance:.2f}; the colours run from 0 to {top:.2f}."
    )
    if kind == "induction" and best[0][0] < induction.FORMED:
        st.info(
            f"No head scores high here (an induction head scores {induction.FORMED:.2f} or more): train the induction "
            "run (the **Induction run** tab) to see one form."
        )
    if column == "stepN":
        links = st.columns(len(best))
        for cell, (_score, layer, head) in zip(links, best):
            cell.page_link(
                str(ROOT / "stages/attention.py"),
                label=f"Layer {layer}, head {head} on Attention",
                icon=":material/visibility:",
                query_params={"layer": layer, "head": head},
            )


def render_losses(view, column: str) -> None:
    ids, note = inside.tokens_of(
        view.tokenizer,
        view.model.config,
        boxes.held("loss_text", inside.DEFAULT_LOSS_TEXT, inside.TEXT_LIMITS["loss_text"]),
        inside.MAX_TOKENS * 4,
    )
    if len(ids) < 2:
        st.warning("Type at least two tokens: the first token has nothing before it to be predicted from.")
        return
    if note:
        st.caption(note)
    result = _losses(view.content_key, tuple(ids), view.model)
    tokens = [label(view, i) for i in ids]
    worst = max(float(result.losses.max()), 1e-9)
    first = "the first token: nothing predicts it"
    chips = [
        charts.token_with_number(
            tokens[0], "border:1px solid #ddd;padding:1px 3px;border-radius:3px", "—", first, "tok"
        )
    ]
    for position in range(len(ids) - 1):
        loss = float(result.losses[position])
        top = "&#10;".join(
            f"{literal_html(repr(label(view, i)))}: {float(p):.1%}"
            for i, p in zip(result.top_ids[position].tolist(), result.top_probs[position].tolist())
        )
        tip = (
            f"loss {loss:.3f} = −ln {float(result.true_probs[position]):.4f}&#10;"
            f"p({literal_html(repr(tokens[position + 1]))}) = {float(result.true_probs[position]):.2%}&#10;"
            f"top 5:&#10;{top}"
        )
        alpha = min(1.0, loss / worst)
        red, green, blue = LOSS_SHADE
        shade = f"background:rgba({red},{green},{blue},{alpha:.2f});border:1px solid #ddd;padding:1px 3px"
        # the loss written under the token too: the shading is not the only signal (issue 70)
        chips.append(
            charts.token_with_number(tokens[position + 1], shade + ";border-radius:3px", f"{loss:.2f}", tip, "tok")
        )
    st.markdown(f'<div style="line-height:1.3">{"".join(chips)}</div>', unsafe_allow_html=True)
    n = len(ids) - 1
    charts.latex(
        rf"\mathcal{{L}} = \frac{{1}}{{{n}}}\sum_{{i=1}}^{{{n}}} -\ln p(t_i \mid t_{{<i}}) = "
        rf"\frac{{{float(result.losses.sum()):.3f}}}{{{n}}} = {result.mean:.4f}"
    )
    frame = pd.DataFrame(
        {
            "token": tokens[1:],
            "loss": result.losses.tolist(),
            "p(token)": result.true_probs.tolist(),
            "top prediction": [label(view, i) for i in result.top_ids[:, 0].tolist()],
        }
    )
    with st.expander("Every token as a table"):
        st.dataframe(
            tidy_floats(frame).style.format({"loss": "{:.3f}", "p(token)": "{:.2%}"}),
            hide_index=True,
            width="stretch",
            key=state.widget("loss_table_", column),
        )
