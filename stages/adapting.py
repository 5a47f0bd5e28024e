"""The Adapting page: LoRA, quantization, fine-tuning for a task, training in less memory (serving has its own page).

It opens on LoRA's memory picture (what full fine-tuning and LoRA keep for training); every other lesson is a tab.
Work that takes seconds (the LoRA demo, the quantization report, the memory measurement, prompting) runs in a
worker (:func:`ui.panels.runs.computed`), keyed by what it computes: the model, a hash of the text, the settings.
"""

import functools
import hashlib

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from llmviz.adapt import finetune, lora, memory
from llmviz.adapt import quantize as qz
from llmviz.errors import LlmvizError
from llmviz.jobs.manager import Planned
from llmviz.lessons import adapting as adapt
from llmviz.lessons.defaults import DEFAULT_PROMPT
from ui import charts, picker, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.panels import runs as training
from ui.text import literal_markdown

settings = ui.settings()
ui.page_header(
    "Adapting a model: train a little, store it small",
    "A pretrained model is a starting point. LoRA trains a few numbers beside frozen weights; quantization "
    "stores every weight in 8 or 4 bits; fine-tuning teaches it a task. Here on the model picked in the sidebar.",
)

view = picker.current()
if not picker.gpt_or_note(view, "this page adapts a GPT's matrices"):
    view = picker.shipped_default()
model, tokenizer = view.model, view.tokenizer
st.caption(f"Shown here: {literal_markdown(view.label)} · {model.num_parameters():,} parameters.")
corpus = ui.corpus_text()
if corpus is None:
    st.stop()
corpus_label, text = corpus


def text_key(words: str) -> str:
    """What a cached result depends on, for a text: a hash of its content (two files with the same name and another
    text never share a result; the safety engineer's ``llmviz.data.corpus.text_key`` will replace this)."""
    return hashlib.sha256(words.encode("utf-8", "surrogatepass")).hexdigest()[:24]


TEXT_KEY = text_key(text)
picker.on_this_page([], reset=True)  # the open tab adds the runs it draws live


# ------------------------------------------------------------------ lab runs: ids kept by the section that started them
def _submit(section: str, steps: int, *runners: tuple[str, object, object], **asked) -> None:
    """Start ``(label, build, footprint)`` runs to compare as one race (one worker, a step of each in turn): each is
    built in the worker by ``build()``, never here (a picked GPT-2 travels with the runs), after the server has
    checked that their ``footprint`` fits. The comparison counts once in the student's share of the server; a
    refusal is kept beside the section's button (``ui.panels.runs.refusal``). A label this session already has gets
    a number (" #2"), so a second set of runs is drawn beside the first, not in its place. The section keeps the ids
    it started (with what was ``asked``): it finds its runs by id, never by a label."""
    planned = [(training.unique_label(label), Planned(build, needs, steps)) for label, build, needs in runners]
    started = training.start(section, lambda: picker.manager().submit_race(picker.session_id(), planned))
    if started:
        kept = state.LAB_RUNS.get(section, default=[])
        state.LAB_RUNS.set([*kept, {"ids": {job.label: job.id for job in started}, **asked}], section)
        st.rerun(scope="app")


def _started(section: str) -> list[dict]:
    """Each start of the section's runs that still exists: ``{"jobs": {label: job}, **asked}``, oldest first."""
    found = []
    for entry in state.LAB_RUNS.get(section, default=[]):
        jobs = {label: picker.manager().get(picker.session_id(), job_id) for label, job_id in entry["ids"].items()}
        jobs = {label: job for label, job in jobs.items() if job is not None}
        if jobs:
            found.append({**entry, "jobs": jobs})
    return found


def _runs(section: str) -> dict:
    """Every run the section started, ``label → job``, oldest first."""
    return {label: job for entry in _started(section) for label, job in entry["jobs"].items()}


