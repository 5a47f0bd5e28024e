"""The Sampling page: temperature, top-k, top-p, greedy and beam search, one token at a time.

It opens on the picked model's next-token bars for a prompt, transform by transform; step mode, generation, three
temperatures and the KV cache are tabs under them (inside the same section: moving a slider redraws the open tab).
This file wires the sections; ui/panels/sampling.py draws them and llmviz/lessons/sampling.py computes their numbers.
"""

from typing import Any

import streamlit as st

from llmviz.generation.sampling import compare_kv_cache, encode_prompt, generate, visible_tokens
from llmviz.lessons.defaults import DEFAULT_PROMPT
from llmviz.lessons.quiz import sampling_questions
from llmviz.lessons.sampling import (
    BEAM_TOKENS,
    METHODS,
    at_temperatures,
    beam,
    method_temperature,
    next_step,
    top_candidates,
    top_k_default,
    window_note,
)
from ui import boxes, picker, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import quiz, sampling
from ui.sources import ModelView
from ui.text import literal_markdown
from ui.widgets import bounded_slider, page_header

settings = shared_sidebar.settings()
page_header(
    "Sampling: how a model writes",
    "The model scores every token; softmax, temperature, top-k and top-p turn scores into one choice.",
)

view = picker.current()
if view.family == "minilm":
    st.info(
        f"{literal_markdown(view.label)} is an encoder: it reads a whole sentence at once and does not write text. "
        f"This page "
        "shows the shipped GPT instead; pick a GPT or one of your runs in the sidebar."
    )
    view = picker.shipped_default()
model, tokenizer = view.model, view.tokenizer
# a model that cannot read the manual's prompt (a character model of first names) starts from nothing
opening = state.follow_default("prompt", tokenizer, DEFAULT_PROMPT, "")
st.caption(f"Model: {literal_markdown(view.label)}, from the sidebar.")


st.subheader("Next token: transform by transform")  # its controls share its slide (presenter mode)
prompt = boxes.text_input("Prompt", opening, 2000, "Your prompt", **share.bind("prompt"))
TOP_K_DEFAULT = top_k_default(tokenizer.vocab_size)


def chosen_settings() -> tuple[float, int, float]:
    """Temperature, top-k and top-p as set by section 1's sliders (their widgets live in that section, so moving
    one reruns it alone; the other sections read the values when they run)."""
    return (
        float(state.value("temperature", 0.8)),
        min(int(state.value("top_k", TOP_K_DEFAULT)), tokenizer.vocab_size),
        float(state.value("top_p", 0.9)),
    )


def sampler_controls() -> tuple[float, int, float]:
    c1, c2, c3 = st.columns(3)
    temperature = c1.slider(
        "Temperature",
        0.0,
        2.5,
        0.8,
        0.05,
        help="0 = greedy: always the most likely token.",
        **share.bind("temperature"),
    )
    top_k = bounded_slider(
        "Top-k",
        0,
        tokenizer.vocab_size,
        TOP_K_DEFAULT,
        where=c2,
        help=f"0 = off. {tokenizer.vocab_size:,} (the whole vocabulary) keeps every token.",
        **share.bind("top_k"),
    )
    top_p = c3.slider(
        "Top-p",
        0.01,
        1.0,
        0.9,
        0.01,
        help="1 = off. Keep the most likely tokens until their probability adds up to p.",
        **share.bind("top_p"),
    )
    return temperature, top_k, top_p


encoded = encode_prompt(tokenizer, prompt, model)
if encoded.dropped:
    st.warning(
        f"This model's vocabulary has no {literal_markdown(', '.join(repr(c) for c in encoded.dropped))}: "
        "those characters were left out of the prompt."
    )
if encoded.cropped:
    st.warning(
        f"The prompt was cut: this model sees at most {visible_tokens(model)} tokens, so its first "
        f"{encoded.cropped} were left out and the model sees the last {len(encoded.ids)}."
    )
if encoded.start_token:
    st.info(
        f"{'Empty prompt' if not prompt else 'Nothing of the prompt is left'}: generation starts from the "
        f"boundary token {encoded.start_token}."
    )

quiz.section(
    "sampling",
    lambda: sampling_questions(
        sampling.distribution_for(view.content_key, prompt, *chosen_settings(), view).distribution.logits,
        tokenizer.printable,
        *chosen_settings(),
    ),
)


