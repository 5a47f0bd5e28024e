"""The Inside-the-model page's figures, tables and sweeps (``stages/inside.py`` wires them; the numbers come from
``llmviz/lessons/inside.py`` and ``llmviz.interpret``).

The logit lens: a grid of 32 positions × 5 rows in one page-wide chart leaves about 25 px per cell, and Plotly shrinks
the top token in it to about 6 px. So the grid shows a window of at most :data:`WINDOW` positions (a slider moves it
along the sentence) with its text at a fixed 14 px, and the per-layer chart draws one position, picked by the student,
in colour with a legend, the window's other positions as thin grey lines and the mean over every position in black.

The interventions (head ablation, activation patching, steering): a sweep (every head, every layer × position) is
small for the shipped GPT and large for GPT-2: :func:`llmviz.interpret.interventions.fits_in_page` decides. A small
one runs in the script run, remembered by content (the model's key and the token ids) for every session; a large one
is a lab job of this session with progress and a Stop button, and its result (complete, or what it measured before
Stop) stays with the session.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import math
import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch
from plotly.subplots import make_subplots

import ui
from llmviz.data.corpus import text_key
from llmviz.errors import LlmvizError
from llmviz.interpret import ablation, induction, interventions, patching, sae, steering
from llmviz.interpret.lens import LogitLens
from llmviz.jobs import tasks
from llmviz.lessons import inside
from llmviz.tokenizers.base import TokenizerError
from llmviz.training import footprint
from ui import charts, picker, share, state
from ui.panels import runs
from ui.text import literal_html, literal_markdown, tidy_floats

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


# ------------------------------------------------------------------ interventions: sweeps, charts, tables
def spec_key(*parts: Any) -> str:
    """A short content key for a request (the model's key, the token ids, the settings).

    >>> spec_key("shipped:gpt", [1, 2, 3], "zero") == spec_key("shipped:gpt", [1, 2, 3], "zero")
    True
    """
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:20]


def sweep(
    kind: str,
    spec: str,
    fits: bool,
    compute: Callable[[], Any],
    loop: Callable,
    *,
    label: str,
    total: int,
    job_slot: state.Slot,
    what: str,
    model=None,
) -> Any:
    """The result of the sweep ``spec`` of ``kind`` ("ablation", "patching"): computed here when it ``fits`` (the
    caller's ``compute`` is cached by content), else by a lab job running ``loop`` (started once per spec), whose
    progress and Stop are drawn live; None while it runs. ``model``: the model the job gets a copy of (its memory is
    the job's footprint, with one batch of activations)."""
    if fits:
        return compute()
    done = state.SWEEP_RESULTS.setdefault()
    if kind in done and done[kind][0] == spec:
        return done[kind][1]
    running = job_slot.get()
    if running is None or running.get("spec") != spec:
        try:
            working = interventions.BATCH_BYTES
            if model is not None:
                working += sum(p.numel() * p.element_size() for p in model.parameters())
            job = picker.manager().submit_task(
                picker.session_id(),
                loop,
                label=label,
                total=total,
                returns_when_stopped=True,
                footprint=footprint.task(label, working_bytes=working),
            )
        except LlmvizError as error:
            st.warning(str(error))
            state.SWEEP_ASKED.setdefault().pop(kind, None)
            return None
        job_slot.set({"id": job.id, "spec": spec})
    ended = runs.follow_task(
        job_slot,
        name=f"inside.{kind}_job",
        describe=lambda status: f"{status.step} of {status.total} {what} (a lab job: this model is large for the page)",
    )
    if ended is None:
        return None
    if ended.result is None:
        st.warning(f"The sweep ended without a result: {ended.status().error or ended.status().describe()}")
        state.SWEEP_ASKED.setdefault().pop(kind, None)
        return None
    done[kind] = (spec, ended.result)
    return ended.result


def effects_figure(effects: ablation.HeadEffects) -> go.Figure:
    """Layer × head: how much the loss rises with that head knocked out (red: the loss rises; blue: it falls)."""
    grid = effects.effects  # (L, H)
    layers, heads = grid.shape
    biggest = float(torch.nan_to_num(grid.abs(), nan=0.0).max()) or 1e-6
    figure = charts.heatmap(
        [[None if math.isnan(v) else v for v in row] for row in grid.tolist()],
        x_labels=[f"head {h}" for h in range(heads)],
        y_labels=[f"layer {layer}" for layer in range(layers)],
        colorscale="RdBu_r",
        zmid=0.0,
        zmin=-biggest,
        zmax=biggest,
        text_format="+.3f",
        x_title="head knocked out",
        y_title="layer",
        height=max(220, min(520, 44 * layers + 110)),
    )
    figure.update_traces(
        hovertemplate="%{y}, %{x}<br>loss change %{z:+.4f} nats<extra></extra>",
        colorbar=dict(title=dict(text="Δ loss")),
    )
    return figure


def effects_frame(effects: ablation.HeadEffects) -> pd.DataFrame:
    """The grid as a table: one row per head (for the CSV download)."""
    rows = []
    for layer in range(effects.losses.shape[0]):
        for head in range(effects.losses.shape[1]):
            rows.append(
                {
                    "layer": layer,
                    "head": head,
                    "loss with every head": effects.clean_loss,
                    "loss without this head": float(effects.losses[layer, head]),
                    "change": float(effects.effects[layer, head]),
                    "ablation": effects.mode,
                }
            )
    return pd.DataFrame(rows)


def token_change_figure(result: ablation.Ablation, tokens: list[str]) -> go.Figure:
    """The loss on every next token after the heads are knocked out, minus before."""
    return change_figure((result.token_losses_after - result.token_losses_before).tolist(), tokens)


def patching_figure(result: patching.Patching, columns: list[str]) -> go.Figure:
    """Layer × position (or × head): the share of the logit difference each patch restores."""
    restored = result.restored  # (L, columns)
    layers = restored.shape[0]
    finite = restored[~restored.isnan()].abs()  # the scale holds every share (1 at least: the clean answer)
    bound = max(1.0, float(finite.max())) if finite.numel() else 1.0
    figure = charts.heatmap(
        [[None if math.isnan(v) else v for v in row] for row in restored.tolist()],
        x_labels=columns,
        y_labels=[f"layer {layer}" for layer in range(layers)],
        colorscale="RdBu_r",
        zmid=0.0,
        zmin=-bound,
        zmax=bound,
        text_format=".2f",
        x_title="head patched" if result.component == "attn.z" else "position patched",
        y_title="layer",
        height=max(220, min(560, 44 * layers + 140)),
    )
    figure.update_traces(
        hovertemplate="%{y}, %{x}<br>share restored %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text="restored")),
    )
    return figure


def patching_frame(result: patching.Patching, columns: list[str], answer: str, wrong: str) -> pd.DataFrame:
    rows = []
    for layer in range(result.differences.shape[0]):
        for index, column in enumerate(columns):
            rows.append(
                {
                    "component": result.component,
                    "layer": layer,
                    "head" if result.component == "attn.z" else "position": column,
                    "logit difference": float(result.differences[layer, index]),
                    "share restored": float(result.restored[layer, index]),
                    "answer": answer,
                    "wrong": wrong,
                    "clean difference": result.clean_difference,
                    "corrupted difference": result.corrupted_difference,
                }
            )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ what the page's sections draw
def view_ids(view, text: str, what: str) -> list[int]:
    """The token ids of ``text`` for the picked model (an unreadable one refused: ``inside.exact_ids``)."""
    return inside.exact_ids(view.tokenizer, view.model.config, text, what)


def label(view, token_id: int) -> str:
    return view.tokenizer.printable(int(token_id))


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
        view.tokenizer, view.model.config, state.value("lens_text", inside.DEFAULT_SENTENCE), 32
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
    start = lens_start(len(ids), column)
    positions = window(len(ids), start)
    charts.show_in(
        grid,
        grid_figure(lens, tokens, columns, lambda i: label(view, i), positions),
        width="stretch",
        key=state.widget("lens_grid_", column),
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
            "lens_follow", column, state.widget("lens_follow_", column, hash((tuple(ids), start))), followed, best
        ),
    )
    charts.show(
        true_token_figure(lens, tokens, columns, positions, picked),
        width="stretch",
        key=state.widget("lens_true_", column),
    )


LINKED_COLUMN = "stepN"  # the picked model's column (alone, or step N beside step 0): its lens settings are in the link


def lens_binding(name: str, column: str, own_key: str, allowed, fallback) -> dict:
    """The widget arguments of a logit-lens setting: the link parameter ``name`` for the picked model's column (kept
    when the student switches tabs and back, and in a copied link; a value the new sentence has no room for goes
    back to ``fallback``), ``own_key`` for step 0's."""
    if column != LINKED_COLUMN:
        return {"key": own_key}
    if state.has_value(name) and state.value(name) not in allowed:
        state.set_value(name, fallback)
    return share.bind(name)


def lens_start(length: int, column: str) -> int:
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
            **lens_binding("lens_from", column, state.widget("lens_from_", column, length), range(last + 1), 0),
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
    charts.show(figure, width="stretch", key=state.widget("heads_", column))
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
                str(ui.ROOT / "stages/attention.py"),
                label=f"Layer {layer}, head {head} on Attention",
                icon=":material/visibility:",
                query_params={"layer": layer, "head": head},
            )


def render_losses(view, column: str) -> None:
    ids, note = inside.tokens_of(
        view.tokenizer, view.model.config, state.value("loss_text", inside.DEFAULT_LOSS_TEXT), inside.MAX_TOKENS * 4
    )
    if len(ids) < 2:
        st.warning("Type at least two tokens: the first token has nothing before it to be predicted from.")
        return
    if note:
        st.caption(note)
    result = _losses(view.content_key, tuple(ids), view.model)
    tokens = [label(view, i) for i in ids]
    worst = max(float(result.losses.max()), 1e-9)
    chips = [f'<span class="tok" title="the first token: nothing predicts it">{literal_html(tokens[0])}</span>']
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
        chips.append(
            f'<span class="tok" style="background: rgba(224, 49, 49, {alpha:.2f})" title="{tip}">'
            f"{literal_html(tokens[position + 1])}</span>"
        )
    st.markdown(
        "<style>.tok{display:inline-block;margin:1px;padding:1px 3px;border-radius:3px;"
        "border:1px solid #ddd;font-family:monospace;white-space:pre}</style>"
        f'<div style="line-height:1.9">{"".join(chips)}</div>',
        unsafe_allow_html=True,
    )
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


@st.cache_data(show_spinner="Knocking out each head in turn…", max_entries=64)
def _head_effects(key: str, ids: tuple[int, ...], mode: str, _model) -> ablation.HeadEffects:
    return ablation.head_effects(_model, list(ids), mode)


@st.cache_data(show_spinner=False, max_entries=128)
def _ablate(key: str, ids: tuple[int, ...], knocked: tuple[tuple[int, int], ...], mode: str, _model):
    return ablation.ablate(_model, list(ids), knocked, mode)


def head_name(pair: tuple[int, int]) -> str:
    return f"layer {pair[0]}, head {pair[1]}"


def ablation_grid(view, ids: list[int], mode: str) -> ablation.HeadEffects | None:
    """Every head knocked out alone: asked for with the button (after a guess), in the page or as a lab job."""
    config = view.model.config
    every = [(layer, head) for layer in range(config.n_layers) for head in range(config.n_heads)]
    st.subheader("Every head, knocked out alone")
    guess = st.selectbox(
        "First, your guess: which head matters most for this text?",
        [None, *every],
        format_func=lambda pair: "(no guess)" if pair is None else inside.head_name(pair),
        key=state.widget("ablation_guess"),
    )
    spec = spec_key(view.content_key, ids, mode)
    asked = state.SWEEP_ASKED.setdefault()
    if st.button("Knock out each head, one at a time", type="primary", key=state.widget("ablation_run")):
        asked["ablation"] = spec
    if asked.get("ablation") != spec:
        st.caption(
            f"The {len(every)} heads are knocked out one after the other and the loss on the text measured each time."
        )
        return None
    result = sweep(
        "ablation",
        spec,
        interventions.fits_in_page(config, len(ids), len(every) + 1),
        lambda: _head_effects(view.content_key, tuple(ids), mode, view.model),
        functools.partial(tasks.head_effects_sweep, model=view.model, ids=ids, mode=mode),
        label=f"Knock out every head · {view.label}",
        total=len(every),
        job_slot=state.ABLATION_JOB,
        what="heads knocked out",
        model=view.model,
    )
    if result is not None and guess is not None:
        ranking = [(layer, head) for _effect, layer, head in result.ranked()]
        if guess in ranking:
            place = ranking.index(guess) + 1
            st.markdown(
                f"Your guess, **{inside.head_name(guess)}**, comes {place} of {len(ranking)}: knocking it out changes "
                f"the loss by {float(result.effects[guess]):+.3f} nats (the most: {inside.head_name(ranking[0])}, "
                f"{float(result.effects[ranking[0]]):+.3f})."
            )
    return result


def draw_effects(view, result: ablation.HeadEffects, ids: list[int]) -> None:
    charts.show(effects_figure(result), key=state.widget("ablation_grid"))
    biggest, layer, head = result.ranked()[0]
    measured = "" if result.complete else f" Stopped: {result.done} of {result.losses.numel()} heads measured."
    st.caption(
        f"The loss on these {len(ids)} tokens is {result.clean_loss:.4f} nats with every head; each cell is the "
        f"change without that head ({ablation.MODE_HELP[result.mode]}). Knocking out {inside.head_name((layer, head))} "
        f"changes it most: {biggest:+.4f}.{measured}"
    )
    st.download_button(
        "Download the grid (CSV)",
        effects_frame(result).to_csv(index=False),
        file_name="llmviz-head-ablation.csv",
        mime="text/csv",
        key=state.widget("ablation_download"),
    )


def draw_knockout(view, ids: list[int], mode: str) -> None:
    """Several heads knocked out together: the loss before and after, and the change on every token."""
    config = view.model.config
    every = [f"{layer}.{head}" for layer in range(config.n_layers) for head in range(config.n_heads)]
    st.subheader("Several heads together")
    kept = [value for value in state.value("knocked") or [] if value in every]
    if kept != (state.value("knocked") or []):
        state.set_value("knocked", kept)  # a head of another model (or a hand-made link) is dropped
    chosen = st.multiselect(
        "Knock out these heads together",
        every,
        format_func=lambda value: f"layer {value.split('.')[0]}, head {value.split('.')[1]}",
        placeholder="Pick heads: the reddest cells above, or your guess",
        **share.bind("knocked"),
    )
    if not chosen:
        return
    knocked = tuple(tuple(int(part) for part in value.split(".")) for value in chosen)
    result = _ablate(view.content_key, tuple(ids), knocked, mode, view.model)
    charts.latex(
        rf"\mathcal{{L}}_{{\text{{{len(knocked)} head{'s' if len(knocked) > 1 else ''} out}}}} - \mathcal{{L}} = "
        rf"{result.loss_after:.4f} - {result.loss_before:.4f} = {result.change:+.4f}\ \text{{nats}}"
    )
    tokens = [label(view, i) for i in ids]
    charts.show(token_change_figure(result, tokens), key=state.widget("ablation_tokens"))
    st.caption("The loss on every next token without those heads, minus with them: red, it got harder to predict.")


@st.cache_data(show_spinner="Patching every layer and position…", max_entries=64)
def cached_patching(key: str, clean: tuple, corrupted: tuple, answer: int, wrong: int, component: str, _model):
    return patching.patching(_model, list(clean), list(corrupted), answer, wrong, component)


@st.cache_data(show_spinner=False, max_entries=128)
def cached_answers(key: str, clean: tuple, corrupted: tuple, _model) -> patching.Answers:
    return patching.answers(_model, list(clean), list(corrupted))


def answer_token(view, name: str, fallback: int, what: str) -> int:
    """The token typed in the box ``name`` (one token), or ``fallback`` when the box is empty."""
    typed = state.value(name) or ""
    if not typed:
        return fallback
    return inside.one_token(view.tokenizer, view.model.config, typed, what)


def pair_chips(view, clean: list[int], corrupted: list[int]) -> None:
    """Both prompts token by token, the tokens that differ highlighted."""
    for name, ids, other in (("clean", clean, corrupted), ("corrupted", corrupted, clean)):
        pieces = [
            f'<span class="tok"{" style=background:#ffe066" if i >= len(other) or t != other[i] else ""}>'
            f"{literal_html(label(view, t))}</span>"
            for i, t in enumerate(ids)
        ]
        st.markdown(
            "<style>.tok{display:inline-block;margin:1px;padding:1px 3px;border-radius:3px;"
            "border:1px solid #ddd;font-family:monospace;white-space:pre}</style>"
            f'<div style="line-height:1.9"><b>{name}</b> ({len(ids)} tokens): {"".join(pieces)}</div>',
            unsafe_allow_html=True,
        )


def patching_grid(
    view, clean: list[int], corrupted: list[int], answer: int, wrong: int, component: str, drawn_at_once: bool = False
) -> None:
    """Every layer × position (or head) patched: asked for with the button (after a guess), in the page or as a lab
    job, then drawn. ``drawn_at_once``: the page's default pair, drawn without the button when it fits in the page
    (computed once for everyone with this model: ``cached_patching`` is keyed by the model's content and the pair)."""
    config = view.model.config
    cells = len(patching.cells_of(view.model, component, len(clean), patching.first_difference(clean, corrupted)))
    spec = spec_key(view.content_key, clean, corrupted, answer, wrong, component)
    st.subheader("Every layer × head" if component == "attn.z" else "Every layer × position")
    asked = state.SWEEP_ASKED.setdefault()
    if st.button("Patch every one", type="primary", key=state.widget("patching_run")):
        asked["patching"] = spec
    fits = interventions.fits_in_page(config, len(clean), cells)
    if asked.get("patching") != spec and not (drawn_at_once and fits):
        st.caption(f"Before you press: where do you expect the answer to be? ({cells} patched runs.)")
        return
    result = sweep(
        "patching",
        spec,
        fits,
        lambda: cached_patching(view.content_key, tuple(clean), tuple(corrupted), answer, wrong, component, view.model),
        functools.partial(
            tasks.patching_sweep,
            model=view.model,
            clean=clean,
            corrupted=corrupted,
            answer=answer,
            wrong=wrong,
            component=component,
        ),
        label=f"Activation patching · {view.label}",
        total=config.n_layers * (config.n_heads if component == "attn.z" else len(clean)),
        job_slot=state.PATCHING_JOB,
        what="patches measured",
        model=view.model,
    )
    if result is not None:
        draw_patching(view, result, corrupted, clean)


def draw_patching(view, result: patching.Patching, corrupted: list[int], clean: list[int]) -> None:
    if result.problem is not None:  # no share has a meaning: said in words, nothing drawn (issue 50 §6)
        st.warning(result.problem)
        return
    if result.component == "attn.z":
        columns = [f"head {h}" for h in range(result.differences.shape[1])]
    else:
        columns = charts.unique_labels(
            [label(view, c) if c == k else f"{label(view, k)}→{label(view, c)}" for k, c in zip(clean, corrupted)]
        )
    charts.show(patching_figure(result, columns), key=state.widget("patching_grid"))
    d_clean, d_corrupted = result.clean_difference, result.corrupted_difference
    charts.latex(
        rf"\text{{share restored}} = \frac{{d_{{\text{{patched}}}} - d_{{\text{{corrupted}}}}}}"
        rf"{{d_{{\text{{clean}}}} - d_{{\text{{corrupted}}}}}} = \frac{{d_{{\text{{patched}}}} - ({d_corrupted:.3f})}}"
        rf"{{{d_clean:.3f} - ({d_corrupted:.3f})}}"
    )
    first = 0 if result.component == "attn.z" else result.first_difference + 1
    away = [  # the changed token itself restores everything at layer 0: the interest is where it goes next
        (float(value), layer, index)
        for layer, row in enumerate(result.restored.tolist())
        for index, value in enumerate(row)
        if index >= first and value == value
    ]
    measured = "" if result.complete else f" Stopped: {result.done} of {result.differences.numel()} cells measured."
    where = ""
    if away:
        best, layer, index = max(away)
        after = "" if result.component == "attn.z" else " after the changed token"
        where = f" The most{after}: layer {layer}, {columns[index]} ({best:.2f})."
    st.caption(
        "1 = that activation alone brings the clean answer back; 0 = it carries none of the difference; below 0 it "
        "pushes towards the wrong token, above 1 past the clean run."
        f"{where}{measured}"
    )
    st.download_button(
        "Download the grid (CSV)",
        patching_frame(result, columns, label(view, result.answer), label(view, result.wrong)).to_csv(index=False),
        file_name="llmviz-activation-patching.csv",
        mime="text/csv",
        key=state.widget("patching_download"),
    )


def steering_direction(view, kind: str, layer: int):
    if kind == "token":
        typed = state.value("steer_token") or ""
        ids = view_ids(view, typed, "token") if typed else []
        if len(ids) != 1:
            raise TokenizerError("Type one token to steer along (a word the tokenizer keeps whole, such as ' list').")
        return steering.token_direction(view.model, ids[0]), f"the direction of {label(view, ids[0])!r}"
    sets = []
    for name, default in (("steer_positive", inside.DEFAULT_POSITIVE), ("steer_negative", inside.DEFAULT_NEGATIVE)):
        lines = inside.prompt_lines(state.value(name, default) or "")
        sets.append([view_ids(view, line, "prompt") for line in lines])
    return _mean_difference(
        view.content_key, tuple(map(tuple, sets[0])), tuple(map(tuple, sets[1])), layer, view.model
    ), (f"the mean difference of {len(sets[0])} and {len(sets[1])} prompts")


@st.cache_data(show_spinner=False, max_entries=64)
def _mean_difference(key: str, positive: tuple, negative: tuple, layer: int, _model):
    return inside.mean_difference(_model, [list(p) for p in positive], [list(n) for n in negative], layer)


@st.cache_data(show_spinner="Generating with and without steering…", max_entries=64)
def _steered(key: str, ids: tuple, layer: int, direction: tuple, alpha: float, seed: int, _model):
    return inside.steered_pair(_model, list(ids), layer, torch.tensor(direction), alpha, seed)


inside.NEW_TOKENS = 30  # written with and without steering


def steered_texts(view, ids: list[int], layer: int, direction, alpha: float, seed: int):
    """The plain and the steered continuation: written here for a small model, by a lab job (asked for with a button)
    for a large one; None until there is one."""
    spec = spec_key(view.content_key, ids, layer, direction.tolist(), alpha, seed)
    work = steering.generation_work(view.model.config, len(ids), inside.NEW_TOKENS)
    fits = work <= interventions.IN_PAGE_WORK
    if not fits:
        asked = state.SWEEP_ASKED.setdefault()
        if st.button("Write both texts", type="primary", key=state.widget("steer_run")):
            asked["steering"] = spec
        if asked.get("steering") != spec:
            st.caption(
                f"This model is large: writing {inside.NEW_TOKENS} tokens twice runs as a lab job of yours (with its "
                "progress and a Stop button)."
            )
            return None
    return sweep(
        "steering",
        spec,
        fits,
        lambda: _steered(view.content_key, tuple(ids), layer, tuple(direction.tolist()), alpha, seed, view.model),
        functools.partial(
            tasks.steering_generation,
            model=view.model,
            ids=ids,
            layer=layer,
            direction=direction.tolist(),
            alpha=alpha,
            new_tokens=inside.NEW_TOKENS,
            temperature=inside.STEER_TEMPERATURE,
            seed=seed,
        ),
        label=f"Steering · {view.label}",
        total=2 * inside.NEW_TOKENS,
        job_slot=state.STEERING_JOB,
        what="tokens written",
        model=view.model,
    )


def plain_and_steered(view, prompt: str, pair, heading: str) -> None:
    """The text written without steering beside the text written with it (a direction or a feature's), one column
    each; ``heading`` says what was added."""
    left, right = st.columns(2)
    left.markdown("**Without steering**")
    left.code(prompt + view.tokenizer.decode(pair.plain), language=None, wrap_lines=True)
    right.markdown(f"**{heading}**")
    right.code(prompt + view.tokenizer.decode(pair.steered), language=None, wrap_lines=True)


def draw_steered(view, prompt: str, ids: list[int], pair, layer: int, alpha: float, what: str, seed: int) -> None:
    """The plain and the steered text side by side, how long the added vector is, and both as JSON."""
    norm = steering.stream_norm(view.model, ids, layer)
    plain_and_steered(view, prompt, pair, f"With α = {alpha:g} × {literal_markdown(what)}, at layer {layer}")
    st.caption(
        f"|α · direction| = {abs(alpha) * pair.direction_norm:.2f}, against a residual stream {norm:.2f} long on "
        f"average entering block {layer}. Both texts sample {inside.NEW_TOKENS} tokens at temperature "
        f"{inside.STEER_TEMPERATURE:g} with the same "
        f"seed ({seed}, the sidebar's): where they differ, the steering did it."
    )
    st.download_button(
        "Download both texts (JSON)",
        json.dumps(
            {
                "prompt": prompt,
                "layer": layer,
                "alpha": alpha,
                "direction": what,
                "plain": view.tokenizer.decode(pair.plain),
                "steered": view.tokenizer.decode(pair.steered),
            },
            ensure_ascii=False,
            indent=1,
        ),
        file_name="llmviz-steering.json",
        mime="application/json",
        key=state.widget("steer_download"),
    )


INDUCTION_LABEL = "Induction heads · 2-layer attention-only GPT"


def induction_job():
    """This session's induction run (the newest one), or None."""
    manager, owner = picker.manager(), picker.session_id()
    job = manager.get(owner, state.INDUCTION_JOB.get(default=""))
    if job is None:
        runs = [j for j in manager.jobs(owner) if j.kind == "train" and j.label.startswith(INDUCTION_LABEL)]
        job = runs[-1] if runs else None
    return job


@st.cache_data(show_spinner=False, max_entries=512)
def _probe(run_id: str, step: int, _store, _description) -> induction.ProbeResult:
    return induction.probe_snapshot(_store, _description, step, induction.probe_lines())


@st.cache_data(show_spinner=False, max_entries=512)
def _knockout(run_id: str, step: int, layer: int, head: int, _store, _description) -> induction.ProbeResult:
    from llmviz.training.checkpoint import model_from_description
    from llmviz.training.snapshots import load_into

    model = load_into(model_from_description(_description), _store.get(step))
    return induction.knockout(model, induction.probe_lines(), [(layer, head)])


def start_induction_run() -> None:
    """Start the preset run and pick it in the sidebar (as Train on the Training page does), remembering the model
    picked before, so that the tab can offer it back."""
    preset = induction.PRESET
    try:
        trainer = induction.make_trainer(preset)
        label = runs.unique_label(INDUCTION_LABEL)  # 'Train it again' must not repeat the first run's label
        job = picker.manager().submit_training(
            picker.session_id(), trainer, label=label, snapshot_every=preset.snapshot_every
        )
    except LlmvizError as error:
        st.error(str(error))
        return
    state.INDUCTION_JOB.set(job.id)
    previous = picker.selected_key()
    if not previous.startswith(f"run:{job.id}"):
        state.INDUCTION_PREVIOUS.set(previous)
    picker.select(f"run:{job.id}")  # every page now shows this run


def phase_chart(
    curve: list[induction.ProbeResult], picked_step: int | None, knocked: list[induction.ProbeResult], knocked_name: str
) -> go.Figure:
    steps = [point.step for point in curve]
    layers, count = curve[0].scores["induction"].shape
    figure = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("Head scores on the test lines", "Loss on the test lines (nats)"),
    )
    palette = ["#4c6ef5", "#e8590c", "#2f9e44", "#ae3ec9", "#1098ad", "#f08c00", "#d6336c", "#5c940d"]
    for layer in range(layers):
        for head in range(count):
            color = palette[(layer * count + head) % len(palette)]
            figure.add_trace(
                go.Scatter(
                    x=steps,
                    y=[float(p.scores["induction"][layer, head]) for p in curve],
                    name=f"induction · layer {layer} head {head}",
                    mode="lines",
                    line=dict(color=color, width=3 if layer else 1.5),
                ),
                row=1,
                col=1,
            )
            if layer == 0:
                figure.add_trace(
                    go.Scatter(
                        x=steps,
                        y=[float(p.scores["previous token"][layer, head]) for p in curve],
                        name=f"previous token · layer 0 head {head}",
                        mode="lines",
                        line=dict(color=color, dash="dot"),
                    ),
                    row=1,
                    col=1,
                )
    for name, values, line in (
        ("loss on the repeated half", [p.repeated_half_loss for p in curve], dict(color="#c92a2a", width=3)),
        ("loss on the first half", [p.first_half_loss for p in curve], dict(color="#868e96", dash="dash")),
        (
            f"repeated half, {knocked_name} knocked out",
            [p.repeated_half_loss for p in knocked],
            dict(color="#c92a2a", dash="dot", width=2),
        ),
    ):
        if values:
            figure.add_trace(go.Scatter(x=steps, y=values, name=name, mode="lines", line=line), row=2, col=1)
    uniform, vocab = curve[-1].uniform_loss, curve[-1].vocab_size
    figure.add_hline(
        y=uniform,
        line=dict(color="#212529", width=1),
        row=2,
        col=1,
        annotation_text=f"uniform guessing: ln {vocab} = {uniform:.2f}",
        annotation_position="top left",
    )
    figure.add_hline(
        y=induction.FORMED,
        line=dict(color="#212529", width=1, dash="dot"),
        row=1,
        col=1,
        annotation_text=f"an induction head from {induction.FORMED:.2f}",
        annotation_position="top left",
    )
    if picked_step is not None:
        figure.add_vline(x=picked_step, line=dict(color="black", dash="dot"))
    figure.update_yaxes(range=[0, 1], title_text="score", row=1, col=1)
    figure.update_yaxes(rangemode="tozero", title_text="nats", row=2, col=1)
    figure.update_xaxes(title_text="training step", row=2, col=1)
    figure.update_layout(height=620, margin=charts.margins(40), legend=dict(orientation="h", y=-0.12))
    return figure