def _live(section: str, draw) -> None:
    """Draw a section's lab runs with ``draw(runs)``, redrawn while any of them trains (``ui.panels.runs.live``: every
    2 s for one watching tab, less often when many tabs watch) and still once they have all ended."""
    picker.on_this_page([job.id for job in _runs(section).values()])
    training.live(
        lambda: draw(_runs(section)),
        active=lambda: any(job.changing for job in _runs(section).values()),
        name=f"adapting.{section}.runs",
    )


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


def _accuracy(status) -> str | None:
    """A classifier run's measure: its last held-out accuracy, and where it started."""
    measured = [m.val_accuracy for m in status.metrics if getattr(m, "val_accuracy", None) is not None]
    before = next((m.val_accuracy_before for m in status.metrics if getattr(m, "val_accuracy_before", None)), None)
    if not measured:
        return None
    return f"held-out accuracy {measured[-1]:.1%}" + (f" (untrained head: {before:.1%})" if before is not None else "")


# ------------------------------------------------------------------ the questions
@st.cache_data(show_spinner="Computing the answers…", max_entries=16)
def _questions(key: str, _model, _tokenizer) -> list:
    return [q for q in adapt.adapt_questions(_model, _tokenizer, DEFAULT_PROMPT) if q.kind != "kv-bytes"]


# ------------------------------------------------------------------ 1. LoRA (the key picture)
def _lora_config() -> lora.LoRAConfig | None:
    """LoRA's controls; None (after saying why) when the chosen matrices cannot be adapted in this model."""
    c1, c2, c3 = st.columns([1, 1, 2])
    rank = c1.select_slider("Rank r", [1, 2, 4, 8, 16, 32], value=4, persist_state="page", **share.bind("lora_rank"))
    alpha = c2.select_slider(
        "α (the update is scaled by α / r)",
        [1, 2, 4, 8, 16, 32, 64],
        value=8,
        key=state.widget("lora_alpha"),
        persist_state="page",
    )
    targets = c3.multiselect(
        "Matrices that get an adapter",
        list(lora.TARGETS),
        default=["q", "v"],
        format_func=lambda t: lora.target_title(t, model.config),
        key=state.widget("lora_targets"),
        persist_state="page",
    )
    if not targets:
        st.warning("Choose at least one matrix to adapt.")
        return None
    if "mlp" in targets and not model.config.mlp:
        st.warning("This model has no MLP (attention only): leave the MLP out.")
        return None
    if "mlp" in targets and model.config.mlp_kind == "swiglu":
        st.caption("This model's MLP is SwiGLU: its up and down matrices get adapters, its gate matrix does not.")
    return lora.LoRAConfig(rank, float(alpha), tuple(targets))


def _lora_memory(config: lora.LoRAConfig) -> bool:
    """The key picture: what full fine-tuning and LoRA keep for training, with the count written out."""
    try:
        counts = lora.memory_comparison(model, config)
    except LlmvizError as error:  # a mixture of experts' MLP has no single matrix to adapt
        st.warning(literal_markdown(str(error)))
        return False
    full, low = counts["full fine-tuning"], counts["LoRA"]
    figure = go.Figure()
    for part, attribute in (
        ("weights", "weight_bytes"),
        ("gradients", "gradient_bytes"),
        ("AdamW states", "optimizer_bytes"),
    ):
        figure.add_trace(go.Bar(x=list(counts), y=[getattr(c, attribute) / 2**20 for c in counts.values()], name=part))
    figure.update_layout(
        barmode="stack",
        height=320,
        yaxis_title="MiB",
        margin=charts.margins(30),
        title="Memory for training (besides activations)",
    )
    left, right = st.columns([3, 2])
    charts.show_in(left, figure, key=state.widget("lora_memory"))
    right.caption(
        "LoRA freezes W and learns ΔW = (α / r) · B A with A: r × d_in and B: d_out × r. B starts at zero, so "
        "training starts from the pretrained model exactly."
    )
    with right:
        st.metric(
            "parameters trained with LoRA",
            f"{low.trained_parameters:,}",
            f"{low.trained_parameters / full.trained_parameters:.2%} of the model",
            delta_color="off",
            delta_arrow="off",
        )
        st.metric(
            "AdamW states: full → LoRA",
            f"{memory.human_bytes(full.optimizer_bytes)} → {memory.human_bytes(low.optimizer_bytes)}",
        )
    shapes = lora.adapted_matrices(model, config.targets)  # the model's own shapes (GQA, d_mlp)
    sums = " + ".join(f"({m.d_in} + {m.d_out})" for m in shapes)
    charts.latex(
        rf"{model.config.n_layers} \text{{ layers}} \times r \sum_\text{{matrices}} (d_\text{{in}} + "
        rf"d_\text{{out}}) = {model.config.n_layers} \times {config.rank} \times \left[{sums}\right] = "
        rf"{charts.tex_int(low.trained_parameters)}",
        rf"\text{{AdamW}}: 2 \text{{ states}} \times 4 \text{{ bytes}} \times "
        rf"{charts.tex_int(low.trained_parameters)} = "
        rf"{charts.tex_int(low.optimizer_bytes)} \text{{ bytes}}",
    )
    return True


