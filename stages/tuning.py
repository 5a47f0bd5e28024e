"""The Tuning page: from a base model to an assistant. Instruction tuning (SFT) and preference tuning (DPO) of the
shipped GPT, side by side with the base model; the response mask; lab runs of the student's own.

It opens on the shipped trio (base, SFT, DPO) answering the same held-out question; a student's own SFT and DPO
runs (started below, or picked in the sidebar) take the place of the shipped ones in the comparison.
"""

import functools
import html

import streamlit as st

from llmviz.adapt import dpo, instructions, sft, tuning_runs
from llmviz.errors import LlmvizError
from llmviz.lessons import adapting, tuning
from ui import charts, lab, picker, present, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import run_view, runs
from ui.panels.tuning import answers_row, dpo_figure, figures_table, mask_chips, probabilities_figure
from ui.widgets import page_header

settings = shared_sidebar.settings()
page_header(
    "Tuning: from a base model to an assistant",
    "A base model continues text; SFT teaches it to answer and stop; DPO, which answer is better.",
)
picker.on_this_page([], reset=True)
MODEL_KEYS = {"SFT": state.widget("tuning_SFT_model"), "DPO": state.widget("tuning_DPO_model")}
UPLOAD_KEYS = {"sft": state.widget("tuning_sft_upload"), "dpo": state.widget("tuning_dpo_upload")}


@st.cache_resource(show_spinner="Loading the shipped base, SFT and DPO models…")
def _shipped() -> dict:
    return tuning.shipped_models()


# ------------------------------------------------------------------ lab runs (as the Adapting page keeps them)
def _submit(section: str, label: str, build, footprint, steps: int) -> None:
    """Start a lab run of kind ``section`` ("sft" or "dpo", as the lab keeps it) built in its worker; the page then
    draws the student's newest run of that kind, as the lab keeps it (nothing of it is kept in the browser session)."""
    submit = picker.runs().submit_training
    options = dict(build=build, footprint=footprint, total=steps, label=runs.unique_label(label), kind=section)
    if runs.start(section, lambda: submit(**options)):
        st.rerun(scope="app")


def _newest() -> list[str]:
    """The ids of the student's newest SFT run and newest DPO run, as the lab keeps them (this tab's, another tab's,
    an earlier server's): what this section draws."""
    found = []
    for kind in ("sft", "dpo"):
        views = lab.runs((kind,))
        if views:
            found.append(views[0].id)
    return found


def _run_view(run_id: str):
    """A run's newest snapshot as a model view (as the lab keeps it), or None while it has none."""
    try:
        return picker.load(f"run:{run_id}")
    except LlmvizError:
        return None


def _kept(kind: str) -> dict:
    """The student's runs of ``kind`` ("sft" or "dpo") as the lab keeps them, ``label → run id``, newest first:
    this tab's, earlier sessions', earlier servers'."""
    return {view.label: view.id for view in lab.runs((kind,))}


# ------------------------------------------------------------------ which models are compared
def _choices(kind: str) -> dict:
    """What can stand in the ``kind`` slot: the shipped model, the sidebar's model, this page's runs of that kind."""
    options = {f"shipped {kind}": None, "the model picked in the sidebar": "sidebar"}
    for label, run_id in _kept(kind.lower()).items():
        options[f"my run: {label}"] = run_id
    return options


def _compared() -> dict:
    """``{"base": (model, tokenizer), "SFT": …, "DPO": …}``: shipped unless the student picked their own."""
    shipped = _shipped()
    chosen = dict(shipped)
    left, right = st.columns(2)
    for column, kind in zip((left, right), ("SFT", "DPO")):
        options = _choices(kind)
        pick = column.selectbox(f"{kind} model", list(options), key=MODEL_KEYS[kind])
        source = options.get(pick)
        view = picker.current() if source == "sidebar" else (_run_view(source) if source is not None else None)
        if view is None:
            if source is not None:
                column.info("That run has no snapshot yet: the shipped model stands in.")
            continue
        if not picker.is_gpt(view) or view.tokenizer.vocab_size != shipped["base"][1].vocab_size:
            column.warning(f"{view.label} is not a GPT with the shipped tokenizer: the shipped {kind} stands in.")
            continue
        chosen[kind] = (view.model, view.tokenizer)
    return chosen


@st.cache_data(show_spinner="The three models answer…", max_entries=32)
def _answers(keys: tuple, prompt: str, sampled: bool, seed: int, _models: dict) -> list:
    return tuning.side_by_side(_models, prompt, sampled, seed)


@st.cache_data(show_spinner="Measuring the three models on the held-out sets…", max_entries=8)
def _figures(keys: tuple, _models: dict) -> list:
    return tuning.figures(_models)


