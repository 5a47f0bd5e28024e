"""The Adapt & serve page: LoRA, quantization, fine-tuning for a task, training in less memory, serving."""

import functools

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import ui
from llmviz.adapt import finetune, lora, memory
from llmviz.adapt import quantize as qz
from llmviz.errors import LlmvizError
from llmviz.generation import serving
from llmviz.jobs.manager import Planned
from llmviz.lessons import adapting as adapt
from llmviz.lessons import forward as views
from ui import charts, picker, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.panels import runs as training
from ui.text import literal_markdown

settings = ui.settings()
ui.page_header(
    "Adapt & serve: after pre-training",
    "A pretrained model is a starting point. Fine-tune it for a task, adapt it cheaply with LoRA, shrink it to "
    "8 or 4 bits, train it in less memory, and serve many requests at once — all on the model picked in the sidebar.",
)

view = picker.current()
if view.family != "gpt":
    st.info(
        f"{view.label} is not a GPT: this page adapts GPT models. It shows the shipped GPT instead; pick "
        "GPT-2 or one of your GPT runs in the sidebar to use them here."
    )
    view = picker.shipped_default()
model, tokenizer = view.model, view.tokenizer
st.caption(f"Model: {view.label} (picked in the sidebar) · {model.num_parameters():,} parameters.")
corpus = ui.corpus_text()
if corpus is None:
    st.stop()
corpus_label, text = corpus
RUN_TAG = "adapt"


def _runs(prefix: str) -> list:
    return [job for job in picker.my_jobs("train") if job.label.startswith(prefix)]


def _newest(prefix: str):
    found = _runs(prefix)
    return found[-1] if found else None


def _progress(job, where: str) -> None:
    """A lab run's progress bar with Pause/Resume/Stop (the same buttons as every run on the Training page)."""
    status = job.status()
    if not status.done:
        st.progress(status.fraction, text=f"{job.label}: {status.describe()}")
        training.controls(job, status, where)
    elif status.state == "failed":
        st.warning(f"{job.label} stopped with a problem: {status.error or status.describe()}")


def _submit(where: str, steps: int, *runners: tuple[str, object, object]) -> None:
    """Start ``(label, build, footprint)`` runs to compare as one race (one worker, a step of each in turn): each is
    built in the worker by ``build()``, never here (a picked GPT-2 travels with the runs), after the server has
    checked their ``footprint`` fits. The comparison counts once in the student's share of the server; a refusal is
    kept beside the button ``where`` (``ui.panels.runs.refusal``). A label this session already has gets a number
    (" #2"), so a second pair of runs is drawn beside the first, not in its place."""
    planned = [(training.unique_label(label), Planned(build, needs, steps)) for label, build, needs in runners]
    training.start(where, lambda: picker.manager().submit_race(picker.session_id(), planned))


def _live(name: str, runs_of, draw) -> None:
    """Draw a section's lab runs with ``draw(runs)``, redrawn while any of them trains (``ui.panels.runs.live``: every
    2 s for one watching tab, less often when many tabs watch) and still once they have all ended."""
    training.live(lambda: draw(runs_of()), active=lambda: any(job.changing for job in runs_of().values()), name=name)


def _curves(jobs_by_name: dict, field: str = "train_loss", title: str = "", y_title: str = "loss (nats)") -> go.Figure:
    figure = go.Figure()
    for name, job in jobs_by_name.items():
        metrics = [m for m in job.status().metrics if getattr(m, field, None) is not None]
        figure.add_trace(
            go.Scatter(
                x=[m.step for m in metrics],
                y=[getattr(m, field) for m in metrics],
                mode="lines+markers" if field != "train_loss" else "lines",
                name=name,
            )
        )
    figure.update_layout(
        title=title,
        height=340,
        margin=charts.margins(40),
        xaxis_title="step",
        yaxis_title=y_title,
        legend=dict(orientation="h", y=-0.25),
    )
    return figure


def _matrix(
    values,
    title: str,
    height: int,
    colorscale: str = "RdBu",
    zmid: float | None = 0.0,
    text=None,
    x_title: str = "column",
    y_title: str = "row",
) -> go.Figure:
    """A plain numeric heatmap (rows top to bottom)."""
    figure = go.Figure(
        go.Heatmap(
            z=values,
            colorscale=colorscale,
            zmid=zmid,
            text=text,
            texttemplate="%{text}" if text is not None else None,
            hovertemplate="row %{y}, column %{x}: %{z:.4g}<extra></extra>",
        )
    )
    figure.update_yaxes(autorange="reversed", title_text=y_title)
    figure.update_xaxes(title_text=x_title)
    figure.update_layout(title=title, height=height, margin=charts.margins(40))
    return figure


# ------------------------------------------------------------------ quiz
@st.cache_data(show_spinner="Computing the answers…", max_entries=16)
def _questions(key: str, _model, _tokenizer) -> list:
    return adapt.adapt_questions(_model, _tokenizer, "The for statement")


with ui.friendly_errors("the questions"):
    quiz_ui.section("adapt", lambda: _questions(view.key, model, tokenizer))


# ------------------------------------------------------------------ 1. LoRA
@st.cache_data(show_spinner="Training the adapters for a few steps…", max_entries=16)
def _lora_demo(
    key: str, rank: int, alpha: float, targets: tuple[str, ...], corpus_name: str, _model, _tokenizer, _text: str
) -> adapt.LoRADemo:
    return adapt.lora_demo(_model, _tokenizer, _text, lora.LoRAConfig(rank, alpha, targets), steps=20)