def _lora_delta(config: lora.LoRAConfig) -> None:
    """ΔW = (α/r)·BA after 20 steps of LoRA on the text (computed in a worker): a heatmap, its singular values."""
    st.subheader("ΔW = (α / r) · B A after 20 steps on your text")
    if model.num_parameters() > adapt.QUICK_PARAMETERS:
        st.info("This model is too large to train on the spot: start a LoRA lab run below instead.")
        return
    demo = training.computed(
        "lora_demo",
        ("lora_demo", view.content_key, TEXT_KEY, config.rank, config.alpha, config.targets),
        functools.partial(
            adapt.lora_demo_steps, model=model, tokenizer=tokenizer, text=text, config=config, steps=20, seed=0
        ),
        label="Training the adapters for 20 steps",
        footprint=adapt.task_footprint("lora_demo", "the LoRA demo", model),
        total=20,
        start="Train the adapters for 20 steps",
    )
    if demo is None:
        return
    st.caption(
        f"Loss over the 20 steps: {demo.losses[0]:.3f} → {demo.losses[-1]:.3f}. Merged weights W + ΔW vs "
        f"the adapters: largest logit difference {demo.max_logit_difference:.2e} (the same model)."
    )
    name = st.selectbox("Matrix", list(demo.deltas), key=state.widget("lora_matrix"), persist_state="page")
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
        title=f"Singular values: numerical rank {spectrum.rank}",
        height=380,
        xaxis_title="index",
        yaxis_title="σ",
        margin=charts.margins(40),
    )
    charts.show_in(right, bars, key=state.widget("lora_spectrum"))
    bound = adapt.delta_rank_bound(name, config)
    fused = bound // config.rank
    st.caption(
        f"ΔW of this matrix has rank at most {bound}"
        + (
            f": r = {config.rank} for each of the {fused} adapters writing into it (W_Q, W_K and W_V share one "
            f"fused matrix, and each adapted one adds its own r rows of B A)"
            if fused > 1
            else " = r: one adapter B A of rank r writes into it"
        )
        + ". The update lives in a small subspace, which is why so few numbers describe it."
    )