def final_line(job, status, last: induction.ProbeResult, knocked: induction.ProbeResult | None, head: str) -> str:
    """The run's result in one line: steps, final train and validation loss, and this section's measures."""
    train = status.losses[-1][1] if status.losses else float("nan")
    val = status.last_val_loss
    line = (
        f"**{literal_markdown(job.label)}** ended at step {status.step} of {status.total}: train loss {train:.3f}"
        + (f", validation loss {val:.3f}" if val is not None else "")
        + f"; {head} scores {induction.strongest_induction_head(last)[2]:.2f} as an induction head; loss on the "
        f"repeated half {last.repeated_half_loss:.2f} nats"
    )
    if knocked is not None:
        line += f", {knocked.repeated_half_loss:.2f} with it knocked out"
    return line + "."


def offer_induction_run() -> None:
    """No induction run yet: the button that starts one, and what it will do."""
    if st.button(
        f"Train it: {induction.PRESET.steps} steps, about a minute on a laptop CPU",
        type="primary",
        key=state.widget("induction_start"),
    ):
        start_induction_run()
        st.rerun(scope="app")  # the sidebar picker now lists (and shows) the run
    st.caption(
        f"It trains in the background as one of your runs, and becomes the model picked in the sidebar: "
        f"the other tabs and every page then show it instead of {literal_markdown(picker.current().label)}. "
        "It reads lines of random characters, so the logit lens shows single random characters. This tab "
        "then offers a button to go back to your model."
    )


