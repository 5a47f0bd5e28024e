"""Training in the app: a student's runs in this process (``picker.runs()``: :mod:`llmviz.lab.live`), drawn live.

The page starts a job and returns at once; a fragment that reruns every 2 s draws progress, the
loss curve and samples, with Pause/Resume/Stop. Leaving the page leaves the job training; coming back
draws the same job again (no second loop is ever started for it).

Every page that shows lab runs draws them with :func:`lab_panel`: a progress bar and the controls while a run
trains, its final line once it has ended (steps, final training and validation loss, and the section's own
measure), and one chart where each run has its colour, its training curve smoothed over the raw one drawn faint.
A click on Pause, Resume or Stop acts through the button's callback, which Streamlit runs for the click whatever
the run that carries it draws (a live section's refresh, the whole page, or a section that no longer exists): the
click is never lost. A page records the runs it draws live (:func:`ui.picker.on_this_page`): the sidebar names them
without drawing their progress a second time, at other moments. Work a page computes in a worker (a report, a
short demo) goes through :func:`ui.panels.task_jobs.computed`.
"""

from __future__ import annotations

import functools
import html
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from cachetools import LRUCache

from llmviz.lab.live import LiveRun
from llmviz.lab.live_status import JobRefused, JobState, JobStatus, Planned
from llmviz.lessons.training import RunResult, final_train_loss, loss_words, perplexity_measure, smooth
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import vocab_bound
from llmviz.training.footprint import of_config
from llmviz.training.trainer import build_trainer
from ui import charts, colours, lab, picker, projector, sections, state, watch
from ui.errors import friendly_errors
from ui.text import literal_markdown

# Plotly's category10: every pair stays apart (the old list had two near-identical oranges in a 7-runner race)
COLOURS = colours.CATEGORICAL  # one colour per run (colour-blind safe: tests/project/test_colours.py)


def runs() -> list[LiveRun]:
    """This session's training runs of models, oldest first (its sparse autoencoder runs live on Inside's Features
    tab)."""
    autoencoders = state.SAE_RUNS.setdefault()
    return [job for job in picker.my_runs("train") if job.id not in autoencoders]


def unique_label(base: str) -> str:
    """``base``, or ``base #2``, ``#3``… when the student has a run of that label already: in this process, or as
    the lab keeps it (another process's, an earlier server's), so two of their runs never share a label."""
    labels = {job.label for job in picker.my_runs(None)} | {view.label for view in lab.runs(None)}
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


_FRAMES: LRUCache[tuple[str, int], pd.DataFrame] = LRUCache(maxsize=256)  # (job id, version) → its table
_FRAMES_LOCK = threading.Lock()
MAX_POINTS = 600  # points per curve on a chart: a curve of 2,000 steps loses nothing visible at this width


def curve_frame(points: list[tuple]) -> pd.DataFrame:
    """A kept curve, ``(step, training loss, validation loss)`` rows, as the table a loss chart draws (``step``,
    ``train_loss``, ``val_loss``).

    >>> curve_frame([(1, 3.0, None), (2, 2.5, 2.7)])["val_loss"].tolist()
    [nan, 2.7]
    """
    frame = pd.DataFrame(points, columns=["step", "train_loss", "val_loss"])
    return frame.astype({"train_loss": float, "val_loss": float})


def metrics_frame(status: JobStatus) -> pd.DataFrame:
    """The run's metrics as a table, one row per step; built once per change of the run (every watcher and
    every section that draws this run at this version shares it). A run drawn from the lab's record (a
    :class:`llmviz.lab.kept_run.KeptRun`: no worker's metrics) is its kept curve (:func:`curve_frame`).

    >>> from llmviz.lab.live_status import JobState
    >>> kept = JobStatus("r1", "run", "train", JobState.FINISHED, 2, 2, ((1, 3.0), (2, 2.5)), (), (), None, None,
    ...                  (), 1.0, val_losses=((2, 2.6),))
    >>> metrics_frame(kept).to_dict("list")
    {'step': [1, 2], 'train_loss': [3.0, 2.5], 'val_loss': [nan, 2.6]}
    """
    if not status.metrics:  # its version never changes: not cached
        losses, vals = dict(status.losses), dict(status.val_losses)
        return curve_frame([(step, losses.get(step), vals.get(step)) for step in sorted(losses.keys() | vals)])
    key = (status.job_id, status.version)
    with _FRAMES_LOCK:
        found = _FRAMES.get(key)
    if found is not None:
        return found
    fields = ["step", "train_loss", "val_loss", "perplexity", "lr", "tokens_per_s", "grad_norm", "elapsed_s"]
    frame = pd.DataFrame([[getattr(m, f) for f in fields] for m in status.metrics], columns=fields)
    with _FRAMES_LOCK:
        _FRAMES[key] = frame
    return frame