def _lora_runs(config: lora.LoRAConfig) -> None:
    st.subheader("LoRA vs full fine-tuning on your text (lab runs)")
    steps = st.slider("Steps", 20, 400, 100, step=20, key=state.widget("lora_steps"), persist_state="page")
    if st.button("Start both runs", key=state.widget("lora_start")):
        titles = ", ".join(lora.TARGET_TITLES[t].removeprefix("attention ") for t in config.targets)
        with ui.friendly_errors("starting the runs"):
            lab = text[: adapt.MAX_TEXT]  # what the runs read
            trained = lora.memory_comparison(model, config)["LoRA"].trained_parameters
            _submit(
                "lora",
                steps,
                (
                    f"LoRA r{config.rank} ({titles})",
                    functools.partial(adapt.lora_run, model, tokenizer, lab, config, steps, settings.seed),
                    adapt.lab_footprint(model, len(lab), steps, "LoRA", trainable=trained, copies=1),
                ),
                (
                    "full fine-tuning",
                    functools.partial(adapt.full_run, model, tokenizer, lab, steps, settings.seed),
                    adapt.lab_footprint(model, len(lab), steps, "Full fine-tuning"),
                ),
            )
    training.refusal("lora")

    def draw_runs(runs: dict) -> None:
        training.lab_panel(runs, "lora", chart_key=state.widget("lora_curves"))
        if runs:
            st.caption(
                "Each run is in the sidebar's picker. Pick a LoRA run at its last step: ΔW between its step 0 and "
                "that step has rank at most r per adapter (the tab What training changed shows it); a full "
                "fine-tuning run's ΔW has full rank."
            )

    _live("lora", draw_runs)


@sections.section("adapting.lora")
def lora_section() -> None:
    config = _lora_config()
    if config is None or not _lora_memory(config):
        return
    _lora_delta(config)
    _lora_runs(config)


def lora_part() -> None:
    st.subheader("LoRA: train a few numbers, not the whole model")
    lora_section()


# ------------------------------------------------------------------ ΔW of a picked run
@sections.section("adapting.delta")
def delta_section() -> None:
    start = picker.baseline(view)
    if start is None or view.step in (None, 0):
        st.info(
            "Pick one of your runs at a later step in the sidebar to see what training changed: "
            "ΔW = W(step N) − W(step 0) for each matrix, with its singular values."
        )
        return
    deltas = adapt.delta_between(start.model, view.model)
    if not deltas:
        st.caption("No matrix changed between step 0 and this step.")
        return
    name = st.selectbox("Matrix", list(deltas), key=state.widget("delta_matrix"), persist_state="page")
    spectrum = adapt.spectrum(deltas[name])
    bars = go.Figure(go.Bar(x=list(range(1, len(spectrum.values) + 1)), y=spectrum.values))
    bars.update_layout(title=spectrum.title(name), height=320, margin=charts.margins(40))
    charts.show(bars, key=state.widget("delta_spectrum"))


def delta_part() -> None:
    st.subheader("What training changed: ΔW of a picked run")
    delta_section()


# ------------------------------------------------------------------ 2. quantization
def _quant_metrics(report: adapt.QuantReport) -> None:
    """Size, held-out loss, perplexity, KL and top-token agreement: each number with a short note under it."""
    c = report.comparison
    m1, m2, m3, m4, m5 = st.columns(5)
    m1.metric(
        "size",
        memory.human_bytes(report.quantized_bytes),
        f"{report.quantized_bytes / report.float_bytes:.1%} of float32",
        delta_color="off",
        delta_arrow="off",
    )
    m2.metric("held-out loss", f"{c.loss_after:.4f}", f"{c.loss_after - c.loss_before:+.4f}", delta_color="inverse")
    m3.metric(
        "perplexity",
        f"{c.perplexity_after:.2f}",
        f"float32 {c.perplexity_before:.2f}",
        delta_color="off",
        delta_arrow="off",
    )
    m4.metric("KL(float ‖ quantized)", f"{c.kl:.4f} nats")
    m5.metric(
        "same top token",
        f"{c.top1_agreement:.1%}",
        help="Share of held-out positions whose most likely next token is the same with both models.",
    )
    st.caption(
        f"On {c.tokens:,} held-out tokens of {literal_markdown(corpus_label)} (float32: "
        f"{memory.human_bytes(report.float_bytes)}, loss {c.loss_before:.4f}). KL divergence: how far the next-token "
        "distribution moved, averaged over positions."
    )


