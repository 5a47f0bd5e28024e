"""The Training page's lesson "The decoder of a Transformer", whole: the decoder of an encoder–decoder Transformer
trained live on a toy task (llmviz.training.toy_decoder), its progress and its loss curve."""

from __future__ import annotations

import functools
import math

import plotly.graph_objects as go
import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.training.toy_decoder import toy_task_loop
from ui import charts, picker, shared_sidebar, state
from ui.panels import runs


def decoder_curve(status) -> None:
    """The toy decoder's loss curve, against ln 12 (a uniform guess over its 12 tokens)."""
    curve = status.losses
    figure = go.Figure(go.Scatter(x=[s for s, _ in curve], y=[v for _, v in curve], mode="lines"))
    figure.add_hline(y=math.log(12), line_dash="dash", annotation_text=f"ln 12 = {math.log(12):.2f}")
    figure.update_layout(xaxis_title="step", yaxis_title="loss", height=320, margin=charts.margins(10))
    charts.show(figure, width="stretch", key=state.widget("decoder_chart"), words=runs.curve_words(figure))
    if status.done:
        st.caption(
            f"Loss {curve[0][1]:.3f} → {curve[-1][1]:.3f}"
            + (": the model memorises the ten sequences." if status.state == "finished" else " (stopped).")
        )


def draw_decoder() -> None:
    job = picker.runs().live(state.DECODER_JOB.get(default=""))
    if job is None:
        return
    status = job.status()
    if status.done:
        runs.final_line(job.label, status)
    else:
        st.progress(status.fraction, text=status.describe())
    runs.controls(job, status, where="decoder")
    if status.losses:
        decoder_curve(status)


def decoder_part() -> None:
    st.subheader("The decoder of an encoder–decoder Transformer, on a toy task")
    st.caption(
        "Ten random label sequences of 7 tokens (vocabulary 12); the decoder reads [start] + labels[:-1] and a "
        "random encoder output, and learns to predict each next label: 6 layers, 8 heads, d_model 32, SGD with "
        "momentum."
    )
    if st.button("Train the decoder (200 steps)", key=state.widget("decoder_train")):
        seed = shared_sidebar.settings().run_seed()
        try:
            decoder_job = picker.runs().submit_task(
                functools.partial(toy_task_loop, seed=seed), label="toy decoder", total=200
            )
        except LlmvizError as error:
            st.warning(str(error))
        else:
            state.DECODER_JOB.set(decoder_job.id)
    decoder = picker.runs().live(state.DECODER_JOB.get(default=""))
    runs.live(draw_decoder, active=lambda: decoder is not None and decoder.changing, name="training.decoder")
