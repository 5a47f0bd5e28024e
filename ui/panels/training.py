"""The Training page's figures and tables (stages/training.py wires them): the server's line, every run of the session
on one chart, a race measured beyond its training context (the loss by hand and the toy decoder are lessons of their
own: ui/panels/training_by_hand.py, training_decoder.py). The numbers come from llmviz (llmviz.lessons.training,
llmviz.lessons.architectures); the lab's runs are drawn by ui.panels.runs."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz import settings
from llmviz.lab.live_status import JobStatus
from llmviz.lessons.training import extrapolation_words, smooth
from llmviz.training import footprint
from llmviz.training.config import PRECISION_TITLES
from ui import charts, lab, picker, projector, state
from ui.lab import state_text
from ui.panels import runs
from ui.text import csv_text, literal_markdown
from ui.widgets import keep


def run_device(column, device: str) -> str:
    """The device a run trains on: the sidebar's ``device`` when runs train on this machine; with a Ray cluster
    (``LLMVIZ_RAY_ADDRESS``) a *Train on* choice in ``column`` of the cluster's devices, and a line on what it has."""
    where = picker.runs().where_runs_train()
    if where is None:
        return device
    chosen = column.selectbox("Train on", picker.runs().run_devices(), key=state.widget("run_device"), help=where)
    st.caption(where)
    return chosen


def server_line() -> None:
    students_runs = picker.runs()
    share_line = ""
    if students_runs.runs_per_student:
        mine = students_runs.share()
        share_line = (
            f" Yours: {mine[0]} training, {mine[1]} waiting or paused (each student trains "
            f"{students_runs.runs_per_student} at a time and keeps {students_runs.runs_per_student} more waiting; "
            "a race counts as one)."
        )
    mine, share, held, budget = students_runs.memory_line()
    memory_line = (
        f" Memory for training: {footprint.size_text(held)} of {footprint.size_text(budget)} in use; your runs "
        f"count {footprint.size_text(mine)} of your {footprint.size_text(share or budget)}."
        if budget
        else ""
    )
    training_now = lab.training_count()  # every app process's (the lab's record), else this process's own
    here, waiting, at_most = students_runs.here()
    training_now = here if training_now is None else training_now
    where = (
        "each in a Ray actor on the hall's cluster"
        if settings.get("LLMVIZ_RAY_ADDRESS")
        else "each in a worker process of its own"
    )
    st.caption(
        f"On this server: {training_now} run(s) training, {waiting} waiting "
        f"(at most {at_most} train at once; the others wait their turn, students in turn, "
        f"{where}).{share_line}{memory_line}"
    )


def recorded_curve(curve, label: str) -> None:
    """A checkpoint's recorded training (``llmviz.lessons.training.recorded_curve``): the Training page's picture
    before the student has a run of their own: its loss per step (faint), smoothed, its validation loss, ln V."""
    smoothed = smooth(curve.train_loss, 0.9)
    figure = go.Figure(
        [
            go.Scatter(
                x=curve.steps,
                y=curve.train_loss,
                mode="lines",
                line=dict(color="rgba(31,119,180,0.25)", width=1),
                name="training loss (each step)",
            ),
            go.Scatter(
                x=curve.steps,
                y=smoothed,
                mode="lines",
                line=dict(color="#1f77b4", width=2.5),
                name="training loss (smoothed)",
            ),
            go.Scatter(
                x=curve.val_steps,
                y=curve.val_loss,
                mode="lines+markers",
                line=dict(color="#ff7f0e", dash="dot"),
                name="validation loss",
            ),
        ]
    )
    if curve.vocab_size > 1:
        level = math.log(curve.vocab_size)
        figure.add_hline(y=level, line_dash="dash", line_color="#adb5bd")
        figure.add_annotation(
            xref="x domain",
            x=1,
            y=level,
            showarrow=False,
            xanchor="right",
            yanchor="top",
            text=f"uniform guess: ln {curve.vocab_size:,} = {level:.2f}",
        )
    figure.update_layout(
        title=f"How {label} learned (recorded when it was trained)",
        xaxis_title="step",
        yaxis_title="cross-entropy loss (nats)",
        height=380,
        margin=charts.margins(40, bottom=40),
        legend=projector.LEGEND_BELOW,
    )
    charts.show(figure, key=state.widget("recorded_curve"), words=runs.curve_words(figure))


