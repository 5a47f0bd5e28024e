"""The Training page: train a model live, compare runs, and see the loss and its gradient by hand.

It opens on the loss curve of a run (the run picked in the sidebar, else the one trained last) under the Train
button and its settings; the comparison of every run, the races, step 0 vs step N, the loss by hand and the toy
decoder are tabs.
"""

import functools

import streamlit as st

from llmviz.data.corpus import text_key
from llmviz.errors import LlmvizError
from llmviz.generation.sampling import generate_text
from llmviz.lab.live_status import JobRefused
from llmviz.lessons.architectures import SWITCH_RACE_TITLES, SWITCH_RACES, extrapolation
from llmviz.lessons.quiz import training_questions
from llmviz.lessons.training import (
    GPT_SIZES,
    LEARNING_RATES,
    MODEL_LABELS,
    SWITCH_RACE_CONTEXT,
    lineup_configs,
    names_race,
    optimizer_race,
    recorded_curve,
    switch_race_configs,
)
from llmviz.training import footprint
from llmviz.training.config import OPTIMIZER_TITLES, PRECISION_TITLES, TrainConfig, default_precision, precision_choices
from llmviz.training.dataset import prepare_data, vocab_bound
from llmviz.training.trainer import build_trainer
from ui import boxes, lab, picker, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import kept, quiz, run_view, runs, section_runs, training, training_by_hand, training_decoder
from ui.text import literal_markdown
from ui.widgets import page_header

settings = shared_sidebar.settings()
page_header(
    "Loss and training: watch a model learn",
    "Training nudges every parameter to make the next token more likely; the loss says how surprised the model is.",
)


RACE_CHARS = 200_000  # a race trains on the first characters of the corpus: its tokenizing stays a tenth of a second
INLINE_CHARS = 2_000  # a text this short is tokenized in the page at once (milliseconds); a longer one in the worker


loaded = shared_sidebar.corpus_text()
if loaded is None:
    st.stop()
corpus_label, text = loaded


# ------------------------------------------------------------------ Train, its settings, and the run's loss curve
train_column, settings_column = st.columns([1, 5], vertical_alignment="top")
train_pressed = train_column.button("Train", type="primary", key=state.widget("train"), width="stretch")
with settings_column.expander("Settings: the model, its tokenizer, the optimizer, the steps"):
    c1, c2, c3, c4 = st.columns(4)
    model_name = c1.selectbox(
        "Model", list(MODEL_LABELS), format_func=MODEL_LABELS.get, index=1, **share.bind("train_model")
    )
    tokenizer_index = 1 if model_name in GPT_SIZES and settings.corpus != "names" else 0
    tokenizer_kind = c1.radio(
        "Tokenizer", ["char", "bpe"], tokenizer_index, horizontal=True, **share.bind("train_tokenizer")
    )
    vocab_size = c1.slider(
        "BPE vocabulary", 257, 2048, 512, disabled=tokenizer_kind != "bpe", **share.bind("train_vocab")
    )
    optimizer = c2.selectbox(
        "Optimizer", list(OPTIMIZER_TITLES), format_func=OPTIMIZER_TITLES.get, index=5, **share.bind("optimizer")
    )
    lr = c2.select_slider(
        "Learning rate", list(LEARNING_RATES), value=3e-3, format_func=lambda x: f"{x:g}", **share.bind("lr")
    )
    clip = c2.toggle("Clip gradients at norm 1", value=True, **share.bind("clip"))
    batch = c3.slider("Batch size", 1, 64, 16, **share.bind("batch"))
    context = c3.slider("Context (tokens)", 4, 128, value=32, **share.bind("train_context"))
    steps = c4.slider("Steps", 10, 2000, 300, step=10, **share.bind("steps"))
    sample_every = c4.slider(
        "Sample every (steps)", 0, 500, 100, step=10, help="0: no samples while training", **share.bind("sample_every")
    )
    run_device = training.run_device(c4, settings.device)  # with a Ray cluster: its devices, not this server's
    precisions = precision_choices(run_device)
    precision = c4.selectbox(
        "Precision",
        precisions,
        format_func=PRECISION_TITLES.get,
        help="bfloat16 autocast runs the matrix products in 16 bits (8 for the mantissa), with float32 weights and "
        "optimizer; float16 also scales the loss so that small gradients do not round to zero (CUDA only).",
        index=precisions.index(default_precision(run_device)),
        **share.bind("precision"),
    )
