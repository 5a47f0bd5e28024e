"""The Inside-the-model page: logit lens, attention-head detectors, per-token loss, an induction head forming.

Every number comes from llmviz.interpret.lens and llmviz.interpret.induction; this file only draws them. Sections are
st.fragments, so a widget in one section reruns that section alone.
"""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import ui
from llmviz.errors import LlmvizError, log_failure
from llmviz.interpret import heads, induction
from llmviz.interpret import lens as lenses
from ui import charts, picker, sections, share, state
from ui.panels import lens as lens_ui
from ui.panels import runs as training
from ui.text import literal_html, literal_markdown, tidy_floats

ui.settings()
ui.page_header(
    "Inside the model: what each layer predicts, what each head does",
    "Read the residual stream after every block as a prediction (the logit lens), find heads that attend to "
    "the previous token, the first token, or continue a repeated pattern (induction heads), see the loss on "
    "every token, and watch an induction head form while a small model trains.",
)
st.caption(
    f"Model: {literal_markdown(picker.current().label)} (picked in the sidebar) in sections 1–3; section 4 "
    "trains a small model of its own."
)

DEFAULT_SENTENCE = "The for statement is used to iterate over the elements of a sequence"
DEFAULT_LOSS_TEXT = (
    "A list is a sequence of items. The items of a list can be changed. A tuple is a sequence "
    "of items. The items of a tuple cannot be changed."
)
MAX_TOKENS = 64  # positions shown in the lens grid and the per-token loss


def is_gpt(view) -> bool:
    return view.family == "gpt" and hasattr(view.model, "ln_f") and hasattr(view.model, "config")


