"""One run, drawn from the lab's view of it: the one function every page draws a single run with (issue 68 §2).

The lab's record says what a run *is*, from any app process and after any restart: its state (and who changed it, at
which step: "parked by the teacher"), its whole curve with the steps it was resumed at, its samples. A run this
process trains also has a fresher tail in memory, a second ahead of the keeper's writes: :func:`points` lays that tail
on the record, so a resumed run's chart starts at step 1 while it trains, exactly as it does once it has ended. The
state line and the controls come from the same view: a run the teacher parked reads "parked by the teacher" with
Resume right under it, in every tab, whichever process trained it. Every button acts through the lab's one control
path (:func:`ui.lab.act`), and what it said is shown here once.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from llmviz.lab.live import LiveRun
from llmviz.lab.live_status import JobState, JobStatus
from llmviz.lab.views import RunView
from llmviz.lessons.training import RunResult, final_train_loss, perplexity_measure
from llmviz.training.overfitting import curve_points, overfitting
from ui import charts, lab, picker, state
from ui.lab import state_text
from ui.panels import runs
from ui.text import literal_markdown

#: What a run's loss is, by the kind the lab keeps it as (a DPO run's loss is the DPO loss, not a cross-entropy: its
#: exponential is no perplexity)
Y_TITLES = {"dpo": "DPO loss (nats): −log σ(β · margin)", "sft": "cross-entropy on the answers (nats)"}


def result_line(view: RunView, points: list[tuple]) -> str:
    """An ended run's line from its kept curve: steps, final training loss (the mean of its last 10 steps), last
    validation loss and perplexity (the same as a live run's :func:`ui.panels.runs.final_line`).

    >>> from llmviz.lab.records import RunRecord
    >>> result_line(RunView.of(RunRecord("r", "s", "training", "x", "finished", 2, 2)), [(1, 3.0, None), (2, 2.0, 2.5)])
    ' · finished after 2 steps · training loss 2.500 · validation loss 2.500 · validation perplexity 12.18'

    A DPO run's loss is no cross-entropy: its exponential is no perplexity, and none is given.

    >>> result_line(RunView.of(RunRecord("r", "s", "dpo", "x", "finished", 2, 2)), [(1, 0.69, None), (2, 0.5, 0.51)])
    ' · finished after 2 steps · training loss 0.595 · validation loss 0.510'
    """
    losses = [loss for _, loss, _ in points if loss is not None]
    vals = [val for _, _, val in points if val is not None]
    val = vals[-1] if vals else None
    shown = None if view.kind == "dpo" else perplexity_measure(val)  # a DPO loss is no cross-entropy
    found = RunResult(view.step, view.total, view.state, final_train_loss(losses), val, shown)
    return found.line(view.label).removeprefix(view.label)


def points(kept_points: list[tuple], status: JobStatus | None) -> list[tuple]:
    """A run's whole curve, ``(step, training loss, validation loss)`` by step: the lab's kept points, then the steps
    of this process's fresh tail (``status``: the run's job here, or None) that the lab has not written yet.

    >>> points([(1, 3.0, None), (2, 2.5, 2.6)], None)
    [(1, 3.0, None), (2, 2.5, 2.6)]

    A run resumed at step 2 in this process: its job knows steps 2 to 4, the lab has written up to step 3; the chart
    starts at step 1 all the same (it started at the resume step once):

    >>> from types import SimpleNamespace as Step
    >>> fresh = Step(metrics=[Step(step=s, train_loss=l, val_loss=None) for s, l in [(2, 2.5), (3, 2.2), (4, 2.0)]])
    >>> points([(1, 3.0, None), (2, 2.5, 2.6), (3, 2.2, None)], fresh)
    [(1, 3.0, None), (2, 2.5, 2.6), (3, 2.2, None), (4, 2.0, None)]
    """
    fresh = [(m.step, m.train_loss, m.val_loss) for m in status.metrics] if status is not None else []
    last = kept_points[-1][0] if kept_points else 0
    return [*kept_points, *(point for point in fresh if point[0] > last)]


def measure_of(kind: str) -> Callable[[JobStatus], str | None] | None:
    """The measure a run's final line adds to its losses: none for a DPO run (its loss is no cross-entropy), the
    validation perplexity (the default) for every other kind."""
    return (lambda _status: None) if kind == "dpo" else None


def draw(run_id: str, where: str = "single", measure=None) -> None:
    """Run ``run_id`` of this student: its state in words (with who changed it), its controls right under it, its
    whole curve with its resume marks, whether it overfits, and its newest sample. Nothing when it is not theirs."""
    view = lab.run(run_id)
    job = picker.runs().live(run_id)
    if view is None and job is None:
        return
    status = job.status() if job is not None else None
    here = status is not None and not status.done  # trained by this process now: its job is the fresher picture
    kind = view.kind if view is not None else ""
    curve = lab.curve(run_id) if view is not None else None
    whole = points(list(curve.points) if curve is not None else [], status)
    _state_line(view, status, here, whole, measure or measure_of(kind))
    _controls(view, job, status, here, where)
    said = lab.said(run_id)  # a control pressed while the run had no buttons (it ended meanwhile): still said
    if said:
        lab.warn(said, st.caption)
    vocab = runs.vocab_of(job) if job is not None else 0
    _notes(status, vocab, whole)
    if whole:
        label = view.label if view is not None else job.label
        _chart(label, kind, whole, curve.resumes if curve is not None else (), vocab, key=(where, run_id))
    _newest_sample(run_id, status)


def _notes(status: JobStatus | None, vocab: int, whole: list[tuple]) -> None:
    """A fault the run reported without failing, and whether it overfits, read from its whole curve (the same
    verdict as the CLI's; a run drawn from the lab's record has it too, without the vocabulary's ln V to compare)."""
    if status is not None and status.error and status.state != JobState.FAILED:
        st.error(status.error)
    if (overfits := overfitting(curve_points(whole), vocab)) is not None:
        st.warning(overfits.message())


def _chart(label: str, kind: str, whole: list[tuple], resumes, vocab: int, key: tuple) -> None:
    """One run, one curve: every point from step 1, the steps it was resumed at marked, its loss named by its kind."""
    figure = runs.loss_figure([(label, runs.curve_frame(whole), vocab)], smoothing=0.8)
    if kind in Y_TITLES:
        figure.update_layout(yaxis_title=Y_TITLES[kind])
    for step in resumes:
        figure.add_vline(x=step, line_dash="dot", line_color="#6c757d", annotation_text=f"resumed at {step}")
    charts.show(figure, width="stretch", key=state.widget("run_chart_", *key), words=runs.curve_words(figure))


def _state_line(view: RunView | None, status: JobStatus | None, here: bool, whole: list[tuple], measure) -> None:
    """A run training here: its progress; else as the lab's record says it (a run that ended here a moment ago, before
    the record caught up: as its job says)."""
    if here or view is None or (status is not None and view.live):
        label = view.label if view is not None else status.label
        if status.done:
            runs.final_line(label, status, measure)
        else:
            st.progress(status.fraction, text=f"**{literal_markdown(label)}** · {status.describe()}")
        return
    label = literal_markdown(view.label)
    if view.live:
        st.progress(min(1.0, view.step / max(view.total, 1)), text=f"**{label}** · {state_text(view)}")
    elif view.state == "failed":
        st.warning(f"**{label}** · {literal_markdown(state_text(view))}")
    elif view.state == "finished" and status is not None:
        runs.final_line(view.label, status, measure)
    elif view.state == "finished":
        st.markdown(f"**{label}**{literal_markdown(result_line(view, whole))}")
    else:  # parked (by the teacher, by the student, when they left), interrupted, stopped: Resume is right below
        st.info(f"**{label}** · {literal_markdown(state_text(view))}")


def _controls(view: RunView | None, job: LiveRun | None, status: JobStatus | None, here: bool, where: str) -> None:
    """Pause / Resume / Stop while it trains (here or in another process), Resume for a parked, interrupted or
    stopped run (with what Resume will do): every button through the lab's one control path."""
    if here:
        runs.buttons(job.id, resume=job.paused, stop=True, where=where)
    elif view is not None and (view.live or view.resumable):
        runs.buttons(view.id, resume=view.resumable or view.state == "paused", stop=view.live, where=where)
        if view.resumable:
            st.caption(picker.runs().resume_line(view.id) or view.resume_note)  # our own words and numbers


def controls(run_id: str, where: str) -> None:
    """The controls of run ``run_id`` alone (the Kept runs table's chosen run), as :func:`draw` draws them."""
    view = lab.run(run_id)
    job = picker.runs().live(run_id)
    status = job.status() if job is not None else None
    _controls(view, job, status, status is not None and not status.done, where)


def _newest_sample(run_id: str, status: JobStatus | None) -> None:
    found = list(status.samples) if status is not None and status.samples else lab.samples(run_id)
    if found:
        step, text = found[-1]
        st.code(f"step {step}:\n{text}", language=None, wrap_lines=True)


def live(run_id: str, after: Callable[[], None], where: str = "single", name: str = "training.run") -> None:
    """:func:`draw` in a section that refreshes while the run is live, here or in another process (``after()``:
    drawn below it; ``name``: the section's, for the timing logs)."""

    def active() -> bool:
        job = picker.runs().live(run_id)
        if job is not None and not job.ended:
            return job.changing
        return bool((view := lab.run(run_id)) and view.live and view.state != "paused")

    def draw_then_after() -> None:
        draw(run_id, where=where)
        after()

    runs.live(draw_then_after, active=active, name=name)
