"""The Inside-the-model page: it opens on the logit lens; the head detectors, the loss on every token, the
interventions (knock out heads, patch activations, steer) and an induction head forming are one tab away.

The numbers come from llmviz/lessons/inside.py (and llmviz.interpret), ui/panels/inside.py draws them, and this file
wires the sections together. A tab runs only while it is open (the tabs are
bound to the link as ``look``), and each section is an st.fragment, so a widget in one reruns that section alone.
"""

import streamlit as st

from llmviz.interpret import ablation, features, heads, interventions, patching
from llmviz.lessons.defaults import openings
from llmviz.lessons.inside import (
    DEFAULT_ABLATION_TEXT,
    DEFAULT_CLEAN,
    DEFAULT_CORRUPTED,
    DEFAULT_FEATURE_PROMPT,
    DEFAULT_FEATURE_SEARCH,
    DEFAULT_LOSS_TEXT,
    DEFAULT_NEGATIVE,
    DEFAULT_POSITIVE,
    DEFAULT_SENTENCE,
    DEFAULT_STEER_PROMPT,
    SAE_SIZES,
    SAE_TRAIN_STEPS,
    TEXT_LIMITS,
    clearest_detector,
    hook_points,
    sae_config,
)
from llmviz.tokenizers.base import TokenizerError
from ui import boxes, picker, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import inside, inside_features, inside_induction, inside_interventions, inside_lens, runs
from ui.text import literal_markdown
from ui.widgets import bounded_slider, index_slider, page_header

shared_sidebar.settings()
page_header(
    "Inside the model: what each layer predicts, what each head does",
    "Read every block's prediction, then reach in and change the model.",
)
st.caption(f"Model: {literal_markdown(picker.current().label)} (picked in the sidebar).")

TABS = (
    "Logit lens",
    "Head detectors",
    "Loss per token",
    "Knock out heads",
    "Patch activations",
    "Steer",
    "Features",
    "Induction run",
)


def compare_toggle(section: str) -> bool:
    """'Step 0 vs this step' only where the picked model has steps: a run, at a step after 0."""
    view = picker.current()
    if view.run_id is None or not view.step or picker.baseline(view) is None:
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


# ------------------------------------------------------------------ the logit lens (the page opens here)
@sections.section("inside.lens")
def lens_section() -> None:
    st.header("The logit lens, block by block")
    view = picker.current()
    if not picker.gpt_or_note(view, "the logit lens reads a GPT's residual stream"):
        return
    opening = state.follow_default("lens_text", view.tokenizer, *openings(DEFAULT_SENTENCE))
    boxes.text_input("A sentence", opening, TEXT_LIMITS["lens_text"], "The sentence", **share.bind("lens_text"))
    with friendly_errors("the logit lens"):
        both(inside_lens.render_lens, "lens", "the logit lens")


# ------------------------------------------------------------------ head detectors
@sections.section("inside.heads")
def heads_section() -> None:
    st.header("Head detectors: what does each attention head look at?")
    view = picker.current()
    if not picker.gpt_or_note(view, "the detectors read a GPT's attention patterns"):
        return
    with friendly_errors("the head detectors"):
        tokens, scores = inside_lens.cached_head_scores(view.content_key, view.model)
        # open on the detector that shows a head on this model: its default, so a link that leaves it out opens it
        clearest = heads.DETECTORS.index(clearest_detector(scores, tokens))
        kind = st.radio("Detector", heads.DETECTORS, index=clearest, horizontal=True, **share.bind("detector"))
        half = len(tokens) // 2
        st.markdown(
            f"**{kind}**: {heads.DETECTOR_HELP[kind]}. Measured on one fixed test input: {half} distinct "
            f"random tokens of this model's vocabulary, repeated twice ({len(tokens)} tokens, shown below). A "
            "score of 1 means the head puts all its attention where the detector says, at every position it "
            "applies to."
        )
        if view.run_id is not None and view.run_id == getattr(inside_induction.induction_job(), "id", None):
            st.caption(
                "This is the induction run, which scores its heads on other inputs (its test lines, their "
                "attention averaged): the same head's score differs a little between the two."
            )
        both(inside_lens.render_heads, "heads", "the head scores")
        with st.expander("The test input"):
            st.code(" | ".join(inside.label(view, t) for t in tokens[:half]) + "\n(then the same again)", language=None)
    picker.offer_bigger_model(
        "Compare these heads with those of a pretrained model, trained on billions of words of web text:",
        page="inside",
    )