def induction_links(job, view, layer: int, head: int) -> None:
    """The strongest head on Attention, and the buttons that show this run on every page or go back."""
    c1, c2 = st.columns(2)
    c1.page_link(
        str(ui.ROOT / "stages/attention.py"),
        label=f"See layer {layer}, head {head} on Attention",
        icon=":material/visibility:",
        query_params={"layer": layer, "head": head},
    )
    if view.run_id != job.id and c2.button("Show this run on every page", key=state.widget("induction_pick")):
        picker.select(f"run:{job.id}")
        st.rerun(scope="app")
    previous = state.INDUCTION_PREVIOUS.get()
    if view.run_id == job.id and previous:
        st.caption(
            "This run is the model picked in the sidebar, so the other tabs show it (random characters), not the "
            "model you had picked."
        )
        if c2.button("Back to the model picked before", key=state.widget("induction_back")):
            state.INDUCTION_PREVIOUS.pop()
            picker.select(previous)
            st.rerun(scope="app")


def induction_body() -> None:
    job = induction_job()
    if job is None:
        offer_induction_run()
        return
    status = job.status()
    if not status.done:
        st.progress(status.fraction, text=f"{job.label}: {status.describe()}")
        if st.button("Stop", key=state.widget("induction_stop")):
            job.stop()
    elif status.state == "failed":
        st.warning(f"The run stopped with a problem: {status.describe()}")
    store = job.snapshots
    if job.info is None or store is None or not store.steps():
        st.caption("Preparing the run…")
        return
    description = job.info.description
    steps = induction.chart_steps(store, status.done)
    curve = [_probe(job.id, step, store, description) for step in steps]
    last = curve[-1]
    layer, head, _score = induction.strongest_induction_head(last)
    name = f"layer {layer}, head {head}"
    knocked = [_knockout(job.id, step, layer, head, store, description) for step in steps]
    view = picker.current()
    picked = view.step if view.run_id == job.id else None
    charts.show(phase_chart(curve, picked, knocked, name), key=state.widget("induction_chart"))
    st.markdown(induction.describe(last))
    before = induction.before_phase_change(curve)
    if before is not None and induction.strongest_induction_head(last)[2] >= induction.FORMED:
        st.markdown(
            f"**Knock it out** (its output set to 0): at step {last.step} the loss on the repeated half goes from "
            f"{last.repeated_half_loss:.2f} back to {knocked[-1].repeated_half_loss:.2f} nats — at step "
            f"{before.step}, before the phase change, it was {before.repeated_half_loss:.2f}. The dotted red line "
            "is that knock-out at every step."
        )
    if status.done:
        st.markdown(final_line(job, status, last, knocked[-1], name))
    induction_links(job, view, layer, head)
    if status.done and st.button("Train it again", key=state.widget("induction_again")):
        start_induction_run()
        st.rerun(scope="app")