@sections.section("adapt.lora")
def lora_section(view: picker.ModelView, text: str, corpus_label: str) -> None:
    model = view.model
    c1, c2, c3 = st.columns([1, 1, 2])
    rank = c1.select_slider("Rank r", [1, 2, 4, 8, 16, 32], value=4, **share.bind("lora_rank"))
    alpha = c2.select_slider(
        "α (the update is scaled by α / r)", [1, 2, 4, 8, 16, 32, 64], value=8, key=state.widget("lora_alpha")
    )
    targets = c3.multiselect(
        "Matrices that get an adapter",
        list(lora.TARGETS),
        default=["q", "v"],
        format_func=lambda t: lora.TARGET_TITLES[t],
        key=state.widget("lora_targets"),
    )
    if not targets:
        st.warning("Choose at least one matrix to adapt.")
        return
    if "mlp" in targets and not model.config.mlp:
        st.warning("This model has no MLP (attention only): leave the MLP out.")
        return
    config = lora.LoRAConfig(rank, float(alpha), tuple(targets))
    try:
        counts = lora.memory_comparison(model, config)
    except LlmvizError as error:  # a mixture of experts' MLP has no single matrix to adapt
        st.warning(literal_markdown(str(error)))
        return
    full, low = counts["full fine-tuning"], counts["LoRA"]
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "parameters trained with LoRA",
        f"{low.trained_parameters:,}",
        f"{low.trained_parameters / full.trained_parameters:.2%} of the model",
        delta_color="off",
        delta_arrow="off",
    )
    m2.metric("AdamW states, full fine-tuning", memory.human_bytes(full.optimizer_bytes))
    m3.metric(
        "AdamW states, LoRA",
        memory.human_bytes(low.optimizer_bytes),
        f"saves {memory.human_bytes(full.optimizer_bytes - low.optimizer_bytes)}",
        delta_color="off",
        delta_arrow="off",
    )
    shapes = lora.adapted_matrices(model, config.targets)  # the model's own shapes (GQA, d_mlp)
    sums = " + ".join(f"({m.d_in} + {m.d_out})" for m in shapes)
    lines = [
        rf"{model.config.n_layers} \text{{ layers}} \times r \sum_\text{{matrices}} (d_\text{{in}} + "
        rf"d_\text{{out}}) = {model.config.n_layers} \times {rank} \times \left[{sums}\right] = "
        rf"{charts.tex_int(low.trained_parameters)}"
    ]
    lines.append(
        rf"\text{{AdamW}}: 2 \text{{ states}} \times 4 \text{{ bytes}} \times "
        rf"{charts.tex_int(low.trained_parameters)} = "
        rf"{charts.tex_int(low.optimizer_bytes)} \text{{ bytes}}"
    )
    charts.latex(*lines)
    figure = go.Figure()
    for part, attribute in (
        ("weights", "weight_bytes"),
        ("gradients", "gradient_bytes"),
        ("AdamW states", "optimizer_bytes"),
    ):
        figure.add_trace(go.Bar(x=list(counts), y=[getattr(c, attribute) / 2**20 for c in counts.values()], name=part))
    figure.update_layout(
        barmode="stack",
        height=300,
        yaxis_title="MiB",
        margin=charts.margins(30),
        title="Memory for training (besides activations)",
    )
    charts.show(figure, key=state.widget("lora_memory"))

    st.subheader("ΔW = (α / r) · B A after 20 steps on your text")
    try:
        demo = _lora_demo(view.key, rank, float(alpha), config.targets, corpus_label, model, view.tokenizer, text)
    except LlmvizError as error:
        st.info(str(error))
        demo = None
    if demo is not None:
        st.caption(
            f"Loss over the 20 steps: {demo.losses[0]:.3f} → {demo.losses[-1]:.3f}. Merged weights W + ΔW vs "
            f"the adapters: largest logit difference {demo.max_logit_difference:.2e} (the same model)."
        )
        name = st.selectbox("Matrix", list(demo.deltas), key=state.widget("lora_matrix"))
        delta = demo.deltas[name]
        spectrum = adapt.spectrum(delta)
        left, right = st.columns([3, 2])
        shown = delta[:64, :64]
        charts.show_in(
            left,
            _matrix(
                shown.tolist(),
                f"ΔW of {name} (first {shown.shape[0]} × {shown.shape[1]})",
                380,
                y_title="output row",
                x_title="input column",
            ),
            key=state.widget("lora_heatmap"),
        )
        bars = go.Figure(go.Bar(x=list(range(1, len(spectrum.values) + 1)), y=spectrum.values))
        bars.update_layout(
            title=f"Singular values: rank {spectrum.rank}",
            height=380,
            xaxis_title="index",
            yaxis_title="σ",
            margin=charts.margins(40),
        )
        charts.show_in(right, bars, key=state.widget("lora_spectrum"))
        slices = len([t for t in config.targets if t in ("q", "k", "v")]) if name.endswith("qkv.weight") else 1
        st.caption(
            f"At most r = {rank} singular values per adapted block of rows are non-zero"
            + (f" ({slices} blocks of rows here: rank ≤ {slices * rank})" if slices > 1 else "")
            + ": the update lives in a small subspace, which is why so few numbers describe it."
        )

    st.subheader("LoRA vs full fine-tuning on your text (lab runs)")
    steps = st.slider("Steps", 20, 400, 100, step=20, key=state.widget("lora_steps"))
    if st.button("Start both runs", key=state.widget("lora_start")):
        with ui.friendly_errors("starting the runs"):
            lab = text[: adapt.MAX_TEXT]  # what the runs read
            _submit(
                "lora",
                steps,
                (
                    f"{RUN_TAG} LoRA r{rank} ({', '.join(config.targets)})",
                    functools.partial(adapt.lora_run, model, view.tokenizer, lab, config, steps, settings.seed),
                    adapt.lab_footprint(model, len(lab), steps, "LoRA", trainable=low.trained_parameters, copies=1),
                ),
                (
                    f"{RUN_TAG} full fine-tuning",
                    functools.partial(adapt.full_run, model, view.tokenizer, lab, steps, settings.seed),
                    adapt.lab_footprint(model, len(lab), steps, "Full fine-tuning"),
                ),
            )
            st.rerun(scope="app")
    training.refusal("lora")

    def draw_runs(runs: dict) -> None:
        for job in runs.values():
            _progress(job, "lora")
        if runs:
            charts.show(_curves(runs, title="Training loss"), key=state.widget("lora_curves"))
            st.caption(
                "Each run is in the sidebar's picker. Pick a LoRA run at its last step: ΔW between its "
                "step 0 and that step has rank ≤ r (section below); a full fine-tuning run's ΔW has full rank."
            )

    _live(
        "adapt.lora.runs",
        lambda: {job.label: job for job in _runs(f"{RUN_TAG} LoRA") + _runs(f"{RUN_TAG} full")},
        draw_runs,
    )


