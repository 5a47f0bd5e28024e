"""Live training in a page: runs kept in the session, charts of their curves."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.train import Trainer, checkpoint_metadata, smooth

COLOURS = ["#4c6ef5", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0c8599", "#e67700", "#495057"]


@dataclass
class Run:
    label: str
    trainer: Trainer
    samples: list[tuple[int, str]] = field(default_factory=list)
    finished: bool = False
    error: str | None = None

    @property
    def history(self):
        return self.trainer.history

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(m) for m in self.history])


def runs() -> dict[str, Run]:
    return st.session_state.setdefault("runs", {})


def unique_label(base: str) -> str:
    label, number = base, 2
    while label in runs():
        label, number = f"{base} #{number}", number + 1
    return label


def register_for_sampling(run: Run) -> None:
    from ui.models import session_models

    model = run.trainer.model
    session_models()[run.label] = (model, run.trainer.dataset.tokenizer, checkpoint_metadata(run.trainer))


def loss_figure(selected: list[Run], show_val: bool = True, height: int = 380, smoothing: float = 0.0) -> go.Figure:
    figure = go.Figure()
    vocabularies = set()
    for number, run in enumerate(selected):
        frame = run.frame()
        if frame.empty:
            continue
        colour = COLOURS[number % len(COLOURS)]
        train = smooth(frame["train_loss"].tolist(), smoothing) if smoothing else frame["train_loss"]
        figure.add_trace(go.Scatter(x=frame["step"], y=train, mode="lines", name=f"{run.label} (train)",
                                    line=dict(color=colour)))
        if show_val and frame["val_loss"].notna().any():
            val = frame.dropna(subset=["val_loss"])
            figure.add_trace(go.Scatter(x=val["step"], y=val["val_loss"], mode="lines+markers",
                                        line=dict(dash="dot", color=colour), name=f"{run.label} (validation)"))
        vocabularies.add(run.trainer.dataset.vocab_size)
    for vocab in sorted(vocabularies):
        figure.add_hline(y=math.log(vocab), line_dash="dash", line_color="#adb5bd",
                         annotation_text=f"uniform guess: ln {vocab} = {math.log(vocab):.2f}",
                         annotation_position="top right")
    figure.update_layout(xaxis_title="step", yaxis_title="cross-entropy loss (nats)", height=height,
                         margin=dict(t=10, l=10, r=10, b=10), legend=dict(orientation="h", y=-0.2))
    return figure


def train_live(run: Run, sample_every: int = 0, sample_prompt: str = "", key: str = "stop") -> None:
    """Run ``run.trainer`` to its end, drawing progress, curves and samples as it goes.

    The run lives in session state before the first step, so pressing Stop (which ends this
    script run at the next step) or leaving the page keeps everything learned so far.
    """
    runs()[run.label] = run
    trainer = run.trainer
    total = trainer.config.steps
    progress = st.progress(0.0, text="starting…")
    st.button("Stop", key=key, help="Stops at the end of the current step; the run so far is kept.")
    chart = st.empty()
    sample_box = st.empty()
    last_draw = last_tick = 0.0
    try:
        for metrics in trainer.run():
            now = time.perf_counter()
            if sample_every and (metrics.step % sample_every == 0 or metrics.step == total):
                run.samples.append((metrics.step, trainer.generate_sample(sample_prompt, max_new_tokens=80)))
                sample_box.code(f"step {run.samples[-1][0]}:\n{run.samples[-1][1]}", language=None, wrap_lines=True)
            if now - last_tick > 0.05 or metrics.step == total:
                # every st call is where Streamlit can stop this run (Stop, leaving the page, closing
                # the tab), so one comes at least every 50 ms: the run ends within one step
                val = next((m.val_loss for m in reversed(trainer.history) if m.val_loss is not None), None)
                progress.progress(metrics.step / total, text=(
                    f"step {metrics.step}/{total} · loss {metrics.train_loss:.3f}"
                    + (f" · validation {val:.3f}" if val is not None else "")
                    + f" · perplexity {metrics.perplexity:,.1f} · {metrics.tokens_per_s:,.0f} tokens/s"))
                last_tick = now
            if now - last_draw > 0.5 or metrics.step == total:
                chart.plotly_chart(loss_figure([run]), width="stretch", key=f"{key}_chart_{metrics.step}")
                last_draw = now
        run.finished = True
    except LlmvizError as error:
        run.error = str(error)
        st.error(str(error))
    register_for_sampling(run)