def _quant_details(report: adapt.QuantReport, spec: qz.QuantSpec) -> None:
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
    error_bars.update_layout(title="Rounding error per matrix: ‖ŵ − w‖ / ‖w‖", height=320, margin=charts.margins(40))
    charts.show(error_bars, key=state.widget("quant_errors"))
    with st.expander("Every matrix"):
        st.dataframe(table, hide_index=True)
    st.subheader("The weights before and after")
    name = st.selectbox(
        "Histogram of",
        list(table["matrix"]),
        index=min(2, len(table) - 1),
        key=state.widget("quant_layer"),
        persist_state="page",
    )
    counted = adapt.weight_histograms(model, name, spec)  # every weight, in 200 shared bins
    width = float(counted.edges[1] - counted.edges[0])
    histogram = go.Figure(
        data=[
            go.Bar(
                x=counted.centers.numpy(), y=counts.numpy(), width=width, name=label, opacity=0.55, marker_color=colour
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


@sections.section("adapting.quantize")
def quantize_section() -> None:
    c1, c2, c3 = st.columns(3)
    bits = c1.radio("Bits", [8, 4], horizontal=True, persist_state="page", **share.bind("quant_bits"))
    per_channel = (
        c2.radio(
            "Scale",
            ["per channel", "per tensor"],
            horizontal=True,
            key=state.widget("quant_scale"),
            persist_state="page",
        )
        == "per channel"
    )
    symmetric = c3.radio(
        "Zero point",
        ["symmetric (z = 0)", "zero-point (asymmetric)"],
        horizontal=True,
        key=state.widget("quant_zero"),
        persist_state="page",
    ).startswith("symmetric")
    spec = qz.QuantSpec(int(bits), per_channel, symmetric)
    prompt = st.text_input(
        "Prompt for the side-by-side text", DEFAULT_PROMPT, key=state.widget("quant_prompt"), persist_state="page"
    )
    charts.latex(
        r"q = \operatorname{clamp}\!\left(\operatorname{round}(w / s) + z,\; "
        rf"{charts.tex_number(spec.qmin, 'd')},\; {spec.qmax}\right), \qquad \hat w = (q - z)\, s"
    )
    st.caption(f"{spec.title}: {spec.levels} levels, from {spec.qmin} to {spec.qmax}.")
    report = training.computed(
        "quantize",
        ("quantize", view.content_key, TEXT_KEY, spec.bits, per_channel, symmetric, prompt),
        functools.partial(
            adapt.quant_report_steps, model=model, tokenizer=tokenizer, text=text, spec=spec, prompt=prompt
        ),
        label=f"Quantizing the model to {spec.title}",
        footprint=adapt.task_footprint("quantize", "the quantization report", model),
        total=adapt.QUANT_REPORT_STEPS,
    )
    if report is None:
        return
    with ui.friendly_errors("quantizing the model"):
        _quant_metrics(report)
        _quant_details(report, spec)


def quantize_part() -> None:
    st.subheader("Quantization: 8 and 4 bits per weight")
    quantize_section()


@sections.section("adapting.qat")
def qat_section() -> None:
    bits = st.radio("Bits while training", [4, 8], horizontal=True, key=state.widget("qat_bits"), persist_state="page")
    spec = qz.QuantSpec(int(bits), per_channel=False, symmetric=True)
    steps = st.slider("Steps", 20, 400, 100, step=20, key=state.widget("qat_steps"), persist_state="page")
    if st.button("Start quantization-aware training (and a float run to compare)", key=state.widget("qat_start")):
        with ui.friendly_errors("starting the runs"):
            lab = text[: adapt.MAX_TEXT]
            _submit(
                "qat",
                steps,
                (
                    f"QAT int{bits}",
                    functools.partial(adapt.qat_run, model, tokenizer, lab, spec, steps, settings.seed),
                    adapt.lab_footprint(model, len(lab), steps, "Quantization-aware training", copies=1),
                ),
                (
                    f"float run for QAT int{bits}",
                    functools.partial(adapt.full_run, model, tokenizer, lab, steps, settings.seed),
                    adapt.lab_footprint(model, len(lab), steps, "Fine-tuning"),
                ),
                bits=int(bits),
            )
    training.refusal("qat")
    started = [entry for entry in _started("qat") if entry.get("bits") == int(bits)]
    if not started:
        st.caption(
            "QAT fine-tunes with every linear layer's weights rounded to the grid in the forward pass (the "
            "gradient passes straight through the rounding), so the weights learn to sit where rounding "
            "hurts least."
        )
        return
    pair = started[-1]["jobs"]
    _live("qat", lambda runs: training.lab_panel(pair, "qat", chart_key=state.widget("qat_curves")))
    qat = next((job for label, job in pair.items() if label.startswith("QAT")), None)
    plain = next((job for label, job in pair.items() if not label.startswith("QAT")), None)
    if qat is None or not qat.status().done or (plain is not None and not plain.status().done):
        return
    with ui.friendly_errors("comparing QAT with post-training quantization"):
        trained = picker.load(f"run:{qat.id}@{qat.status().snapshot_steps[-1]}")
        start = picker.load(f"run:{qat.id}@0")
        floated = picker.load(f"run:{plain.id}@{plain.status().snapshot_steps[-1]}") if plain else None
        rows = training.computed(
            "ptq_vs_qat",
            ("ptq_vs_qat", qat.id, plain.id if plain else "", spec.bits, TEXT_KEY),
            functools.partial(
                adapt.ptq_vs_qat_steps,
                original=start.model,
                qat_trained=trained.model,
                float_trained=floated.model if floated else None,
                tokenizer=start.tokenizer,
                text=text,
                spec=spec,
            ),
            label="Measuring the held-out loss of each model",
            footprint=adapt.task_footprint("ptq_vs_qat", "PTQ against QAT", start.model),
            total=adapt.PTQ_VS_QAT_STEPS,
        )
        if rows is None:
            return
        st.dataframe(pd.DataFrame([{"model": k, "held-out loss": v} for k, v in rows.items()]), hide_index=True)
        st.caption(
            f"All rows quantized to {spec.title} except the first. QAT starts from the same weights as "
            "the float run; compare the last two rows: the same training, with and without the rounding in "
            "the forward pass."
        )


def qat_part() -> None:
    st.subheader("Quantization-aware training")
    qat_section()


# ------------------------------------------------------------------ 3. fine-tuning for a task
@st.cache_data(show_spinner=False, max_entries=16)
def _bce(key: str, _model, _tokenizer) -> adapt.BCEExample:
    return adapt.bce_example(_model, _tokenizer)


@st.cache_resource(show_spinner="Reading the fine-tuned classifier…", max_entries=4)
def _classifier(folder: str, stamp: float):
    return finetune.load_classifier(folder)  # (classifier, tokenizer, task): shared, never changed


@st.cache_data(show_spinner=False, max_entries=8)
def _classifier_accuracy(folder: str, stamp: float) -> float:
    classifier, tokenizer, _ = _classifier(folder, stamp)
    return finetune.accuracy(classifier, tokenizer, finetune.name_examples()[1])


def _checkpoint_classifier() -> None:
    """A checkpoint written by ``python -m llmviz finetune``, picked in the sidebar: its trained head, read back."""
    folder = picker.checkpoint_folder(view)
    if folder is None or not isinstance(view.meta.get("task"), dict):
        return
    st.markdown(f"**The classifier in {literal_markdown(folder.name)}** (fine-tuned with `python -m llmviz finetune`)")
    with ui.friendly_errors("reading the fine-tuned classifier"):
        head = folder / finetune.HEAD_FILE
        stamp = head.stat().st_mtime if head.is_file() else 0.0  # a missing head: load_classifier says so
        classifier, classifier_tokenizer, task = _classifier(str(folder), stamp)
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
            persist_state="page",
        )
        names = [name.strip() for name in typed.split(",") if name.strip()]
        if not names:
            st.warning("Type at least one first name.")
            return
        if len(names) > 20:
            st.caption(f"The first 20 of your {len(names)} names are classified.")
            names = names[:20]
        probabilities = finetune.female_probabilities(classifier, classifier_tokenizer, names)
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
    for label, job in _runs("task").items():
        measured = [m.val_accuracy for m in job.status().metrics if getattr(m, "val_accuracy", None) is not None]
        if measured:
            rows.append((f"{label} (step {job.status().step})", measured[-1], "fine-tuned"))
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


def _bce_worked_example() -> None:
    with ui.friendly_errors("the classification loss"):
        example = _bce(view.content_key, model, tokenizer)
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
        st.caption(example.caption())


def _prompting() -> None:
    st.subheader("No training at all: prompting with 0, 1 or 4 labelled examples")
    results = training.computed(
        "prompting",
        ("prompting", view.content_key),
        functools.partial(adapt.prompting_steps, model=model, tokenizer=tokenizer),
        label="Prompting the model for every held-out name",
        footprint=adapt.task_footprint("prompting", "zero- and few-shot prompting", model),
        total=len(adapt.PROMPTING_SHOTS),
        start="Measure zero- and few-shot accuracy",
    )
    if results is None:
        return
    with ui.friendly_errors("prompting the model"):
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


@sections.section("adapting.task")
def task_section() -> None:
    train, held = finetune.name_examples()
    st.markdown(
        f"**The task**: is a first name on the male or the female list of the `names` package? "
        f"{len(train)} names to train on, {len(held)} held out (one in five, by a fixed hash of the name)."
    )
    _bce_worked_example()
    steps_count = st.slider(
        "Steps per run", 20, 300, 100, step=20, key=state.widget("task_steps"), persist_state="page"
    )
    if st.button("Train head only / head + last block / everything (three lab runs)", key=state.widget("task_start")):
        with ui.friendly_errors("starting the runs"):
            total, width = model.num_parameters(), model.config.d_model
            trained = {"head": width + 1, "last block": total // model.config.n_layers + width + 1}
            _submit(
                "task",
                steps_count,
                *[
                    (
                        f"names: {finetune.MODE_TITLES[mode]}",
                        functools.partial(adapt.finetune_run, model, tokenizer, steps_count, settings.seed, mode),
                        adapt.lab_footprint(
                            model,
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
    training.refusal("task")
    _live(
        "task",
        lambda runs: training.lab_panel(
            runs,
            "task",
            chart_key=state.widget("task_loss"),
            accuracy_key=state.widget("task_accuracy"),
            measure=_accuracy,
            title="Training loss (BCE)",
        ),
    )
    _checkpoint_classifier()
    _prompting()


def task_part() -> None:
    st.subheader("Fine-tuning for a task: names → male or female list")
    task_section()


# ------------------------------------------------------------------ 4. memory
def _tokens_per_s(status) -> str | None:
    rates = [m.tokens_per_s for m in status.metrics if m.tokens_per_s > 0]
    return f"{pd.Series(rates).median():,.0f} tokens/s (median of its steps)" if rates else None


def _memory_table() -> None:
    ways = len(adapt.memory_precisions(model)) * 2  # with and without checkpointing
    measures = training.computed(
        "memory",
        ("memory", view.content_key, TEXT_KEY),
        functools.partial(adapt.memory_table_steps, model=model, tokenizer=tokenizer, text=text),
        label="Measuring one training step each way",
        footprint=adapt.task_footprint("memory", "the memory measurement", model),
        total=ways,
        start=f"Measure one training step {ways} ways",
    )
    if measures is None:
        return
    with ui.friendly_errors("measuring memory"):
        frame = pd.DataFrame(
            [
                {
                    "gradient checkpointing": "on" if m.checkpointing else "off",
                    "autocast": "bf16" if m.bf16 else "fp16" if m.fp16 else "off",
                    "saved for backward": memory.human_bytes(m.saved_bytes),
                    "bytes": m.saved_bytes,
                    "of which 16-bit weight copies": memory.human_bytes(m.cast_weight_bytes),
                    "loss": m.loss,
                    "step time": memory.rough_seconds(m.seconds),
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
            title="Activations saved for the backward pass", yaxis_title="MiB", height=300, margin=charts.margins(40)
        )
        charts.show(bars, key=state.widget("memory_bars"))
        st.caption(
            "Counted exactly: every tensor autograd saves passes through a hook, distinct storages are "
            "added up; the weights themselves are left out (their 16-bit copies are not: the column above). "
            "Checkpointing keeps each block's input and recomputes the rest "
            "in the backward pass (same loss, more time). Autocast multiplies in 16 bits: it saves "
            "16-bit activations (half the bytes), and also a 16-bit copy of each weight it multiplies by, "
            "for the backward pass. With checkpointing few activations are left to halve, so those copies "
            "can make autocast save more, not less. Step times are one wall-clock measurement each on a shared "
            "server, rounded: they vary from run to run."
        )


def _memory_runs() -> None:
    st.subheader("The switches on a real run (lab runs, same data and seed)")
    steps = st.slider("Steps", 20, 400, 60, step=20, key=state.widget("memory_steps"), persist_state="page")
    switches = adapt.memory_settings(model)  # fp16 too on CUDA
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
                        f"memory: {name}",
                        functools.partial(
                            adapt.memory_run,
                            model,
                            tokenizer,
                            lab,
                            steps,
                            settings.seed,
                            checkpointing,
                            bf16,
                            fp16=fp16,
                        ),
                        adapt.lab_footprint(
                            model,
                            len(lab),
                            steps,
                            f"Fine-tuning ({name})",
                            precision="bf16" if bf16 else "fp16" if fp16 else "float32",
                        ),
                    )
                    for name, checkpointing, bf16, fp16 in switches
                ],
            )
    training.refusal("memory")
    _live(
        "memory",
        lambda runs: training.lab_panel(
            runs,
            "memory",
            chart_key=state.widget("memory_curves"),
            measure=_tokens_per_s,
            title="Training loss: checkpointing changes nothing, bf16 a little",
        ),
    )


def _zero() -> None:
    st.subheader("Sharding across processes: ZeRO and FSDP")
    processes = st.slider("Processes (GPUs)", 1, 64, 8, key=state.widget("zero_processes"), persist_state="page")
    stages = memory.sharding(model.num_parameters(), processes)
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
        title=f"{model.num_parameters():,} parameters over {processes} processes",
    )
    charts.show(figure, key=state.widget("zero_bars"))
    charts.latex(
        rf"\text{{unsharded}}: (4 + 4 + 2 \cdot 4) \times {charts.tex_int(model.num_parameters())} = "
        rf"{charts.tex_int(stages[0].total)} \text{{ bytes}}",  # two lines: one was wider than the page
        rf"\text{{ZeRO-3}}: {charts.tex_int(stages[0].total)} / {processes} = {charts.tex_int(stages[3].total)} "
        rf"\text{{ bytes}}",
    )


@sections.section("adapting.memory")
def memory_section() -> None:
    _memory_table()
    _memory_runs()
    _zero()


def memory_part() -> None:
    st.subheader("Training in less memory")
    memory_section()


# ------------------------------------------------------------------ the page
PARTS = {
    "LoRA": lora_part,
    "What training changed": delta_part,
    "Quantization": quantize_part,
    "Quantization-aware training": qat_part,
    "Fine-tuning for a task": task_part,
    "Training in less memory": memory_part,
}
with ui.friendly_errors("the questions"):
    quiz_ui.section("adapt", lambda: _questions(view.content_key, model, tokenizer))
sections.parts(PARTS, share.bind("adapting_part"))
