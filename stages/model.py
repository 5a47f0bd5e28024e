"""The Model page: a GPT's architecture, its parameters, and one sentence traced through it (the page's sections wired
together: ui/panels/model.py draws them, llmviz/lessons/model.py computes their numbers)."""

import streamlit as st

import llmviz.lessons.quiz
from llmviz.errors import ConfigError, LlmvizError
from llmviz.lab.live_status import JobRefused
from llmviz.lessons import architectures
from llmviz.lessons.defaults import openings
from llmviz.lessons.model import DEFAULT_SENTENCE, LAB_CHARS, preset_title, validation_note
from llmviz.models.gpt import MLP_KINDS, NORMS, POSITIONS, GPTConfig
from llmviz.models.presets import PRESETS
from llmviz.tokenizers.ids import encode
from ui import boxes, charts, lab, picker, present, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import flow, model, quiz, runs
from ui.sources import ModelView
from ui.text import literal_markdown
from ui.widgets import page_header

# read here: in a section's own rerun (a fragment) shared_sidebar.settings() reruns the whole app
settings = shared_sidebar.settings()
page_header(
    "The model: one forward pass, block by block",
    "Your sentence through the model picked in the sidebar: hover a token to light its path, click a block to open "
    "its heads, press Play to watch each stage compute.",
)
PICKED = "picked"  # the Preset choice that shows the model picked in the sidebar
PRESET_LABELS = {PICKED: "the model picked in the sidebar", "custom": "custom"}  # link values as they were


def base_config(preset: str, view: ModelView) -> GPTConfig:
    """The sizes the Preset choice starts from: the picked model's own configuration, a published preset (with that
    model's bias and tying), or GPT mini's for a custom one. A picked model that is no GPT says so, and GPT-2 small
    is shown instead."""
    if preset == PICKED:
        if picker.gpt_or_note(view, "the architecture drawn here is a GPT's; GPT-2 small is shown instead"):
            return view.model.config
        return PRESETS["gpt2-124m"]
    return PRESETS[preset] if preset in PRESETS else PRESETS["gpt-mini"]


# ------------------------------------------------------------------ the flow: one forward pass, animated
@sections.section("model.flow", "the forward pass")
def the_flow() -> None:
    view = picker.current()
    sentence = st.text_input(
        "Your sentence",
        state.follow_default("flow_sentence", view.tokenizer, *openings(DEFAULT_SENTENCE)),
        **share.bind("flow_sentence"),
        label_visibility="collapsed",
    )
    share.carried_note("flow_sentence")
    ids = encode(view.tokenizer, sentence) if hasattr(view.model, "run_with_cache") else []
    if not hasattr(view.model, "run_with_cache"):
        st.info(f"{literal_markdown(view.label)} records no forward pass to draw: pick a GPT in the sidebar.")
        return
    if not ids:
        st.warning("Type a sentence: there is nothing to run yet.")
        return
    with sections.key_picture("model"):
        drawn = flow.draw(view, ids, key=state.widget("forward_pass_", "model"))
    notes = [flow.steps_note(view), flow.cut_note(drawn)]
    if any(notes):
        st.caption(" ".join(note for note in notes if note))