def live_induction(**live) -> None:
    """The induction run's section, redrawn while the run trains (:func:`ui.panels.runs.live`)."""
    runs.live(induction_body, **live)


# ------------------------------------------------------------------ features: a sparse autoencoder's dictionary
SHIPPED_SAE = ui.ROOT / "data" / "gpt-python-docs-sae"
SHIPPED_SAE_LABEL = "Shipped with llmviz (trained by `interpret sae train` on the shipped GPT)"
CORPUS_FILE = ui.ROOT / "data" / "python-manual.txt"  # the shipped GPT's corpus, as the CLI reads it


def _signature(path) -> tuple:
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else []
    return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)


@st.cache_resource(show_spinner="Loading the autoencoder…", max_entries=4)
def _shipped_sae(path: str, signature: tuple) -> sae.LoadedSae:
    """The shipped autoencoder, read once for every student (shared, read-only: its files are never written)."""
    return sae.load(path)


@st.cache_resource(show_spinner=False, max_entries=16)
def _run_sae(sae_id: str, _description: dict, _state: dict) -> sae.SparseAutoencoder:
    """A run's autoencoder at one kept step (``sae_id`` = its unguessable job id and step: only its student has it)."""
    config = sae.SaeConfig.from_dict(_description["config"])
    found = sae.SparseAutoencoder(int(_description["d_in"]), config.d_sae, config.k)
    found.load_state_dict(_state)
    return found.eval().requires_grad_(False)