def tokens_of(view, text: str, limit: int) -> tuple[list[int], str | None]:
    """Token ids of ``text`` for ``view`` (at most ``limit``), and a warning to show, if any."""
    try:
        ids = view.tokenizer.encode(text)
    except Exception as error:  # noqa: BLE001 - e.g. a character the run's tokenizer never saw
        log_failure("encoding the Inside page's text", error)
        half = min(16, view.model.config.context_length // 2, view.model.config.vocab_size)
        ids = heads.diagnostic_tokens(view.model.config.vocab_size, half, seed=0)
        return ids, (
            f"This model's tokenizer cannot read that text ({error}), so a random sequence of its own "
            "tokens, repeated twice, is shown instead: type text made of the characters it knows."
        )
    limit = min(limit, view.model.config.context_length)
    if len(ids) > limit:
        return ids[:limit], f"Only the first {limit} of its {len(ids)} tokens are shown."
    return ids, None


def label(view, token_id: int) -> str:
    return view.tokenizer.printable(int(token_id))


@st.cache_data(show_spinner="Reading every layer…", max_entries=64)
def _lens(key: str, ids: tuple[int, ...], _model) -> lenses.LogitLens:
    return lenses.sequence_logit_lens(_model, list(ids), k=5)


@st.cache_data(show_spinner="Measuring every head…", max_entries=64)
def _heads(key: str, _model) -> tuple[list[int], dict]:
    return heads.model_head_scores(_model, half_length=20, seed=0)


@st.cache_data(show_spinner="Scoring every token…", max_entries=64)
def _losses(key: str, ids: tuple[int, ...], _model) -> lenses.TokenLosses:
    return lenses.token_losses(_model, list(ids), k=5)


def compare_toggle(section: str) -> bool:
    if picker.baseline() is None:
        return False
    return st.toggle(
        "Step 0 vs this step, side by side",
        value=False,
        key=state.widget("compare_", section),
        help="The same view for your run at step 0 (random weights) and at the step picked in the sidebar.",
    )


def both(render, section: str, what: str) -> None:
    """Draw ``render(view, column_key)`` for the picked model, or step 0 vs step N when asked."""
    if compare_toggle(section):
        picker.before_after(render, what=what)
    else:
        render(picker.current(), "stepN")


# ------------------------------------------------------------------ 1. the logit lens
def render_lens(view, column: str) -> None:
    ids, note = tokens_of(view, state.value("lens_text", DEFAULT_SENTENCE), 32)
    if len(ids) < 2:
        st.warning("Type at least two tokens: the lens shows what each position predicts comes next.")
        return
    if note:
        st.caption(note)
    lens = _lens(view.key, tuple(ids), view.model)
    tokens = [label(view, i) for i in ids]
    columns = charts.unique_labels(tokens)
    start = 0
    if len(ids) > lens_ui.WINDOW:  # a readable window of the sentence, moved along it
        # keyed by the length: a shorter sentence starts a new slider rather than keep a start past its end
        start = st.slider(
            "Positions shown, from",
            0,
            len(ids) - lens_ui.WINDOW,
            0,
            key=state.widget("lens_start_", column, len(ids)),
            help=f"The grid shows {lens_ui.WINDOW} positions at a time: slide along the sentence.",
        )
    positions = lens_ui.window(len(ids), start)
    charts.show(
        lens_ui.grid_figure(lens, tokens, columns, lambda i: label(view, i), positions),
        width="stretch",
        key=state.widget("lens_grid_", column),
    )
    st.subheader("Layer by layer: the token that really comes next")
    followed = [p for p in positions if p + 1 < len(ids)]
    # first the position the model gets most right in the end: its line climbs layer by layer
    best = max(range(len(followed)), key=lambda i: float(lens.true_probs[-1, followed[i]]))
    # keyed by the tokens and the window: a new sentence (or a link to one) starts from its own best position
    picked = st.selectbox(
        "Follow one position",
        followed,
        index=best,
        key=state.widget("lens_follow_", column, hash((tuple(ids), start))),
        format_func=lambda p: f"{columns[p]} → {tokens[p + 1]}",
        help="Its line is drawn in colour; the other positions of the grid in grey.",
    )
    charts.show(
        lens_ui.true_token_figure(lens, tokens, columns, positions, picked),
        width="stretch",
        key=state.widget("lens_true_", column),
    )


@sections.section("inside.lens")
def lens_section() -> None:
    st.header("1. The logit lens: a prediction after every block")
    view = picker.current()
    if not is_gpt(view):
        st.info(
            f"The logit lens reads a GPT's residual stream; **{literal_markdown(view.label)}** is not a GPT. Pick "
            f"the shipped "
            "GPT or one of your GPT runs in the sidebar."
        )
        return
    st.text_input("A sentence", DEFAULT_SENTENCE, max_chars=2000, **share.bind("lens_text"))
    share.carried_note("lens_text")
    final_norm = "RMSNorm" if getattr(getattr(view.model, "config", None), "norm", "") == "rmsnorm" else "LayerNorm"
    st.markdown(
        f"Each row passes the residual stream at that depth through the model's **final {final_norm} and "
        "output head**, as if the remaining blocks were skipped: $\\text{softmax}(W_U\\,\\mathrm{Norm}_f(x_\\ell))$. "
        "Cells show the top token and are coloured by its probability; hover for the top 5. The last row "
        "is the model's own prediction."
    )
    with ui.friendly_errors("the logit lens"):
        both(render_lens, "lens", "the logit lens")


# ------------------------------------------------------------------ 2. head detectors
def render_heads(view, column: str) -> None:
    tokens, scores = _heads(view.key, view.model)
    kind = state.value("detector", "induction")
    values = scores[kind]  # (L, H)
    layers, heads = values.shape
    figure = charts.heatmap(
        values,
        x_labels=[f"head {h}" for h in range(heads)],
        y_labels=[f"layer {layer}" for layer in range(layers)],
        zmin=0,
        zmax=1,
        text_format=".2f",
        x_title="head",
        y_title="layer",
    )
    charts.show(figure, width="stretch", key=state.widget("heads_", column))
    best = sorted(
        ((float(values[layer, head]), layer, head) for layer in range(layers) for head in range(heads)), reverse=True
    )[:3]
    st.caption("Highest: " + ", ".join(f"layer {layer} head {head} ({score:.2f})" for score, layer, head in best))
    if column == "stepN":
        links = st.columns(len(best))
        for cell, (_score, layer, head) in zip(links, best):
            cell.page_link(
                str(ui.ROOT / "stages/attention.py"),
                label=f"Layer {layer}, head {head} on Attention",
                icon=":material/visibility:",
                query_params={"layer": layer, "head": head},
            )


@sections.section("inside.heads")
def heads_section() -> None:
    st.header("2. Head detectors: what does each attention head look at?")
    view = picker.current()
    if not is_gpt(view):
        st.info(
            f"The detectors read a GPT's attention patterns; **{literal_markdown(view.label)}** is not a GPT. Pick "
            f"the shipped "
            "GPT or one of your GPT runs in the sidebar."
        )
        return
    kind = st.radio(
        "Detector", heads.DETECTORS, index=heads.DETECTORS.index("induction"), horizontal=True, **share.bind("detector")
    )
    with ui.friendly_errors("the head detectors"):
        tokens, _ = _heads(view.key, view.model)
        half = len(tokens) // 2
        st.markdown(
            f"**{kind}**: {heads.DETECTOR_HELP[kind]}. Measured on one fixed test input: {half} distinct "
            f"random tokens of this model's vocabulary, repeated twice ({len(tokens)} tokens, shown below). A "
            "score of 1 means the head puts all its attention where the detector says, at every position it "
            "applies to."
        )
        if view.run_id is not None and view.run_id == getattr(induction_job(), "id", None):
            st.caption(
                "This is the induction run of section 4, which scores its heads on other inputs (its test "
                "lines, their attention averaged): the same head's score differs a little between the two."
            )
        both(render_heads, "heads", "the head scores")
        with st.expander("The test input"):
            half = len(tokens) // 2
            st.code(" | ".join(label(view, t) for t in tokens[:half]) + "\n(then the same again)", language=None)
    picker.offer_bigger_model(
        "Compare these heads with those of a pretrained model, trained on billions of words of web text:",
        page="inside",
    )


# ------------------------------------------------------------------ 3. loss on every token
def render_losses(view, column: str) -> None:
    ids, note = tokens_of(view, state.value("loss_text", DEFAULT_LOSS_TEXT), MAX_TOKENS * 4)
    if len(ids) < 2:
        st.warning("Type at least two tokens: the first token has nothing before it to be predicted from.")
        return
    if note:
        st.caption(note)
    result = _losses(view.key, tuple(ids), view.model)
    tokens = [label(view, i) for i in ids]
    worst = max(float(result.losses.max()), 1e-9)
    chips = [f'<span class="tok" title="the first token: nothing predicts it">{literal_html(tokens[0])}</span>']
    for position in range(len(ids) - 1):
        loss = float(result.losses[position])
        top = "&#10;".join(
            f"{literal_html(repr(label(view, i)))}: {float(p):.1%}"
            for i, p in zip(result.top_ids[position].tolist(), result.top_probs[position].tolist())
        )
        tip = (
            f"loss {loss:.3f} = −ln {float(result.true_probs[position]):.4f}&#10;"
            f"p({literal_html(repr(tokens[position + 1]))}) = {float(result.true_probs[position]):.2%}&#10;"
            f"top 5:&#10;{top}"
        )
        alpha = min(1.0, loss / worst)
        chips.append(
            f'<span class="tok" style="background: rgba(224, 49, 49, {alpha:.2f})" title="{tip}">'
            f"{literal_html(tokens[position + 1])}</span>"
        )
    st.markdown(
        "<style>.tok{display:inline-block;margin:1px;padding:1px 3px;border-radius:3px;"
        "border:1px solid #ddd;font-family:monospace;white-space:pre}</style>"
        f'<div style="line-height:1.9">{"".join(chips)}</div>',
        unsafe_allow_html=True,
    )
    n = len(ids) - 1
    charts.latex(
        rf"\mathcal{{L}} = \frac{{1}}{{{n}}}\sum_{{i=1}}^{{{n}}} -\ln p(t_i \mid t_{{<i}}) = "
        rf"\frac{{{float(result.losses.sum()):.3f}}}{{{n}}} = {result.mean:.4f}"
    )
    frame = pd.DataFrame(
        {
            "token": tokens[1:],
            "loss": result.losses.tolist(),
            "p(token)": result.true_probs.tolist(),
            "top prediction": [label(view, i) for i in result.top_ids[:, 0].tolist()],
        }
    )
    with st.expander("Every token as a table"):
        st.dataframe(
            tidy_floats(frame).style.format({"loss": "{:.3f}", "p(token)": "{:.2%}"}),
            hide_index=True,
            width="stretch",
            key=state.widget("loss_table_", column),
        )


@sections.section("inside.loss")
def loss_section() -> None:
    st.header("3. The loss on every token")
    view = picker.current()
    if not is_gpt(view):
        st.info(f"This section scores a GPT's next-token predictions; **{literal_markdown(view.label)}** is not a GPT.")
        return
    st.text_area("Any text", DEFAULT_LOSS_TEXT, max_chars=20_000, height=90, **share.bind("loss_text"))
    share.carried_note("loss_text")
    st.markdown(
        "Each token is coloured by the model's loss on it, $-\\ln p(\\text{token} \\mid \\text{the tokens "
        "before})$: darker red = more surprising. Hover for the top 5 predictions. The mean over the tokens "
        "is the model's loss on this text."
    )
    with ui.friendly_errors("the per-token loss"):
        both(render_losses, "loss", "the per-token loss")


# ------------------------------------------------------------------ 4. an induction head forming
INDUCTION_LABEL = "Induction heads · 2-layer attention-only GPT"


def induction_job():
    """This session's induction run (the newest one), or None."""
    manager, owner = picker.manager(), picker.session_id()
    job = manager.get(owner, state.INDUCTION_JOB.get(default=""))
    if job is None:
        runs = [j for j in manager.jobs(owner) if j.kind == "train" and j.label.startswith(INDUCTION_LABEL)]
        job = runs[-1] if runs else None
    return job


@st.cache_data(show_spinner=False, max_entries=512)
def _probe(run_id: str, step: int, _store, _description) -> induction.ProbeResult:
    return induction.probe_snapshot(_store, _description, step, induction.probe_lines())


def start_induction_run() -> None:
    """Start the preset run and pick it in the sidebar (as Train on the Training page does), remembering the model
    picked before, so that section 4 can offer it back."""
    preset = induction.PRESET
    try:
        trainer = induction.make_trainer(preset)
        label = training.unique_label(INDUCTION_LABEL)  # 'Train it again' must not repeat the first run's label
        job = picker.manager().submit_training(
            picker.session_id(), trainer, label=label, snapshot_every=preset.snapshot_every
        )
    except LlmvizError as error:
        st.error(str(error))
        return
    state.INDUCTION_JOB.set(job.id)
    previous = picker.selected_key()
    if not previous.startswith(f"run:{job.id}"):
        state.INDUCTION_PREVIOUS.set(previous)
    picker.select(f"run:{job.id}")  # every page now shows this run


def phase_chart(curve: list[induction.ProbeResult], picked_step: int | None) -> go.Figure:
    steps = [point.step for point in curve]
    layers, heads = curve[0].scores["induction"].shape
    figure = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("Head scores on the test lines", "Loss on the test lines (nats)"),
    )
    palette = ["#4c6ef5", "#e8590c", "#2f9e44", "#ae3ec9", "#1098ad", "#f08c00", "#d6336c", "#5c940d"]
    for layer in range(layers):
        for head in range(heads):
            color = palette[(layer * heads + head) % len(palette)]
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
    figure.add_trace(
        go.Scatter(
            x=steps,
            y=[p.repeated_half_loss for p in curve],
            name="loss on the repeated half",
            mode="lines",
            line=dict(color="#c92a2a", width=3),
        ),
        row=2,
        col=1,
    )
    figure.add_trace(
        go.Scatter(
            x=steps,
            y=[p.first_half_loss for p in curve],
            name="loss on the first half",
            mode="lines",
            line=dict(color="#868e96", dash="dash"),
        ),
        row=2,
        col=1,
    )
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


