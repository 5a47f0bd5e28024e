"""The Tuning page's figures and tables (``stages/tuning.py`` wires them; ``llmviz/lessons/tuning.py`` computes the
numbers): the three answers side by side with each token's probability, the probabilities of one answer under every
model, the held-out figures, the response mask over an example's tokens, and DPO's curves."""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.lessons import tuning
from ui import charts

# each stage's name is written in its colour (>= 4.5:1 on white) and its chips are shaded with it at most 55%
STAGE_COLOURS = {"base": "#5c5f6a", "SFT": "#3b5bdb", "DPO": "#c2410c"}


def _chip(piece: str, probability: float, colour: str) -> str:
    """A token shaded by its probability (stronger = more likely), the probability written under it as well."""
    alpha = max(0.08, min(1.0, probability))
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    style = f"background:rgba({red},{green},{blue},{alpha * 0.55:.2f});border-radius:3px;padding:1px 2px"
    return charts.token_with_number(piece, style, f"{probability:.2f}", f"p = {probability:.3f}")


def answer_card(answer: tuning.ScoredAnswer) -> str:
    """HTML: one model's answer, each token shaded by the probability the model itself gave it."""
    own = answer.probabilities[answer.model]
    chips = "".join(_chip(piece, p, STAGE_COLOURS.get(answer.model, "#3b5bdb")) for piece, p in zip(answer.tokens, own))
    ending = "ends with <code>&lt;|endoftext|&gt;</code>" if answer.ended else "does not stop (cut at the token limit)"
    return (
        f'<div class="tuning-answer" style="border:1px solid #dee2e6;border-radius:8px;padding:8px;min-height:7rem">'
        f'<b style="color:{STAGE_COLOURS.get(answer.model, "#000")}">{html.escape(answer.model)}</b> '
        f'<span style="font-size:0.8rem;color:#495057">{len(answer.tokens)} tokens; {ending}</span>'
        f'<div style="line-height:1.3;margin-top:4px">{chips}</div></div>'
    )


def answers_row(answers: list[tuning.ScoredAnswer]) -> None:
    """The answers in columns, one per model."""
    for column, answer in zip(st.columns(len(answers)), answers):
        column.html(answer_card(answer))


def probabilities_figure(answer: tuning.ScoredAnswer) -> go.Figure:
    """Heatmap: each token of one model's answer (x) and its probability under each model (y)."""
    names = list(answer.probabilities)
    # the tokens themselves on the axis, a repeated one as often as it comes (a column per position, not per label:
    # Plotly would merge equal labels), its position said on hover
    labels = [t.replace("\n", "↵") for t in answer.tokens]
    positions = list(range(len(labels)))
    matrix = [answer.probabilities[name] for name in names]
    figure = go.Figure(
        go.Heatmap(
            z=matrix,
            x=positions,
            y=names,
            customdata=[labels for _ in names],
            zmin=0,
            zmax=1,
            colorscale="Blues",
            text=[[f"{p:.2f}" for p in row] for row in matrix],
            texttemplate="%{text}" if len(labels) <= 30 else None,
            hovertemplate="%{y}: p(“%{customdata}”, token %{x}) = %{z:.3f}<extra></extra>",
            colorbar={"title": "p"},
        )
    )
    figure.update_layout(
        title=f"The {answer.model} model's answer: each token's probability under each model",
        height=260,
        margin=charts.margins(top=50, bottom=60),
        xaxis={"tickangle": -45, "tickmode": "array", "tickvals": positions, "ticktext": labels},
    )
    return figure


def figures_table(rows: list[tuning.ModelFigures]) -> pd.DataFrame:
    """The held-out figures, one row per model."""
    return pd.DataFrame(
        {
            "model": [r.model for r in rows],
            "answers' loss (held-out questions)": [round(r.answer_loss, 3) for r in rows],
            "prefers the chosen answer (held-out pairs)": [f"{r.preference_accuracy:.0%}" for r in rows],
            "answers that end (greedy, held-out questions)": [f"{r.ends_answers:.0%}" for r in rows],
            "DPO's reward accuracy (against the SFT model)": [
                "—" if r.reward_accuracy is None else f"{r.reward_accuracy:.0%}" for r in rows
            ],
        }
    )


def mask_chips(tokens: list[tuning.MaskedToken]) -> str:
    """HTML: the example's tokens, the prompt's grey and struck out of the loss (label −100), the answer's green."""
    chips = []
    for token in tokens:
        shown = html.escape(token.text).replace("\n", "↵")
        style = (
            "background:#d3f9d8;border:1px solid #2f9e44"
            if token.in_loss
            else "background:#f1f3f5;border:1px dashed #adb5bd;color:#5c5f6a"  # 5.7:1
        )
        label = "loss" if token.in_loss else "−100"
        chips.append(
            f'<span class="{"in-loss" if token.in_loss else "masked"}" title="id {token.token_id}: {label}" '
            f'style="display:inline-flex;flex-direction:column;align-items:center;margin:1px;vertical-align:top">'
            f'<span style="{style};border-radius:4px;padding:1px 3px;font-family:monospace;white-space:pre">'
            f'{shown}</span><span style="font-size:0.65rem;color:#495057">{label}</span></span>'
        )
    return '<div style="line-height:2.4">' + "".join(chips) + "</div>"


def dpo_figure(curves: dict[str, list[tuple[int, float]]], title: str) -> go.Figure:
    """DPO over its steps: the chosen and rejected log-probability ratios (left axis), the reward margin and the
    preference accuracy (right axis). ``title`` may hold a student's text (a run's label names their upload): it is
    drawn as text, never as Plotly's tags."""
    figure = go.Figure()
    styles = {
        "chosen_ratio": ("chosen: log π − log π_ref", "#2f9e44", "y", "solid"),
        "rejected_ratio": ("rejected: log π − log π_ref", "#e03131", "y", "solid"),
        "margin": ("reward margin β(r_w − r_l)", "#4c6ef5", "y2", "dot"),
        "accuracy": ("preference accuracy (batch)", "#f08c00", "y2", "dash"),
        "val_accuracy": ("preference accuracy (held out)", "#862e9c", "y2", "dashdot"),
    }
    for name, (label, colour, axis, dash) in styles.items():
        points = curves.get(name, [])
        if points:
            figure.add_trace(
                go.Scatter(
                    x=[s for s, _ in points],
                    y=[v for _, v in points],
                    name=label,
                    yaxis=axis,
                    mode="lines+markers" if name == "val_accuracy" else "lines",
                    line={"color": colour, "dash": dash},
                )
            )
    figure.update_layout(
        title=charts.plotly_text(title),
        height=340,
        margin=charts.margins(top=50),
        xaxis={"title": "step"},
        yaxis={"title": "log-probability ratio (nats)"},
        # its own round ticks (not the left axis's grid lines carried over: 0.215, 0.967, 1.72 …), no second grid
        yaxis2={"title": "margin, accuracy", "overlaying": "y", "side": "right", "tickmode": "auto", "showgrid": False},
        legend={"orientation": "h", "y": -0.25},
    )
    return figure
