"""The Inside page's interventions, drawn: head ablation, activation patching and steering (llmviz.interpret computes
every number; this module turns them into charts, tables and downloads, and runs a sweep in the page or as a lab job).

A sweep (every head, every layer × position) is small for the shipped GPT and large for GPT-2:
:func:`llmviz.interpret.interventions.fits_in_page` decides. A small one runs in the script run, remembered by content
(the model's key and the token ids) for every session; a large one is a lab job of this session with progress and a
Stop button, and its result (complete, or what it measured before Stop) stays with the session.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from llmviz.errors import LlmvizError
from llmviz.interpret import ablation, interventions, patching
from llmviz.training import footprint
from ui import charts, picker, state
from ui.panels import runs


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
    change = (result.token_losses_after - result.token_losses_before).tolist()
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


def patching_figure(result: patching.Patching, columns: list[str]) -> go.Figure:
    """Layer × position (or × head): the share of the logit difference each patch restores."""
    restored = result.restored  # (L, columns)
    layers = restored.shape[0]
    figure = charts.heatmap(
        [[None if math.isnan(v) else v for v in row] for row in restored.tolist()],
        x_labels=columns,
        y_labels=[f"layer {layer}" for layer in range(layers)],
        colorscale="RdBu_r",
        zmid=0.0,
        zmin=-1.0,
        zmax=1.0,
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