# ------------------------------------------------------------------ loss on every token
@sections.section("inside.loss")
def loss_section() -> None:
    st.header("The loss on every token")
    view = picker.current()
    if not picker.gpt_or_note(view, "this section scores a GPT's next-token predictions"):
        return
    boxes.text_area("Any text", DEFAULT_LOSS_TEXT, TEXT_LIMITS["loss_text"], height=90, **share.bind("loss_text"))
    st.markdown(
        "Each token is coloured by the model's loss on it, $-\\ln p(\\text{token} \\mid \\text{the tokens "
        "before})$: darker red = more surprising. Hover for the top 5 predictions. The mean over the tokens "
        "is the model's loss on this text."
    )
    with friendly_errors("the per-token loss"):
        both(inside_lens.render_losses, "loss", "the per-token loss")


# ------------------------------------------------------------------ knock out heads
@sections.section("inside.ablation")
def ablation_section() -> None:
    st.header("Knock out heads: which ones does the loss need?")
    view = picker.current()
    if not picker.gpt_or_note(view, "knocking out heads needs a GPT's attention heads"):
        return
    text = boxes.text_area(
        "Text", DEFAULT_ABLATION_TEXT, TEXT_LIMITS["ablate_text"], height=70, **share.bind("ablate_text")
    )
    mode = st.radio(
        "Knock a head out by",
        ablation.MODES,
        format_func=lambda m: {"zero": "zero: its output set to 0", "mean": "mean: its average output"}[m],
        horizontal=True,
        **share.bind("ablate_mode"),
    )
    st.markdown(
        "A head's whole contribution is its output $z_h$ (times its slice of $W_O$). Replace it and measure the "
        "model's loss on the text again: the heads whose absence raises the loss most are the ones it needs here."
    )
    with friendly_errors("knocking out heads"):
        ids = inside.view_ids(view, text, "text")
        interventions.check_text(view.model, ids)
        result = inside_interventions.ablation_grid(view, ids, mode)
        if result is not None:
            inside_interventions.draw_effects(view, result, ids)
        inside_interventions.draw_knockout(view, ids, mode)


