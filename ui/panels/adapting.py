"""The Adapting page's figures and tables (stages/adapting.py wires them): LoRA's memory and ΔW, quantization's
numbers, error and histograms, the fine-tuned classifier, prompting vs fine-tuning, the classification loss by hand,
the memory of a training step and ZeRO's shards. The numbers come from llmviz.lessons.adapting and llmviz.adapt."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.adapt import finetune, lora, memory, quantize
from llmviz.errors import LlmvizError
from llmviz.lessons import adapting
from llmviz.lessons.defaults import DEFAULT_PROMPT
from ui import charts, model_sources, share, state
from ui.errors import friendly_errors
from ui.text import literal_markdown


def accuracy(status) -> str | None:
    """A classifier run's measure: its last held-out accuracy, and where it started."""
    measured = status.measured("val_accuracy")  # live, or as the lab's record keeps it
    before = next((value for _, value in status.measured("val_accuracy_before")), None)
    if not measured:
        return None
    return f"held-out accuracy {measured[-1][1]:.1%}" + (
        f" (untrained head: {before:.1%})" if before is not None else ""
    )


def lora_config(model) -> lora.LoRAConfig | None:
    """LoRA's controls; None (after saying why) when the chosen matrices cannot be adapted in this model."""
    c1, c2, c3 = st.columns([1, 1, 2])
    rank = c1.select_slider("Rank r", [1, 2, 4, 8, 16, 32], value=4, persist_state="page", **share.bind("lora_rank"))
    alpha = c2.select_slider(
        "α (the update is scaled by α / r)",
        [1, 2, 4, 8, 16, 32, 64],
        value=8,
        **share.bind("lora_alpha"),
        persist_state="page",
    )
    targets = c3.multiselect(
        "Matrices that get an adapter",
        list(lora.TARGETS),
        default=["q", "v"],
        format_func=lambda t: lora.target_title(t, model.config),
        **share.bind("lora_targets"),
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


def lora_memory(model, config: lora.LoRAConfig) -> bool:
    """The key picture: what full fine-tuning and LoRA keep for training, with the count written out."""
    try:
        counts = lora.memory_comparison(model, config)
    except LlmvizError as error:  # a mixture of experts' MLP has no single matrix to adapt
        st.warning(literal_markdown(str(error)))
        return False
    full, low = counts["full fine-tuning"], counts["LoRA"]
    figure = go.Figure()
    parts = {
        part: [getattr(c, attribute) / 2**20 for c in counts.values()]
        for part, attribute in (
            ("weights", "weight_bytes"),
            ("gradients", "gradient_bytes"),
            ("AdamW states", "optimizer_bytes"),
        )
    }
    for part, mib in parts.items():
        figure.add_trace(go.Bar(x=list(counts), y=mib, name=part))
    figure.update_layout(
        barmode="stack",
        height=320,
        yaxis_title="MiB",
        margin=charts.margins(30),
        title="Memory for training (besides activations)",
    )
    left, right = st.columns([3, 2])
    charts.show_in(left, figure, key=state.widget("lora_memory"), words=adapting.memory_words(list(counts), parts))
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


def quant_metrics(report: adapting.QuantReport, corpus_label: str) -> None:
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
        f"On {c.tokens:,} held-out tokens of {literal_markdown(corpus_label)}: consecutive windows from the start of "
        f"the last tenth of its last {adapting.MAX_TEXT:,} characters (float32: "
        f"{memory.human_bytes(report.float_bytes)}, loss {c.loss_before:.4f}). Another sample than a checkpoint's "
        "final validation loss on the Model page (random batches of its whole validation split), so another number. "
        "KL divergence: how far the next-token distribution moved, averaged over positions."
    )


def quant_details(model, report: adapting.QuantReport, spec: quantize.QuantSpec) -> None:
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
    charts.show(
        error_bars,
        key=state.widget("quant_errors"),
        words=adapting.quant_error_words(spec.title, list(table["matrix"]), list(table["relative error"])),
    )
    with st.expander("Every matrix"):
        st.dataframe(table, hide_index=True)
    st.subheader("The weights before and after")
    name = st.selectbox(
        "Histogram of",
        list(table["matrix"]),
        index=min(2, len(table) - 1),
        **share.bind("quant_layer"),
        persist_state="page",
    )
    counted = adapting.weight_histograms(model, name, spec)  # every weight, in 200 shared bins
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
    charts.show(
        histogram,
        key=state.widget("quant_histogram"),
        words=adapting.weight_histogram_words(
            name, spec.title, counted.centers.tolist(), counted.before.tolist(), counted.after.tolist()
        ),
    )
    st.subheader("The same prompt, both models")
    left, right = st.columns(2)
    left.markdown("**float32 (greedy)**")
    left.code(report.text_before, language=None, wrap_lines=True)
    right.markdown(f"**{spec.title} (greedy)**")
    right.code(report.text_after, language=None, wrap_lines=True)


