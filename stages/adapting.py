"""The Adapting page: LoRA, quantization, fine-tuning for a task, training in less memory (serving has its own page).

It opens on LoRA's memory picture (what full fine-tuning and LoRA keep for training); every other lesson is a tab.
Work that takes seconds (the LoRA demo, the quantization report, the memory measurement, prompting) runs in a
worker (:func:`ui.panels.task_jobs.computed`), keyed by what it computes: the model, a hash of the text, the settings.
"""

import functools

import streamlit as st

from llmviz.adapt import finetune, lora, quantize
from llmviz.data.corpus import text_key
from llmviz.lessons import adapting
from llmviz.lessons.defaults import DEFAULT_PROMPT
from ui import charts, picker, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import quiz, runs, section_runs, task_jobs
from ui.panels.adapting import (
    accuracy,
    bce_worked_example,
    checkpoint_classifier,
    lora_config,
    lora_delta,
    lora_memory,
    memory_table,
    prompting_table,
    prompting_vs_fine_tuning,
    ptq_vs_qat_table,
    quant_controls,
    quant_details,
    quant_metrics,
    spectrum_bars,
    tokens_per_s,
    zero,
)
from ui.text import literal_markdown
from ui.widgets import page_header

settings = shared_sidebar.settings()
page_header(
    "Adapting a model: train a little, store it small",
    "LoRA trains a few numbers; quantization stores weights in fewer bits.",
)

view = picker.current()
if not picker.gpt_or_note(view, "this page adapts a GPT's matrices"):
    view = picker.shipped_default()
model, tokenizer = view.model, view.tokenizer
st.caption(f"{literal_markdown(view.label)} · {model.num_parameters():,} parameters.")
corpus = shared_sidebar.corpus_text()
if corpus is None:
    st.stop()
corpus_label, text = corpus


TEXT_KEY = text_key(text)
picker.on_this_page([], reset=True)  # the open tab adds the runs it draws live


# ------------------------------------------------------------------ the questions
@st.cache_data(show_spinner="Computing the answers…", max_entries=16)
def _questions(key: str, _model, _tokenizer) -> list:
    return [q for q in adapting.adapt_questions(_model, _tokenizer, DEFAULT_PROMPT) if q.kind != "kv-bytes"]


# ------------------------------------------------------------------ 1. LoRA (the key picture)


def _lora_delta(config: lora.LoRAConfig) -> None:
    """ΔW = (α/r)·BA after 20 steps of LoRA on the text (computed in a worker): a heatmap, its singular values."""
    st.subheader("ΔW = (α / r) · B A after 20 steps on your text")
    if model.num_parameters() > adapting.QUICK_PARAMETERS:
        st.info("This model is too large to train on the spot: start a LoRA lab run below instead.")
        return
    demo = task_jobs.computed(
        "lora_demo",
        ("lora_demo", view.content_key, TEXT_KEY, config.rank, config.alpha, config.targets),
        functools.partial(
            adapting.lora_demo_steps, model=model, tokenizer=tokenizer, text=text, config=config, steps=20, seed=0
        ),
        label="Training the adapters for 20 steps",
        footprint=adapting.task_footprint("lora_demo", "the LoRA demo", model),
        total=20,
        start="Train the adapters for 20 steps",
    )
    if demo is None:
        return
    lora_delta(demo, config)


def _lora_runs(config: lora.LoRAConfig) -> None:
    st.subheader("LoRA vs full fine-tuning on your text (lab runs)")
    steps = st.slider("Steps", 20, 400, 100, step=20, **share.bind("lora_steps"), persist_state="page")
    if st.button("Start both runs", key=state.widget("lora_start")):
        titles = ", ".join(lora.TARGET_TITLES[t].removeprefix("attention ") for t in config.targets)
        with friendly_errors("starting the runs"):
            lab = text[: adapting.MAX_TEXT]  # what the runs read
            trained = lora.memory_comparison(model, config)["LoRA"].trained_parameters
            section_runs.submit(
                "lora",
                steps,
                (
                    f"LoRA r{config.rank} ({titles})",
                    functools.partial(adapting.lora_run, model, tokenizer, lab, config, steps, settings.seed),
                    adapting.lab_footprint(model, len(lab), steps, "LoRA", trainable=trained, copies=1),
                ),
                (
                    "full fine-tuning",
                    functools.partial(adapting.full_run, model, tokenizer, lab, steps, settings.seed),
                    adapting.lab_footprint(model, len(lab), steps, "Full fine-tuning"),
                ),
            )
    runs.refusal("lora")

    def draw_runs(started_runs: dict) -> None:
        runs.lab_panel(started_runs, "lora", chart_key=state.widget("lora_curves"))
        if started_runs:
            st.caption(
                "Each run is in the sidebar's picker. Pick a LoRA run at its last step: ΔW between its step 0 and "
                "that step has rank at most r per adapter (the tab What training changed shows it); a full "
                "fine-tuning run's ΔW has full rank."
            )

    section_runs.live("adapting", "lora", draw_runs)