# ------------------------------------------------------------------ ΔW of a picked run
@sections.section("adapt.delta")
def delta_section(view: picker.ModelView) -> None:
    start = picker.baseline()
    if start is None or view.step in (None, 0):
        st.caption(
            "Pick one of your runs at a later step in the sidebar to see what training changed: "
            "ΔW = W(step N) − W(step 0) for each matrix, with its singular values."
        )
        return
    deltas = adapt.delta_between(start.model, view.model)
    if not deltas:
        st.caption("No matrix changed between step 0 and this step.")
        return
    name = st.selectbox("Matrix", list(deltas), key=state.widget("delta_matrix"))
    spectrum = adapt.spectrum(deltas[name])
    bars = go.Figure(go.Bar(x=list(range(1, len(spectrum.values) + 1)), y=spectrum.values))
    bars.update_layout(title=spectrum.title(name), height=320, margin=charts.margins(40))
    charts.show(bars, key=state.widget("delta_spectrum"))


# ------------------------------------------------------------------ 2. quantization
@st.cache_data(show_spinner="Quantizing…", max_entries=24)
def _quant(
    key: str,
    bits: int,
    per_channel: bool,
    symmetric: bool,
    corpus_name: str,
    prompt: str,
    _model,
    _tokenizer,
    _text: str,
) -> adapt.QuantReport:
    return adapt.quant_report(_model, _tokenizer, _text, qz.QuantSpec(bits, per_channel, symmetric), prompt)


@sections.section("adapt.quantize")
def quantize_section(view: picker.ModelView, text: str, corpus_label: str) -> None:
    c1, c2, c3 = st.columns(3)
    bits = c1.radio("Bits", [8, 4], horizontal=True, **share.bind("quant_bits"))
    per_channel = (
        c2.radio("Scale", ["per channel", "per tensor"], horizontal=True, key=state.widget("quant_scale"))
        == "per channel"
    )
    symmetric = c3.radio(
        "Zero point", ["symmetric (z = 0)", "zero-point (asymmetric)"], horizontal=True, key=state.widget("quant_zero")
    ).startswith("symmetric")
    spec = qz.QuantSpec(int(bits), per_channel, symmetric)
    prompt = st.text_input("Prompt for the side-by-side text", "The for statement", key=state.widget("quant_prompt"))
    with ui.friendly_errors("quantizing the model"):
        report = _quant(
            view.key, spec.bits, per_channel, symmetric, corpus_label, prompt, view.model, view.tokenizer, text
        )
        charts.latex(
            r"q = \operatorname{clamp}\!\left(\operatorname{round}(w / s) + z,\; "
            rf"{charts.tex_number(spec.qmin, 'd')},\; {spec.qmax}\right), \qquad \hat w = (q - z)\, s"
        )
        m1, m2, m3, m4 = st.columns(4)
        m1.metric(
            "size",
            memory.human_bytes(report.quantized_bytes),
            f"{report.quantized_bytes / report.float_bytes:.1%} of {memory.human_bytes(report.float_bytes)}",
            delta_color="off",
            delta_arrow="off",
        )
        c = report.comparison
        m2.metric(
            "held-out loss",
            f"{c.loss_after:.4f}",
            f"{c.loss_after - c.loss_before:+.4f} vs float32",
            delta_color="inverse",
        )
        m3.metric(
            "perplexity",
            f"{c.perplexity_after:.2f}",
            f"float32: {c.perplexity_before:.2f}",
            delta_color="off",
            delta_arrow="off",
        )
        m4.metric(
            "KL(float ‖ quantized)",
            f"{c.kl:.4f} nats",
            f"same top token at {c.top1_agreement:.1%} of positions",
            delta_color="off",
            delta_arrow="off",
        )
        st.caption(
            f"On {c.tokens:,} held-out tokens of {corpus_label}. KL divergence: how far the next-token "
            "distribution moved, averaged over positions."
        )
        table = pd.DataFrame(
            [
                {
                    "matrix": layer.name,
                    "shape": " × ".join(map(str, layer.shape)),
                    "float32 bytes": layer.float_bytes,
                    f"int{spec.bits} bytes": layer.quantized_bytes,
                    "RMS error": layer.rms_error,
                    "max error": layer.max_error,
                    "relative error": layer.relative_error,
                }
                for layer in report.layers
            ]
        )
        st.subheader(f"Rounding error per matrix ({spec.title})")
        error_bars = go.Figure(go.Bar(x=table["matrix"], y=table["relative error"]))
        error_bars.update_layout(
            title="Rounding error per matrix: ‖ŵ − w‖ / ‖w‖", height=320, margin=charts.margins(40)
        )
        charts.show(error_bars, key=state.widget("quant_errors"))
        with st.expander("Every matrix"):
            st.dataframe(table, hide_index=True)
        st.subheader("The weights before and after")
        name = st.selectbox(
            "Histogram of", list(table["matrix"]), index=min(2, len(table) - 1), key=state.widget("quant_layer")
        )
        counted = adapt.weight_histograms(view.model, name, spec)  # every weight, in 200 shared bins
        width = float(counted.edges[1] - counted.edges[0])
        histogram = go.Figure(
            data=[
                go.Bar(
                    x=counted.centers.numpy(),
                    y=counts.numpy(),
                    width=width,
                    name=label,
                    opacity=0.55,
                    marker_color=colour,
                )
                for label, counts, colour in (
                    ("float32", counted.before, "#4c6ef5"),
                    (spec.title, counted.after, "#f76707"),
                )
            ],
            layout=dict(
                barmode="overlay",
                height=320,
                margin=charts.margins(30),
                bargap=0,
                title=f"{name}: weights before and after",
                xaxis_title="weight",
                yaxis_title="count",
            ),
        )
        charts.show(histogram, key=state.widget("quant_histogram"))
        st.subheader("The same prompt, both models")
        left, right = st.columns(2)
        left.markdown("**float32 (greedy)**")
        left.code(report.text_before, language=None, wrap_lines=True)
        right.markdown(f"**{spec.title} (greedy)**")
        right.code(report.text_after, language=None, wrap_lines=True)


