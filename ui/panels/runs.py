"""Training in the app: runs are jobs (llmviz.jobs.manager) of this browser session, drawn by live fragments.

The page starts a job and returns at once; a fragment that reruns every 2 s draws progress, the
loss curve and samples, with Pause/Resume/Stop. Leaving the page leaves the job training; coming back
draws the same job again (no second loop is ever started for it).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.jobs.events import JobState
from llmviz.jobs.job import Job, JobStatus
from llmviz.jobs.manager import JobRefused
from llmviz.training.overfitting import overfitting
from llmviz.training.trainer import smooth
from ui import charts, picker, sections, state, watch
from ui.errors import friendly_errors
from ui.text import literal_markdown

# Plotly's category10: every pair stays apart (the old list had two near-identical oranges in a 7-runner race)
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22"]


def runs() -> list[Job]:
    """This session's training runs, oldest first."""
    return picker.my_jobs("train")


def unique_label(base: str) -> str:
    labels = {job.label for job in picker.my_jobs(None)}
    label, number = base, 2
    while label in labels:
        label, number = f"{base} #{number}", number + 1
    return label


def chart_selection(labels: dict[str, str], chosen: list[str] | None, offered: set[str], newest: int = 7) -> list[str]:
    """The runs on the comparison chart (their labels), from ``labels`` (each run of the session, oldest first:
    id → label), ``chosen`` (the multiselect's value; None: never drawn) and ``offered`` (the ids it already had).

    The first time, the ``newest`` runs. After that the student's choice (less runs since cleared) plus every run
    not offered before, at the end: a run or race just started joins the chart once, so it is there when it ends;
    taken off by the student, it stays off.

    >>> chart_selection({"a": "A", "b": "B", "c": "C"}, None, set(), newest=2)
    ['B', 'C']
    >>> chart_selection({"a": "A", "b": "B", "c": "C", "d": "D"}, ["C", "A"], {"a", "b", "c"})
    ['C', 'A', 'D']
    >>> chart_selection({"b": "B", "d": "D"}, ["A", "D"], {"a", "b", "c", "d"})  # "a" was cleared
    ['D']
    """
    if chosen is None:
        return list(labels.values())[-newest:]
    kept = [label for label in chosen if label in labels.values()]
    return kept + [label for run_id, label in labels.items() if run_id not in offered and label not in kept]


_FRAMES: OrderedDict[tuple[str, int], pd.DataFrame] = OrderedDict()
_FRAMES_LOCK = threading.Lock()
MAX_POINTS = 600  # points per curve on a chart: a curve of 2,000 steps loses nothing visible at this width


def metrics_frame(status: JobStatus) -> pd.DataFrame:
    """The run's metrics as a table, one row per step; built once per change of the run (every watcher and
    every section that draws this run at this version shares it)."""
    key = (status.job_id, status.version)
    with _FRAMES_LOCK:
        if key in _FRAMES:
            _FRAMES.move_to_end(key)
            return _FRAMES[key]
    fields = ["step", "train_loss", "val_loss", "perplexity", "lr", "tokens_per_s", "grad_norm", "elapsed_s"]
    frame = pd.DataFrame([[getattr(m, f) for f in fields] for m in status.metrics], columns=fields)
    with _FRAMES_LOCK:
        _FRAMES[key] = frame
        while len(_FRAMES) > 256:
            _FRAMES.popitem(last=False)
    return frame