# ------------------------------------------------------------------ 1. side by side
@sections.section("tuning.side_by_side")
def side_by_side() -> None:
    top, picture, below = st.container(), sections.key_picture("tuning"), st.container()
    with below:  # drawn under the answers, chosen first: which SFT and DPO models answer
        models = _compared()
    prompts = tuning.example_prompts()
    c1, c2 = top.columns([3, 1])
    prompt = c1.selectbox(
        "A held-out question",
        prompts,
        **share.bind("tuning_question"),
    )
    sampled = c2.radio("Decoding", ["greedy", "sampled (T = 0.8)"], **share.bind("tuning_decoding")) != "greedy"
    with below:
        typed = st.text_input("Your own question", "", **share.bind("tuning_own"))
    asked = tuning.bounded_prompt(typed) or prompt
    keys = tuning.models_key(models)
    with friendly_errors("answering"):
        answers = _answers(keys, asked, sampled, settings.seed, models)
        with picture:
            answers_row(answers)
            st.caption(
                "Each token is shaded by the probability its own model gave it, written under it. "
                + (f"Sampled with seed {settings.seed}, the same draws for all three." if sampled else "Greedy.")
            )
        with below:
            st.markdown("**The prompt, in the template** (the models write on from its end):")
            st.code(instructions.prompt_text(asked), language=None)
        st.subheader("Each answer's tokens, scored by every model")  # (its own slide in presenter mode)
        scored = st.radio(
            "Each token's probability under every model, for the answer of",
            tuning.STAGES,
            horizontal=True,
            **share.bind("tuning_scored"),
        )
        shown = next(a for a in answers if a.model == scored)
        charts.show(
            probabilities_figure(shown),
            key=state.widget("tuning_probabilities"),
            words=tuning.scored_words(shown.model, [t.replace("\n", "↵") for t in shown.tokens], shown.probabilities),
        )
        st.subheader("What was measured (held-out questions and pairs)")
        st.dataframe(figures_table(_figures(keys, models)), hide_index=True)
        st.caption(
            "Answers' loss: the mean cross-entropy over the answer tokens of the held-out questions (the SFT loss). "
            "Prefers the chosen answer: the share of held-out pairs where log π(chosen) > log π(rejected). Answers "
            "that end: greedy answers to held-out questions that stop with <|endoftext|> within 48 tokens."
        )


# ------------------------------------------------------------------ 2. the response mask
@sections.section("tuning.mask")
def mask_section() -> None:
    rows = instructions.load_set("sft", "train")
    index = st.slider("Example", 0, len(rows) - 1, 0, **share.bind("tuning_example"))
    _, tokenizer = _shipped()["base"]
    tokens = tuning.mask_view(tokenizer, rows[index]["prompt"], rows[index]["response"])
    st.html(mask_chips(tokens))
    inside = sum(t.in_loss for t in tokens)
    st.caption(
        f"{len(tokens)} tokens; the loss counts the {inside} answer tokens (green, with the end token) and ignores "
        f"the {len(tokens) - inside} of the template and the question (label −100, the index cross-entropy skips). "
        "<|user|> and <|assistant|> are ordinary text, several tokens each; <|endoftext|> is one special token "
        f"(id {tokenizer.special_tokens['<|endoftext|>']})."
    )
    # a link of its own (a caption draws a link at 60%: 2.6:1 on white, docs/accessibility.md)
    st.markdown(f"[The template on the Tokens page]({tuning.tokens_page_link()}).")


# ------------------------------------------------------------------ 3. DPO's curves
@sections.section("tuning.dpo")
def dpo_section() -> None:
    shipped = dpo_figure(
        tuning.dpo_curves(tuning.checkpoint_metrics(tuning.SHIPPED["DPO"])), "The shipped DPO run (β = 0.1)"
    )
    charts.show(shipped, key=state.widget("tuning_dpo_shipped"), words=runs.curve_words(shipped))
    for view in lab.runs(("dpo",)):  # the student's DPO runs as the lab keeps them (live, kept, earlier servers')
        curves = tuning.kept_dpo_curves(lab.curve(view.id).series)
        if any(curves.values()):
            figure = dpo_figure(curves, f"{view.label} ({lab.state_text(view)})")
            charts.show(figure, key=state.widget("tuning_dpo_run_", view.id), words=runs.curve_words(figure))
    st.caption(
        "The chosen answer's log-probability ratio against the frozen reference (the SFT model) rises above the "
        "rejected one's; the reward margin β(r_w − r_l) grows; the preference accuracy is the share of pairs with "
        "β r_w > β r_l (at step 0 every pair is a tie: policy = reference)."
    )


