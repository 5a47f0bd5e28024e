"""The Model page: a GPT's architecture, its parameters, and one sentence traced through it."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from llmviz.adapt import memory
from llmviz.errors import ConfigError, LlmvizError
from llmviz.jobs.manager import JobRefused
from llmviz.lessons import anatomy as model_anatomy
from llmviz.lessons import architectures
from llmviz.lessons import forward as views
from llmviz.models.gpt import MLP_KINDS, NORMS, POSITIONS, PRESETS, GPTConfig
from ui import charts, picker, present, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.panels import runs as training
from ui.text import fixed, literal_markdown, tidy_floats

settings = ui.settings()  # read here: in a section's own rerun (a fragment) ui.settings() reruns the whole app
ui.page_header(
    "The model: transformer blocks and their parameters",
    "A GPT is an embedding table, a stack of identical blocks and an output head: every tensor's shape, every "
    "part's parameters.",
)
# a sentence of the Python manual, every word of it one token of the shipped GPT
DEFAULT_SENTENCE = "The result is then bound to the class name."
LAB_CHARS = 200_000  # GPT-2 → Llama trains on the corpus's first characters, as the Training page's races do
PICKED = "picked"  # the Preset choice that shows the model picked in the sidebar
PRESET_LABELS = {PICKED: "the model picked in the sidebar"}  # the others are the presets' own names


def base_config(preset: str, view: picker.ModelView) -> GPTConfig:
    """The sizes the Preset choice starts from: the picked model's own configuration, a published preset (with that
    model's bias and tying), or GPT mini's for a custom one. A picked model that is no GPT says so, and GPT-2 small
    is shown instead."""
    if preset == PICKED:
        if picker.gpt_or_note(view, "the architecture drawn here is a GPT's; GPT-2 small is shown instead"):
            return view.model.config
        return PRESETS["gpt2-124m"]
    return PRESETS[preset] if preset in PRESETS else PRESETS["gpt-mini"]


# ------------------------------------------------------------------ configuration
@sections.section("model.size")
def size_a_gpt() -> None:
    st.header("1. The model's architecture")
    view = picker.current()
    preset_names = [PICKED, *PRESETS, "custom"]
    preset = st.selectbox(
        "Preset",
        preset_names,
        index=0,
        format_func=lambda name: PRESET_LABELS.get(name, name),
        **share.bind("preset"),
        help="The model picked in the sidebar, or a preset to size: gpt2-124m is GPT-2 small as OpenAI published it "
        "(Radford et al., 2019): 12 layers, 12 heads, d_model 768, a bias in W_Q, W_K, W_V and the output head tied "
        "to the token embedding; llama-style, qwen-style and moe-tiny are small models with the choices of Llama, "
        "Qwen2 and Mixtral; smollm2-135m-shapes has the sizes of SmolLM2-135M.",
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
        key=state.widget("tie_", preset),
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
        with sections.key_picture("model"):
            st.markdown(
                charts.flow(
                    [(s.name, "(" + ", ".join(s.shape) + ")", s.detail) for s in architectures.architecture(config)]
                ),
                unsafe_allow_html=True,
            )
        if preset == PICKED and picker.is_gpt(view):
            st.caption(f"{literal_markdown(view.label)}, picked in the sidebar.")
    with right:
        parameters_view(config)


def parameter_bars(table: dict[str, int], config: GPTConfig):
    """Parameters per component as bars, each with its number; a tied output head has no matrix of its own, and its
    empty bar says so."""
    texts = [
        "0: tied, it reuses the token embedding" if name == "output head" and config.tie_weights else f"{count:,}"
        for name, count in table.items()
    ]
    return charts.bar(list(table), list(table.values()), horizontal=True, height=300, texts=texts)


def parameters_view(config: GPTConfig) -> None:
    """The parameters of each part, counted from the modules, their memory and the KV cache a token needs."""
    if present.enabled():
        st.markdown("**Parameters, computed from the modules**")
    else:
        st.subheader("Parameters, computed from the modules")
    table = model_anatomy.parameter_table(config)
    total = sum(table.values())
    frame = pd.DataFrame({"component": list(table), "parameters": list(table.values())})
    frame["share"] = (frame["parameters"] / total).map(lambda x: f"{x:.1%}")
    with st.expander("As a table, with each component's share"):
        st.dataframe(frame.style.format({"parameters": "{:,}"}), hide_index=True, width="stretch")
    charts.show(parameter_bars(table, config), width="stretch")
    st.metric("Total parameters", f"{total:,}")
    m2, m3, m4 = st.columns(3)
    m2.metric("Weights in fp32", memory.human_bytes(model_anatomy.memory_bytes(total, "fp32")))
    m3.metric("Weights in bf16", memory.human_bytes(model_anatomy.memory_bytes(total, "bf16")))
    m4.metric(
        "KV cache per token (bf16)",
        memory.human_bytes(architectures.kv_cache_bytes(config, 1, "bf16")),
        help="Keys and values of every layer kept for each token while generating: "
        f"2 × {config.n_layers} layers × {config.kv_heads} key/value heads × {config.head_dim} "
        "dims × 2 bytes.",
    )
    if config.tie_weights:
        untied = sum(model_anatomy.parameter_table(config.replace(tie_weights=False)).values())
        st.caption(
            f"Untied, the same sizes have {untied:,} parameters: tying saves {untied - total:,} "
            f"(the {config.vocab_size:,} × {config.d_model} output matrix)."
        )
    else:
        tied = sum(model_anatomy.parameter_table(config.replace(tie_weights=True)).values())
        st.caption(
            f"Tied, the same sizes have {tied:,} parameters: the separate {config.vocab_size:,} × "
            f"{config.d_model} output matrix adds {total - tied:,}."
        )
    st.caption(
        "Memory counts the weights only: training also needs gradients, optimizer state "
        "(Adam: two more copies) and activations."
    )


# ------------------------------------------------------------------ look inside
@st.cache_data(show_spinner=False, max_entries=32)
def recorded_pass(model_key: str, ids: tuple[int, ...], _view: picker.ModelView) -> dict:
    return views.recorded_pass(_view.model, list(ids))


@sections.section("model.inside")
def look_inside() -> None:
    view = picker.current()
    model, tokenizer, meta = view.model, view.tokenizer, view.meta
    if not picker.gpt_or_note(view, "this section shows a GPT's residual stream, LayerNorms and MLPs"):
        return
    final = meta.get("final", {}).get("val_loss")
    st.caption(
        f"{literal_markdown(view.label)}: {model.config.n_layers} layers, {model.config.n_heads} heads, d_model "
        f"{model.config.d_model}, a {tokenizer.vocab_size:,}-token vocabulary"
        + (f" (final validation loss {final:.2f})." if final is not None else ".")
    )
    sentence = st.text_input(
        "A sentence",
        DEFAULT_SENTENCE,
        **share.bind("model_sentence"),
    )
    share.carried_note("model_sentence")
    ids = views.encode(tokenizer, sentence)
    if not ids:
        st.warning("Type a sentence: there is nothing to run yet.")
        return
    if len(ids) > model.config.context_length:
        st.warning(
            f"{len(ids)} tokens do not fit the context of {model.config.context_length}: only the last "
            f"{model.config.context_length} are used."
        )
        ids = ids[-model.config.context_length :]
    labels = charts.unique_labels([tokenizer.printable(i) for i in ids])

    with ui.friendly_errors("the forward pass"):
        cache = recorded_pass(view.content_key, tuple(ids), view)
        config = model.config
        norm_name = architectures.NORM_TITLES[config.norm]
        tab_resid, tab_ln, tab_norms, tab_gelu, tab_mlp = st.tabs(
            [
                "Residual stream",
                f"{norm_name} before/after",
                "LayerNorm vs RMSNorm",
                "GELU vs SwiGLU",
                "Router (mixture of experts)" if config.n_experts else "MLP activations",
            ]
        )
        with tab_resid:
            norms = model_anatomy.residual_norms(cache, config.n_layers)
            figure = go.Figure(go.Scatter(x=[n for n, _ in norms], y=[v for _, v in norms], mode="lines+markers"))
            figure.update_layout(yaxis_title="mean ‖x‖ per token", height=320, margin=charts.margins(10))
            charts.show(figure, width="stretch")
            st.markdown(
                "Each block **adds** its attention and MLP outputs to the residual stream (the shortcut "
                "connections), so its size tends to grow from block to block."
            )
        with tab_ln:
            layer = ui.index_slider("Block", config.n_layers, key=state.widget("ln_layer"))
            stats = model_anatomy.layernorm_before_after(cache, layer)
            frame = pd.DataFrame({"token": labels, **{k: v.tolist() for k, v in stats.items()}})
            st.dataframe(tidy_floats(frame).style.format(precision=4), hide_index=True, width="stretch")
            if config.norm == "rmsnorm":
                st.markdown(
                    "This model uses **RMSNorm**: it divides each token's vector by its root mean square and "
                    "multiplies by a learned scale. It subtracts no mean, so the 'after' means are not 0; "
                    "the next tab compares it with LayerNorm on this same stream."
                )
                st.latex(r"\mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\tfrac{1}{d}\sum_i x_i^2 + \epsilon}}")
            else:
                st.markdown(
                    "Before `ln1` each token's vector has its own mean and variance; LayerNorm rescales it to "
                    "mean 0 and variance 1, then applies the learned scale and shift — which is why the "
                    "'after' columns are not exactly 0 and 1."
                )
                st.latex(r"\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")
        with tab_norms:
            layer = ui.index_slider("Block", config.n_layers, key=state.widget("norms_layer"))
            compared = architectures.norm_comparison(cache[f"blocks.{layer}.resid_pre"][0], config.norm_eps)
            frame = pd.DataFrame(
                {
                    "token": labels,
                    "mean before": compared["mean_before"].tolist(),
                    "RMS before": compared["rms_before"].tolist(),
                    "LayerNorm: mean": compared["mean_layernorm"].tolist(),
                    "LayerNorm: RMS": compared["rms_layernorm"].tolist(),
                    "RMSNorm: mean": compared["mean_rmsnorm"].tolist(),
                    "RMSNorm: RMS": compared["rms_rmsnorm"].tolist(),
                    "largest gap": compared["difference"].tolist(),
                }
            )
            st.dataframe(frame.style.format(fixed(4), subset=list(frame.columns[1:])), hide_index=True, width="stretch")
            st.markdown(
                f"Both norms, without their learned scale, on block {layer}'s input. Both give every token "
                "an RMS of 1; LayerNorm also subtracts the mean first, RMSNorm does not. Where a token's "
                "mean is small next to its RMS the two outputs nearly agree (small 'largest gap'), which is "
                "why Llama, Qwen and Mistral drop the mean and its shift: one reduction instead of two, "
                "half the parameters, and training works as well (Zhang & Sennrich, 2019)."
            )
        with tab_gelu:
            curves = architectures.activation_curves()
            figure = go.Figure()
            for name, values_ in curves.items():
                if name != "x":
                    figure.add_trace(go.Scatter(x=curves["x"].tolist(), y=values_.tolist(), name=name, mode="lines"))
            figure.update_layout(height=320, xaxis_title="x", yaxis_title="activation", margin=charts.margins(10))
            charts.show(figure, width="stretch")
            st.latex(
                r"\mathrm{GELU\,MLP}(x) = W_2\,\mathrm{GELU}(W_1 x) \qquad "
                r"\mathrm{SwiGLU}(x) = W_2\,\big(\mathrm{SiLU}(W_{gate}\,x) \odot W_1 x\big)"
            )
            layer = ui.index_slider("Block", config.n_layers, key=state.widget("swiglu_layer"))
            token = ui.index_slider("Token", len(ids), key=state.widget("swiglu_token"))
            both = architectures.mlp_comparison(cache[f"blocks.{layer}.resid_mid"][0], hidden=32)
            frame = pd.DataFrame(
                {
                    "neuron": list(range(32)),
                    "W₁x": both["up"][token].tolist(),
                    "GELU(W₁x)": both["gelu"][token].tolist(),
                    "gate SiLU(W_gate x)": both["gate"][token].tolist(),
                    "SwiGLU: gate × W₁x": both["swiglu"][token].tolist(),
                }
            )
            figure = go.Figure([go.Bar(x=frame["neuron"], y=frame[c], name=c) for c in frame.columns[2:]])
            figure.update_layout(height=300, barmode="group", xaxis_title="neuron", margin=charts.margins(10))
            charts.show(figure, width="stretch")
            st.caption(
                f"The same stream (block {layer}'s input to its MLP, token {labels[token]!r}, normalised) through "
                "32 neurons with the same random W₁ and a random gate: GELU decides from W₁x alone whether a "
                "neuron passes; SwiGLU lets a second projection open or close it (gate near 0 closes it). "
                "SwiGLU has three matrices instead of two, so Llama makes it 8/3 × d_model wide instead of "
                "4 × to keep the parameter count."
            )
        with tab_mlp:
            if not getattr(config, "mlp", True):
                st.info("This model is attention-only: its blocks have no MLP (see Inside the model, section 4).")
            elif config.n_experts:
                layer = ui.index_slider("Block", config.n_layers, key=state.widget("router_layer"))
                router = architectures.router_choices(cache, layer)
                charts.show(
                    charts.heatmap(
                        router.probs,
                        x_labels=[f"expert {e}" for e in range(config.n_experts)],
                        y_labels=labels,
                        title="router probability",
                        x_title="expert",
                        y_title="token",
                    ),
                    width="stretch",
                )
                chosen = pd.DataFrame(
                    {
                        "token": labels,
                        **{
                            f"choice {rank + 1}": [
                                f"expert {int(e)} ({float(w):.0%})"
                                for e, w in zip(router.experts[:, rank], router.weights[:, rank])
                            ]
                            for rank in range(config.experts_top_k)
                        },
                    }
                )
                st.dataframe(chosen, hide_index=True, width="stretch")
                charts.show(
                    charts.bar(
                        [f"expert {e}" for e in range(config.n_experts)],
                        router.load.tolist(),
                        y_title="tokens routed",
                        height=240,
                    ),
                    width="stretch",
                )
                st.caption(
                    f"Each token goes through {config.experts_top_k} of the {config.n_experts} expert MLPs, "
                    "mixed with the router's probabilities renormalised over the chosen ones. Training adds a "
                    f"load-balancing loss (× {config.router_aux_loss_coef:g}) so that the experts share the "
                    "tokens instead of a few taking them all."
                )
            else:
                layer = ui.index_slider("Block", config.n_layers, key=state.widget("mlp_layer"))
                hidden = cache[f"blocks.{layer}.mlp.hidden"][0]  # (T, F)
                neurons = st.slider("Neurons shown", 16, hidden.shape[-1], min(64, hidden.shape[-1]), step=16)
                charts.show(
                    charts.heatmap(
                        hidden[:, :neurons],
                        x_labels=list(range(neurons)),
                        y_labels=labels,
                        colorscale="RdBu",
                        zmid=0.0,
                        text_format=None,
                        x_title="neuron",
                        y_title="token",
                    ),
                    width="stretch",
                )
                fraction = model_anatomy.positive_fraction(hidden)
                st.caption(
                    f"{fraction:.0%} of this block's {hidden.shape[-1]} MLP neurons are positive across these tokens."
                )


def inside_lesson() -> None:
    st.header("2. Look inside a trained GPT")
    look_inside()


# ------------------------------------------------------------------ GPT-2 → Llama
@st.cache_data(show_spinner=False)
def gpt2_to_llama_rows(kv_heads: int) -> list[architectures.ArchitectureRow]:
    return architectures.gpt2_to_llama(kv_heads=kv_heads)


@sections.section("model.gpt2_to_llama")
def gpt2_to_llama() -> None:
    st.markdown(
        "Start from GPT-2 small and flip one switch at a time, keeping the flips above: what is left at "
        "the bottom has Llama's design at GPT-2's size (12 layers, d_model 768, 12 heads). Each row is "
        "counted from the modules llmviz builds; the same switches load real Llama, Qwen2 and SmolLM2 "
        "checkpoints and give transformers' logits to 1e-5."
    )
    quiz_ui.section(
        "gpt2_to_llama",
        lambda: [
            architectures.norm_question(PRESETS["gpt2-124m"]),
            architectures.experts_question(PRESETS["moe-tiny"]),
        ],
    )
    kv_heads = st.select_slider("Key/value heads in the last steps", [1, 2, 3, 4, 6, 12], value=4)
    rows = gpt2_to_llama_rows(kv_heads)
    frame = pd.DataFrame(
        {
            "step": [row.change for row in rows],
            "parameters": [row.parameters for row in rows],
            "change": [float("nan")] + [row.parameters - previous.parameters for row, previous in zip(rows[1:], rows)],
            "KV cache per token (bf16)": [row.kv_cache_bytes_per_token for row in rows],
            "KV cache, 1,024 tokens (MiB)": [row.kv_cache_bytes_per_token * 1024 / 2**20 for row in rows],
        }
    )
    st.dataframe(
        frame.style.format(
            {
                "parameters": "{:,}",
                "change": "{:+,.0f}",
                "KV cache per token (bf16)": "{:,} bytes",
                "KV cache, 1,024 tokens (MiB)": "{:,.1f}",
            },
            na_rep="—",
        ),
        hide_index=True,
        width="stretch",
        placeholder="—",
    )  # the browser draws an empty cell as 'None' whatever na_rep says
    st.caption(
        "GPT-2 small: learned positions, LayerNorm, GELU MLP 4 × wide, biases, 12 key/value heads for 12 "
        "query heads, output head tied to the token embedding."
    )
    st.caption(
        "RoPE drops the 1,024 × 768 position table; RMSNorm drops the LayerNorm shifts; SwiGLU's three "
        "matrices at 8/3 × width hold about what GELU's two did at 4 ×; fewer key/value heads shrink W_K, "
        "W_V and the KV cache; an untied head adds a second 50,257 × 768 matrix. None of these changes what "
        "a block does to the residual stream's shape."
    )


def start_llama_lab(steps: int) -> None:
    """The seven steps of GPT-2 → Llama at GPT micro's size as one race on the sidebar's corpus: one seed, one
    tokenizer, the same batches; only the flipped switches differ."""
    from llmviz.training.trainer import TrainConfig

    loaded = ui.corpus_text(settings.corpus)
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
            label = training.unique_label(f"GPT-2 → Llama {number}/7: {step.change}")
            runners.append((label, training.planned(text, config)))  # built in the race's worker
        started = picker.manager().submit_race(picker.session_id(), runners)
    except JobRefused as refused:
        st.warning(str(refused))
    except LlmvizError as error:
        st.error(str(error))
    else:
        state.LLAMA_LAB.set({"ids": [job.id for job in started], "corpus": corpus_label, "steps": steps})
        st.rerun(scope="app")  # the sidebar lists the new runs


def llama_lab_jobs() -> list:
    spec = state.LLAMA_LAB.get() or {}
    found = [picker.manager().get(picker.session_id(), job_id) for job_id in spec.get("ids", [])]
    return [job for job in found if job is not None]


def draw_llama_lab() -> None:
    spec, jobs = state.LLAMA_LAB.get() or {}, llama_lab_jobs()
    if not jobs:
        st.caption("No lab runs yet: press the button to train the seven steps.")
        return
    lab = architectures.gpt2_to_llama_lab()
    rows = []
    for step, job in zip(lab, jobs):
        status = job.status()
        rows.append(
            {
                "step": step.change,
                "parameters": job.info.parameters if job.info else None,
                "KV cache per token (bf16)": step.kv_cache_bytes_per_token,
                "steps trained": status.step,
                "validation loss": status.last_val_loss,
                "state": status.state,
            }
        )
    frame = pd.DataFrame(rows)
    st.dataframe(
        frame.style.format(
            {"parameters": "{:,.0f}", "KV cache per token (bf16)": "{:,} bytes", "validation loss": "{:.4f}"},
            na_rep="—",
        ),
        hide_index=True,
        width="stretch",
        placeholder="—",
    )
    measured = frame.dropna(subset=["validation loss"])
    if len(measured):
        figure = go.Figure(
            go.Bar(
                x=measured["validation loss"],
                y=measured["step"],
                orientation="h",
                text=[f"{v:.3f}" for v in measured["validation loss"]],
                textposition="auto",
            )
        )
        figure.update_layout(
            height=300,
            margin=charts.margins(10),
            xaxis_title="validation loss (lower is better)",
            yaxis=dict(autorange="reversed"),
        )
        charts.show(figure, width="stretch", key=state.widget("llama_lab_chart"))
    st.caption(
        f"Each row trained {spec.get('steps', '?')} steps on {literal_markdown(str(spec.get('corpus', '')))} "
        "(characters, context 32, batch 16), with the same seed and batches. Differences of a few hundredths "
        "after a short run are within what another seed gives; the races on the Training page show whole "
        "curves (these runs are listed there too, and in the sidebar)."
    )


@sections.section("model.gpt2_to_llama_lab")
def gpt2_to_llama_lab() -> None:
    st.subheader("The same steps, trained on your text")
    st.markdown(
        "Parameters and cache size are only half of it: does each switch train as well? Each step above, "
        "at GPT micro's size (2 layers, d_model 64, 4 heads, 2 key/value heads in the last steps), trains "
        "a short lab run on the corpus in the sidebar; the table gives its parameters, KV cache and "
        "validation loss."
    )
    loaded = ui.corpus_text(settings.corpus)
    if loaded is not None and len(loaded[1]) > LAB_CHARS:
        st.caption(f"The runs train on the corpus's first {LAB_CHARS:,} of {len(loaded[1]):,} characters.")
    c1, c2 = st.columns([2, 1])
    steps = c1.select_slider("Steps per run", [50, 100, 200, 300, 500], value=200, key=state.widget("llama_lab_steps"))
    if c2.button("Train the seven steps", key=state.widget("llama_lab_start")):
        start_llama_lab(int(steps))
    training.live(
        draw_llama_lab, active=lambda: any(job.changing for job in llama_lab_jobs()), name="model.gpt2_to_llama_lab"
    )


def llama_lesson() -> None:
    st.header("3. From GPT-2 to Llama, one switch at a time")
    gpt2_to_llama()
    gpt2_to_llama_lab()


# ------------------------------------------------------------------ the page: the architecture, the lessons under it
size_a_gpt()
LINKED = {"Inside a trained GPT": ("model_sentence",)}  # a link that sets it opens its tab
LESSONS = {"Inside a trained GPT": inside_lesson, "From GPT-2 to Llama": llama_lesson}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("model_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