# ------------------------------------------------------------------ patch activations
@sections.section("inside.patching")
def patching_section() -> None:
    st.header("Patch activations: where does the answer live?")
    view = picker.current()
    if not picker.gpt_or_note(view, "patching needs a GPT's named activations"):
        return
    left, right = st.columns(2)
    clean_text = boxes.text_input(
        "Clean prompt", DEFAULT_CLEAN, TEXT_LIMITS["patch_clean"], "The prompt", where=left, **share.bind("patch_clean")
    )
    corrupted_text = boxes.text_input(
        "Corrupted prompt (a word changed)",
        DEFAULT_CORRUPTED,
        TEXT_LIMITS["patch_corrupted"],
        "The prompt",
        where=right,
        **share.bind("patch_corrupted"),
    )
    component = st.radio(
        "Patch",
        patching.COMPONENTS,
        format_func=lambda c: patching.COMPONENT_LABELS[c],
        horizontal=True,
        **share.bind("patch_component"),
    )
    with friendly_errors("activation patching"):
        clean = inside.view_ids(view, clean_text, "clean prompt")
        corrupted = inside.view_ids(view, corrupted_text, "corrupted prompt")
        inside_interventions.pair_chips(view, clean, corrupted)
        patching.check_pair(view.model, clean, corrupted)
        patching.check_component(view.model, component)
        found = inside_interventions.cached_answers(view.content_key, tuple(clean), tuple(corrupted), view.model)
        top_clean, top_corrupted = found.answer, found.wrong
        if found.problem and not (state.value("patch_answer") or state.value("patch_wrong")):
            st.warning(found.problem)  # said before any share is drawn (issue 50 §6)
        with st.expander("The two tokens compared (default: each run's most likely next token)"):
            a, b = st.columns(2)
            a.text_input(
                "Answer", "", max_chars=100, **share.bind("patch_answer"), placeholder=inside.label(view, top_clean)
            )
            b.text_input(
                "Wrong", "", max_chars=100, **share.bind("patch_wrong"), placeholder=inside.label(view, top_corrupted)
            )
        answer = inside_interventions.answer_token(view, "patch_answer", top_clean, "answer")
        wrong = inside_interventions.answer_token(view, "patch_wrong", top_corrupted, "wrong token")
        if answer == wrong:
            raise TokenizerError("The answer and the wrong token are the same token: pick two different ones.")
        st.markdown(
            "Run the corrupted prompt with one activation taken from the clean run — "
            f"{patching.COMPONENT_HELP[component]} — and see how much of the clean answer comes back, measured by "
            "$d = \\text{logit}(\\text{answer}) - \\text{logit}(\\text{wrong})$ at the last position: answer "
            f"**{literal_markdown(inside.label(view, answer))}**, "
            f"wrong **{literal_markdown(inside.label(view, wrong))}**."
        )
        as_opened = (
            (clean_text, corrupted_text) == (DEFAULT_CLEAN, DEFAULT_CORRUPTED)
            and component == patching.COMPONENTS[0]
            and not (state.value("patch_answer") or state.value("patch_wrong"))
        )  # the default pair's picture is drawn at once (the same for everyone with this model: cached)
        inside_interventions.patching_grid(view, clean, corrupted, answer, wrong, component, drawn_at_once=as_opened)