@sections.section("adapt.qat")
def qat_section(view: picker.ModelView, text: str) -> None:
    bits = st.radio("Bits while training", [4, 8], horizontal=True, key=state.widget("qat_bits"))
    spec = qz.QuantSpec(int(bits), per_channel=False, symmetric=True)
    steps = st.slider("Steps", 20, 400, 100, step=20, key=state.widget("qat_steps"))
    if st.button("Start quantization-aware training (and a float run to compare)", key=state.widget("qat_start")):
        with ui.friendly_errors("starting the runs"):
            lab = text[: adapt.MAX_TEXT]
            _submit(
                "qat",
                steps,
                (
                    f"{RUN_TAG} QAT int{bits}",
                    functools.partial(adapt.qat_run, view.model, view.tokenizer, lab, spec, steps, settings.seed),
                    adapt.lab_footprint(view.model, len(lab), steps, "Quantization-aware training", copies=1),
                ),
                (
                    f"{RUN_TAG} float for QAT int{bits}",
                    functools.partial(adapt.full_run, view.model, view.tokenizer, lab, steps, settings.seed),
                    adapt.lab_footprint(view.model, len(lab), steps, "Fine-tuning"),
                ),
            )
            st.rerun(scope="app")
    training.refusal("qat")
    qat, plain = _newest(f"{RUN_TAG} QAT int{bits}"), _newest(f"{RUN_TAG} float for QAT int{bits}")
    if qat is None:
        st.caption(
            "QAT fine-tunes with every linear layer's weights rounded to the grid in the forward pass (the "
            "gradient passes straight through the rounding), so the weights learn to sit where rounding "
            "hurts least."
        )
        return
    pair = {job.label: job for job in (qat, plain) if job is not None}
    _live("adapt.qat.runs", lambda: pair, lambda runs: [_progress(job, "qat") for job in runs.values()])
    if not qat.status().done or (plain is not None and not plain.status().done):
        return
    with ui.friendly_errors("comparing QAT with post-training quantization"):
        trained = picker.load(f"run:{qat.id}@{qat.status().snapshot_steps[-1]}")
        start = picker.load(f"run:{qat.id}@0")
        floated = picker.load(f"run:{plain.id}@{plain.status().snapshot_steps[-1]}") if plain else None
        rows = _ptq_vs_qat(qat.id, plain.id if plain else "", spec.bits, start, trained, floated, text)
        table = pd.DataFrame([{"model": k, "held-out loss": v} for k, v in rows.items()])
        st.dataframe(table, hide_index=True)
        st.caption(
            f"All rows quantized to {spec.title} except the first. QAT starts from the same weights as "
            "the float run; compare the last two rows: the same training, with and without the rounding in "
            "the forward pass."
        )


@st.cache_data(show_spinner="Comparing…", max_entries=8)
def _ptq_vs_qat(qat_id: str, float_id: str, bits: int, _start, _trained, _floated, _text: str) -> dict[str, float]:
    return adapt.ptq_vs_qat(
        _start.model,
        _trained.model,
        _floated.model if _floated else None,
        _start.tokenizer,
        _text,
        qz.QuantSpec(bits, per_channel=False, symmetric=True),
    )


# ------------------------------------------------------------------ 3. fine-tuning for a task
@st.cache_data(show_spinner=False, max_entries=16)
def _bce(key: str, _model, _tokenizer) -> adapt.BCEExample:
    return adapt.bce_example(_model, _tokenizer)


@st.cache_data(show_spinner="Prompting the model for every held-out name…", max_entries=16)
def _prompting(key: str, _model, _tokenizer) -> list[finetune.PromptingResult]:
    return adapt.prompting(_model, _tokenizer)


def _draw_task_runs(runs: dict) -> None:
    for job in runs.values():
        _progress(job, "task")
    if not runs:
        return
    left, right = st.columns(2)
    charts.show_in(left, _curves(runs, title="Training loss (BCE)"), key=state.widget("task_loss"))
    charts.show_in(
        right, _curves(runs, "val_accuracy", "Held-out accuracy", "accuracy"), key=state.widget("task_accuracy")
    )
    rows = []
    for name, job in runs.items():
        metrics = job.status().metrics
        before = next(
            (m.val_accuracy_before for m in metrics if getattr(m, "val_accuracy_before", None) is not None), None
        )
        after = next((m.val_accuracy for m in reversed(metrics) if getattr(m, "val_accuracy", None) is not None), None)
        rows.append({"run": name, "accuracy before": before, "accuracy now": after, "step": job.status().step})
    st.dataframe(pd.DataFrame(rows), hide_index=True)