# ------------------------------------------------------------------ configuration
@sections.section("model.size")
def size_a_gpt() -> None:
    st.header("The model's architecture")
    view = picker.current()
    preset_names = [PICKED, *PRESETS, "custom"]
    preset = st.selectbox(
        "Preset",
        preset_names,
        index=0,
        format_func=lambda name: PRESET_LABELS[name] if name in PRESET_LABELS else preset_title(name),
        **share.bind("preset"),
        help="The model picked in the sidebar, or a preset to size: GPT-2 small as OpenAI published it "
        "(Radford et al., 2019): 12 layers, 12 heads, d_model 768, a bias in W_Q, W_K, W_V and the output head tied "
        "to the token embedding; Llama-style, Qwen-style and Mixture of experts are small models with the choices "
        "of Llama, Qwen2 and Mixtral; SmolLM2-135M's sizes are SmolLM2-135M's. (A link names a preset by its id, "
        "such as preset=gpt2-124m.)",
    )
    base = base_config(preset, view)
    if preset == "custom":
        c1, c2, c3 = st.columns(3)
        vocab_size = c1.number_input(
            "Vocabulary size", 1, 300_000, base.vocab_size, step=256, **share.bind("vocab_size")
        )
        context_length = c1.number_input(
            "Context length (positions)", 1, 32_768, base.context_length, step=64, **share.bind("context_length")
        )
        d_model = c2.slider("d_model (width)", 8, 2048, base.d_model, step=8, **share.bind("d_model"))
        # up to 64 heads, the most the configuration's advice ever suggests; a GPT needs at least one block
        n_heads = c2.slider("Heads", 1, 64, base.n_heads, **share.bind("n_heads"))
        n_layers = c3.slider("Layers", 1, 48, base.n_layers, **share.bind("n_layers"))
        qkv_bias = c3.toggle("Bias in W_Q, W_K, W_V", value=False, **share.bind("qkv_bias"))
        bias = c3.toggle("Biases in W_O, the MLP and LayerNorm", value=True, **share.bind("bias"))
        s1, s2, s3, s4 = st.columns(4)
        positions = s1.selectbox(
            "Positions", POSITIONS, format_func=architectures.POSITION_TITLES.get, **share.bind("positions_kind")
        )
        norm = s2.selectbox("Norm", NORMS, format_func=architectures.NORM_TITLES.get, **share.bind("norm"))
        mlp_kind = s3.selectbox("MLP", MLP_KINDS, format_func=architectures.MLP_TITLES.get, **share.bind("mlp"))
        n_kv_heads = s4.number_input(
            "Key/value heads",
            1,
            64,
            n_heads,
            help="As many as the heads: multi-head; fewer: grouped-query; 1: multi-query.",
            **share.bind("kv_heads"),
        )
        n_experts = s4.number_input("Experts (0 = one dense MLP)", 0, 64, 0, **share.bind("experts"))
        values = dict(
            vocab_size=int(vocab_size),
            context_length=int(context_length),
            d_model=d_model,
            n_heads=n_heads,
            n_layers=n_layers,
            qkv_bias=qkv_bias,
            bias=bias,
            positions=positions,
            norm=norm,
            mlp_kind=mlp_kind,
            n_kv_heads=int(n_kv_heads),
            n_experts=int(n_experts),
        )
    else:
        values = base.to_dict()
    # each preset opens with its own tying (GPT-2: tied); the toggle shows what the other choice costs
    tie = st.toggle(
        "Tie the output head to the token embedding (GPT-2 does)",
        value=base.tie_weights,
        help="One matrix serves as the input embedding and the output layer.",
        **share.bind(f"tie_{preset}"),  # the link's tie_gpt2-124m, tie_custom, …
    )

    config = None
    try:
        config = GPTConfig(**{**values, "tie_weights": tie, "dropout": 0.0})
    except ConfigError as error:
        st.error(str(error))

    if config is None:
        return
    if present.enabled():  # a projector: the numbers on the slide of the controls that change them, the diagram next
        right, left = st.container(), st.container()
    else:
        left, right = st.columns([2, 3])
    with left:
        st.subheader("Architecture")
        with st.container():
            st.markdown(
                charts.flow(
                    [(s.name, "(" + ", ".join(s.shape) + ")", s.detail) for s in architectures.architecture(config)]
                ),
                unsafe_allow_html=True,
            )
        if preset == PICKED and picker.is_gpt(view):
            st.caption(f"{literal_markdown(view.label)}, picked in the sidebar.")
    with right:
        model.parameters_view(config)


# ------------------------------------------------------------------ look inside
def fitted_ids(view: ModelView, sentence: str) -> list[int]:
    """The sentence's token ids, its last ``context_length`` when it is longer (the page says so)."""
    context = view.model.config.context_length
    ids = encode(view.tokenizer, sentence)
    if len(ids) > context:
        st.warning(f"{len(ids)} tokens do not fit the context of {context}: only the last {context} are used.")
    return ids[-context:]


@sections.section("model.inside")
def look_inside() -> None:
    view = picker.current()
    if not picker.gpt_or_note(view, "this section shows a GPT's residual stream, LayerNorms and MLPs"):
        return
    config = view.model.config
    validation = validation_note(view.meta)  # which text it was measured on (Adapting measures other windows)
    st.caption(
        f"{literal_markdown(view.label)}: {config.n_layers} layers, {config.n_heads} heads, d_model "
        f"{config.d_model}, a {view.tokenizer.vocab_size:,}-token vocabulary"
        + (f" ({validation})." if validation else ".")
    )
    opening = state.follow_default("model_sentence", view.tokenizer, *openings(DEFAULT_SENTENCE))
    sentence = boxes.text_input("A sentence", opening, 5000, "Your sentence", **share.bind("model_sentence"))
    ids = fitted_ids(view, sentence)
    if not ids:
        st.warning("Type a sentence: there is nothing to run yet.")
        return
    labels = charts.unique_labels([view.tokenizer.printable(i) for i in ids])
    with friendly_errors("the forward pass"):
        cache = model.recorded_pass(view.content_key, tuple(ids), view)
        for tab, draw in zip(st.tabs(model.tab_titles(config)), model.TABS):
            with tab:
                draw(cache, config, labels)