def thinned(frame: pd.DataFrame, points: int = MAX_POINTS) -> pd.DataFrame:
    """At most ``points`` rows, evenly spread, the last row always kept (for drawing, never for downloads)."""
    if len(frame) <= points:
        return frame
    stride = -(-len(frame) // points)
    picked = list(range(0, len(frame) - 1, stride)) + [len(frame) - 1]
    return frame.iloc[picked]


def loss_figure(
    selected: list[tuple[str, JobStatus, int]], show_val: bool = True, height: int = 380, smoothing: float = 0.0
) -> go.Figure:
    """Training (and validation) loss of ``(label, status, vocab_size)`` runs on one chart.

    Built in one constructor call from plain dicts and numpy arrays (a live chart is rebuilt at every refresh of
    every watching tab: Plotly's ``add_trace`` / ``add_hline`` / ``update_layout`` validate each call on their
    own, several times slower)."""
    traces: list[dict] = []
    vocabularies = set()
    for number, (label, status, vocab) in enumerate(selected):
        full = metrics_frame(status)
        if full.empty:
            continue
        colour = COLOURS[number % len(COLOURS)]
        train = smooth(full["train_loss"].tolist(), smoothing) if smoothing else full["train_loss"].tolist()
        frame = thinned(full.assign(train_shown=train))
        traces.append(
            dict(
                type="scatter",
                x=frame["step"].to_numpy(),
                y=frame["train_shown"].to_numpy(),
                mode="lines",
                name=f"{label} (train)",
                line=dict(color=colour),
            )
        )
        if show_val and full["val_loss"].notna().any():
            val = thinned(full.dropna(subset=["val_loss"]))
            traces.append(
                dict(
                    type="scatter",
                    x=val["step"].to_numpy(),
                    y=val["val_loss"].to_numpy(),
                    mode="lines+markers",
                    line=dict(dash="dot", color=colour),
                    name=f"{label} (validation)",
                )
            )
        vocabularies.add(vocab)
    shapes, annotations = [], []
    for vocab in sorted(vocabularies):  # a dashed line across the chart at the loss of a uniform guess
        level = math.log(vocab)
        shapes.append(
            dict(
                type="line",
                xref="x domain",
                x0=0,
                x1=1,
                yref="y",
                y0=level,
                y1=level,
                line=dict(dash="dash", color="#adb5bd"),
            )
        )
        annotations.append(
            dict(
                xref="x domain",
                x=1,
                yref="y",
                y=level,
                showarrow=False,
                xanchor="right",
                yanchor="top",
                text=f"uniform guess: ln {vocab} = {level:.2f}",
            )
        )  # below the line: the toolbar sits above the plot
    return go.Figure(
        data=traces,
        layout=dict(
            xaxis=dict(title=dict(text="step")),
            yaxis=dict(title=dict(text="cross-entropy loss (nats)")),
            height=height,
            margin=dict(t=10, l=10, r=10, b=10),
            legend=dict(orientation="h", y=-0.2),
            shapes=shapes,
            annotations=annotations,
        ),
    )


def vocab_of(job: Job) -> int:
    return job.info.vocab_size if job.info is not None else 0


def controls(job: Job, status: JobStatus, where: str) -> None:
    """Pause / Resume / Stop buttons for a job that has not ended (``where``: the part of the page, for their keys)."""
    if status.done:
        return
    c1, c2, _ = st.columns([1, 1, 4])
    if job.paused:
        if c1.button("Resume", key=state.widget("run_resume_", where, job.id)):
            job.resume()
    elif c1.button(
        "Pause", key=state.widget("run_pause_", where, job.id), help="Training waits after this step; nothing is lost."
    ):
        job.pause()
    if c2.button(
        "Stop",
        key=state.widget("run_stop_", where, job.id),
        help="Stops at the end of the current step; the run so far is kept.",
    ):
        job.stop()


def draw_run(job: Job, where: str = "live") -> None:
    """Progress, controls, loss curve and newest sample of one run (inside a fragment)."""
    status = job.status()
    if status.done:
        # an ended run has no progress bar and no Stop; its curve is on the comparison chart below
        st.markdown(f"**{literal_markdown(job.label)}** · {status.describe()}")
        st.caption("Its curves are on the comparison chart of section 2, next to your other runs.")
    else:
        st.progress(status.fraction, text=f"**{literal_markdown(job.label)}** · {status.describe()}")
    controls(job, status, where)
    if status.error:
        st.error(status.error)
    overfits = overfitting(status.metrics, vocab_of(job))  # the same verdict as the CLI's
    if overfits is not None:
        st.warning(overfits.message())
    if status.metrics and not status.done:
        charts.show(
            loss_figure([(job.label, status, vocab_of(job))]),
            width="stretch",
            key=state.widget("run_chart_", where, job.id),
        )
    if status.samples:
        step, text = status.samples[-1]
        st.code(f"step {step}:\n{text}", language=None, wrap_lines=True)
    if status.state == JobState.STOPPED:
        st.caption(
            f"Stopped at step {status.step} of {status.total}: everything learned so far is kept, "
            "and the run is in the model picker."
        )


def start(where: str, submit: Callable[[], Any]) -> Any:
    """Start runs with ``submit()`` (a call of the job manager's ``submit_*``) for the button ``where``; returns what
    it returns, or None when the server refused them (the student's share of runs or memory, the GPU's room). The
    reason (what was asked, what it needs, what is left, what would fit) is kept in the session
    (:data:`ui.state.RUN_REFUSED`) so that :func:`refusal` shows it beside the button, also after the page has rerun,
    until the button is pressed again. A setting that cannot work raises its error as before."""
    state.RUN_REFUSED.pop(where)
    try:
        return submit()
    except JobRefused as refused:
        state.RUN_REFUSED.set(str(refused), where)
        return None


def refusal(where: str) -> None:
    """Why the last runs asked for at ``where`` were refused, if they were (see :func:`start`)."""
    said = state.RUN_REFUSED.get(where)
    if said:
        st.warning(literal_markdown(said))


def live(draw, *, active: Callable[[], bool], seconds: float | None = None, name: str = "training.live") -> None:
    """Call ``draw()`` inside a fragment that reruns while ``active()`` (``name``: for the timing logs).

    The refresh interval is chosen when the page opens (``seconds``, else :func:`ui.watch.refresh_seconds`):
    every 2 s for one watching tab, less often when many tabs watch, so that watching costs the server a
    bounded time per second whatever the number of watchers. Each refresh's server time is recorded there.

    ``active`` is asked again after every draw: when it has flipped (a run paused, resumed or ended), the
    whole page reruns once, so the refresh starts or stops — a paused run's page stays still, not redrawn
    every 2 s in every watching browser."""
    started = active()
    session = picker.session_id()
    interval = seconds if seconds is not None else watch.refresh_seconds(session)

    def draw_then_follow() -> None:
        begin = time.perf_counter()
        with friendly_errors(name):  # a live section's bug is a message, never a traceback
            draw()
        still = active()
        watch.record(session, name, time.perf_counter() - begin)
        if still != started:
            st.rerun(scope="app")

    st.fragment(sections.timed(name, draw_then_follow), run_every=interval if started else None)()


def follow_task(job_slot: state.Slot, *, describe: Callable[[JobStatus], str], name: str) -> Job | None:
    """A page's task job (BPE, word2vec, …) whose id is in ``job_slot.get()["id"]``: while it runs,
    draw its progress (``describe(status)``) and a Stop button, live; once it has ended, forget it and return it,
    so the page can take :attr:`~llmviz.jobs.job.Job.result` (what was made, also when stopped)."""
    spec = job_slot.get()
    if not spec:
        return None
    job = picker.manager().get(picker.session_id(), spec["id"])
    if job is None:  # forgotten (the session's jobs were cleared)
        job_slot.pop()
        return None
    if job.status().done:
        job_slot.pop()
        return job

    def draw() -> None:
        status = job.status()
        st.progress(status.fraction, text=describe(status))
        if not status.done and st.button(
            "Stop",
            key=state.widget("run_stop_", name, job.id),
            help="Stops after this step and keeps what was learned so far.",
        ):
            job.stop()

    # a progress bar and a Stop button cost the server about a millisecond: a task (seconds long) refreshes every
    # second, so its Stop can be pressed while it works
    live(draw, active=lambda: not job.status().done, name=name, seconds=1.0)
    return None
