"""Inside the model's Induction run tab: a 2-layer attention-only GPT trained as a lab run of the student, its
induction score and loss drop drawn live, its heads knocked out (``stages/inside.py`` wires it).
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from llmviz.errors import LlmvizError
from llmviz.interpret import induction
from llmviz.lessons import inside
from ui import charts, colours, lab, picker, sections, state
from ui.errors import friendly_errors
from ui.panels import runs
from ui.stages import ROOT
from ui.text import literal_markdown

INDUCTION_LABEL = "Induction heads · 2-layer attention-only GPT"


def induction_job():
    """This session's induction run (the newest one), or None."""
    mine = picker.runs()
    job = mine.live(state.INDUCTION_JOB.get(default=""))
    if job is None:
        runs = [j for j in mine.live_runs("train") if j.label.startswith(INDUCTION_LABEL)]
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
        job = picker.runs().submit_training(trainer, label=label, snapshot_every=preset.snapshot_every)
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
    palette = colours.CATEGORICAL
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
        str(ROOT / "stages/attention.py"),
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


def phase_sentence(curve: list[induction.ProbeResult], knocked: list[induction.ProbeResult], layer: int, head: int):
    """The phase chart's words (:func:`llmviz.lessons.inside.phase_words`) from the probes it draws."""
    return inside.phase_words(
        [point.step for point in curve],
        f"layer {layer}, head {head}",
        [float(point.scores["induction"][layer, head]) for point in curve],
        [point.repeated_half_loss for point in curve],
        [point.first_half_loss for point in curve],
        [point.repeated_half_loss for point in knocked],
    )


def run_progress(job, status) -> None:
    """The run's progress and Stop while it trains; its problem, once, if it failed."""
    if not status.done:
        st.progress(status.fraction, text=f"{job.label}: {status.describe()}")
        if st.button("Stop", key=state.widget("induction_stop")):
            st.caption(literal_markdown(lab.control(job.id, "stop")))
    elif status.state == "failed":
        st.warning(f"The run stopped with a problem: {status.describe()}")


def induction_body() -> None:
    job = induction_job()
    if job is None:
        offer_induction_run()
        return
    status = job.status()
    run_progress(job, status)
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
    charts.show(
        phase_chart(curve, picked, knocked, name),
        key=state.widget("induction_chart"),
        words=phase_sentence(curve, knocked, layer, head),
    )
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


@sections.section("inside.induction")
def induction_section() -> None:
    st.header("Watching an induction head form")
    st.markdown(
        "An **induction head** continues a pattern seen earlier in the context: after *… A B … A* it attends to the "
        "*B* that followed the earlier *A*, and predicts *B*. It takes two heads: a **previous-token head** in layer 0 "
        "writes 'the token before me' into every position, and the induction head in layer 1 looks for the position "
        "whose previous token is the current one. Olsson et al. (2022, *In-context Learning and Induction Heads*) saw "
        "such heads appear suddenly during training, together with a sudden drop in the loss on repeated text.\n\n"
        "Here a 2-layer **attention-only** GPT (no MLPs) learns lines of random characters in which a random stretch "
        "appears twice, at a random place. The chart probes every kept snapshot on test lines (16 random characters, "
        "repeated): watch the induction score jump while the loss on the repeated half falls. These scores average "
        "the attention over all the test lines, so they differ a little from the Head detectors tab's heatmap, "
        "which measures one test input of its own."
    )
    with friendly_errors("the induction run"):
        # redrawn every 4 s while the run trains; still while it is paused or over
        live_induction(
            active=lambda: (job := induction_job()) is not None and job.changing,
            seconds=4.0,
            name="inside.induction.live",
        )