def thinned(frame: pd.DataFrame, points: int = MAX_POINTS, field: str = "train_loss") -> pd.DataFrame:
    """At most about ``points`` rows for drawing (never for downloads): in each run of consecutive rows, the lowest
    and the highest ``field`` (a loss spike between two drawn rows was dropped, and the chart hid it), the first and
    the last row always kept.

    >>> frame = pd.DataFrame({"step": range(1, 11), "train_loss": [5, 5, 5, 9, 5, 5, 5, 5, 5, 4]})
    >>> thinned(frame, points=4)["train_loss"].tolist()  # the spike at step 4 and the last step stay
    [5, 9, 5, 4]
    """
    if len(frame) <= points:
        return frame
    if field not in frame or frame[field].isna().all():
        stride = -(-len(frame) // points)
        return frame.iloc[list(range(0, len(frame) - 1, stride)) + [len(frame) - 1]]
    stride = -(-2 * len(frame) // points)  # two rows kept per run of ``stride``
    values = frame[field].reset_index(drop=True)
    kept = {0, len(frame) - 1}
    for start in range(0, len(frame), stride):
        run = values.iloc[start : start + stride].dropna()
        if len(run):
            kept |= {int(run.idxmin()), int(run.idxmax())}
    return frame.iloc[sorted(kept)]


def _rgba(colour: str, alpha: float) -> str:
    """``#1f77b4`` at opacity ``alpha`` (a faint copy of a run's colour)."""
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _uniform_guess_lines(vocabularies: list[int]) -> tuple[list[dict], list[dict]]:
    """A dashed line at a uniform guess's loss (ln of the vocabulary's size) for each of ``vocabularies``, named
    below it at the right: Plotly ``(shapes, annotations)``.

    >>> shapes, annotations = _uniform_guess_lines([256])
    >>> round(shapes[0]["y0"], 4), annotations[0]["text"]
    (5.5452, 'uniform guess: ln 256 = 5.55')
    """
    shapes, annotations = [], []
    for vocab in vocabularies:
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
    return shapes, annotations


def curve_words(figure: go.Figure) -> str:
    """A chart of curves in words (:func:`llmviz.lessons.training.loss_words`), read from the curves it draws:
    each curve its legend names (a faint per-step line under its smoothed curve is left out) with its value now,
    its start and its trend.

    >>> curve_words(go.Figure(go.Scatter(x=[1, 2], y=[4.0, 3.0], name="run (train)")))
    'Run (train) now 3 at step 2, from 4 at step 1; over the last quarter of the steps it fell by 1.'
    """
    shown = [t for t in figure.data if t.showlegend is not False and t.x is not None and len(t.x)]
    return loss_words({html.unescape(t.name or "loss"): (list(t.x), list(t.y)) for t in shown})  # as drawn


def loss_figure(
    selected: list[tuple[str, JobStatus | pd.DataFrame, int]],
    show_val: bool = True,
    height: int = 380,
    smoothing: float = 0.0,
    field: str = "train_loss",
    y_title: str = "cross-entropy loss (nats)",
) -> go.Figure:
    """Training (and validation) loss of ``(label, status, vocab_size)`` runs on one chart (``status``: a live run's,
    or the table of a kept run's curve: :func:`curve_frame`).

    Each run has its colour (its legend entry names it); with ``smoothing`` its training curve is an exponential
    moving average drawn over the raw per-step loss in the same colour, faint; validation is dotted, with markers.
    ``field``: another metric drawn the same way (``val_accuracy``: a classifier's held-out accuracy), with no
    validation line and no uniform-guess line. Built in one constructor call from plain dicts and numpy arrays (a
    live chart is rebuilt at every refresh of every watching tab: Plotly's ``add_trace`` / ``add_hline`` /
    ``update_layout`` validate each call on their own, several times slower)."""
    traces: list[dict] = []
    vocabularies = set()  # of the runs with a step: their uniform guess's line
    for number, (label, status, vocab) in enumerate(selected):
        label = charts.plotly_text(label)  # a run's label may name the student's upload: drawn as text, never tags
        if field != "train_loss":
            full = _field_frame(status, field)
        else:
            full = status if isinstance(status, pd.DataFrame) else metrics_frame(status)  # a kept curve, or a live run
        traces += _run_traces(full, label, COLOURS[number % len(COLOURS)], field, smoothing, show_val)
        vocabularies |= {vocab} if vocab and not full.empty else set()
    shapes, annotations = _uniform_guess_lines(sorted(vocabularies) if field == "train_loss" else [])
    return go.Figure(
        data=traces,
        layout=dict(
            xaxis=dict(title=dict(text="step")),
            yaxis=dict(title=dict(text=y_title)),
            height=height,
            margin=charts.margins(10, bottom=40),
            legend=projector.LEGEND_BELOW,
            shapes=shapes,
            annotations=annotations,
        ),
    )


def _run_traces(
    full: pd.DataFrame, label: str, colour: str, field: str, smoothing: float, show_val: bool
) -> list[dict]:
    """One run's lines on the loss chart: its curve of ``field`` (smoothed over the raw one drawn faint, with
    ``smoothing``), and its validation loss dotted; a run with no step yet is named in the legend all the same."""
    line = dict(type="scatter", mode="lines", name=label, legendgroup=label, line=dict(color=colour))
    if full.empty:  # waiting, or stopped at once
        return [dict(line, x=[], y=[])]
    raw = full[field].tolist()
    shown = smooth(raw, smoothing) if smoothing and field == "train_loss" else raw
    frame = thinned(full.assign(shown=shown))
    steps = frame["step"].to_numpy()
    traces = []
    if shown is not raw:  # the raw loss, faint, under its smoothed curve
        faint = dict(color=_rgba(colour, 0.25), width=1)
        traces.append(
            dict(
                line,
                x=steps,
                y=frame[field].to_numpy(),
                name=f"{label} (per step)",
                showlegend=False,
                hoverinfo="skip",
                line=faint,
            )
        )
    training = field == "train_loss"
    traces.append(
        dict(
            line,
            x=steps,
            y=frame["shown"].to_numpy(),
            mode="lines" if training else "lines+markers",
            name=f"{label} (train)" if training else label,
            line=dict(color=colour, width=2.5),
        )
    )
    if training and show_val and full["val_loss"].notna().any():
        val = thinned(full.dropna(subset=["val_loss"]))
        dotted = dict(dash="dot", color=colour)
        traces.append(
            dict(
                line,
                x=val["step"].to_numpy(),
                y=val["val_loss"].to_numpy(),
                mode="lines+markers",
                line=dotted,
                name=f"{label} (validation)",
            )
        )
    return traces


def _field_frame(status: JobStatus, field: str) -> pd.DataFrame:
    """The steps at which a run measured ``field`` (held-out accuracy is measured every few steps)."""
    return pd.DataFrame(status.measured(field), columns=["step", field])


def vocab_of(job: LiveRun) -> int:
    return job.info.vocab_size if job.info is not None else 0


def controls(job: LiveRun, status: JobStatus, where: str) -> None:
    """Pause / Resume / Stop for a job that has not ended (``where``: the part of the page, for their keys)."""
    if not status.done:
        buttons(job.id, resume=job.paused, stop=True, where=where)


def _pressed(run_id: str, action: str) -> None:
    """A run's button's callback: the lab's one control path (:func:`ui.lab.act`); a resumed run is the model every
    page shows (the picker stays on it, or comes to it)."""
    lab.act(run_id, action)
    if action == "resume":
        picker.select(f"run:{run_id}")


def buttons(run_id: str, *, resume: bool, stop: bool, where: str) -> None:
    """A run's control buttons: Resume (``resume``) or Pause, and Stop (``stop``); then what the last one said.

    Their callbacks act (:func:`ui.lab.act`: the lab's one control path), not their return values: a return value
    is True only in the one run that carries the click, and a click that landed while the section redrew was carried
    by a run that did not draw the button (the page's, or the refresh after the run ended) and was lost. What the
    click did (or why nothing was done: a refusal, a database fault) is said under the buttons, once."""
    c1, c2, _ = st.columns([1, 1, 4])
    if resume:
        c1.button("Resume", key=state.widget("run_resume_", where, run_id), on_click=_pressed, args=(run_id, "resume"))
    else:
        c1.button(
            "Pause",
            key=state.widget("run_pause_", where, run_id),
            help="Training waits after this step; nothing is lost.",
            on_click=_pressed,
            args=(run_id, "pause"),
        )
    if stop:
        c2.button(
            "Stop",
            key=state.widget("run_stop_", where, run_id),
            help="Stops at the end of the current step; the run so far is kept.",
            on_click=_pressed,
            args=(run_id, "stop"),
        )
    said = lab.said(run_id)
    if said:
        lab.warn(said, st.caption)


def result(status: JobStatus, measure: Callable[[JobStatus], str | None] | None = None) -> RunResult:
    """Where a run ended (or stands): steps, final training loss, last validation loss and ``measure(status)``
    (default: the validation perplexity)."""
    losses = [m.train_loss for m in status.metrics] or [loss for _, loss in status.losses]
    val = status.last_val_loss  # a kept run's as the record keeps it
    shown = measure(status) if measure is not None else perplexity_measure(val)
    return RunResult(status.step, status.total, status.state, final_train_loss(losses), val, shown)


def final_line(label: str, status: JobStatus, measure=None) -> None:
    """An ended run's result in one line (a failed run says why)."""
    if status.state == JobState.FAILED:
        why = literal_markdown(status.error or status.describe())
        st.warning(f"**{literal_markdown(label)}** stopped with a problem: {why}")
        return
    line = result(status, measure).line(label).removeprefix(label)
    st.markdown(f"**{literal_markdown(label)}**{literal_markdown(line)}")


def lab_panel(
    runs: dict[str, LiveRun],
    where: str,
    *,
    chart_key: str,
    measure: Callable[[JobStatus], str | None] | None = None,
    title: str = "Training loss",
    vocab: bool = False,
    accuracy_key: str | None = None,
) -> None:
    """A section's lab runs (``label → job``): while one trains, its progress bar and controls; once it has ended,
    its final line; then one chart of them all (each run in its colour, the training loss smoothed over the raw
    one, validation dotted). ``accuracy_key``: a second chart of the runs' held-out accuracy (classifiers)."""
    if not runs:
        return
    statuses = {label: job.status() for label, job in runs.items()}
    for label, job in runs.items():
        status = statuses[label]
        if status.done:
            final_line(label, status, measure)
        else:
            st.progress(status.fraction, text=f"**{literal_markdown(label)}** · {status.describe()}")
            controls(job, status, where)
    selected = [(label, statuses[label], vocab_of(job) if vocab else 0) for label, job in runs.items()]
    figure = loss_figure(selected, height=340, smoothing=0.8)
    figure.update_layout(title=title, margin=charts.margins(40))
    if accuracy_key is None:
        charts.show(figure, key=chart_key, words=curve_words(figure))
        return
    accuracy = loss_figure(selected, height=340, field="val_accuracy", y_title="held-out accuracy")
    accuracy.update_layout(title="Held-out accuracy", margin=charts.margins(40), yaxis_range=[0, 1.02])
    left, right = st.columns(2)
    charts.show_in(left, figure, key=chart_key, words=curve_words(figure))
    charts.show_in(right, accuracy, key=accuracy_key, words=curve_words(accuracy))


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
        lab.warn(said)


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


def planned(text: str, config: TrainConfig) -> Planned:
    """A lab run on ``text`` to be built in its worker (tokenizing included), never in the page's script run, with
    the memory estimate it is admitted by: a runner for ``JobManager.submit_race`` or ``submit_training``."""
    needs = of_config(config, vocab_bound(text, config), text_bytes=len(text.encode()))
    return Planned(functools.partial(build_trainer, text, config), needs, config.steps)