planned_run = (  # said under the picture: the words before it stay few (issue 50 §9)
    f"Train: {MODEL_LABELS[model_name]} · {'BPE ' + str(vocab_size) if tokenizer_kind == 'bpe' else 'characters'} · "
    f"{OPTIMIZER_TITLES[optimizer]}, lr {lr:g} · batch {batch} × context {context} · {steps} steps on "
    f"{literal_markdown(corpus_label)} in {PRECISION_TITLES[precision]}. A run trains in the background: look at it "
    "on Attention or Embeddings "
    "(pick it in the sidebar) and come back."
)
race_text = text[:RACE_CHARS]  # a race trains on the corpus's first characters
race_key = text_key(race_text)  # its caches are keyed by this content, never by the corpus's label


if train_pressed:
    try:
        config = TrainConfig(
            model=model_name,
            tokenizer=tokenizer_kind,
            bpe_vocab_size=vocab_size,
            context_length=context,
            batch_size=batch,
            steps=steps,
            optimizer=optimizer,
            lr=lr,
            grad_clip=1.0 if clip else None,
            eval_interval=max(1, steps // 20),
            seed=settings.run_seed(),
            device=run_device,
            precision=precision if precision in precisions else "auto",
        )
        label = runs.unique_label(  # the settings that tell two runs apart, so two runs never read alike
            f"{MODEL_LABELS[model_name]} · {OPTIMIZER_TITLES[optimizer]} · lr {lr:g} · {steps} steps · context "
            f"{context} · batch {batch} · {corpus_label}"
        )
        # the corpus is tokenized and the model built in the run's worker, never in this script run (a 20 MB upload
        # took a minute here); a text of a few lines is split here in milliseconds, so that a text too short for
        # a window is said at once
        if len(text) <= INLINE_CHARS:
            prepare_data(text, config)
        job = runs.start(  # refused first if it cannot fit: the student's share of runs or memory
            "train",
            lambda: picker.runs().submit_training(
                build=functools.partial(build_trainer, text, config),
                footprint=footprint.of_config(config, vocab_bound(text, config), text_bytes=len(text.encode())),
                label=label,
                total=config.steps,
                sample_every=sample_every,
            ),
        )
    except LlmvizError as error:
        st.error(str(error))
    else:
        if job is not None:
            state.TRAINING_FOCUS.set(job.id)
            picker.select(f"run:{job.id}")  # every page now shows this run (the sidebar follows on the next rerun)
            st.rerun()
runs.refusal("train")  # the share of runs or memory this run would pass, and what would fit


raced = {view.id for race in lab.section_starts("race") for view in race.runs.values()}  # the tab Races draws them
focus_id = kept.focused_id(raced)  # as the lab keeps it: also after a restart, a park, or from another process
picker.on_this_page([focus_id] if focus_id else [], reset=True)
if focus_id is not None:  # one run, drawn from the lab's view of it, whichever process trains it (or trained it)
    if (focus := picker.runs().live(focus_id)) is not None and focus.info is not None:
        training.run_line(focus.info)
    run_view.live(focus_id, after=training.server_line)
else:  # no run yet: the page opens on how the shipped GPT learned (its recorded losses)
    if (curve := recorded_curve((shipped := picker.shipped_default()).meta)) is not None:
        training.recorded_curve(curve, literal_markdown(shipped.label))
    if not lab.out():  # the lab's database is out (said above): the student's runs are kept, only not readable now
        st.info("No run yet. Press **Train**: a small GPT learns your text, its own live loss curve replaces this one.")
    training.server_line()
st.caption(planned_run)

# ------------------------------------------------------------------ races


def start_race(make_runners, **asked) -> None:
    """Start ``make_runners()`` (``(label, planned run)`` pairs, built in the worker) as one race: one job, its
    runners side by side in one worker, a step of each in turn. A refusal (the session's share of the server) is a
    notice, a bad setting an error. Its runs keep what was ``asked`` in the lab (the section ``"race"``), where the
    tab Races finds the newest race, and the extrapolation below an architecture race."""
    try:
        picker.runs().submit_race(make_runners(), section=("race", asked))
    except JobRefused as refused:
        lab.warn(str(refused))
    except LlmvizError as error:
        st.error(str(error))
    else:
        state.TRAINING_FOCUS.set(None)  # the page opens on the race (the tab Races), not on one of its runners
        st.rerun()


def switch_race_runners(race_switch: str, race_steps: int) -> list:
    configs = switch_race_configs(race_switch, race_steps, settings.run_seed(), run_device)  # one seed for both
    # built in the race's worker
    return [(runs.unique_label(f"switch race: {title}"), runs.planned(race_text, config)) for title, config in configs]


def model_race_runners(char_race: bool, race_model: str, race_steps: int) -> list:
    from llmviz.data import corpus

    names = corpus.load("names") if char_race else race_text
    lineup = names_race() if char_race else optimizer_race(race_model)
    race = "names race" if char_race else "optimizer race"
    configs = lineup_configs(lineup, race_steps, settings.run_seed(), run_device)  # one seed: a fair race
    return [(runs.unique_label(f"{race}: {title}"), runs.planned(names, config)) for title, config in configs]


def race_runs() -> dict:
    """The newest race's runners (``label → run``), as the lab lists them (after a reload or a restart too): live
    where this process trains them, else from the lab's record."""
    races = lab.section_starts("race")
    return section_runs.drawable(races[-1].runs) if races else {}


def newest_race() -> None:
    """The newest race, live: each runner's progress, then its final line, and their curves on one chart."""
    racers = race_runs()
    if not racers:
        st.caption("A race's runners train side by side in one worker; they appear here, and under Your runs.")
        return
    picker.on_this_page([job.id for job in racers.values()])
    runs.live(
        lambda: runs.lab_panel(race_runs(), "race", chart_key=state.widget("race_chart"), vocab=True),
        active=lambda: any(job.changing for job in race_runs().values()),
        name="training.race",
    )


def races_part() -> None:
    """Races: several runs side by side in one worker, on one chart (the tab Your runs)."""
    st.subheader("Races: compare runs on one chart")
    if len(text) > RACE_CHARS:
        st.caption(f"Races on the corpus train on its first {RACE_CHARS:,} of {len(text):,} characters.")
    race_left, race_right = st.columns(2)
    with race_left:
        race_steps = st.slider("Steps per runner", 50, 1000, step=50, value=300, **share.bind("race_steps"))
        char_race = st.button(
            "Character-level race on names",
            help="counts bigram → neural bigram → MLP → WaveNet → RNN → GRU → Transformer",
        )
    with race_right:
        race_model = st.selectbox(
            "Optimizer race: model", ["mlp", "gpt-nano", "rnn"], format_func=MODEL_LABELS.get, **share.bind("race_net")
        )
        optimizer_race_pressed = st.button("SGD vs momentum vs RMSprop vs Adam")
    switch_left, switch_right = st.columns(2)
    race_switch = switch_left.selectbox(
        "Architecture race: one switch, two GPT micros",
        list(SWITCH_RACES),
        format_func=SWITCH_RACE_TITLES.get,
        **share.bind("race_switch"),
        help="The same GPT micro, the same seed and batches, on the corpus in the sidebar: only this switch differs.",
    )
    switch_race = switch_right.button("Race the two", key=state.widget("switch_race"))
    if switch_race:
        start_race(
            lambda: switch_race_runners(race_switch, race_steps),
            switch=race_switch,
            corpus=corpus_label[:120],
            corpus_key=race_key,
            context=SWITCH_RACE_CONTEXT,
        )
    if char_race or optimizer_race_pressed:
        start_race(lambda: model_race_runners(char_race, race_model, race_steps))
    newest_race()
    st.subheader("Longer than training: does a race's winner extrapolate?")
    longer_than_training()


def your_runs_part() -> None:
    st.subheader("Your runs: every run on one chart")
    picker.on_this_page([job.id for job in runs.runs()])
    runs.live(
        training.all_runs,
        active=lambda: any(job.changing for job in runs.runs()),
        seconds=2.0,
        name="training.all_runs",
    )
    kept.kept_runs_panel()  # every run the lab keeps: earlier servers', other app processes', parked ones


@st.cache_data(show_spinner=False, max_entries=8)
def measured_beyond(run_ids: tuple[str, ...], content_key: str, context: int, trained: int, _models: dict, _ids):
    return extrapolation(_models, _ids, trained, context, windows=256)  # 64 windows drew a saw of noise


def newest_switch_race() -> dict:
    """The newest architecture race as the lab keeps it: what was asked (its switch, corpus and context) and its
    runners' ids; ``{}`` when the student has raced none."""
    switch_races = [race for race in lab.section_starts("race") if race.asked.get("switch") in SWITCH_RACES]
    if not switch_races:
        return {}
    return {**switch_races[-1].asked, "ids": [view.id for view in switch_races[-1].runs.values()]}


@sections.section("training.longer")
def longer_than_training() -> None:
    """A finished architecture race measured at a longer context than it trained at: does each side extrapolate?"""
    st.markdown(
        f"An architecture race trains at a context of {SWITCH_RACE_CONTEXT} tokens, but GPT micro reads up "
        "to 64. Measure both runners on longer windows of the validation text: at positions beyond "
        "training, a learned position table reads rows that never received a gradient, while RoPE turns "
        "queries and keys by angles it has not seen but keeps 'how far apart' the same."
    )
    spec = newest_switch_race()
    if not spec:
        st.caption(
            "Race an architecture switch above (positions: learned vs RoPE shows it best); once it ends, "
            "its two runners are measured here."
        )
        return
    jobs = [picker.runs().live(job_id) for job_id in spec["ids"]]
    if any(job is None for job in jobs):
        st.caption("The last architecture race was cleared: race again above.")
        return
    if not all(job.status().done for job in jobs) or any(job.info is None for job in jobs):
        st.caption(f"Waiting for the race ({SWITCH_RACE_TITLES[spec['switch']]}) to end.")
        return
    if spec.get("corpus_key") != race_key:  # by content: an upload may carry a built-in corpus's name
        st.info(
            f"The race trained on {literal_markdown(spec['corpus'])}: pick that corpus in the sidebar to measure "
            "it on its own validation text."
        )
        return
    limit = min(picker.load(f"run:{job.id}").model.config.context_length for job in jobs)
    trained = int(spec["context"])
    context = st.select_slider(
        "Measure at a context of",
        [c for c in (40, 48, 56, 64, 96, 128) if trained < c <= limit],
        value=limit,
        key=state.widget("longer_context"),
        persist_state="page",
    )
    models = {job.label: picker.load(f"run:{job.id}").model for job in jobs}
    first = jobs[0].info
    ids = prepare_data(race_text, first.config, first.tokenizer).val_ids  # the text the race trained on
    result = measured_beyond(tuple(spec["ids"]), race_key, int(context), trained, models, ids)
    training.extrapolation(result, trained)


# ------------------------------------------------------------------ before and after


def sample_panel(view, column_key: str, prompt: str) -> None:
    if view.family not in ("gpt", "charlevel"):
        st.info(f"{literal_markdown(view.label)} does not generate text.")
        return
    with friendly_errors("sampling"):
        text = generate_text(view.model, view.tokenizer, prompt, max_new_tokens=60, temperature=0.8, seed=settings.seed)
        st.code(text, language=None, wrap_lines=True)


@sections.section("training.before_after")
def samples_before_after() -> None:
    """Generates twice (60 tokens each), so it runs only when opened."""
    if (box := sections.lazy("Generate with both sets of weights", "training_before_after")) is None:
        return
    with box:
        prompt = boxes.text_input(
            "Prompt", "", 2000, "Your prompt", help="Empty: start from nothing.", **share.bind("before_prompt")
        )
        picker.before_after(lambda view, column_key: sample_panel(view, column_key, prompt), what="samples")


def before_after_part() -> None:
    st.subheader("Your model at step 0 and at step N")
    st.caption(
        "The model picker in the sidebar chooses a run and a step. Step 0 is the run's random start; the "
        "same prompt, the same seed, two sets of weights."
    )
    samples_before_after()


# ------------------------------------------------------------------ the loss by hand
QUIZ_STEPS = 30


def training_quiz() -> list:
    shipped = picker.shipped_default()
    gpt, gpt_tokenizer = shipped.model, shipped.tokenizer
    quiz_model = model_name if model_name in GPT_SIZES else "gpt-nano"
    what = (
        f"A fresh {MODEL_LABELS[quiz_model]} with {OPTIMIZER_TITLES[optimizer]} trains for {QUIZ_STEPS} steps on "
        f"{literal_markdown(corpus_label)} (batch 8, 16 characters of context, no clipping)"
    )
    losses = dict(zip((lr, lr * 10), quiz.short_run_losses(text, quiz_model, optimizer, lr, settings.seed, QUIZ_STEPS)))
    return training_questions(gpt, gpt_tokenizer, text[:400], losses.__getitem__, lr, what)


# ------------------------------------------------------------------ the page's tabs
quiz.section("training", training_quiz)
sections.parts(
    {
        "Your runs": your_runs_part,
        "Races": races_part,
        "Step 0 vs step N": before_after_part,
        "The loss by hand": training_by_hand.loss_step_by_step,
        "The decoder of a Transformer": training_decoder.decoder_part,
    },
    share.bind("training_part"),
)