@sections.section("adapting.lora")
def lora_section() -> None:
    picture = st.container()  # the key picture first, LoRA's controls under it (the words before it stay few)
    config = lora_config(model)
    with picture:
        drawn = config is not None and lora_memory(model, config)
    if not drawn:
        return
    _lora_delta(config)
    _lora_runs(config)


def lora_part() -> None:
    st.subheader("LoRA: train a few numbers")
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
    deltas = adapting.delta_between(start.model, view.model)
    if not deltas:
        st.caption("No matrix changed between step 0 and this step.")
        return
    name = st.selectbox("Matrix", list(deltas), key=state.widget("delta_matrix"), persist_state="page")
    spectrum = adapting.spectrum(deltas[name])
    charts.show(
        spectrum_bars(spectrum, spectrum.title(name), 320),
        key=state.widget("delta_spectrum"),
        words=adapting.spectrum_words(spectrum.values, spectrum.rank),
    )


def delta_part() -> None:
    st.subheader("What training changed: ΔW of a picked run")
    delta_section()


# ------------------------------------------------------------------ 2. quantization


@sections.section("adapting.quantize")
def quantize_section() -> None:
    spec, prompt = quant_controls()
    report = task_jobs.computed(
        "quantize",
        ("quantize", view.content_key, TEXT_KEY, spec.bits, spec.per_channel, spec.symmetric, prompt),
        functools.partial(
            adapting.quant_report_steps, model=model, tokenizer=tokenizer, text=text, spec=spec, prompt=prompt
        ),
        label=f"Quantizing the model to {spec.title}",
        footprint=adapting.task_footprint("quantize", "the quantization report", model),
        total=adapting.QUANT_REPORT_STEPS,
    )
    if report is None:
        return
    with friendly_errors("quantizing the model"):
        quant_metrics(report, corpus_label)
        quant_details(model, report, spec)


def quantize_part() -> None:
    st.subheader("Quantization: 8 and 4 bits per weight")
    quantize_section()


@sections.section("adapting.qat")
def qat_section() -> None:
    bits = st.radio("Bits while training", [4, 8], horizontal=True, **share.bind("qat_bits"), persist_state="page")
    spec = quantize.QuantSpec(int(bits), per_channel=False, symmetric=True)
    steps = st.slider("Steps", 20, 400, 100, step=20, **share.bind("qat_steps"), persist_state="page")
    if st.button("Start quantization-aware training (and a float run to compare)", key=state.widget("qat_start")):
        with friendly_errors("starting the runs"):
            lab = text[: adapting.MAX_TEXT]
            section_runs.submit(
                "qat",
                steps,
                (
                    f"QAT int{bits}",
                    functools.partial(adapting.qat_run, model, tokenizer, lab, spec, steps, settings.seed),
                    adapting.lab_footprint(model, len(lab), steps, "Quantization-aware training", copies=1),
                ),
                (
                    f"float run for QAT int{bits}",
                    functools.partial(adapting.full_run, model, tokenizer, lab, steps, settings.seed),
                    adapting.lab_footprint(model, len(lab), steps, "Fine-tuning"),
                ),
                bits=int(bits),
            )
    runs.refusal("qat")
    started = [entry for entry in section_runs.started("qat") if entry.get("bits") == int(bits)]
    if not started:
        st.caption(
            "QAT fine-tunes with every linear layer's weights rounded to the grid in the forward pass (the "
            "gradient passes straight through the rounding), so the weights learn to sit where rounding "
            "hurts least."
        )
        return
    pair = started[-1]["jobs"]
    section_runs.live(
        "adapting", "qat", lambda started_runs: runs.lab_panel(pair, "qat", chart_key=state.widget("qat_curves"))
    )
    qat = next((job for label, job in pair.items() if label.startswith("QAT")), None)
    plain = next((job for label, job in pair.items() if not label.startswith("QAT")), None)
    if qat is not None and qat.status().done and (plain is None or plain.status().done):
        ptq_against_qat(qat, plain, spec)


def ptq_against_qat(qat, plain, spec) -> None:
    """The QAT run and its float run (``plain``) have ended: post-training quantization against QAT, on held-out
    text."""
    with friendly_errors("comparing QAT with post-training quantization"):
        trained = picker.load(f"run:{qat.id}@{qat.status().snapshot_steps[-1]}")
        start = picker.load(f"run:{qat.id}@0")
        floated = picker.load(f"run:{plain.id}@{plain.status().snapshot_steps[-1]}") if plain else None
        rows = task_jobs.computed(
            "ptq_vs_qat",
            ("ptq_vs_qat", qat.id, plain.id if plain else "", spec.bits, TEXT_KEY),
            functools.partial(
                adapting.ptq_vs_qat_steps,
                original=start.model,
                qat_trained=trained.model,
                float_trained=floated.model if floated else None,
                tokenizer=start.tokenizer,
                text=text,
                spec=spec,
            ),
            label="Measuring the held-out loss of each model",
            footprint=adapting.task_footprint("ptq_vs_qat", "PTQ against QAT", start.model),
            total=adapting.PTQ_VS_QAT_STEPS,
        )
        if rows is None:
            return
        ptq_vs_qat_table(rows, spec)