def sae_choices() -> dict[str, str]:
    """The autoencoders the tab offers: the shipped one, then this session's autoencoder runs (newest last)."""
    choices = {"shipped": SHIPPED_SAE_LABEL} if (SHIPPED_SAE / sae.CONFIG_FILE).is_file() else {}
    for job_id in state.SAE_RUNS.setdefault():
        job = picker.manager().get(picker.session_id(), job_id)
        if job is not None:
            choices[f"run:{job_id}"] = f"Yours: {job.label} ({job.status().describe()})"
    return choices


def loaded_sae(choice: str) -> tuple[str, sae.LoadedSae] | None:
    """(the autoencoder's content id, the autoencoder) of a choice; None while a run has no snapshot yet."""
    if choice == "shipped":
        signature = _signature(SHIPPED_SAE)
        return f"shipped#{weights_id(signature)}", _shipped_sae(str(SHIPPED_SAE), signature)
    job_id = choice.removeprefix("run:")
    job = picker.manager().get(picker.session_id(), job_id)
    info = state.SAE_RUNS.setdefault().get(job_id)
    if job is None or info is None or job.info is None or job.snapshots is None or not job.snapshots.steps():
        return None
    step, weights = job.snapshots.resolve(None)
    description = job.info.description
    found = _run_sae(f"{job_id}@{step}", description, weights)
    meta = {"config": description["config"], "d_in": description["d_in"], "model": info["model"]}
    return f"run:{job_id}@{step}", sae.LoadedSae(found, found_config(description), meta, {})