@st.cache_resource(show_spinner="Reading the fine-tuned classifier…", max_entries=4)
def _classifier(folder: str, stamp: float):
    return finetune.load_classifier(folder)  # (classifier, tokenizer, task): shared, never changed


@st.cache_data(show_spinner=False, max_entries=8)
def _classifier_accuracy(folder: str, stamp: float) -> float:
    classifier, tokenizer, _ = _classifier(folder, stamp)
    return finetune.accuracy(classifier, tokenizer, finetune.name_examples()[1])


def _checkpoint_classifier(view: picker.ModelView) -> None:
    """A checkpoint written by ``python -m llmviz finetune``, picked in the sidebar: its trained head, read back."""
    folder = picker.checkpoint_folder(view)
    if folder is None or not isinstance(view.meta.get("task"), dict):
        return
    st.markdown(f"**The classifier in {literal_markdown(folder.name)}** (fine-tuned with `python -m llmviz finetune`)")
    with ui.friendly_errors("reading the fine-tuned classifier"):
        head = folder / finetune.HEAD_FILE
        stamp = head.stat().st_mtime if head.is_file() else 0.0  # a missing head: load_classifier says so
        classifier, tokenizer, task = _classifier(str(folder), stamp)
        mode = str((view.meta.get("train_config") or {}).get("mode", "?"))

        def shown(accuracy: float | None) -> str:
            return "?" if accuracy is None else f"{accuracy:.3f}"

        st.caption(
            f"Trained: {literal_markdown(finetune.MODE_TITLES.get(mode, mode))}, {view.step or 0} steps. "
            f"Held-out accuracy {shown(task['accuracy_before'])} before → {shown(task['accuracy_after'])} "
            f"after training; measured again now: {_classifier_accuracy(str(folder), stamp):.3f}."
        )
        typed = st.text_input(
            "First names to classify (comma-separated)",
            "Mary, John, Ada, Alan, Grace",
            max_chars=400,
            key=state.widget("task_names"),
        )
        names = [name.strip() for name in typed.split(",") if name.strip()]
        if not names:
            st.warning("Type at least one first name.")
            return
        if len(names) > 20:
            st.caption(f"The first 20 of your {len(names)} names are classified.")
            names = names[:20]
        probabilities = finetune.female_probabilities(classifier, tokenizer, names)
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "name": name,
                        "P(female list)": round(p, 4),
                        "the classifier says": finetune.LABELS[int(p > 0.5)],
                        "the names lists say": finetune.listed_as(name),
                    }
                    for name, p in zip(names, probabilities, strict=True)
                ]
            ),
            hide_index=True,
        )


def _prompting_vs_fine_tuning(results: list[finetune.PromptingResult]) -> None:
    """Held-out accuracy of prompting and of this session's fine-tuning runs, side by side (the same names)."""
    rows = [(f"prompt, {r.shots} example{'s' if r.shots != 1 else ''}", r.accuracy, "prompting") for r in results]
    for job in _runs(f"{RUN_TAG} names:"):
        measured = [m.val_accuracy for m in job.status().metrics if getattr(m, "val_accuracy", None) is not None]
        if measured:
            rows.append(
                (
                    f"{job.label.removeprefix(f'{RUN_TAG} names: ')} (step {job.status().step})",
                    measured[-1],
                    "fine-tuned",
                )
            )
    figure = go.Figure()
    for kind, colour in (("prompting", "#868e96"), ("fine-tuned", "#4c6ef5")):
        chosen = [row for row in rows if row[2] == kind]
        if chosen:
            figure.add_trace(
                go.Bar(
                    x=[row[0] for row in chosen],
                    y=[row[1] for row in chosen],
                    name=kind,
                    marker_color=colour,
                    text=[f"{row[1]:.1%}" for row in chosen],
                    textposition="outside",
                )
            )
    figure.update_layout(
        title="Held-out accuracy on the same names: prompting vs fine-tuning",
        height=340,
        yaxis=dict(range=[0, 1.1], title="accuracy"),
        margin=charts.margins(40),
        legend=dict(orientation="h", y=-0.3),
    )
    charts.show(figure, key=state.widget("task_versus"))
    if len(rows) == len(results):
        st.caption("Train the three fine-tuning runs above: their held-out accuracy joins this chart.")


