"""The Inside-the-model page: it opens on the logit lens; the head detectors, the loss on every token, the
interventions (knock out heads, patch activations, steer) and an induction head forming are one tab away.

Every number comes from llmviz.interpret; this file only draws them. A tab runs only while it is open (the tabs are
bound to the link as ``look``), and each section is an st.fragment, so a widget in one reruns that section alone.
"""

import functools
import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch
from plotly.subplots import make_subplots

import ui
from llmviz.errors import LlmvizError
from llmviz.interpret import ablation, heads, induction, interventions, patching, steering
from llmviz.interpret import lens as lenses
from llmviz.jobs import tasks
from llmviz.tokenizers.base import TokenizerError
from llmviz.tokenizers.char_word import CharTokenizer
from ui import charts, picker, sections, share, state
from ui.panels import interventions as panels
from ui.panels import lens as lens_ui
from ui.panels import runs as training
from ui.text import literal_html, literal_markdown, tidy_floats

ui.settings()
ui.page_header(
    "Inside the model: what each layer predicts, what each head does",
    "Read every block's prediction, then reach in and change the model.",
)
st.caption(f"Model: {literal_markdown(picker.current().label)} (picked in the sidebar).")

# sentences of the shipped GPT's corpus (the Python reference manual, pydoc_data.topics)
DEFAULT_SENTENCE = 'The "for" statement is used to iterate over the elements of a sequence'
DEFAULT_LOSS_TEXT = (
    "Lists are mutable sequences, typically used to store collections of homogeneous items (where the precise "
    "degree of similarity will vary by application)."
)
DEFAULT_ABLATION_TEXT = 'The "while" statement is used for repeated execution as long as an expression is true.'
DEFAULT_CLEAN = 'The "for" statement is used to iterate over the elements of a'
DEFAULT_CORRUPTED = 'The "if" statement is used to iterate over the elements of a'
DEFAULT_STEER_PROMPT = "The"
DEFAULT_POSITIVE = 'The "for" statement\nThe "while" statement\nThe "if" statement'
DEFAULT_NEGATIVE = "Lists are mutable sequences\nTuples are immutable sequences\nStrings are immutable sequences"
MAX_TOKENS = 64  # positions shown in the lens grid and the per-token loss
TABS = (
    "Logit lens",
    "Head detectors",
    "Loss per token",
    "Knock out heads",
    "Patch activations",
    "Steer",
    "Induction run",
)


def tokens_of(view, text: str, limit: int) -> tuple[list[int], str | None]:
    """Token ids of ``text`` for ``view`` (at most ``limit``), and a note to show, if any.

    A character-level run (the induction run) cannot read characters it never saw: the page says so once, in the
    page (it is not a failure of the server, so nothing goes to the log)."""
    try:
        ids = view.tokenizer.encode(text)
    except TokenizerError as error:
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