# ------------------------------------------------------------------ the distribution
@sections.section("sampling.distribution", what="the next-token distribution")
def distribution_section(view: ModelView, prompt: str, encoded) -> None:
    """Temperature, top-k and top-p with the distribution they shape and the step mode they drive: moving a
    slider reruns this section alone."""
    temperature, top_k, top_p = sampler_controls()
    sampling.distribution_panels(view, prompt, temperature, top_k, top_p)
    before_after(view)
    picker.offer_bigger_model(
        "A model trained on billions of words of web text writes fluent English: compare its next-token "
        "distribution, and what it writes, with this small model's.",
        page="sampling",
    )
    sections.parts(
        {
            "Step mode": lambda: step_mode_part(view, encoded, temperature, top_k, top_p),
            "Generate": lambda: generate_part(view, encoded),
            "Three temperatures": lambda: temperatures_part(view, encoded),
            "The KV cache": lambda: kv_cache_part(view, encoded),
        },
        share.bind("sampling_part"),
    )


def step_mode_part(view: ModelView, encoded, temperature: float, top_k: int, top_p: float) -> None:
    st.subheader("Step mode: one token at a time, and take a different branch")
    step_mode(view, encoded, temperature, top_k, top_p)


def generate_part(view: ModelView, encoded) -> None:
    st.subheader("Generate")
    generate_section(view, encoded)


def temperatures_part(view: ModelView, encoded) -> None:
    st.subheader("The same prompt at three temperatures")
    three_temperatures(view, encoded)


def kv_cache_part(view: ModelView, encoded) -> None:
    st.subheader("The KV cache: the same tokens, less work")
    kv_cache(view, encoded)


def before_after(view: ModelView) -> None:
    st.subheader("Step 0 vs step N: the next token, before and after training")
    st.caption("The same prompt's 10 most likely next tokens at step 0 (random weights: nearly uniform) and now.")
    if box := sections.lazy("Compare step 0 with the picked step", "sampling_before_after"):
        with box:
            picker.before_after(
                lambda shown, column: sampling.before_after_bars(prompt, shown, column),
                what="the next-token distribution",
                view=view,
            )


# ------------------------------------------------------------------ generation
def generate_controls(view: ModelView, encoded) -> tuple[str, int, int, bool, Any]:
    """The method, the beam width and the tokens to write, with notes on what the page will do; whether Generate was
    pressed, and the column the text goes in."""
    m1, m2 = st.columns([3, 1])
    method = m1.radio("Method", list(METHODS), horizontal=True, persist_state="page", **share.bind("method"))
    width = m2.slider(
        "Beam width", 1, 8, 3, disabled=method != "beam search", persist_state="page", **share.bind("beam_width")
    )
    st.caption("Generate uses the temperature, top-k and top-p set in section 1 when you press it.")
    g1, g2 = st.columns([1, 3])
    new_tokens = g1.slider("Tokens to generate", 1, 200, 40, persist_state="page", **share.bind("new_tokens"))
    if note := window_note(view.model, len(encoded.ids), new_tokens):
        g1.caption(note)
    if method == "beam search" and new_tokens > BEAM_TOKENS:
        g1.caption(
            f"Beam search writes {BEAM_TOKENS} tokens here, not {new_tokens}: its tree below draws every "
            "beam at every depth, and more depths would not fit on the page."
        )
    return method, width, new_tokens, g1.button("Generate", type="primary"), g2


def run_generation(view: ModelView, encoded, method: str, width: int, new_tokens: int) -> None:
    """Write the tokens (or the beam search) and keep them for this model, to be drawn on every rerun."""
    temperature, top_k, top_p = chosen_settings()
    with friendly_errors("generation"):
        if method == "beam search":
            result = beam(view.model, encoded.ids, width, new_tokens)
            state.BEAM.set((view.content_key, result, list(encoded.ids)))
        else:
            t = method_temperature(method, temperature)
            records = list(generate(view.model, encoded.ids, new_tokens, t, top_k, top_p, seed=settings.run_seed()))
            state.GENERATED.set((view.content_key, records, encoded.kept_text))


@sections.section("sampling.generate")
def generate_section(view: ModelView, encoded) -> None:
    method, width, new_tokens, pressed, column = generate_controls(view, encoded)
    if pressed:
        run_generation(view, encoded, method, width, new_tokens)
    label = view.content_key
    if method != "beam search" and state.GENERATED.get(default=(None,))[0] == label:
        with column:
            sampling.generated_text(view.tokenizer, *state.GENERATED.get()[1:])
    if method == "beam search" and state.BEAM.get(default=(None,))[0] == label:
        _, result, prompt_ids = state.BEAM.get()
        sampling.beam_tree(view.tokenizer, result, prompt_ids, width)


