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
short demo) goes through :func:`computed`.
"""

from __future__ import annotations

import functools
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
from llmviz.lessons.training import RunResult, final_train_loss, perplexity_measure, smooth
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import vocab_bound
from llmviz.training.footprint import Footprint, of_config
from llmviz.training.trainer import build_trainer
from ui import charts, colours, lab, picker, sections, state, watch
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


def metrics_frame(status: JobStatus) -> pd.DataFrame:
    """The run's metrics as a table, one row per step; built once per change of the run (every watcher and
    every section that draws this run at this version shares it)."""
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


def loss_figure(
    selected: list[tuple[str, JobStatus | pd.DataFrame, int]],
    show_val: bool = True,
    height: int = 380,
    smoothing: float = 0.0,
    field: str = "train_loss",
    y_title: str = "cross-entropy loss (nats)",
) -> go.Figure:
    """Training (and validation) loss of ``(label, status, vocab_size)`` runs on one chart (``status``: a live run's,
    or the table of a kept run's curve: :func:`ui.panels.kept.curve_frame`).

    Each run has its colour (its legend entry names it); with ``smoothing`` its training curve is an exponential
    moving average drawn over the raw per-step loss in the same colour, faint; validation is dotted, with markers.
    ``field``: another metric drawn the same way (``val_accuracy``: a classifier's held-out accuracy), with no
    validation line and no uniform-guess line. Built in one constructor call from plain dicts and numpy arrays (a
    live chart is rebuilt at every refresh of every watching tab: Plotly's ``add_trace`` / ``add_hline`` /
    ``update_layout`` validate each call on their own, several times slower)."""
    traces: list[dict] = []
    vocabularies = set()
    for number, (label, status, vocab) in enumerate(selected):
        label = charts.plotly_text(label)  # a run's label may name the student's upload: drawn as text, never tags
        full = status if isinstance(status, pd.DataFrame) else metrics_frame(status)  # a kept curve, or a live run
        if field != "train_loss":
            full = _field_frame(status, field)
        colour = COLOURS[number % len(COLOURS)]
        if full.empty:  # no step yet (waiting, or stopped at once): named in the legend all the same
            traces.append(
                dict(type="scatter", x=[], y=[], mode="lines", name=label, legendgroup=label, line=dict(color=colour))
            )
            continue
        raw = full[field].tolist()
        shown = smooth(raw, smoothing) if smoothing and field == "train_loss" else raw
        frame = thinned(full.assign(shown=shown))
        if shown is not raw:  # the raw loss, faint, under its smoothed curve
            traces.append(
                dict(
                    type="scatter",
                    x=frame["step"].to_numpy(),
                    y=frame[field].to_numpy(),
                    mode="lines",
                    name=f"{label} (per step)",
                    legendgroup=label,
                    showlegend=False,
                    hoverinfo="skip",
                    line=dict(color=_rgba(colour, 0.25), width=1),
                )
            )
        traces.append(
            dict(
                type="scatter",
                x=frame["step"].to_numpy(),
                y=frame["shown"].to_numpy(),
                mode="lines" if field == "train_loss" else "lines+markers",
                name=f"{label} (train)" if field == "train_loss" else label,
                legendgroup=label,
                line=dict(color=colour, width=2.5),
            )
        )
        if field == "train_loss" and show_val and full["val_loss"].notna().any():
            val = thinned(full.dropna(subset=["val_loss"]))
            traces.append(
                dict(
                    type="scatter",
                    x=val["step"].to_numpy(),
                    y=val["val_loss"].to_numpy(),
                    mode="lines+markers",
                    line=dict(dash="dot", color=colour),
                    legendgroup=label,
                    name=f"{label} (validation)",
                )
            )
        if vocab:
            vocabularies.add(vocab)
    shapes, annotations = _uniform_guess_lines(sorted(vocabularies) if field == "train_loss" else [])
    return go.Figure(
        data=traces,
        layout=dict(
            xaxis=dict(title=dict(text="step")),
            yaxis=dict(title=dict(text=y_title)),
            height=height,
            margin=charts.margins(10, bottom=40),
            legend=charts.LEGEND_BELOW,
            shapes=shapes,
            annotations=annotations,
        ),
    )


def _field_frame(status: JobStatus, field: str) -> pd.DataFrame:
    """The steps at which a run measured ``field`` (held-out accuracy is measured every few steps)."""
    rows = [(m.step, getattr(m, field)) for m in status.metrics if getattr(m, field, None) is not None]
    return pd.DataFrame(rows, columns=["step", field])


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
    val = status.last_val_loss if status.metrics else None
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
        charts.show(figure, key=chart_key)
        return
    accuracy = loss_figure(selected, height=340, field="val_accuracy", y_title="held-out accuracy")
    accuracy.update_layout(title="Held-out accuracy", margin=charts.margins(40), yaxis_range=[0, 1.02])
    left, right = st.columns(2)
    charts.show_in(left, figure, key=chart_key)
    charts.show_in(right, accuracy, key=accuracy_key)


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


def follow_task(job_slot: state.Slot, *, describe: Callable[[JobStatus], str], name: str) -> LiveRun | None:
    """A page's task job (BPE, word2vec, …) whose id is in ``job_slot.get()["id"]``: while it runs,
    draw its progress (``describe(status)``) and a Stop button, live; once it has ended, forget it and return it,
    so the page can take :attr:`~llmviz.lab.live.LiveRun.result` (what was made, also when stopped)."""
    spec = job_slot.get()
    if not spec:
        return None
    job = picker.runs().live(spec["id"])
    if job is None:  # forgotten (the session's jobs were cleared)
        job_slot.pop()
        return None
    if job.status().done:
        job_slot.pop()
        return job
    follow_task_job(
        job, describe=describe, name=name, stop_help="Stops after this step and keeps what was learned so far."
    )
    return None


# ---------------------------------------------------------------------------- work computed in a worker

MAX_RESULTS = 64  # a report is kilobytes (a LoRA demo's ΔW: a few hundred KB on the shipped GPT)
_RESULTS: LRUCache[tuple, object] = LRUCache(maxsize=MAX_RESULTS)  # the inputs' key → the worker's result
_RESULTS_LOCK = threading.Lock()


def _remembered(key: tuple):
    with _RESULTS_LOCK:
        return _RESULTS.get(key)


def _remember(key: tuple, value: object) -> None:
    with _RESULTS_LOCK:
        _RESULTS[key] = value


def planned(text: str, config: TrainConfig) -> Planned:
    """A lab run on ``text`` to be built in its worker (tokenizing included), never in the page's script run, with
    the memory estimate it is admitted by: a runner for ``JobManager.submit_race`` or ``submit_training``."""
    needs = of_config(config, vocab_bound(text, config), text_bytes=len(text.encode()))
    return Planned(functools.partial(build_trainer, text, config), needs, config.steps)


def _task_job(name: str, key: tuple) -> LiveRun | None:
    """This session's task job for the part ``name`` of the page, or None: none was started, or it was started for
    other settings than ``key`` (then it is stopped: its answer is not wanted)."""
    spec = state.TASK_JOBS.get().get(name)
    job = picker.runs().live(spec["id"]) if spec else None
    if job is not None and spec["key"] != key:  # the settings changed meanwhile: that job's answer is not wanted
        lab.control(job.id, "stop")
        return None
    return job


def _ended_task(job: LiveRun, name: str, key: tuple, label: str):
    """The result of the ended task job ``job`` (remembered under ``key`` for every session), or None: it failed
    (said in a warning) or was stopped. Either way the part ``name`` of the page forgets the job."""
    state.TASK_JOBS.get().pop(name, None)
    status = job.status()
    if status.state == JobState.FINISHED and job.result is not None:
        _remember(key, job.result)
        return job.result
    if status.state == JobState.FAILED:
        st.warning(f"{label}: {status.error or 'it failed'}")
    return None


def _started_task(
    name: str,
    key: tuple,
    loop: Callable,
    *,
    label: str,
    total: int,
    start: str | None,
    footprint: Footprint | None,
) -> LiveRun | None:
    """A task job started for the part ``name`` of the page (and recorded with its ``key``), or None: the button
    ``start`` is drawn and not pressed, or the lab refused the job (said in a warning)."""
    if start is not None and not st.button(start, key=state.widget("task_start_", name)):
        return None
    try:
        job = picker.runs().submit_task(loop, label=label, total=total, footprint=footprint)
    except JobRefused as refused:
        lab.warn(str(refused))
        return None
    state.TASK_JOBS.setdefault()[name] = {"id": job.id, "key": key}
    return job


def computed(
    name: str,
    key: tuple,
    loop: Callable,
    *,
    label: str,
    total: int,
    describe: Callable[[JobStatus], str] | None = None,
    start: str | None = None,
    footprint: Footprint | None = None,
):
    """The result of a computation that runs in a worker (a task job of this session), or None while it is not
    there yet.

    ``key`` names what is computed by its content only — the model's key, a hash of the text, the settings —
    never by a label a student chooses: a result is shared by every session that asks for the same key (the
    shipped GPT on the built-in corpus is computed once per server). Without one, the task ``loop`` (see
    :meth:`~llmviz.lab.live.StudentRuns.submit_task`) is started (at once, or when the button ``start`` is
    pressed), its progress drawn live with a Stop button, and the page is drawn again with the result when it
    ends. ``name``: the part of the page (its slot and widget keys). ``footprint``: the memory the task needs
    (:func:`llmviz.training.footprint.model_task`), admitted before it starts like any run."""
    found = _remembered(key)
    if found is not None:
        return found
    job = _task_job(name, key)
    if job is not None and job.status().done:
        found = _ended_task(job, name, key, label)
        if found is not None:
            return found
        job = None
        if start is None:
            start = "Compute it again"
    if job is None:
        job = _started_task(name, key, loop, label=label, total=total, start=start, footprint=footprint)
        if job is None:
            return None
    words = describe or (lambda status: f"{label}: {status.describe()}")
    picker.on_this_page([job.id])  # its progress is drawn here: the sidebar does not draw it a second time
    follow_task_job(job, describe=words, name=f"task.{name}")
    return None


def task_words(status: JobStatus, describe: Callable[[JobStatus], str]) -> str:
    """The line over a task's progress bar: while it waits behind other runs, that it waits (a BPE behind a training
    run said "Counting pairs…"); the page's ``describe`` once it runs."""
    return f"Queued, {status.describe()}" if status.state == JobState.QUEUED else describe(status)


def follow_task_job(
    job: LiveRun, *, describe: Callable[[JobStatus], str], name: str, stop_help: str = "Stops after this step."
) -> None:
    """Draw a task job's progress and Stop button, live, until it ends (then the page is drawn again)."""

    def draw() -> None:
        status = job.status()
        st.progress(status.fraction, text=task_words(status, describe))
        if not status.done:
            st.button(
                "Stop",
                key=state.widget("run_stop_", name, job.id),
                help=stop_help,
                on_click=lab.act,
                args=(job.id, "stop"),
            )

    # a progress bar and a Stop button cost the server about a millisecond: a task (seconds long) refreshes every
    # second, so its Stop can be pressed while it works
    live(draw, active=lambda: not job.status().done, name=name, seconds=1.0)