def run_line(info) -> None:
    """A run's sizes in one line: parameters, vocabulary, training and validation tokens, and its precision."""
    st.caption(
        f"{info.parameters:,} parameters · vocabulary {info.vocab_size} · "
        f"{info.train_tokens:,} training and {info.val_tokens:,} validation tokens"
        + (
            f" · {PRECISION_TITLES[info.config.precision]}"
            if getattr(info.config, "precision", None) in PRECISION_TITLES
            else ""
        )
    )


def snapshots_cell(steps: list[int]) -> str:
    """A run's snapshots in a table cell: how many, from which step to which.

    >>> snapshots_cell([0, 50, 100, 300]), snapshots_cell([0]), snapshots_cell([])
    ('4 (steps 0–300)', '1 (step 0)', 'none')
    """
    if not steps:
        return "none"
    return f"{len(steps)} (step {steps[0]})" if len(steps) == 1 else f"{len(steps)} (steps {steps[0]}–{steps[-1]})"


def all_runs() -> None:
    """The comparison chart, table, controls and downloads of every run of this session (live)."""
    all_runs = {job.label: job for job in runs.runs()}
    frames = kept_frames({job.id for job in all_runs.values()})  # the lab's runs no tab of this process trains
    if not all_runs and not frames:
        if not lab.out():  # the lab's database is out (said above): the runs are kept, only not readable now
            st.info("No runs yet: train a model above or start a race.")
        return
    statuses = {label: job.status() for label, job in all_runs.items()}
    live_controls(all_runs, statuses)
    comparison_chart(all_runs, frames, statuses)
    if not all_runs:  # only kept runs: their table, Resume and Delete are under Kept runs
        return
    st.dataframe(
        pd.DataFrame([summary_row(name, status) for name, status in statuses.items()]), hide_index=True, width="stretch"
    )
    run_notes(all_runs, statuses)
    downloads(all_runs, statuses)


def live_controls(all_runs: dict, statuses: dict) -> None:
    """The progress and controls of every live run of this session but the focused one (its controls are above)."""
    focus_id = state.TRAINING_FOCUS.get()
    for label, job in all_runs.items():
        if not statuses[label].done and job.id != focus_id:  # the focused run has its controls above
            st.progress(statuses[label].fraction, text=f"{literal_markdown(label)}: {statuses[label].describe()}")
            runs.controls(job, statuses[label], where="all")


def comparison_chart(all_runs: dict, frames: dict, statuses: dict) -> None:
    """The runs on the chart (this session's ``all_runs``, the lab's kept ``frames``), chosen by the student, and
    their loss curves on one chart."""
    chart = keep("runs_on_chart")  # kept across pages: the student's choice survives a visit elsewhere
    chart_key = chart["key"]
    labels = {job.id: label for label, job in all_runs.items()} | {label: label for label in frames}
    offered = state.CHART_OFFERED.setdefault()
    state.set_value(chart_key, runs.chart_selection(labels, state.value(chart_key), offered))
    offered.update(
        labels
    )  # a run new to the chart joins it once (so a finished race is on it), then it is the student's
    chosen = st.multiselect("Runs on the chart", [*frames, *all_runs], **chart)
    v1, v2 = st.columns(2)
    show_val = v1.toggle("Show validation loss", value=True, key=state.widget("runs_show_val"), persist_state="page")
    smoothing = v2.slider(
        "Smooth the training curves",
        0.0,
        0.99,
        0.9,
        0.01,
        key=state.widget("runs_smoothing"),
        persist_state="page",
        help="Exponential moving average of the training loss (the validation loss is not smoothed).",
    )
    figure = runs.loss_figure(
        [
            (n, statuses[n], runs.vocab_of(all_runs[n])) if n in all_runs else (n, frames[n], 0)
            for n in chosen
            if n in all_runs or n in frames
        ],
        show_val,
        height=460,
        smoothing=smoothing,
    )
    charts.show(figure, width="stretch", key=state.widget("runs_chart"), words=runs.curve_words(figure))