@st.cache_resource(show_spinner="Reading the fine-tuned classifier…", max_entries=4)
def _classifier(folder: str, stamp: float):
    return finetune.load_classifier(folder)  # (classifier, tokenizer, task): shared, never changed


@st.cache_data(show_spinner=False, max_entries=8)
def _classifier_accuracy(folder: str, stamp: float) -> float:
    classifier, tokenizer, _ = _classifier(folder, stamp)
    return finetune.accuracy(classifier, tokenizer, finetune.name_examples()[1])


def checkpoint_classifier(view) -> None:
    """A checkpoint written by ``python -m llmviz finetune``, picked in the sidebar: its trained head, read back."""
    folder = model_sources.checkpoint_folder(view)
    if folder is None or not isinstance(view.meta.get("task"), dict):
        return
    st.markdown(f"**The classifier in {literal_markdown(folder.name)}** (fine-tuned with `python -m llmviz finetune`)")
    with friendly_errors("reading the fine-tuned classifier"):
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


def _accuracy_rows(results: list[finetune.PromptingResult], task_runs: dict) -> list[tuple[str, float, str]]:
    """``(bar, accuracy, kind)``: each prompting result, then each fine-tuning run's newest held-out accuracy (a run
    that has measured none yet is left out)."""
    rows = [(f"prompt, {r.shots} example{'s' if r.shots != 1 else ''}", r.accuracy, "prompting") for r in results]
    for label, job in task_runs.items():
        measured = [m.val_accuracy for m in job.status().metrics if getattr(m, "val_accuracy", None) is not None]
        if measured:
            rows.append((f"{label} (step {job.status().step})", measured[-1], "fine-tuned"))
    return rows


def prompting_vs_fine_tuning(results: list[finetune.PromptingResult], task_runs: dict) -> None:
    """Held-out accuracy of prompting and of this session's fine-tuning runs, side by side (the same names)."""
    rows = _accuracy_rows(results, task_runs)
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
    charts.show(
        figure,
        key=state.widget("task_versus"),
        words=adapting.accuracy_words([row[0] for row in rows], [row[1] for row in rows]),
    )
    if len(rows) == len(results):
        st.caption("Train the three fine-tuning runs above: their held-out accuracy joins this chart.")


@st.cache_data(show_spinner=False, max_entries=16)
def _bce(key: str, _model, _tokenizer) -> adapting.BCEExample:
    return adapting.bce_example(_model, _tokenizer)


def bce_worked_example(view) -> None:
    with friendly_errors("the classification loss"):
        example = _bce(view.content_key, view.model, view.tokenizer)
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


def tokens_per_s(status) -> str | None:
    """A memory run's speed, live or drawn from the record (its metrics keep tokens/s: ``MemoryStepMetrics``)."""
    rates = [rate for _, rate in status.measured("tokens_per_s") if rate > 0]
    return f"{pd.Series(rates).median():,.0f} tokens/s (median of its steps)" if rates else None


def zero(model) -> None:
    st.subheader("Sharding across processes: ZeRO and FSDP")
    processes = st.slider("Processes (GPUs)", 1, 64, 8, **share.bind("zero_processes"), persist_state="page")
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
    parts = {
        "AdamW states" if part == "optimizer" else part: [getattr(s, part) / 2**20 for s in stages]
        for part in ("parameters", "gradients", "optimizer")
    }
    charts.show(figure, key=state.widget("zero_bars"), words=adapting.memory_words([s.stage for s in stages], parts))
    charts.latex(
        rf"\text{{unsharded}}: (4 + 4 + 2 \cdot 4) \times {charts.tex_int(model.num_parameters())} = "
        rf"{charts.tex_int(stages[0].total)} \text{{ bytes}}",  # two lines: one was wider than the page
        rf"\text{{ZeRO-3}}: {charts.tex_int(stages[0].total)} / {processes} = {charts.tex_int(stages[3].total)} "
        rf"\text{{ bytes}}",
    )