@sections.section("adapt.task")
def task_section(view: picker.ModelView) -> None:
    train, held = finetune.name_examples()
    st.markdown(
        f"**The task**: is a first name on the male or the female list of the `names` package? "
        f"{len(train)} names to train on, {len(held)} held out (one in five, by a fixed hash of the name)."
    )
    with ui.friendly_errors("the classification loss"):
        example = _bce(view.key, view.model, view.tokenizer)
        steps = example.steps
        frame = pd.DataFrame(
            {
                "name": example.names,
                "label y": steps.labels,
                "logit z": steps.logits,
                "σ(z) = P(female)": steps.probabilities,
                "loss": steps.losses,
            }
        )
        st.dataframe(frame, hide_index=True)
        z, y = steps.logits[0], steps.labels[0]
        charts.latex(
            r"\ell = -\left[y \log \sigma(z) + (1 - y) \log(1 - \sigma(z))\right] = \max(z, 0) - z y + "
            r"\log\left(1 + e^{-|z|}\right)",
            rf"\text{{{example.names[0]}}}: \max({charts.tex_number(z, '.4f')}, 0) - {charts.tex_number(z, '.4f')}"
            rf"\cdot {y} + \log\left(1 + e^{{-{abs(z):.4f}}}\right) = {steps.losses[0]:.4f}",
            rf"\text{{mean over the {len(steps.losses)} names}} = {steps.mean:.4f} \quad "
            rf"(\texttt{{binary\_cross\_entropy\_with\_logits}}: {example.torch_value:.4f})",
        )
        st.caption("The head is untrained here (random weights): the loss is about log 2 = 0.693, a coin flip.")
    steps_count = st.slider("Steps per run", 20, 300, 100, step=20, key=state.widget("task_steps"))
    if st.button("Train head only / head + last block / everything (three lab runs)", key=state.widget("task_start")):
        with ui.friendly_errors("starting the runs"):
            total, width = view.model.num_parameters(), view.model.config.d_model
            trained = {"head": width + 1, "last block": total // view.model.config.n_layers + width + 1}
            _submit(
                "task",
                steps_count,
                *[
                    (
                        f"{RUN_TAG} names: {finetune.MODE_TITLES[mode]}",
                        functools.partial(
                            adapt.finetune_run, view.model, view.tokenizer, steps_count, settings.seed, mode
                        ),
                        adapt.lab_footprint(
                            view.model,
                            0,
                            steps_count,
                            f"Fine-tuning ({finetune.MODE_TITLES[mode]})",
                            trainable=trained.get(mode, total + width + 1),
                            batch_size=32,
                            context=16,  # a name is a few tokens
                        ),
                    )
                    for mode in finetune.MODES
                ],
            )
            st.rerun(scope="app")
    training.refusal("task")
    _live(
        "adapt.task.runs",
        lambda: {job.label.removeprefix(f"{RUN_TAG} names: "): job for job in _runs(f"{RUN_TAG} names:")},
        _draw_task_runs,
    )
    _checkpoint_classifier(view)

    st.subheader("No training at all: prompting with 0, 1 or 4 labelled examples")
    if (
        st.button("Measure zero- and few-shot accuracy", key=state.widget("task_prompting"))
        or state.TASK_PROMPTED.get()
    ):
        state.TASK_PROMPTED.set(True)
        with ui.friendly_errors("prompting the model"):
            results = _prompting(view.key, view.model, view.tokenizer)
            st.dataframe(
                pd.DataFrame(
                    [
                        {
                            "examples in the prompt": r.shots,
                            "held-out accuracy": r.accuracy,
                            "answered “female”": r.female_share,
                        }
                        for r in results
                    ]
                ),
                hide_index=True,
            )
            st.code(results[-1].prompt_example, language=None)
            _prompting_vs_fine_tuning(results)
            st.caption(
                "The prediction is the label whose words (“ male” or “ female”) the model finds more "
                "likely next. A model that always gives the same answer scores the share of that label among the "
                "held-out names; a small model trained on other text rarely does better, a large pretrained "
                "one (GPT-2) can pick the task up from the examples."
            )


# ------------------------------------------------------------------ 4. memory
@st.cache_data(show_spinner="Measuring the training steps…", max_entries=8)
def _memory(key: str, corpus_name: str, _model, _tokenizer, _text: str) -> list[memory.StepMeasure]:
    return adapt.memory_table(_model, _tokenizer, _text)


@sections.section("adapt.memory")
def memory_section(view: picker.ModelView, text: str, corpus_label: str) -> None:
    ways = len(adapt.memory_precisions(view.model)) * 2  # with and without checkpointing
    if (
        st.button(f"Measure one training step {ways} ways", key=state.widget("memory_run"))
        or state.MEMORY_MEASURED.get()
    ):
        state.MEMORY_MEASURED.set(True)
        with ui.friendly_errors("measuring memory"):
            measures = _memory(view.key, corpus_label, view.model, view.tokenizer, text)
            frame = pd.DataFrame(
                [
                    {
                        "gradient checkpointing": "on" if m.checkpointing else "off",
                        "autocast": "bf16" if m.bf16 else "fp16" if m.fp16 else "off",
                        "saved for backward": memory.human_bytes(m.saved_bytes),
                        "bytes": m.saved_bytes,
                        "of which 16-bit weight copies": memory.human_bytes(m.cast_weight_bytes),
                        "loss": m.loss,
                        "step time (s)": m.seconds,
                        **({"peak CUDA memory": memory.human_bytes(m.peak_cuda_bytes)} if m.peak_cuda_bytes else {}),
                    }
                    for m in measures
                ]
            )
            st.dataframe(frame, hide_index=True)
            bars = go.Figure(
                go.Bar(
                    x=[f"ckpt {r['gradient checkpointing']}, autocast {r['autocast']}" for _, r in frame.iterrows()],
                    y=frame["bytes"] / 2**20,
                )
            )
            bars.update_layout(
                title="Activations saved for the backward pass",
                yaxis_title="MiB",
                height=300,
                margin=charts.margins(40),
            )
            charts.show(bars, key=state.widget("memory_bars"))
            st.caption(
                "Counted exactly: every tensor autograd saves passes through a hook, distinct storages are "
                "added up; the weights themselves are left out (their 16-bit copies are not: the column above). "
                "Checkpointing keeps each block's input and recomputes the rest "
                "in the backward pass (same loss, more time). Autocast multiplies in 16 bits: it saves "
                "16-bit activations (half the bytes), and also a 16-bit copy of each weight it multiplies by, "
                "for the backward pass. With checkpointing few activations are left to halve, so those copies "
                "can make autocast save more, not less. Step times are wall-clock on a shared server."
            )
    st.subheader("The switches on a real run (lab runs, same data and seed)")
    steps = st.slider("Steps", 20, 400, 60, step=20, key=state.widget("memory_steps"))
    switches = adapt.memory_settings(view.model)  # fp16 too on CUDA
    if st.button(
        f"Train {len(switches)} runs: {', '.join(name for name, *_ in switches)}", key=state.widget("memory_start")
    ):
        with ui.friendly_errors("starting the runs"):
            lab = text[: adapt.MAX_TEXT]
            _submit(
                "memory",
                steps,
                *[
                    (
                        f"{RUN_TAG} memory: {name}",
                        functools.partial(
                            adapt.memory_run,
                            view.model,
                            view.tokenizer,
                            lab,
                            steps,
                            settings.seed,
                            checkpointing,
                            bf16,
                            fp16=fp16,
                        ),
                        adapt.lab_footprint(
                            view.model,
                            len(lab),
                            steps,
                            f"Fine-tuning ({name})",
                            precision="bf16" if bf16 else "fp16" if fp16 else "float32",
                        ),
                    )
                    for name, checkpointing, bf16, fp16 in switches
                ],
            )
            st.rerun(scope="app")
    training.refusal("memory")

    def draw_runs(runs: dict) -> None:
        for job in runs.values():
            _progress(job, "memory")
        if runs:
            charts.show(
                _curves(runs, title="Training loss: checkpointing changes nothing, bf16 a little"),
                key=state.widget("memory_curves"),
            )
            st.dataframe(
                pd.DataFrame(
                    [
                        {
                            "run": name,
                            "step": job.status().step,
                            "tokens/s (median)": round(
                                pd.Series([m.tokens_per_s for m in job.status().metrics]).median()
                            )
                            if job.status().metrics
                            else None,
                        }
                        for name, job in runs.items()
                    ]
                ),
                hide_index=True,
            )

    _live(
        "adapt.memory.runs",
        lambda: {job.label.removeprefix(f"{RUN_TAG} memory: "): job for job in _runs(f"{RUN_TAG} memory:")},
        draw_runs,
    )
    processes = st.slider("Processes (GPUs)", 1, 64, 8, key=state.widget("zero_processes"))
    stages = memory.sharding(view.model.num_parameters(), processes)
    figure = go.Figure()
    for part in ("parameters", "gradients", "optimizer"):
        figure.add_trace(
            go.Bar(
                x=[s.stage for s in stages],
                y=[getattr(s, part) / 2**20 for s in stages],
                name="AdamW states" if part == "optimizer" else part,
            )
        )
    figure.update_layout(
        barmode="stack",
        height=340,
        yaxis_title="MiB per process",
        margin=charts.margins(40),
        title=f"{view.model.num_parameters():,} parameters over {processes} processes",
    )
    charts.show(figure, key=state.widget("zero_bars"))
    charts.latex(
        rf"\text{{unsharded}}: (4 + 4 + 2 \cdot 4) \times {charts.tex_int(view.model.num_parameters())} = "
        rf"{charts.tex_int(stages[0].total)} \text{{ bytes}}",  # two lines: one was wider than the page
        rf"\text{{ZeRO-3}}: {charts.tex_int(stages[0].total)} / {processes} = {charts.tex_int(stages[3].total)} "
        rf"\text{{ bytes}}",
    )


# ------------------------------------------------------------------ 5. serving
@st.cache_data(show_spinner=False, max_entries=16)
def _growth(key: str, prompt: str, new_tokens: int, _model, _tokenizer) -> serving.KVGrowth:
    ids = views.encode(_tokenizer, prompt) or [0]
    return serving.kv_growth(_model, ids[-_model.config.context_length // 2 :], new_tokens)


@st.cache_data(show_spinner="Serving the requests both ways…", max_entries=8)
def _batching(key: str, slots: int, lengths: tuple[int, ...], _model, _tokenizer) -> dict[str, serving.ServeResult]:
    return adapt.batching(_model, _tokenizer, slots, lengths)


@sections.section("adapt.serving")
def serving_section(view: picker.ModelView) -> None:
    model = view.model
    per_token = serving.kv_bytes_per_token(model)
    charts.latex(
        rf"\text{{KV bytes per token}} = 2 \times {model.config.n_layers} \text{{ layers}} \times "
        rf"({model.config.kv_heads} \text{{ key/value heads}} \times {model.config.head_dim}) \times "
        rf"{serving.kv_bytes_per_value(model)} \text{{ bytes}} = {charts.tex_int(per_token)}"
    )
    with ui.friendly_errors("generating with the KV cache"):
        growth = _growth(view.key, "The for statement", 60, model, view.tokenizer)
        figure = go.Figure(
            go.Scatter(
                x=growth.tokens, y=growth.cache_bytes, mode="lines+markers", name="measured (the cache's tensors)"
            )
        )
        figure.add_trace(
            go.Scatter(
                x=growth.tokens,
                y=[per_token * n for n in growth.tokens],
                mode="lines",
                line=dict(dash="dot"),
                name="formula",
            )
        )
        figure.update_layout(
            title="The KV cache while generating",
            xaxis_title="tokens in the cache",
            yaxis_title="bytes",
            height=320,
            margin=charts.margins(40),
        )
        charts.show(figure, key=state.widget("kv_growth"))
        st.code(view.tokenizer.decode(growth.generated), language=None, wrap_lines=True)

    st.subheader("Paged attention: block tables")
    c1, c2 = st.columns([1, 3])
    block_size = c1.select_slider("Block size (tokens)", [2, 4, 8, 16], value=4, key=state.widget("page_block"))
    lengths_text = c2.text_input(
        "Request lengths (tokens, comma-separated)", "13, 5, 22, 9", key=state.widget("page_lengths")
    )
    try:
        lengths = [int(x) for x in lengths_text.replace(" ", "").split(",") if x]
        if not lengths or any(n < 1 or n > 4096 for n in lengths) or len(lengths) > 12:
            raise ValueError
    except ValueError:
        st.warning("Give 1 to 12 whole numbers from 1 to 4096, separated by commas.")
        return
    cache = serving.paged_tables({f"request {i + 1}": n for i, n in enumerate(lengths)}, block_size)
    names = list(cache.tables)
    owner = {block: names[i] for i, table in enumerate(cache.tables.values()) for block in table}
    width = 16
    rows = -(-cache.num_blocks // width)
    grid = [
        [names.index(owner[b]) + 1 if (b := r * width + c) in owner else None for c in range(width)]
        for r in range(rows)
    ]
    labels = [
        [(f"{owner[b].split()[-1]}" if (b := r * width + c) in owner else "") for c in range(width)]
        for r in range(rows)
    ]
    heat = _matrix(
        grid,
        "Physical blocks: the number is the request that owns it",
        110 + 45 * rows,
        colorscale="Turbo",
        zmid=None,
        text=labels,
        x_title="+ column",
        y_title="",
    )
    heat.update_traces(showscale=False)
    heat.update_xaxes(dtick=1)  # whole blocks; each row names the blocks it holds (no −0.5 … 0.5 ticks, no title
    heat.update_yaxes(
        tickmode="array",
        tickvals=list(range(rows)),  # squeezed over a one-row chart)
        ticktext=[f"blocks {width * r}–{width * r + width - 1}" for r in range(rows)],
    )
    charts.show(heat, key=state.widget("page_blocks"))
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "request": name,
                    "tokens": cache.lengths[name],
                    "block table": table,
                    "unused slots": len(table) * block_size - cache.lengths[name],
                }
                for name, table in cache.tables.items()
            ]
        ),
        hide_index=True,
    )
    st.caption(
        f"Unused slots: {cache.wasted_slots()} of {cache.num_blocks * block_size} — only in each request's last "
        "block. Reserving every request's longest possible length up front would waste far more."
    )

    st.subheader("Static vs continuous batching (real generation)")
    slots = st.slider("Slots (requests served at once)", 1, 4, 2, key=state.widget("batch_slots"))
    wanted = (24, 4, 16, 6, 10, 4)
    small = model.num_parameters() <= adapt.QUICK_PARAMETERS
    if (
        not small
        and not st.button("Serve the six requests both ways", key=state.widget("batch_run"))
        and not state.BATCHING_SERVED.get(view.key)
    ):
        st.caption("A large model takes a while for 128 generated tokens: press the button to run it.")
        return
    state.BATCHING_SERVED.set(True, view.key)
    with ui.friendly_errors("serving the requests"):
        results = _batching(view.key, slots, wanted, model, view.tokenizer)
        figure = make_subplots(
            rows=1,
            cols=2,
            horizontal_spacing=0.1,
            subplot_titles=("steps waited for a slot (bars), step finished (dots)", "tokens/s each request saw"),
        )
        for (policy, result), colour in zip(results.items(), ("#f76707", "#4c6ef5"), strict=True):
            names = [r.name for r in result.requests]
            figure.add_trace(
                go.Bar(
                    x=names,
                    y=[r.wait_steps for r in result.requests],
                    name=f"{policy}: wait",
                    marker_color=colour,
                    legendgroup=policy,
                    offsetgroup=policy,
                ),
                1,
                1,
            )
            figure.add_trace(
                go.Scatter(
                    x=names,
                    y=[r.finish_step for r in result.requests],
                    mode="markers",
                    marker=dict(size=11, color=colour, line=dict(width=1, color="white")),
                    name=f"{policy}: finished",
                    legendgroup=policy,
                    offsetgroup=policy,
                ),
                1,
                1,
            )
            figure.add_trace(
                go.Bar(
                    x=names,
                    y=[r.tokens_per_s for r in result.requests],
                    marker_color=colour,
                    name=f"{policy}: tokens/s",
                    legendgroup=policy,
                    offsetgroup=policy,
                    showlegend=False,
                ),
                1,
                2,
            )
        figure.update_layout(
            title="Static vs continuous batching, per request",
            height=360,
            barmode="group",
            scattermode="group",  # each policy's dot over its own bar: equal steps no longer hide one
            margin=charts.margins(60),
            legend=dict(orientation="h", y=-0.2),
        )
        figure.update_yaxes(title_text="step", row=1, col=1)
        figure.update_yaxes(title_text="tokens/s", row=1, col=2)
        charts.show(figure, key=state.widget("batching"))
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "policy": p,
                        "steps": r.steps,
                        "slot use": f"{r.utilisation:.0%}",
                        "tokens": r.useful_tokens,
                        "tokens/s": round(r.tokens_per_s),
                    }
                    for p, r in results.items()
                ]
            ),
            hide_index=True,
        )
        st.caption(
            f"Requests want {', '.join(map(str, wanted))} new tokens; a request's tokens/s is its tokens over "
            "the time from its arrival (all arrive together) to its last token. A static batch holds its slots until "
            "its "
            "longest request ends (finished slots compute padding); continuous batching hands a free slot to "
            "the next request at once."
        )


st.header("1. LoRA: train a few numbers, not the whole model")
st.caption(
    "LoRA freezes W and learns ΔW = (α / r) · B A with A: r × d_in and B: d_out × r. B starts at zero, so "
    "training starts from the pretrained model exactly."
)
lora_section(view, text, corpus_label)
st.header("2. What training changed: ΔW of a picked run")
delta_section(view)
st.header("3. Quantization: 8 and 4 bits per weight")
quantize_section(view, text, corpus_label)
st.subheader("Quantization-aware training")
qat_section(view, text)
st.header("4. Fine-tuning for a task: names → male or female list")
task_section(view)
st.header("5. Training in less memory")
memory_section(view, text, corpus_label)
st.header("6. Serving: the KV cache, paged attention, batching")
serving_section(view)