def inside_lesson() -> None:
    st.header("Look inside a trained GPT")
    look_inside()


# ------------------------------------------------------------------ GPT-2 → Llama
@sections.section("model.gpt2_to_llama")
def gpt2_to_llama() -> None:
    st.markdown(
        "Start from GPT-2 small and flip one switch at a time, keeping the flips above: what is left at "
        "the bottom has Llama's design at GPT-2's size (12 layers, d_model 768, 12 heads). Each row is "
        "counted from the modules llmviz builds; the same switches load real Llama, Qwen2 and SmolLM2 "
        "checkpoints and give transformers' logits to 1e-5."
    )
    quiz.section(
        "gpt2_to_llama",
        lambda: [
            llmviz.lessons.quiz.norm_question(PRESETS["gpt2-124m"]),
            llmviz.lessons.quiz.experts_question(PRESETS["moe-tiny"]),
        ],
    )
    kv_heads = st.select_slider(
        "Key/value heads in the last steps", [1, 2, 3, 4, 6, 12], value=4, **share.bind("llama_kv_heads")
    )
    model.gpt2_to_llama_table(kv_heads)  # with its two captions


def start_llama_lab(steps: int) -> None:
    """The seven steps of GPT-2 → Llama at GPT micro's size as one race on the sidebar's corpus: one seed, one
    tokenizer, the same batches; only the flipped switches differ."""
    from llmviz.training.config import TrainConfig

    loaded = shared_sidebar.corpus_text(settings.corpus)
    if loaded is None:
        return
    corpus_label, text = loaded
    text = text[:LAB_CHARS]  # the corpus's first characters: seven runners tokenize it in their worker
    seed = settings.run_seed()
    try:
        runners = []
        for number, step in enumerate(architectures.gpt2_to_llama_lab(), start=1):
            config = TrainConfig(
                model=step.model,
                tokenizer="char",
                context_length=32,
                batch_size=16,
                steps=steps,
                architecture=step.switches,
                eval_interval=max(1, steps // 10),
                seed=seed,
                device=settings.device,
            )
            label = runs.unique_label(f"GPT-2 → Llama {number}/7: {step.change}")
            runners.append((label, runs.planned(text, config)))  # built in the race's worker
        started = picker.runs().submit_race(runners)
    except JobRefused as refused:
        lab.warn(str(refused))
    except LlmvizError as error:
        st.error(str(error))
    else:
        state.LLAMA_LAB.set({"ids": [job.id for job in started], "corpus": corpus_label, "steps": steps})
        st.rerun(scope="app")  # the sidebar lists the new runs


@sections.section("model.gpt2_to_llama_lab")
def gpt2_to_llama_lab() -> None:
    st.subheader("The same steps, trained on your text")
    st.markdown(
        "Parameters and cache size are only half of it: does each switch train as well? Each step above, "
        "at GPT micro's size (2 layers, d_model 64, 4 heads, 2 key/value heads in the last steps), trains "
        "a short lab run on the corpus in the sidebar; the table gives its parameters, KV cache and "
        "validation loss."
    )
    loaded = shared_sidebar.corpus_text(settings.corpus)
    if loaded is not None and len(loaded[1]) > LAB_CHARS:
        st.caption(f"The runs train on the corpus's first {LAB_CHARS:,} of {len(loaded[1]):,} characters.")
    c1, c2 = st.columns([2, 1])
    steps = c1.select_slider("Steps per run", [50, 100, 200, 300, 500], value=200, **share.bind("llama_lab_steps"))
    if c2.button("Train the seven steps", key=state.widget("llama_lab_start")):
        start_llama_lab(int(steps))
    runs.live(
        model.draw_llama_lab,
        active=lambda: any(job.changing for job in model.llama_lab_jobs()),
        name="model.gpt2_to_llama_lab",
    )


def llama_lesson() -> None:
    st.header("From GPT-2 to Llama, one switch at a time")
    gpt2_to_llama()
    gpt2_to_llama_lab()


# ------------------------------------------------------------------ the page: the architecture, the lessons under it
the_flow()
LINKED = {"Inside a trained GPT": ("model_sentence",)}  # a link that sets it opens its tab
LESSONS = {"Architecture": size_a_gpt, "Inside a trained GPT": inside_lesson, "From GPT-2 to Llama": llama_lesson}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("model_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