# ------------------------------------------------------------------ step mode
def _take_forced(sequence: list[int], label: str, offered: list[int]) -> None:
    """ "Take this one"'s callback: the token forced in the box joins the sequence (one the box does not offer, which
    ``ui.streamlit_private`` refuses before any callback runs, is not taken)."""
    forced = state.value(state.widget("step_forced_", label))
    if forced in offered:
        sequence.append(int(forced))


@sections.section("sampling.step_mode")
def step_mode(view: ModelView, encoded, temperature: float, top_k: int, top_p: float) -> None:
    model, tokenizer, label = view.model, view.tokenizer, view.content_key
    restart = st.button("Restart from the prompt")
    steps = state.STEP_MODE.get(label)
    if steps is None or restart or steps["prompt"] != list(encoded.ids):
        # a new prompt starts the steps again (the same view for a link); the seed is fixed until a restart, so
        # the button takes the token it shows
        steps = {"sequence": list(encoded.ids), "prompt": list(encoded.ids), "seed": settings.run_seed()}
        state.STEP_MODE.set(steps, label)
    sequence = steps["sequence"]
    step_seed = settings.seed if settings.deterministic else steps["seed"]
    st.code(tokenizer.decode(sequence), language=None, wrap_lines=True)
    with friendly_errors("step mode"):
        record = next_step(model, sequence, temperature, top_k, top_p, step_seed)
        candidates = top_candidates(record)
        sampling.step_candidates(tokenizer, candidates)
        s1, s2, s3 = st.columns(3)
        # callbacks change the sequence before the section is drawn again (no second rerun needed)
        s1.button(
            f"Take the sampled token: {literal_markdown(repr(tokenizer.printable(record.token)))}",
            on_click=sequence.append,
            args=(record.token,),
        )
        allowed = {t: ok for t, _, _, ok in candidates}
        s2.selectbox(
            "…or force one of the top 10",
            [t for t, _, _, _ in candidates],
            key=state.widget("step_forced_", label),
            persist_state="page",
            format_func=lambda t: f"{tokenizer.printable(t)} (id {t})" + ("" if allowed[t] else " · filtered out"),
        )
        s2.button("Take this one (branch)", on_click=_take_forced, args=(sequence, label, list(allowed)))
        s3.button("Undo", disabled=len(sequence) <= len(encoded.ids), on_click=sequence.pop)


# ------------------------------------------------------------------ three temperatures
@sections.section("sampling.temperatures")
def three_temperatures(view: ModelView, encoded) -> None:
    _, top_k, top_p = chosen_settings()
    temperatures = st.multiselect(
        "Temperatures",
        [0.0, 0.2, 0.5, 0.8, 1.0, 1.3, 1.8, 2.5],
        default=[0.2, 1.0, 1.8],
        max_selections=3,
        **share.bind("temperatures"),
    )
    if st.button("Generate at these temperatures"):
        outputs = at_temperatures(view.model, view.tokenizer, prompt, temperatures, top_k, top_p, settings.run_seed())
        state.THREE.set((view.content_key, outputs))
    if state.THREE.get(default=(None,))[0] == view.content_key:
        sampling.three_texts(state.THREE.get()[1])


# ------------------------------------------------------------------ the KV cache
@sections.section("sampling.kv_cache")
def kv_cache(view: ModelView, encoded) -> None:
    temperature, top_k, top_p = chosen_settings()
    method = state.value("method", "sampling")
    st.caption(
        "Without a cache, every new token runs the model over the whole text again. With a KV cache the keys and "
        "values of earlier positions are kept, and only the new position runs. Both must write the same tokens."
    )
    k1, k2 = st.columns([1, 3])
    kv_tokens = k1.slider("Tokens to generate", 10, 300, 100, step=10, **share.bind("kv_tokens"), persist_state="page")
    # the button's label whole (in the slider's narrow column it was cut to "Generate with and without the c…")
    if k1.button("Generate both ways", key=state.widget("kv_run"), help="With the KV cache, then without it."):
        with friendly_errors("the KV-cache comparison"):
            t = method_temperature(method, temperature)
            comparison = compare_kv_cache(view.model, encoded.ids, kv_tokens, t, top_k, top_p, seed=settings.run_seed())
            state.KV_COMPARISON.set((view.content_key, comparison))
    if state.KV_COMPARISON.get(default=(None,))[0] == view.content_key:
        sampling.kv_comparison(view.tokenizer, state.KV_COMPARISON.get()[1], k2)


distribution_section(view, prompt, encoded)