def qat_part() -> None:
    st.subheader("Quantization-aware training")
    qat_section()


# ------------------------------------------------------------------ 3. fine-tuning for a task


def _prompting() -> None:
    st.subheader("No training at all: prompting with 0, 1 or 4 labelled examples")
    results = task_jobs.computed(
        "prompting",
        ("prompting", view.content_key),
        functools.partial(adapting.prompting_steps, model=model, tokenizer=tokenizer),
        label="Prompting the model for every held-out name",
        footprint=adapting.task_footprint("prompting", "zero- and few-shot prompting", model),
        total=len(adapting.PROMPTING_SHOTS),
        start="Measure zero- and few-shot accuracy",
    )
    if results is None:
        return
    with friendly_errors("prompting the model"):
        prompting_table(results)
        prompting_vs_fine_tuning(results, section_runs.of_section("task"))
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
    bce_worked_example(view)
    steps_count = st.slider("Steps per run", 20, 300, 100, step=20, **share.bind("task_steps"), persist_state="page")
    if st.button("Train head only / head + last block / everything (three lab runs)", key=state.widget("task_start")):
        with friendly_errors("starting the runs"):
            total, width = model.num_parameters(), model.config.d_model
            trained = {"head": width + 1, "last block": total // model.config.n_layers + width + 1}
            section_runs.submit(
                "task",
                steps_count,
                *[
                    (
                        f"names: {finetune.MODE_TITLES[mode]}",
                        functools.partial(adapting.finetune_run, model, tokenizer, steps_count, settings.seed, mode),
                        adapting.lab_footprint(
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
    runs.refusal("task")
    section_runs.live(
        "adapting",
        "task",
        lambda started_runs: runs.lab_panel(
            started_runs,
            "task",
            chart_key=state.widget("task_loss"),
            accuracy_key=state.widget("task_accuracy"),
            measure=accuracy,
            title="Training loss (BCE)",
        ),
    )
    checkpoint_classifier(view)
    _prompting()


def task_part() -> None:
    st.subheader("Fine-tuning for a task: names → male or female list")
    task_section()


# ------------------------------------------------------------------ 4. memory


def _memory_table() -> None:
    ways = len(adapting.memory_precisions(model)) * 2  # with and without checkpointing
    measures = task_jobs.computed(
        "memory",
        ("memory", view.content_key, TEXT_KEY),
        functools.partial(adapting.memory_table_steps, model=model, tokenizer=tokenizer, text=text),
        label="Measuring one training step each way",
        footprint=adapting.task_footprint("memory", "the memory measurement", model),
        total=ways,
        start=f"Measure one training step {ways} ways",
    )
    if measures is None:
        return
    with friendly_errors("measuring memory"):
        memory_table(measures)


def _memory_runs() -> None:
    st.subheader("The switches on a real run (lab runs, same data and seed)")
    steps = st.slider("Steps", 20, 400, 60, step=20, **share.bind("memory_steps"), persist_state="page")
    switches = adapting.memory_settings(model)  # fp16 too on CUDA
    if st.button(
        f"Train {len(switches)} runs: {', '.join(name for name, *_ in switches)}", key=state.widget("memory_start")
    ):
        with friendly_errors("starting the runs"):
            lab = text[: adapting.MAX_TEXT]
            section_runs.submit(
                "memory",
                steps,
                *[
                    (
                        f"memory: {name}",
                        functools.partial(
                            adapting.memory_run,
                            model,
                            tokenizer,
                            lab,
                            steps,
                            settings.seed,
                            checkpointing,
                            bf16,
                            fp16=fp16,
                        ),
                        adapting.lab_footprint(
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
    runs.refusal("memory")
    section_runs.live(
        "adapting",
        "memory",
        lambda started_runs: runs.lab_panel(
            started_runs,
            "memory",
            chart_key=state.widget("memory_curves"),
            measure=tokens_per_s,
            title="Training loss: checkpointing changes nothing, bf16 a little",
        ),
    )


@sections.section("adapting.memory")
def memory_section() -> None:
    _memory_table()
    _memory_runs()
    zero(model)


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
with friendly_errors("the questions"):
    quiz.section("adapt", lambda: _questions(view.content_key, model, tokenizer))
sections.parts(PARTS, share.bind("adapting_part"))