# ------------------------------------------------------------------ 4. your own runs
def _own_rows(kind: str):
    upload = st.file_uploader(
        f"Your own {kind.upper()} set (JSON Lines: {', '.join(instructions.PAIR_KINDS[kind])} per line)",
        type=["jsonl", "json", "txt"],
        key=UPLOAD_KEYS[kind],
        max_upload_size=instructions.MAX_UPLOAD_BYTES // 10**6,  # the box says 2 MB, not the server's 20 MB
    )
    if upload is None:
        return instructions.load_set(kind, "train"), instructions.load_set(kind, "validation"), "the shipped set"
    if upload.size > instructions.MAX_UPLOAD_BYTES:
        raise instructions.UploadError(f"{upload.name} is larger than {instructions.MAX_UPLOAD_BYTES:,} bytes.")
    rows = instructions.parse_jsonl(upload.getvalue(), kind, upload.name)
    return (*instructions.split_rows(rows), upload.name)


def _dpo_start() -> tuple:
    """The SFT model a DPO run starts from: the shipped one, or one of this page's SFT runs."""
    options = {"shipped SFT": None, **{f"my run: {label}": run_id for label, run_id in _kept("sft").items()}}
    pick = st.selectbox("Start from", list(options), key=state.widget("tuning_dpo_from"))
    view = _run_view(options[pick]) if options[pick] is not None else None
    return (view.model, view.tokenizer) if view is not None else _shipped()["SFT"]


@sections.section("tuning.runs")
def runs_section() -> None:
    view = picker.current()
    base = view if picker.gpt_or_note(view, "an SFT run starts from a GPT (the shipped GPT here)") else None
    base = base or picker.shipped_default()
    left, right = st.columns(2)
    with left:
        st.markdown(f"**SFT** of the sidebar's model ({html.escape(base.label)})")
        sft_steps = st.slider("SFT steps", 10, 200, 60, step=10, **share.bind("tuning_sft_steps"))
        with friendly_errors("reading your set"):
            sft_rows = _own_rows("sft")
            if st.button("Start an SFT run", key=state.widget("tuning_sft_start")):
                config = sft.SftConfig(steps=sft_steps, seed=settings.seed, init=base.label)
                _submit(
                    "sft",
                    f"SFT {sft_steps} steps ({sft_rows[2]})",
                    functools.partial(
                        tuning_runs.build,
                        "sft",
                        tuning_runs.sets_text(*sft_rows[:2]),
                        config,
                        base.tokenizer,
                        base.model,
                    ),
                    adapting.lab_footprint(base.model, 0, sft_steps, "SFT", batch_size=16, context=128),
                    sft_steps,
                )
        runs.refusal("sft")
    with right:
        st.markdown("**DPO** from an SFT model, against a frozen copy of it (the reference)")
        start_from = _dpo_start()
        beta = st.slider("β", 0.01, 1.0, 0.1, step=0.01, **share.bind("tuning_beta"))
        dpo_steps = st.slider("DPO steps", 10, 200, 40, step=10, **share.bind("tuning_dpo_steps"))
        with friendly_errors("reading your set"):
            pair_rows = _own_rows("dpo")
            if st.button("Start a DPO run", key=state.widget("tuning_dpo_start")):
                model, tokenizer = start_from
                config = dpo.DpoConfig(beta=beta, steps=dpo_steps, lr=1e-4, seed=settings.seed, init="SFT")
                _submit(
                    "dpo",
                    f"DPO β={beta:g} {dpo_steps} steps ({pair_rows[2]})",
                    functools.partial(
                        tuning_runs.build, "dpo", tuning_runs.sets_text(*pair_rows[:2]), config, tokenizer, model
                    ),
                    adapting.lab_footprint(model, 0, dpo_steps, "DPO", copies=1, batch_size=16, context=128),
                    dpo_steps,
                )
        runs.refusal("dpo")
    shown = _newest()
    picker.on_this_page(shown)
    for run_id in shown:  # each as every page draws a run: its state, controls, whole curve (a DPO loss named so)
        run_view.live(run_id, after=lambda: None, where="tuning", name="tuning.runs")
    if shown:
        st.caption(
            "Your newest SFT and DPO runs. Each run is in the sidebar's picker, in the SFT / DPO model boxes at the "
            "top of the page, and in the Training page's kept runs."
        )


LESSONS = {
    "Base, SFT and DPO side by side": side_by_side,
    "The response mask": mask_section,
    "DPO: the chosen over the rejected": dpo_section,
    "Tune your own": runs_section,
}
for (label, lesson), box in zip(LESSONS.items(), sections.lazy_tabs(list(LESSONS), share.bind("tuning_tab"), set())):
    if box is not None:
        with box:
            if present.enabled() and lesson is not side_by_side:  # every lesson drawn in turn: its tab's label is
                st.subheader(label)  # the heading that starts its slide
            lesson()