def exact_ids(view, text: str, what: str) -> list[int]:
    """The token ids of ``text`` for an intervention (no stand-in: a text the model cannot read is refused)."""
    tokenizer = view.tokenizer
    if isinstance(tokenizer, CharTokenizer) and tokenizer.unknown_characters(text):
        unknown = "".join(tokenizer.unknown_characters(text)[:10])
        raise TokenizerError(f"The {what} has characters this model never saw ({unknown!r}): type others.")
    ids = tokenizer.encode(text)
    if len(ids) > view.model.config.context_length:
        raise TokenizerError(
            f"The {what} is {len(ids)} tokens long; this model reads {view.model.config.context_length}: shorten it."
        )
    return ids


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
def render_lens(view, column: str) -> None:
    ids, note = tokens_of(view, state.value("lens_text", DEFAULT_SENTENCE), 32)
    if len(ids) < 2:
        st.warning("Type at least two tokens: the lens shows what each position predicts comes next.")
        return
    if note:
        st.caption(note)
    lens = _lens(view.content_key, tuple(ids), view.model)
    tokens = [label(view, i) for i in ids]
    columns = charts.unique_labels(tokens)
    start = 0
    grid = st.container()  # the grid first, the slider that moves it along the sentence under it
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
    charts.show_in(
        grid,
        lens_ui.grid_figure(lens, tokens, columns, lambda i: label(view, i), positions),
        width="stretch",
        key=state.widget("lens_grid_", column),
    )
    final_norm = "RMSNorm" if getattr(view.model.config, "norm", "") == "rmsnorm" else "LayerNorm"
    grid.markdown(  # under the grid: the page opens on the picture
        f"Each row reads the residual stream after that block through the model's **final {final_norm} and output "
        "head**, $\\text{softmax}(W_U\\,\\mathrm{Norm}_f(x_\\ell))$, as if the later blocks were skipped. The last row "
        "is the model's own prediction; hover a cell for the top 5."
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
    st.header("The logit lens, block by block")
    view = picker.current()
    if not picker.gpt_or_note(view, "the logit lens reads a GPT's residual stream"):
        return
    st.text_input("A sentence", DEFAULT_SENTENCE, max_chars=2000, **share.bind("lens_text"))
    share.carried_note("lens_text")
    with ui.friendly_errors("the logit lens"):
        both(render_lens, "lens", "the logit lens")


# ------------------------------------------------------------------ head detectors
def uniform_score(kind: str, tokens: list[int]) -> float:
    """The score of a head that spreads its attention evenly over the positions it can see (the chance level)."""
    size = len(tokens)
    uniform = torch.tril(torch.ones(size, size))
    uniform = uniform / uniform.sum(-1, keepdim=True)
    return float(heads.detector_score(uniform, heads.detector_mask(kind, tokens)))


def clearest_detector(scores: dict, tokens: list[int]) -> str:
    """The detector whose best head stands furthest above a head attending evenly: the one that shows a head."""
    return max(heads.DETECTORS, key=lambda kind: float(scores[kind].max()) - uniform_score(kind, tokens))


def render_heads(view, column: str) -> None:
    tokens, scores = _heads(view.content_key, view.model)
    kind = state.value("detector") or clearest_detector(scores, tokens)
    values = scores[kind]  # (L, H)
    layers, count = values.shape
    chance = uniform_score(kind, tokens)
    top = max(float(values.max()), 2 * chance, 0.1)  # the scale ends at the best head: it stands out
    figure = charts.heatmap(
        values,
        x_labels=[f"head {h}" for h in range(count)],
        y_labels=[f"layer {layer}" for layer in range(layers)],
        zmin=0,
        zmax=top,
        text_format=".2f",
        x_title="head",
        y_title="layer",
    )
    charts.show(figure, width="stretch", key=state.widget("heads_", column))
    best = sorted(
        ((float(values[layer, head]), layer, head) for layer in range(layers) for head in range(count)), reverse=True
    )[:3]
    st.caption(
        "Highest: "
        + ", ".join(f"layer {layer} head {head} ({score:.2f})" for score, layer, head in best)
        + f". A head that spreads its attention evenly scores about {chance:.2f}; the colours run from 0 to {top:.2f}."
    )
    if kind == "induction" and best[0][0] < induction.FORMED:
        st.info(
            f"No head scores high here (an induction head scores {induction.FORMED:.2f} or more): train the induction "
            "run (the **Induction run** tab) to see one form."
        )
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
    st.header("Head detectors: what does each attention head look at?")
    view = picker.current()
    if not picker.gpt_or_note(view, "the detectors read a GPT's attention patterns"):
        return
    with ui.friendly_errors("the head detectors"):
        tokens, scores = _heads(view.content_key, view.model)
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
        if view.run_id is not None and view.run_id == getattr(induction_job(), "id", None):
            st.caption(
                "This is the induction run, which scores its heads on other inputs (its test lines, their "
                "attention averaged): the same head's score differs a little between the two."
            )
        both(render_heads, "heads", "the head scores")
        with st.expander("The test input"):
            st.code(" | ".join(label(view, t) for t in tokens[:half]) + "\n(then the same again)", language=None)
    picker.offer_bigger_model(
        "Compare these heads with those of a pretrained model, trained on billions of words of web text:",
        page="inside",
    )


# ------------------------------------------------------------------ loss on every token
def render_losses(view, column: str) -> None:
    ids, note = tokens_of(view, state.value("loss_text", DEFAULT_LOSS_TEXT), MAX_TOKENS * 4)
    if len(ids) < 2:
        st.warning("Type at least two tokens: the first token has nothing before it to be predicted from.")
        return
    if note:
        st.caption(note)
    result = _losses(view.content_key, tuple(ids), view.model)
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
    st.header("The loss on every token")
    view = picker.current()
    if not picker.gpt_or_note(view, "this section scores a GPT's next-token predictions"):
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


# ------------------------------------------------------------------ knock out heads
@st.cache_data(show_spinner="Knocking out each head in turn…", max_entries=64)
def _head_effects(key: str, ids: tuple[int, ...], mode: str, _model) -> ablation.HeadEffects:
    return ablation.head_effects(_model, list(ids), mode)


@st.cache_data(show_spinner=False, max_entries=128)
def _ablate(key: str, ids: tuple[int, ...], knocked: tuple[tuple[int, int], ...], mode: str, _model):
    return ablation.ablate(_model, list(ids), knocked, mode)


def head_name(pair: tuple[int, int]) -> str:
    return f"layer {pair[0]}, head {pair[1]}"


def ablation_grid(view, ids: list[int], mode: str) -> ablation.HeadEffects | None:
    """Every head knocked out alone: asked for with the button (after a guess), in the page or as a lab job."""
    config = view.model.config
    every = [(layer, head) for layer in range(config.n_layers) for head in range(config.n_heads)]
    st.subheader("Every head, knocked out alone")
    guess = st.selectbox(
        "First, your guess: which head matters most for this text?",
        [None, *every],
        format_func=lambda pair: "(no guess)" if pair is None else head_name(pair),
        key=state.widget("ablation_guess"),
    )
    spec = panels.spec_key(view.content_key, ids, mode)
    asked = state.SWEEP_ASKED.setdefault()
    if st.button("Knock out each head, one at a time", type="primary", key=state.widget("ablation_run")):
        asked["ablation"] = spec
    if asked.get("ablation") != spec:
        st.caption(
            f"The {len(every)} heads are knocked out one after the other and the loss on the text measured each time."
        )
        return None
    result = panels.sweep(
        "ablation",
        spec,
        interventions.fits_in_page(config, len(ids), len(every) + 1),
        lambda: _head_effects(view.content_key, tuple(ids), mode, view.model),
        functools.partial(tasks.head_effects_sweep, model=view.model, ids=ids, mode=mode),
        label=f"Knock out every head · {view.label}",
        total=len(every),
        job_slot=state.ABLATION_JOB,
        what="heads knocked out",
        model=view.model,
    )
    if result is not None and guess is not None:
        ranking = [(layer, head) for _effect, layer, head in result.ranked()]
        if guess in ranking:
            place = ranking.index(guess) + 1
            st.markdown(
                f"Your guess, **{head_name(guess)}**, comes {place} of {len(ranking)}: knocking it out changes the "
                f"loss by {float(result.effects[guess]):+.3f} nats (the most: {head_name(ranking[0])}, "
                f"{float(result.effects[ranking[0]]):+.3f})."
            )
    return result


def draw_effects(view, result: ablation.HeadEffects, ids: list[int]) -> None:
    charts.show(panels.effects_figure(result), key=state.widget("ablation_grid"))
    biggest, layer, head = result.ranked()[0]
    measured = "" if result.complete else f" Stopped: {result.done} of {result.losses.numel()} heads measured."
    st.caption(
        f"The loss on these {len(ids)} tokens is {result.clean_loss:.4f} nats with every head; each cell is the change "
        f"without that head ({ablation.MODE_HELP[result.mode]}). Knocking out {head_name((layer, head))} changes it "
        f"most: {biggest:+.4f}.{measured}"
    )
    st.download_button(
        "Download the grid (CSV)",
        panels.effects_frame(result).to_csv(index=False),
        file_name="llmviz-head-ablation.csv",
        mime="text/csv",
        key=state.widget("ablation_download"),
    )


def draw_knockout(view, ids: list[int], mode: str) -> None:
    """Several heads knocked out together: the loss before and after, and the change on every token."""
    config = view.model.config
    every = [f"{layer}.{head}" for layer in range(config.n_layers) for head in range(config.n_heads)]
    st.subheader("Several heads together")
    kept = [value for value in state.value("knocked") or [] if value in every]
    if kept != (state.value("knocked") or []):
        state.set_value("knocked", kept)  # a head of another model (or a hand-made link) is dropped
    chosen = st.multiselect(
        "Knock out these heads together",
        every,
        format_func=lambda value: f"layer {value.split('.')[0]}, head {value.split('.')[1]}",
        placeholder="Pick heads: the reddest cells above, or your guess",
        **share.bind("knocked"),
    )
    if not chosen:
        return
    knocked = tuple(tuple(int(part) for part in value.split(".")) for value in chosen)
    result = _ablate(view.content_key, tuple(ids), knocked, mode, view.model)
    charts.latex(
        rf"\mathcal{{L}}_{{\text{{{len(knocked)} head{'s' if len(knocked) > 1 else ''} out}}}} - \mathcal{{L}} = "
        rf"{result.loss_after:.4f} - {result.loss_before:.4f} = {result.change:+.4f}\ \text{{nats}}"
    )
    tokens = [label(view, i) for i in ids]
    charts.show(panels.token_change_figure(result, tokens), key=state.widget("ablation_tokens"))
    st.caption("The loss on every next token without those heads, minus with them: red, it got harder to predict.")


@sections.section("inside.ablation")
def ablation_section() -> None:
    st.header("Knock out heads: which ones does the loss need?")
    view = picker.current()
    if not picker.gpt_or_note(view, "knocking out heads needs a GPT's attention heads"):
        return
    st.text_area("Text", DEFAULT_ABLATION_TEXT, max_chars=4000, height=70, **share.bind("ablate_text"))
    share.carried_note("ablate_text")
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
    with ui.friendly_errors("knocking out heads"):
        ids = exact_ids(view, state.value("ablate_text", DEFAULT_ABLATION_TEXT), "text")
        interventions.check_text(view.model, ids)
        result = ablation_grid(view, ids, mode)
        if result is not None:
            draw_effects(view, result, ids)
        draw_knockout(view, ids, mode)


# ------------------------------------------------------------------ patch activations
@st.cache_data(show_spinner="Patching every layer and position…", max_entries=64)
def _patching(key: str, clean: tuple, corrupted: tuple, answer: int, wrong: int, component: str, _model):
    return patching.patching(_model, list(clean), list(corrupted), answer, wrong, component)


@st.cache_data(show_spinner=False, max_entries=128)
def _answers(key: str, clean: tuple, corrupted: tuple, _model) -> tuple[int, int]:
    return patching.default_answers(_model, list(clean), list(corrupted))


def answer_token(view, name: str, fallback: int, what: str) -> int:
    """The token typed in the box ``name`` (one token), or ``fallback`` when the box is empty."""
    typed = state.value(name) or ""
    if not typed:
        return fallback
    ids = exact_ids(view, typed, what)
    if len(ids) != 1:
        raise TokenizerError(
            f"The {what} must be one token; {typed!r} is {len(ids)} ({' + '.join(label(view, i) for i in ids)})."
        )
    return ids[0]


def pair_chips(view, clean: list[int], corrupted: list[int]) -> None:
    """Both prompts token by token, the tokens that differ highlighted."""
    for name, ids, other in (("clean", clean, corrupted), ("corrupted", corrupted, clean)):
        pieces = [
            f'<span class="tok"{" style=background:#ffe066" if i >= len(other) or t != other[i] else ""}>'
            f"{literal_html(label(view, t))}</span>"
            for i, t in enumerate(ids)
        ]
        st.markdown(
            "<style>.tok{display:inline-block;margin:1px;padding:1px 3px;border-radius:3px;"
            "border:1px solid #ddd;font-family:monospace;white-space:pre}</style>"
            f'<div style="line-height:1.9"><b>{name}</b> ({len(ids)} tokens): {"".join(pieces)}</div>',
            unsafe_allow_html=True,
        )


@sections.section("inside.patching")
def patching_section() -> None:
    st.header("Patch activations: where does the answer live?")
    view = picker.current()
    if not picker.gpt_or_note(view, "patching needs a GPT's named activations"):
        return
    left, right = st.columns(2)
    left.text_input("Clean prompt", DEFAULT_CLEAN, max_chars=1000, **share.bind("patch_clean"))
    right.text_input(
        "Corrupted prompt (a word changed)", DEFAULT_CORRUPTED, max_chars=1000, **share.bind("patch_corrupted")
    )
    component = st.radio(
        "Patch",
        patching.COMPONENTS,
        format_func=lambda c: patching.COMPONENT_LABELS[c],
        horizontal=True,
        **share.bind("patch_component"),
    )
    with ui.friendly_errors("activation patching"):
        clean = exact_ids(view, state.value("patch_clean", DEFAULT_CLEAN), "clean prompt")
        corrupted = exact_ids(view, state.value("patch_corrupted", DEFAULT_CORRUPTED), "corrupted prompt")
        pair_chips(view, clean, corrupted)
        patching.check_pair(view.model, clean, corrupted)
        patching.check_component(view.model, component)
        top_clean, top_corrupted = _answers(view.content_key, tuple(clean), tuple(corrupted), view.model)
        with st.expander("The two tokens compared (default: each run's most likely next token)"):
            a, b = st.columns(2)
            a.text_input("Answer", "", max_chars=100, **share.bind("patch_answer"), placeholder=label(view, top_clean))
            b.text_input(
                "Wrong", "", max_chars=100, **share.bind("patch_wrong"), placeholder=label(view, top_corrupted)
            )
        answer = answer_token(view, "patch_answer", top_clean, "answer")
        wrong = answer_token(view, "patch_wrong", top_corrupted, "wrong token")
        if answer == wrong:
            raise TokenizerError("The answer and the wrong token are the same token: pick two different ones.")
        st.markdown(
            "Run the corrupted prompt with one activation taken from the clean run — "
            f"{patching.COMPONENT_HELP[component]} — and see how much of the clean answer comes back, measured by "
            "$d = \\text{logit}(\\text{answer}) - \\text{logit}(\\text{wrong})$ at the last position: answer "
            f"**{literal_markdown(label(view, answer))}**, wrong **{literal_markdown(label(view, wrong))}**."
        )
        config = view.model.config
        cells = len(patching.cells_of(view.model, component, len(clean), patching.first_difference(clean, corrupted)))
        spec = panels.spec_key(view.content_key, clean, corrupted, answer, wrong, component)
        st.subheader("Every layer × head" if component == "attn.z" else "Every layer × position")
        asked = state.SWEEP_ASKED.setdefault()
        if st.button("Patch every one", type="primary", key=state.widget("patching_run")):
            asked["patching"] = spec
        if asked.get("patching") != spec:
            st.caption(f"Before you press: where do you expect the answer to be? ({cells} patched runs.)")
            return
        result = panels.sweep(
            "patching",
            spec,
            interventions.fits_in_page(config, len(clean), cells),
            lambda: _patching(view.content_key, tuple(clean), tuple(corrupted), answer, wrong, component, view.model),
            functools.partial(
                tasks.patching_sweep,
                model=view.model,
                clean=clean,
                corrupted=corrupted,
                answer=answer,
                wrong=wrong,
                component=component,
            ),
            label=f"Activation patching · {view.label}",
            total=config.n_layers * (config.n_heads if component == "attn.z" else len(clean)),
            job_slot=state.PATCHING_JOB,
            what="patches measured",
            model=view.model,
        )
        if result is not None:
            draw_patching(view, result, corrupted, clean)


def draw_patching(view, result: patching.Patching, corrupted: list[int], clean: list[int]) -> None:
    if result.component == "attn.z":
        columns = [f"head {h}" for h in range(result.differences.shape[1])]
    else:
        columns = charts.unique_labels(
            [label(view, c) if c == k else f"{label(view, k)}→{label(view, c)}" for k, c in zip(clean, corrupted)]
        )
    charts.show(panels.patching_figure(result, columns), key=state.widget("patching_grid"))
    d_clean, d_corrupted = result.clean_difference, result.corrupted_difference
    charts.latex(
        rf"\text{{share restored}} = \frac{{d_{{\text{{patched}}}} - d_{{\text{{corrupted}}}}}}"
        rf"{{d_{{\text{{clean}}}} - d_{{\text{{corrupted}}}}}} = \frac{{d_{{\text{{patched}}}} - ({d_corrupted:.3f})}}"
        rf"{{{d_clean:.3f} - ({d_corrupted:.3f})}}"
    )
    first = 0 if result.component == "attn.z" else result.first_difference + 1
    away = [  # the changed token itself restores everything at layer 0: the interest is where it goes next
        (float(value), layer, index)
        for layer, row in enumerate(result.restored.tolist())
        for index, value in enumerate(row)
        if index >= first and value == value
    ]
    measured = "" if result.complete else f" Stopped: {result.done} of {result.differences.numel()} cells measured."
    where = ""
    if away:
        best, layer, index = max(away)
        after = "" if result.component == "attn.z" else " after the changed token"
        where = f" The most{after}: layer {layer}, {columns[index]} ({best:.2f})."
    st.caption(
        "1 = that activation alone brings the clean answer back; 0 = it carries none of the difference."
        f"{where}{measured}"
    )
    st.download_button(
        "Download the grid (CSV)",
        panels.patching_frame(result, columns, label(view, result.answer), label(view, result.wrong)).to_csv(
            index=False
        ),
        file_name="llmviz-activation-patching.csv",
        mime="text/csv",
        key=state.widget("patching_download"),
    )


# ------------------------------------------------------------------ steering
def steering_direction(view, kind: str, layer: int):
    if kind == "token":
        typed = state.value("steer_token") or ""
        ids = exact_ids(view, typed, "token") if typed else []
        if len(ids) != 1:
            raise TokenizerError("Type one token to steer along (a word the tokenizer keeps whole, such as ' list').")
        return steering.token_direction(view.model, ids[0]), f"the direction of {label(view, ids[0])!r}"
    sets = []
    for name, default in (("steer_positive", DEFAULT_POSITIVE), ("steer_negative", DEFAULT_NEGATIVE)):
        lines = [line for line in (state.value(name, default) or "").splitlines() if line.strip()]
        sets.append([exact_ids(view, line, "prompt") for line in lines[:20]])
    return _mean_difference(
        view.content_key, tuple(map(tuple, sets[0])), tuple(map(tuple, sets[1])), layer, view.model
    ), (f"the mean difference of {len(sets[0])} and {len(sets[1])} prompts")


@st.cache_data(show_spinner=False, max_entries=64)
def _mean_difference(key: str, positive: tuple, negative: tuple, layer: int, _model):
    return steering.mean_difference(_model, [list(p) for p in positive], [list(n) for n in negative], layer)


@st.cache_data(show_spinner="Generating with and without steering…", max_entries=64)
def _steered(key: str, ids: tuple, layer: int, direction: tuple, alpha: float, tokens: int, seed: int, _model):
    return steering.steered_pair(_model, list(ids), layer, torch.tensor(direction), alpha, tokens, 0.8, seed)


NEW_TOKENS = 30  # written with and without steering


def steered_texts(view, ids: list[int], layer: int, direction, alpha: float, seed: int):
    """The plain and the steered continuation: written here for a small model, by a lab job (asked for with a button)
    for a large one; None until there is one."""
    spec = panels.spec_key(view.content_key, ids, layer, direction.tolist(), alpha, seed)
    work = steering.generation_work(view.model.config, len(ids), NEW_TOKENS)
    fits = work <= interventions.IN_PAGE_WORK
    if not fits:
        asked = state.SWEEP_ASKED.setdefault()
        if st.button("Write both texts", type="primary", key=state.widget("steer_run")):
            asked["steering"] = spec
        if asked.get("steering") != spec:
            st.caption(
                f"This model is large: writing {NEW_TOKENS} tokens twice runs as a lab job of yours (with its "
                "progress and a Stop button)."
            )
            return None
    return panels.sweep(
        "steering",
        spec,
        fits,
        lambda: _steered(
            view.content_key, tuple(ids), layer, tuple(direction.tolist()), alpha, NEW_TOKENS, seed, view.model
        ),
        functools.partial(
            tasks.steering_generation,
            model=view.model,
            ids=ids,
            layer=layer,
            direction=direction.tolist(),
            alpha=alpha,
            new_tokens=NEW_TOKENS,
            temperature=0.8,
            seed=seed,
        ),
        label=f"Steering · {view.label}",
        total=2 * NEW_TOKENS,
        job_slot=state.STEERING_JOB,
        what="tokens written",
        model=view.model,
    )


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
    c1.text_input("Prompt", DEFAULT_STEER_PROMPT, max_chars=500, **share.bind("steer_prompt"))
    layer = (
        ui.bounded_slider("Layer", 0, config.n_layers - 1, config.n_layers // 2, where=c2, **share.bind("steer_layer"))
        if config.n_layers > 1
        else ui.index_slider("Layer", 1, where=c2)
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
        a.text_area(
            "Towards these prompts (one a line)",
            DEFAULT_POSITIVE,
            height=90,
            max_chars=2000,
            **share.bind("steer_positive"),
        )
        b.text_area("Away from these", DEFAULT_NEGATIVE, height=90, max_chars=2000, **share.bind("steer_negative"))
    with ui.friendly_errors("steering"):
        direction, what = steering_direction(view, kind, layer)
        prompt = state.value("steer_prompt", DEFAULT_STEER_PROMPT) or ""
        ids = exact_ids(view, prompt, "prompt") or view.tokenizer.encode("\n")[:1]
        seed = int(state.value("seed") or 0)
        pair = steered_texts(view, ids, layer, direction, float(alpha), seed)
        if pair is None:
            return
        norm = steering.stream_norm(view.model, ids, layer)
        left, right = st.columns(2)
        left.markdown("**Without steering**")
        left.code(prompt + view.tokenizer.decode(pair.plain), language=None, wrap_lines=True)
        right.markdown(f"**With α = {alpha:g} × {literal_markdown(what)}, at layer {layer}**")
        right.code(prompt + view.tokenizer.decode(pair.steered), language=None, wrap_lines=True)
        st.caption(
            f"|α · direction| = {abs(alpha) * pair.direction_norm:.2f}, against a residual stream {norm:.2f} long on "
            f"average entering block {layer}. Both texts sample {NEW_TOKENS} tokens at temperature 0.8 with the same "
            f"seed ({seed}, the sidebar's): where they differ, the steering did it."
        )
        st.download_button(
            "Download both texts (JSON)",
            json.dumps(
                {
                    "prompt": prompt,
                    "layer": layer,
                    "alpha": alpha,
                    "direction": what,
                    "plain": view.tokenizer.decode(pair.plain),
                    "steered": view.tokenizer.decode(pair.steered),
                },
                ensure_ascii=False,
                indent=1,
            ),
            file_name="llmviz-steering.json",
            mime="application/json",
            key=state.widget("steer_download"),
        )


# ------------------------------------------------------------------ an induction head forming
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
    palette = ["#4c6ef5", "#e8590c", "#2f9e44", "#ae3ec9", "#1098ad", "#f08c00", "#d6336c", "#5c940d"]
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
            f"the other tabs and every page then show it instead of {literal_markdown(picker.current().label)}. "
            "It reads lines of random characters, so the logit lens shows single random characters. This tab "
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
    steps = induction.chart_steps(store, status.done)
    curve = [_probe(job.id, step, store, description) for step in steps]
    last = curve[-1]
    layer, head, _score = induction.strongest_induction_head(last)
    name = f"layer {layer}, head {head}"
    knocked = [_knockout(job.id, step, layer, head, store, description) for step in steps]
    view = picker.current()
    picked = view.step if view.run_id == job.id else None
    charts.show(phase_chart(curve, picked, knocked, name), key=state.widget("induction_chart"))
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
            "This run is the model picked in the sidebar, so the other tabs show it (random characters), not the "
            "model you had picked."
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
    with ui.friendly_errors("the induction run"):
        # redrawn every 4 s while the run trains; still while it is paused or over
        training.live(
            induction_body,
            active=lambda: (job := induction_job()) is not None and job.changing,
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
}
sections.parts(dict(zip(TABS, SECTIONS)), share.bind("look"), LINKED)  # only the open tab runs: the others cost nothing