def summary_row(name: str, status: JobStatus) -> dict:
    """The run table's row of the run ``name`` (its status ``status``): steps, state, losses, perplexity, snapshots.

    >>> from llmviz.lab.live_status import JobState
    >>> losses = ((1, 2.0), (2, 1.5), (3, 1.0))
    >>> status = JobStatus("j1", "run", "train", JobState.STOPPED, 3, 10, losses, (), (), None, None, (2,), 0.1)
    >>> row = summary_row("run", status)
    >>> row["train loss (last 10 steps)"], row["validation loss"], row["snapshots"]
    (1.5, None, '1 (step 2)')
    """
    found = runs.result(status)
    val = found.val_loss
    return {
        "run": name,
        "steps": status.step,
        "status": status.state,
        "train loss (last 10 steps)": round(found.train_loss, 3) if found.train_loss is not None else None,
        "validation loss": round(val, 3) if val is not None else None,
        "validation perplexity": round(math.exp(val), 2) if val is not None else None,
        # a count and a range: the list of every step ran past the table's edge and cut its last column
        "snapshots": snapshots_cell(status.snapshot_steps),
    }


def run_notes(all_runs: dict, statuses: dict) -> None:
    """Under the run table: where each stopped run stopped, as the lab's record says it (parked by the teacher,
    stopped by you: :func:`ui.lab.state_text`), each run's fault, and each run's samples."""
    for name, status in statuses.items():
        if status.state == "stopped":
            view = lab.run(all_runs[name].id)
            line = state_text(view) if view is not None else f"stopped at step {status.step} of {status.total}"
            st.caption(f"{literal_markdown(name)}: {literal_markdown(line)}.")
        if status.error:
            st.error(f"{name}: {status.error}")
    for name, status in statuses.items():
        if status.samples:
            with st.expander(f"Samples from {name}"):
                for step, sample in status.samples:
                    st.code(f"step {step}:\n{sample}", language=None, wrap_lines=True)


def downloads(all_runs: dict, statuses: dict) -> None:
    """A run's metrics and checkpoint to download, and Clear all runs."""
    d1, d2, d3 = st.columns([2, 1, 1])
    picked = picker.selected_key().split("@")[0].removeprefix("run:")  # the run picked in the sidebar, if one
    index = next((i for i, job in enumerate(all_runs.values()) if job.id == picked), 0)
    pick = d1.selectbox("Download a run", list(all_runs), index=index, key=state.widget("runs_download_", picked))
    picked_status = statuses[pick]
    d2.download_button(
        "Metrics (CSV)",
        lambda: csv_text(runs.metrics_frame(picked_status)),  # made on click
        file_name="metrics.csv",
        mime="text/csv",
    )
    if statuses[pick].done and all_runs[pick].checkpoint is not None:
        d3.download_button(
            "Checkpoint (safetensors)",
            all_runs[pick].checkpoint,
            file_name="llmviz-checkpoint.safetensors",
            mime="application/octet-stream",
        )
    elif statuses[pick].done:
        d3.caption("This run ended before it could save a checkpoint.")
    else:
        d3.caption("The checkpoint can be downloaded once the run ends (or press Stop).")
    st.caption(
        "A downloaded checkpoint samples from the command line: "
        "`python -m llmviz sample --checkpoint llmviz-checkpoint.safetensors --prompt …`"
    )
    clear_all(all_runs)