def induction_body() -> None:
    job = induction_job()
    preset = induction.PRESET
    if job is None:
        if st.button(
            f"Train it: {preset.steps} steps, about a minute on a laptop CPU",
            type="primary",
            key=state.widget("induction_start"),
        ):
            start_induction_run()
            st.rerun(scope="app")  # the sidebar picker now lists (and shows) the run
        st.caption(
            f"It trains in the background as one of your runs, and becomes the model picked in the sidebar: "
            f"sections 1–3 and every page then show it instead of {literal_markdown(picker.current().label)}. "
            "It reads lines of random characters, so the logit lens shows single random characters. Section 4 "
            "then offers a button to go back to your model."
        )
        return
    status = job.status()
    if not status.done:
        st.progress(status.fraction, text=f"{job.label}: {status.describe()}")
        if st.button("Stop", key=state.widget("induction_stop")):
            job.stop()
    elif status.state == "failed":
        st.warning(f"The run stopped with a problem: {status.describe()}")
    store = job.snapshots
    if job.info is None or store is None or not store.steps():
        st.caption("Preparing the run…")
        return
    description = job.info.description
    curve = [_probe(job.id, step, store, description) for step in induction.chart_steps(store, status.done)]
    view = picker.current()
    picked = view.step if view.run_id == job.id else None
    charts.show(phase_chart(curve, picked), key=state.widget("induction_chart"))
    last = curve[-1]
    layer, head, _score = induction.strongest_induction_head(last)
    st.markdown(induction.describe(last))
    c1, c2 = st.columns(2)
    c1.page_link(
        str(ui.ROOT / "stages/attention.py"),
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
            "This run is the model picked in the sidebar, so sections 1–3 above show it (random characters), "
            "not the model you had picked."
        )
        if c2.button("Back to the model picked before", key=state.widget("induction_back")):
            state.INDUCTION_PREVIOUS.pop()
            picker.select(previous)
            st.rerun(scope="app")
    if status.done and st.button("Train it again", key=state.widget("induction_again")):
        start_induction_run()
        st.rerun(scope="app")