@sections.section("inside.steering")
def steering_section() -> None:
    st.header("Steer: add a direction to the residual stream")
    view = picker.current()
    if not picker.gpt_or_note(view, "steering adds to a GPT's residual stream"):
        return
    config = view.model.config
    st.markdown(
        "At one layer, add $\\alpha \\times$ a direction to the residual stream at every position while the model "
        "writes, and compare with the same draw of random numbers without it."
    )
    c1, c2, c3 = st.columns([2, 1, 1])
    prompt = boxes.text_input(
        "Prompt",
        DEFAULT_STEER_PROMPT,
        TEXT_LIMITS["steer_prompt"],
        "The prompt",
        where=c1,
        **share.bind("steer_prompt"),
    )
    layer = (
        bounded_slider("Layer", 0, config.n_layers - 1, config.n_layers // 2, where=c2, **share.bind("steer_layer"))
        if config.n_layers > 1
        else index_slider("Layer", 1, where=c2)
    )
    alpha = c3.slider("α", -10.0, 10.0, 1.0, 0.25, **share.bind("steer_alpha"))
    kind = st.radio(
        "Direction",
        ("mean", "token"),
        format_func=lambda k: {"mean": "the mean difference of two sets of prompts", "token": "a token's direction"}[k],
        horizontal=True,
        **share.bind("steer_kind"),
    )
    if kind == "token":
        st.text_input("Token", " list", max_chars=50, **share.bind("steer_token"))
    else:
        a, b = st.columns(2)
        boxes.text_area(
            "Towards these prompts (one a line)",
            DEFAULT_POSITIVE,
            TEXT_LIMITS["steer_positive"],
            "The prompts",
            where=a,
            height=90,
            **share.bind("steer_positive"),
        )
        boxes.text_area(
            "Away from these",
            DEFAULT_NEGATIVE,
            TEXT_LIMITS["steer_negative"],
            "The prompts",
            where=b,
            height=90,
            **share.bind("steer_negative"),
        )
    with friendly_errors("steering"):
        direction, what = inside_interventions.steering_direction(view, kind, layer)
        ids = inside.view_ids(view, prompt, "prompt") or view.tokenizer.encode("\n")[:1]
        seed = int(state.value("seed") or 0)
        pair = inside_interventions.steered_texts(view, ids, layer, direction, float(alpha), seed)
        if pair is None:
            return
        inside_interventions.draw_steered(view, prompt, ids, pair, layer, float(alpha), what, seed)


# ------------------------------------------------------------------ features: a sparse autoencoder's dictionary
@sections.section("inside.features")
def features_section() -> None:
    st.header("Features: the directions a sparse autoencoder finds")
    view = picker.current()
    if not picker.gpt_or_note(view, "a sparse autoencoder reads a GPT's activations"):
        return
    st.markdown(
        "A **sparse autoencoder** writes each activation vector as a sum of a few directions out of a large "
        "dictionary, $\\hat x = \\sum_i f_i W_{\\text{dec},i} + b_{\\text{dec}}$ with most $f_i = 0$; each direction "
        "that fires on one kind of token is a **feature** (Anthropic, *Towards Monosemanticity*, 2023). Pick one: "
        "where it fires most in the corpus, how strongly, and which next tokens it pushes up."
    )
    with friendly_errors("the feature browser"):
        choices = inside_features.sae_choices()
        newest = inside_features.newest_finished_run()
        if newest is not None:
            state.set_value(state.widget("sae_pick"), newest)  # a run that has just finished: browse it
        picked = st.selectbox("Autoencoder", list(choices), format_func=choices.get, key=state.widget("sae_pick"))
        browser = inside_features.open_browser(view, picked) if picked else None
        if browser is not None:
            browse(browser)
            use_feature(browser)
    train_own(view)


def browse(browser) -> None:
    """The features, the most readable first, beside the picked one, its label, and the search."""
    size, opening = browser.sae.d_sae, browser.corpus.order[0]
    if not 0 <= int(state.value("feature", opening) or 0) < size:
        state.set_value("feature", opening)  # a feature of a larger autoencoder, or a hand-made link
    left, right = st.columns([2, 3])
    with left:
        inside_features.draw_feature_table(browser)
    with right:
        feature = int(
            st.number_input(
                "Feature",
                0,
                size - 1,
                opening,
                1,
                help="Type any feature's number: the table lists the most readable ones first (those whose strongest "
                "places in the corpus sit on one token).",
                **share.bind("feature"),
            )
        )
        inside_features.draw_feature_card(browser, feature)
        inside_features.label_box(browser, feature)
    st.subheader("Which features fire on this text?")
    search = boxes.text_input(
        "Text", DEFAULT_FEATURE_SEARCH, TEXT_LIMITS["feature_search"], **share.bind("feature_search")
    )
    inside_features.draw_search(browser, search)


def use_feature(browser) -> None:
    """Steer with the picked feature's direction; knock features out and see the loss on every token change."""
    feature = int(state.value("feature", 0) or 0)
    if box := sections.lazy(f"Steer with feature {feature}", "feature_steer"):
        with box:
            left, right = st.columns([3, 1])
            prompt = boxes.text_input(
                "Prompt",
                DEFAULT_FEATURE_PROMPT,
                TEXT_LIMITS["feature_prompt"],
                "The prompt",
                where=left,
                **share.bind("feature_prompt"),
            )
            alpha = right.slider("α", -40.0, 40.0, 10.0, 1.0, **share.bind("feature_alpha"))
            inside_features.draw_feature_steer(browser, feature, prompt, float(alpha), int(state.value("seed") or 0))
    if box := sections.lazy("Knock features out: the loss on every token", "feature_knockout"):
        with box:
            text = boxes.text_area(
                "Text", DEFAULT_LOSS_TEXT, TEXT_LIMITS["feature_text"], height=70, **share.bind("feature_text")
            )
            knocked = st.multiselect(
                "Features knocked out",
                range(browser.sae.d_sae),
                default=[inside_features.knockout_default(browser)],
                key=state.widget("feature_knocked"),
            )
            mode = st.radio(
                "Knock a feature out by",
                features.MODES,
                horizontal=True,
                key=state.widget("feature_knock_mode"),
                format_func=lambda m: {
                    "subtract": "subtracting its contribution from the activation",
                    "reconstruction": "setting it to 0 in the reconstruction",
                }[m],
            )
            if knocked:
                inside_features.draw_feature_knockout(browser, text, list(knocked), mode)


def train_own(view) -> None:
    """Pick a hook point, a dictionary size and a sparsity: the autoencoder trains as a lab run of yours."""
    box = sections.lazy("Train your own autoencoder on this model", "sae_train")
    if box is not None:
        with box, friendly_errors("the autoencoder run"):
            points = hook_points(view.model.config)
            c1, c2, c3 = st.columns(3)
            hook = c1.selectbox("Hook point", list(points), index=0, key=state.widget("sae_hook"))
            size = c2.select_slider("Dictionary size", SAE_SIZES, 512, key=state.widget("sae_size"))
            steps = c3.slider("Steps", 50, 2000, SAE_TRAIN_STEPS, 50, key=state.widget("sae_steps"))
            kind = c1.radio("Sparsity", ("TopK", "L1"), horizontal=True, key=state.widget("sae_sparsity"))
            k = c2.slider("k (features per token)", 1, 64, 16, key=state.widget("sae_k")) if kind == "TopK" else 0
            l1 = c3.number_input("L1 coefficient", 1e-5, 10.0, 1e-2, format="%.5f", key=state.widget("sae_l1"))
            layer, point = points[hook]
            config = sae_config(layer, point, int(size), int(k), float(l1), int(steps))
            st.caption(
                f"{config.tokens:,} activations at {config.hook} gathered from the sidebar's corpus, then "
                f"{config.steps} steps of {config.batch} tokens ({config.sparsity}); the spliced-in loss every "
                f"{config.eval_every} steps. It runs in a lab worker of yours: Pause and Stop below."
            )
            if st.button("Train the autoencoder", type="primary", key=state.widget("sae_train")):
                inside_features.submit_sae_run(view, config)
            runs.refusal("sae_train")
    if inside_features.sae_runs():
        runs.live(
            inside_features.draw_sae_runs,
            active=lambda: any(job.changing for job in inside_features.sae_runs()),
            name="inside.features.live",
        )


# ------------------------------------------------------------------ an induction head forming
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
        inside_induction.live_induction(
            active=lambda: (job := inside_induction.induction_job()) is not None and job.changing,
            seconds=4.0,
            name="inside.induction.live",
        )


SECTIONS = (
    lens_section,
    heads_section,
    loss_section,
    ablation_section,
    patching_section,
    steering_section,
    features_section,
    induction_section,
)
LINKED = {  # a link that sets these (and names no tab) opens their tab
    "Head detectors": ("detector",),
    "Loss per token": ("loss_text",),
    "Knock out heads": ("ablate_mode", "ablate_text", "knocked"),
    "Patch activations": ("patch_answer", "patch_clean", "patch_component", "patch_corrupted", "patch_wrong"),
    "Steer": (
        "steer_alpha",
        "steer_kind",
        "steer_layer",
        "steer_negative",
        "steer_positive",
        "steer_prompt",
        "steer_token",
    ),
    "Features": ("feature", "feature_alpha", "feature_prompt", "feature_search", "feature_text"),
}
sections.parts(dict(zip(TABS, SECTIONS)), share.bind("look"), LINKED)  # only the open tab runs: the others cost nothing