def clear_line(labels: list[str], snapshots: int, nbytes: int) -> str:
    """The question Clear all runs asks first (as Delete does): how many runs, which, and what goes with them.

    >>> clear_line(["Run 1", "Run 2"], 5, 3 * 2**20).split(" and what")[0]
    'Delete all 2 runs in the table above (Run 1, Run 2), with their curves, their 5 kept snapshots (3 MB)'
    >>> clear_line(["Run 1"], 1, 2**19).split(" and what")[0]
    'Delete the run in the table above (Run 1), with its curve, its 1 kept snapshot (0.5 MB)'
    """
    one = len(labels) == 1
    its = "its" if one else "their"
    return (
        f"Delete {'the run' if one else f'all {len(labels)} runs'} in the table above ({', '.join(labels)}), with "
        f"{its} curve{'' if one else 's'}, {its} {snapshots} kept snapshot{'' if snapshots == 1 else 's'} "
        f"({footprint.size_text(nbytes)}) and what {'it keeps' if one else 'they keep'} to resume? This cannot be "
        "undone; your other kept runs are not changed."
    )


def clear_all(all_runs: dict) -> None:
    """Clear all runs: the first press asks (how many runs, how many snapshots, how many MB), **Yes, delete them**
    deletes exactly the runs it asked about, **Cancel** keeps them."""
    asked = state.CLEAR_ASKED.get()
    if not asked:
        ids = tuple(job.id for job in all_runs.values())
        st.button("Clear all runs", key=state.widget("runs_clear"), on_click=state.CLEAR_ASKED.set, args=(ids,))
        return
    named = {job.id: label for label, job in all_runs.items() if job.id in asked}
    kept = [snapshot for run_id in named for snapshot in lab.snapshots(run_id)]
    st.warning(literal_markdown(clear_line(list(named.values()), len(kept), sum(s.nbytes for s in kept))))
    c1, c2, _ = st.columns([1, 1, 3])
    if c1.button("Yes, delete them", key=state.widget("runs_clear_yes"), type="primary"):
        state.CLEAR_ASKED.pop()
        said = [lab.control(run_id, "delete") for run_id in named]  # the lab's one control path: each one sentence
        state.RUN_REFUSED.set(" ".join(said), "kept_delete")  # said above the kept runs, after the rerun
        st.rerun(scope="app")  # the sidebar's picker lists them no more
    c2.button("Cancel", key=state.widget("runs_clear_cancel"), on_click=state.CLEAR_ASKED.pop)


def kept_frames(live: set[str], newest: int = 7) -> dict[str, object]:
    """The curves of the student's ``newest`` kept runs that no tab of this process trains (an earlier server's,
    another app process's, parked ones), as the lab keeps them: label → its curve's table."""
    return {
        f"{view.label} · kept": runs.curve_frame(points)
        for view in lab.runs()[:newest]
        if view.id not in live and (points := lab.curve(view.id).points)
    }


def extrapolation(result, trained: int) -> None:
    """A race's runners measured beyond the context they trained at (llmviz.lessons.architectures.extrapolation): the
    loss at each position, a dotted line where training stopped, and the mean loss on each side."""
    figure = go.Figure(
        [
            go.Scatter(x=list(range(1, result.context + 1)), y=curve.tolist(), mode="lines", name=name)
            for name, curve in result.by_position.items()
        ]
    )
    figure.add_vline(
        x=trained + 0.5, line_dash="dot", annotation_text="trained up to here", annotation_position="top left"
    )
    figure.update_layout(
        height=360,
        margin=charts.margins(30),
        xaxis_title="tokens read so far (position + 1)",
        yaxis_title="validation loss at that position",
    )
    charts.show(
        figure,
        width="stretch",
        key=state.widget("longer_chart"),
        words=extrapolation_words(trained, result.context, result.within, result.beyond),
    )
    st.dataframe(
        pd.DataFrame(
            {
                "run": list(result.within),
                f"loss, positions 1–{trained}": list(result.within.values()),
                f"loss, positions {trained + 1}–{result.context}": list(result.beyond.values()),
            }
        ).style.format(precision=4),
        hide_index=True,
        width="stretch",
    )
    st.caption(
        "Each point is the mean loss of predicting the next token at that position, over the same 256 "
        "windows (or as many as the validation text holds) for every run. Left of the dotted line the models "
        "read positions they trained on; right of it, positions no training batch ever reached."
    )