@sections.section("inside.induction")
def induction_section() -> None:
    st.header("4. Watching an induction head form")
    st.markdown(
        "An **induction head** continues a pattern seen earlier in the context: after *… A B … A* it attends to the "
        "*B* that followed the earlier *A*, and predicts *B*. It takes two heads: a **previous-token head** in layer 0 "
        "writes 'the token before me' into every position, and the induction head in layer 1 looks for the position "
        "whose previous token is the current one. Olsson et al. (2022, *In-context Learning and Induction Heads*) saw "
        "such heads appear suddenly during training, together with a sudden drop in the loss on repeated text.\n\n"
        "Here a 2-layer **attention-only** GPT (no MLPs) learns lines of random characters in which a random stretch "
        "appears twice, at a random place. The chart probes every kept snapshot on test lines (16 random characters, "
        "repeated): watch the induction score jump while the loss on the repeated half falls. These scores average "
        "the attention over all the test lines, so they differ a little from section 2's heatmap, which measures one "
        "test input of its own."
    )
    with ui.friendly_errors("the induction run"):
        # redrawn every 4 s while the run trains; still while it is paused or over
        training.live(
            induction_body,
            active=lambda: (job := induction_job()) is not None and job.changing,
            seconds=4.0,
            name="inside.induction.live",
        )


lens_section()
heads_section()
loss_section()
induction_section()