def found_config(description: dict) -> sae.SaeConfig:
    return sae.SaeConfig.from_dict(description["config"])


def weights_id(signature: tuple) -> str:
    return hashlib.sha256(repr(signature).encode()).hexdigest()[:16]


@st.cache_data(show_spinner=False, max_entries=64)
def _fits(key: str, sae_id: str, _meta: dict, _model) -> str:
    """'' when the autoencoder was trained on these weights, else the library's one-line reason."""
    try:
        sae.check_for_model(_meta, _model)
    except LlmvizError as error:
        return str(error)
    return ""


@st.cache_data(show_spinner=False, max_entries=16)
def model_fingerprint(key: str, _model) -> str:
    return sae.model_fingerprint(_model)


def features_corpus() -> tuple[str, str] | None:
    """``(label, text)`` of the corpus the tab reads: the sidebar's, where the Python manual is the file the shipped
    GPT and its autoencoder were trained on (``data/python-manual.txt``, its paragraphs unwrapped); None after
    saying why there is none."""
    if ui.settings().corpus == "python-docs" and CORPUS_FILE.is_file():
        return "the Python manual", CORPUS_FILE.read_text(encoding="utf-8")
    return ui.corpus_text()


@st.cache_resource(show_spinner="Reading the corpus through the autoencoder…", max_entries=6)
def _feature_corpus(key: str, sae_id: str, text_id: str, _text: str, _model, _tokenizer, _sae, hook: str):
    """The browser's corpus index, keyed by the model's weights id, the autoencoder's and the corpus's content
    (read-only, shared only between students who picked the same weights, autoencoder and text)."""
    ids = inside.feature_corpus_ids(_tokenizer, inside.readable(_tokenizer, _text[: inside.MAX_CORPUS_CHARS]))
    return inside.feature_corpus(_model, _sae, hook, ids)


@st.cache_data(show_spinner="Reading the feature…", max_entries=128)
def _feature_card(key: str, sae_id: str, feature: int, _model, _sae, hook: str, _corpus) -> inside.FeatureCard:
    return inside.feature_card(_model, _sae, hook, _corpus, feature)


@st.cache_data(show_spinner=False, max_entries=64)
def _feature_search(key: str, sae_id: str, ids: tuple, _model, _sae, hook: str):
    return inside.feature_search(_model, _sae, hook, list(ids))


@st.cache_data(show_spinner="Generating with and without the feature…", max_entries=64)
def _feature_steer(key: str, sae_id: str, ids: tuple, feature: int, alpha: float, seed: int, _model, _sae, hook: str):
    return inside.feature_steer(_model, _sae, hook, list(ids), feature, alpha, seed)


@st.cache_data(show_spinner=False, max_entries=64)
def _feature_knockout(key: str, sae_id: str, ids: tuple, knocked: tuple, mode: str, _model, _sae, hook: str):
    return inside.feature_knockout(_model, _sae, hook, list(ids), list(knocked), mode)


class Browser:
    """What the Features tab reads: the picked model, the picked autoencoder and its corpus index."""

    def __init__(self, view, sae_id: str, loaded: sae.LoadedSae, text: tuple[str, str]):
        self.view, self.sae_id, self.loaded = view, sae_id, loaded
        self.sae, self.hook = loaded.sae, loaded.hook
        self.label_key = sae_id.split("@")[0]  # a run's labels stay with it from step to step
        self.corpus_label, content = text
        self.corpus = _feature_corpus(
            view.content_key, sae_id, text_key(content), content, view.model, view.tokenizer, self.sae, self.hook
        )

    def labels(self) -> dict[int, str]:
        """The shipped labels (if any) under the student's own, kept in their session for this autoencoder."""
        return {**self.loaded.labels, **state.SAE_LABELS.setdefault().get(self.label_key, {})}

    def card(self, feature: int) -> inside.FeatureCard:
        view = self.view
        return _feature_card(view.content_key, self.sae_id, feature, view.model, self.sae, self.hook, self.corpus)