def spectrum_bars(spectrum, title: str, height: int) -> go.Figure:
    """A matrix's singular values as bars (llmviz.lessons.adapting.spectrum), largest first."""
    bars = go.Figure(go.Bar(x=list(range(1, len(spectrum.values) + 1)), y=spectrum.values))
    bars.update_layout(title=title, height=height, margin=charts.margins(40))
    return bars


def lora_delta(demo, config: lora.LoRAConfig) -> None:
    """ΔW of the 20-step LoRA demo: a matrix picked, its heatmap, its singular values and its rank bound."""
    st.caption(
        f"Loss over the 20 steps: {demo.losses[0]:.3f} → {demo.losses[-1]:.3f}. Merged weights W + ΔW vs "
        f"the adapters: largest logit difference {demo.max_logit_difference:.2e} (the same model)."
    )
    name = st.selectbox("Matrix", list(demo.deltas), **share.bind("lora_matrix"), persist_state="page")
    delta = demo.deltas[name]
    spectrum = adapting.spectrum(delta)
    left, right = st.columns([3, 2])
    shown = delta[:64, :64]
    charts.show_in(
        left,
        charts.heatmap(
            shown.tolist(),
            title=f"ΔW of {name} (first {shown.shape[0]} × {shown.shape[1]})",
            colorscale="RdBu",
            zmid=0.0,
            text_format=None,
            height=380,
            y_title="output row",
            x_title="input column",
        ),
        key=state.widget("lora_heatmap"),
        words=adapting.delta_words(shown.tolist(), tuple(delta.shape)),
    )
    bars = spectrum_bars(spectrum, f"Singular values: numerical rank {spectrum.rank}", 380)
    bars.update_layout(xaxis_title="index", yaxis_title="σ")
    charts.show_in(
        right, bars, key=state.widget("lora_spectrum"), words=adapting.spectrum_words(spectrum.values, spectrum.rank)
    )
    bound = adapting.delta_rank_bound(name, config)
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


def memory_table(measures) -> None:
    """One training step measured each way (checkpointing, autocast): a table and the activations' bars."""
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
    charts.show(
        bars,
        key=state.widget("memory_bars"),
        words=adapting.saved_words(list(bars.data[0].x), (frame["bytes"] / 2**20).tolist()),
    )
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


def prompting_table(results) -> None:
    """Held-out accuracy of zero- and few-shot prompting, and one prompt as the model reads it."""
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


def quant_controls() -> tuple[quantize.QuantSpec, str]:
    """Quantization's settings (bits, scale, zero point) and its prompt, with the rounding written out."""
    c1, c2, c3 = st.columns(3)
    bits = c1.radio("Bits", [8, 4], horizontal=True, persist_state="page", **share.bind("quant_bits"))
    per_channel = (
        c2.radio(
            "Scale",
            ["per channel", "per tensor"],
            horizontal=True,
            **share.bind("quant_scale"),
            persist_state="page",
        )
        == "per channel"
    )
    symmetric = c3.radio(
        "Zero point",
        ["symmetric (z = 0)", "zero-point (asymmetric)"],
        horizontal=True,
        **share.bind("quant_zero"),
        persist_state="page",
    ).startswith("symmetric")
    spec = quantize.QuantSpec(int(bits), per_channel, symmetric)
    prompt = st.text_input(
        "Prompt for the side-by-side text", DEFAULT_PROMPT, **share.bind("quant_prompt"), persist_state="page"
    )
    charts.latex(
        r"q = \operatorname{clamp}\!\left(\operatorname{round}(w / s) + z,\; "
        rf"{charts.tex_number(spec.qmin, 'd')},\; {spec.qmax}\right), \qquad \hat w = (q - z)\, s"
    )
    st.caption(f"{spec.title}: {spec.levels} levels, from {spec.qmin} to {spec.qmax}.")
    return spec, prompt


def ptq_vs_qat_table(rows: dict[str, float], spec: quantize.QuantSpec) -> None:
    """The held-out loss of the float model, post-training quantization, QAT and the same training in float."""
    st.dataframe(pd.DataFrame([{"model": k, "held-out loss": v} for k, v in rows.items()]), hide_index=True)
    st.caption(
        f"All rows quantized to {spec.title} except the first. QAT starts from the same weights as "
        "the float run; compare the last two rows: the same training, with and without the rounding in "
        "the forward pass."
    )