def open_browser(view, choice: str) -> Browser | None:
    """The browser of the picked autoencoder for the picked model; an autoencoder for another model is refused with
    the library's reason (a line on the page), a run without a snapshot yet is waited for."""
    found = loaded_sae(choice)
    if found is None:
        st.info("Your autoencoder is still gathering activations: its features appear at its first snapshot.")
        return None
    sae_id, loaded = found
    why = _fits(view.content_key, sae_id, loaded.meta, view.model)
    if why:
        st.warning(f"{why} Pick the model it was trained on in the sidebar, or train one for this model below.")
        return None
    text = features_corpus()
    return Browser(view, sae_id, loaded, text) if text is not None else None


def draw_feature_table(browser: Browser) -> None:
    """The most readable features as a compact table (``inside.feature_rows``), the share of tokens each fires on as a
    bar."""
    rows = inside.feature_rows(browser.corpus, browser.labels())
    frame = pd.DataFrame(rows)
    st.dataframe(
        frame,
        hide_index=True,
        height=360,
        width="stretch",
        key=state.widget("feature_table"),
        on_select=functools.partial(_table_pick, [row["feature"] for row in rows]),
        selection_mode="single-row",
        column_config={
            "fires on": st.column_config.ProgressColumn("fires on", format="percent", min_value=0.0, max_value=1.0),
            "mean when firing": st.column_config.NumberColumn(format="%.2f"),
            "max": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    index = browser.corpus.index
    st.caption(
        f"{browser.sae.d_sae:,} features at {browser.hook}, read on {index.tokens:,} tokens of "
        f"{literal_markdown(browser.corpus_label)}; "
        f"{index.dead} never fired there. The most readable first: those whose strongest places sit on one token "
        "(then the more frequent first). Click a row to show that feature."
    )


def _table_pick(features: list[int]) -> None:
    """A row clicked in the table: show that feature."""
    picked = state.value(state.widget("feature_table")).selection.rows
    if picked:
        state.set_value("feature", features[picked[0]])


def activation_chips(view, context, peak_scale: float) -> str:
    """One corpus window as token chips, green by the feature's activation (the top token outlined)."""
    chips = []
    for position, (token, value) in enumerate(zip(context.ids, context.values)):
        alpha = min(1.0, value / peak_scale) if peak_scale > 0 else 0.0
        outline = "border:1px solid #2b8a3e;" if position == context.peak else ""
        chips.append(
            f'<span class="tok" style="background: rgba(47, 158, 68, {alpha:.2f});{outline}" '
            f'title="activation {value:.3f}">{literal_html(label(view, token))}</span>'
        )
    return "".join(chips)


def histogram_figure(card: inside.FeatureCard) -> go.Figure:
    """The feature's activations where it fires, binned."""
    centres = ((card.edges[:-1] + card.edges[1:]) / 2).tolist()
    figure = go.Figure(
        go.Bar(
            x=centres,
            y=card.counts.tolist(),
            marker_color="#2f9e44",
            hovertemplate="activation ≈ %{x:.2f}<br>%{y} tokens<extra></extra>",
        )
    )
    figure.update_layout(
        height=200, margin=charts.margins(10, 10), xaxis_title="activation (where it fires)", yaxis_title="tokens"
    )
    return figure


def logit_frame(view, effects) -> pd.DataFrame:
    promoted = [f"{label(view, t)!r} {v:+.2f}" for t, v in effects.promoted]
    suppressed = [f"{label(view, t)!r} {v:+.2f}" for t, v in effects.suppressed]
    return pd.DataFrame({"promotes": promoted, "suppresses": suppressed})


def draw_feature_card(browser: Browser, feature: int) -> None:
    """One feature: where it fires most (the corpus, coloured), its histogram, the tokens it writes towards."""
    view, card = browser.view, browser.card(feature)
    st.markdown(f"**Feature {feature}** fires on {card.frequency:.2%} of the corpus's tokens. Where it fires most:")
    if not card.contexts:
        st.caption("It never fired on these tokens: a dead feature.")
    else:
        peak = max(max(c.values) for c in card.contexts)
        lines = "".join(
            f'<div style="margin-bottom:4px">{activation_chips(view, c, peak)}</div>' for c in card.contexts
        )
        st.markdown(
            "<style>.tok{display:inline-block;margin:1px;padding:1px 3px;border-radius:3px;"
            "border:1px solid #ddd;font-family:monospace;white-space:pre}</style>"
            f'<div style="line-height:1.9">{lines}</div>',
            unsafe_allow_html=True,
        )
    left, right = st.columns([3, 2])
    with left:
        charts.show(histogram_figure(card), key=state.widget("feature_histogram"))
    right.dataframe(logit_frame(view, card.effects), hide_index=True, width="stretch", height=200)
    right.caption("Its decoder direction through the unembedding: the logits it raises and lowers per unit.")


def _keep_label(sae_id: str, feature: int, key: str) -> None:
    """The label typed (a callback: kept before the table is drawn again, so the table shows it at once)."""
    labels = state.SAE_LABELS.setdefault().setdefault(sae_id, {})
    typed = (state.value(key) or "").strip()
    if typed:
        labels[feature] = typed[:200]
    else:
        labels.pop(feature, None)


def label_box(browser: Browser, feature: int) -> None:
    """The student's name for the feature, kept in their session beside the autoencoder (the shipped one's files
    are never written: download the labels to keep them, and give them to ``interpret sae features --label``)."""
    key = state.widget("feature_label_", re.sub(r"\W", "_", browser.label_key), feature)
    st.text_input(
        f"Your label for feature {feature}",
        browser.labels().get(feature, ""),
        max_chars=200,
        key=key,
        on_change=_keep_label,
        args=(browser.label_key, feature, key),
        placeholder="What does it fire on? e.g. the keyword after a quote",
    )
    labels = state.SAE_LABELS.setdefault().get(browser.label_key, {})
    if labels:
        st.download_button(
            "Download your labels (labels.json)",
            json.dumps({str(k): v for k, v in sorted(labels.items())}, ensure_ascii=False, indent=1),
            file_name="labels.json",
            mime="application/json",
            key=state.widget("feature_labels_download"),
        )
    st.caption(
        "Your labels are kept with this autoencoder in your session (the shipped autoencoder is read-only, so they "
        "are never written into it): download them to keep them."
    )


def draw_search(browser: Browser, text: str) -> None:
    """Which features fire on a text: the strongest over the text, and the features at every token."""
    view = browser.view
    config = view.model.config
    ids, note = inside.tokens_of(
        view.tokenizer, config, inside.bounded_text(text, "search text"), config.context_length
    )
    if not ids:
        return
    if note:
        st.caption(note)
    found = _feature_search(view.content_key, browser.sae_id, tuple(ids), view.model, browser.sae, browser.hook)
    labels = browser.labels()
    strongest = ", ".join(
        f"**{f}**{' (' + literal_markdown(labels[f]) + ')' if f in labels else ''} {v:.2f}"
        for f, v in found.overall[:8]
    )
    st.markdown(f"Strongest on this text: {strongest or 'none fires'}")
    frame = pd.DataFrame(
        {
            "token": [label(view, i) for i in ids],
            "features (activation)": [" ".join(f"{f}:{v:.2f}" for f, v in row) for row in found.per_token],
        }
    )
    st.dataframe(frame, hide_index=True, width="stretch", height=min(300, 36 + 35 * len(frame)))


def draw_feature_steer(browser: Browser, feature: int, prompt: str, alpha: float, seed: int) -> None:
    view = browser.view
    ids = view_ids(view, prompt, "prompt") or view.tokenizer.encode("\n")[:1]
    pair = _feature_steer(
        view.content_key, browser.sae_id, tuple(ids), feature, alpha, seed, view.model, browser.sae, browser.hook
    )
    plain_and_steered(view, prompt, pair, f"With α = {alpha:g} × feature {feature}'s direction at {browser.hook}")
    st.caption(
        f"The feature's decoder row (unit length) times α is added at every position while the model writes "
        f"{inside.NEW_TOKENS} tokens at temperature {inside.STEER_TEMPERATURE:g}; both texts use the same seed "
        f"({seed}, the sidebar's): where they differ, the feature did it."
    )


def change_figure(change: list[float], tokens: list[str]) -> go.Figure:
    """The loss on every next token after a knock-out, minus before (red: harder to predict)."""
    figure = go.Figure(
        go.Bar(
            x=charts.unique_labels(tokens[1:]),
            y=change,
            marker_color=["#c92a2a" if value > 0 else "#1c7ed6" for value in change],
            hovertemplate="predicting %{x}<br>loss change %{y:+.3f} nats<extra></extra>",
        )
    )
    figure.update_layout(
        height=260,
        margin=charts.margins(10, 10),
        yaxis_title="Δ loss (nats)",
        xaxis=dict(type="category", tickangle=-60 if len(tokens) > 16 else 0),
    )
    return figure


@st.cache_data(show_spinner=False, max_entries=64)
def _knockout_default(key: str, sae_id: str, ids: tuple, _model, _sae, hook: str) -> int:
    return inside.knockout_default(_model, _sae, hook, list(ids))


def knockout_default(browser: Browser) -> int:
    """The feature the knock-out opens on: the strongest one on the default text (the same for everyone)."""
    view = browser.view
    ids = view_ids(view, inside.DEFAULT_LOSS_TEXT, "text")
    return _knockout_default(view.content_key, browser.sae_id, tuple(ids), view.model, browser.sae, browser.hook)


def draw_feature_knockout(browser: Browser, text: str, knocked: list[int], mode: str) -> None:
    view = browser.view
    ids = view_ids(view, inside.bounded_text(text, "text"), "text")
    interventions.check_text(view.model, ids)
    result = _feature_knockout(
        view.content_key, browser.sae_id, tuple(ids), tuple(knocked), mode, view.model, browser.sae, browser.hook
    )
    before, after = float(result.before.mean()), float(result.after.mean())
    charts.latex(
        rf"\mathcal{{L}}_{{\text{{features {', '.join(map(str, result.features))} out}}}} - \mathcal{{L}} = "
        rf"{after:.4f} - {before:.4f} = {after - before:+.4f}\ \text{{nats}}"
    )
    tokens = [label(view, i) for i in ids]
    charts.show(change_figure(result.change.tolist(), tokens), key=state.widget("feature_knock_tokens"))
    st.caption(
        "The loss on every next token without the features, minus with them: red, it got harder to predict. "
        + (
            "Subtract: x − Σ fᵢ·W_dec,ᵢ (the rest of the activation, the autoencoder's error included, stays)."
            if mode == "subtract"
            else "Reconstruction: x̂ with the features set to 0, against x̂ with every feature."
        )
    )


# ------------------------------------------------------------------ features: train your own autoencoder
def submit_sae_run(view, config: sae.SaeConfig):
    """Start an autoencoder run for the picked model as a lab run of this session (admitted by its footprint)."""
    d_in = sae.input_width(view.model, config)
    model_id = {"name": view.label, "fingerprint": model_fingerprint(view.content_key, view.model)}
    found = features_corpus()
    if found is None:
        return None
    text = inside.readable(view.tokenizer, found[1][: inside.corpus_chars(view.model.config, config)])
    build = functools.partial(inside.build_sae_trainer, view.model, view.tokenizer, text, config, view.label)
    label = runs.unique_label(f"SAE {config.hook} · {config.d_sae} · {config.sparsity}")
    job = runs.start(
        "sae_train",
        lambda: picker.manager().submit_training(
            picker.session_id(),
            build=build,
            footprint=footprint.sparse_autoencoder(view.model.config, config, d_in),
            label=label,
            total=config.steps,
            checkpoint=False,
        ),
    )
    if job is not None:
        state.SAE_RUNS.setdefault()[job.id] = {"model": model_id, "shown": False}
    return job


def curves_figure(rows: list[dict]) -> go.Figure:
    """An autoencoder run's curves: variance explained, L0, dead features, and the model's loss with x̂ spliced in."""
    frame = pd.DataFrame(rows)
    figure = make_subplots(
        rows=1, cols=4, subplot_titles=("variance explained", "L0 (features per token)", "dead features", "loss")
    )
    for col, name in enumerate(("variance explained", "L0", "dead"), start=1):
        figure.add_trace(go.Scatter(x=frame["step"], y=frame[name], name=name, showlegend=False), row=1, col=col)
    measured = frame.dropna(subset=["spliced-in loss"]) if "spliced-in loss" in frame else frame.iloc[:0]
    for name, colour in (("clean loss", "#212529"), ("spliced-in loss", "#2f9e44"), ("zeroed loss", "#c92a2a")):
        if len(measured):
            figure.add_trace(
                go.Scatter(x=measured["step"], y=measured[name], name=name, mode="lines+markers", line_color=colour),
                row=1,
                col=4,
            )
    figure.update_layout(height=260, margin=charts.margins(30, 10), legend=dict(orientation="h", y=-0.25))
    return figure


def sae_runs() -> list:
    found = [picker.manager().get(picker.session_id(), job_id) for job_id in state.SAE_RUNS.setdefault()]
    return [job for job in found if job is not None]


def draw_sae_runs() -> None:
    """This session's autoencoder runs: progress, Pause/Stop, and their curves."""
    for job in sae_runs():
        status = job.status()
        st.markdown(f"**{literal_markdown(job.label)}** · {literal_markdown(status.describe())}")
        runs.controls(job, status, "sae")
        rows = inside.sae_curves(status.metrics)
        if rows:
            charts.show(curves_figure(rows), key=state.widget("sae_curves_", job.id))


def newest_finished_run() -> str | None:
    """A run that has finished since the tab last looked: the browser opens on it (once)."""
    for job_id, info in state.SAE_RUNS.setdefault().items():
        job = picker.manager().get(picker.session_id(), job_id)
        if job is not None and job.status().done and job.snapshots is not None and not info.get("shown"):
            info["shown"] = True
            return f"run:{job_id}"
    return None
