"""The Model page: a GPT's architecture, its parameters, and one sentence traced through it."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from llmviz import model_anatomy, views
from llmviz.errors import ConfigError
from llmviz.models.gpt import PRESETS, GPTConfig
from ui import charts, picker, sections, share

ui.settings()
ui.page_header(
    "The model: transformer blocks and their parameters",
    "A GPT is an embedding table, a stack of identical blocks (LayerNorm → attention → shortcut, "
    "LayerNorm → MLP → shortcut) and an output head. Size one, count its parameters, then look inside a trained one.",
)

# ------------------------------------------------------------------ configuration
st.header("1. Size a GPT")


@sections.section("model.size")
def size_a_gpt() -> None:
    preset_names = list(PRESETS) + ["custom"]
    preset = st.selectbox("Preset", preset_names, index=0,
                          help="gpt2-124m is GPT-2 small (124M parameters), the GPT_CONFIG_124M of Sebastian Raschka's "
                          "*Build a Large Language Model (From Scratch)*.")
    base = PRESETS.get(preset, PRESETS["gpt-mini"])
    if preset == "custom":
        c1, c2, c3 = st.columns(3)
        vocab_size = c1.number_input("Vocabulary size", 1, 300_000, base.vocab_size, step=256)
        context_length = c1.number_input("Context length (positions)", 1, 32_768, base.context_length, step=64)
        d_model = c2.slider("d_model (width)", 8, 2048, base.d_model, step=8)
        # up to 64 heads, the most the configuration's advice ever suggests; a GPT needs at least one block
        n_heads = c2.slider("Heads", 1, 64, base.n_heads)
        n_layers = c3.slider("Layers", 1, 48, base.n_layers)
        qkv_bias = c3.toggle("Bias in W_Q, W_K, W_V", value=False)
        values = dict(vocab_size=int(vocab_size), context_length=int(context_length), d_model=d_model,
                      n_heads=n_heads, n_layers=n_layers, qkv_bias=qkv_bias)
    else:
        values = base.to_dict()
    tie = st.toggle("Tie the output head to the token embedding (GPT-2 does)", value=False,
                    help="One matrix serves as the input embedding and the output layer.")

    config = None
    try:
        config = GPTConfig(**{**values, "tie_weights": tie, "dropout": 0.0})
    except ConfigError as error:
        st.error(str(error))

    if config is not None:
        left, right = st.columns([2, 3])
        with left:
            st.subheader("Architecture")
            st.markdown(charts.flow([(s.name, "(" + ", ".join(s.shape) + ")", s.detail)
                                     for s in model_anatomy.architecture(config)]), unsafe_allow_html=True)
        with right:
            st.subheader("Parameters, computed from the modules")
            table = model_anatomy.parameter_table(config)
            total = sum(table.values())
            frame = pd.DataFrame({"component": list(table), "parameters": list(table.values())})
            frame["share"] = (frame["parameters"] / total).map(lambda x: f"{x:.1%}")
            st.dataframe(frame.style.format({"parameters": "{:,}"}), hide_index=True, width="stretch")
            charts.show(charts.bar(frame["component"], frame["parameters"], horizontal=True, height=300),
                            width="stretch")
            st.metric("Total parameters", f"{total:,}")
            m2, m3 = st.columns(2)
            m2.metric("Weights in fp32", f"{model_anatomy.memory_bytes(total, 'fp32') / 2**20:,.1f} MiB")
            m3.metric("Weights in bf16", f"{model_anatomy.memory_bytes(total, 'bf16') / 2**20:,.1f} MiB")
            if tie:
                untied = sum(model_anatomy.parameter_table(config.replace(tie_weights=False)).values())
                st.caption(f"Untied, the same sizes have {untied:,} parameters: tying saves {untied - total:,} "
                           f"(the {config.vocab_size:,} × {config.d_model} output matrix).")
            st.caption("Memory counts the weights only: training also needs gradients, optimizer state "
                       "(Adam: two more copies) and activations.")


size_a_gpt()

# ------------------------------------------------------------------ look inside
@st.cache_data(show_spinner=False, max_entries=32)
def recorded_pass(model_key: str, ids: tuple[int, ...], _view: picker.ModelView) -> dict:
    return views.recorded_pass(_view.model, list(ids))


@sections.section("model.inside")
def look_inside() -> None:
    view = picker.current()
    model, tokenizer, meta = view.model, view.tokenizer, view.meta
    if view.family != "gpt" or not hasattr(getattr(model, "config", None), "n_layers"):
        st.info(f"{view.label} is not a GPT: this section shows a GPT's residual stream, LayerNorms and MLPs. Pick "
                "the shipped GPT or a GPT run in the sidebar.")
        return
    final = meta.get("final", {}).get("val_loss")
    st.caption(f"{view.label}: {model.config.n_layers} layers, {model.config.n_heads} heads, d_model "
               f"{model.config.d_model}, a {tokenizer.vocab_size:,}-token vocabulary"
               + (f" (final validation loss {final:.2f})." if final is not None else "."))
    sentence = st.text_input("A sentence", "The for statement is used to iterate over the elements of a sequence",
                             **share.bind("model_sentence"))
    ids = views.encode(tokenizer, sentence)
    if not ids:
        st.warning("Type a sentence: there is nothing to run yet.")
        return
    if len(ids) > model.config.context_length:
        st.warning(f"{len(ids)} tokens do not fit the context of {model.config.context_length}: only the last "
                   f"{model.config.context_length} are used.")
        ids = ids[-model.config.context_length:]
    labels = charts.unique_labels([tokenizer.printable(i) for i in ids])

    with ui.friendly_errors("the forward pass"):
        cache = recorded_pass(view.key, tuple(ids), view)
        tab_resid, tab_ln, tab_gelu, tab_mlp = st.tabs(
            ["Residual stream", "LayerNorm before/after", "GELU vs ReLU", "MLP activations"])
        with tab_resid:
            norms = model_anatomy.residual_norms(cache, model.config.n_layers)
            figure = go.Figure(go.Scatter(x=[n for n, _ in norms], y=[v for _, v in norms], mode="lines+markers"))
            figure.update_layout(yaxis_title="mean ‖x‖ per token", height=320, margin=dict(t=10))
            charts.show(figure, width="stretch")
            st.markdown("Each block **adds** its attention and MLP outputs to the residual stream (the shortcut "
                        "connections), so its size tends to grow from block to block.")
        with tab_ln:
            layer = ui.index_slider("Block", model.config.n_layers, key="ln_layer")
            stats = model_anatomy.layernorm_before_after(cache, layer)
            frame = pd.DataFrame({"token": labels, **{k: v.tolist() for k, v in stats.items()}})
            st.dataframe(frame.style.format(precision=4), hide_index=True, width="stretch")
            st.markdown("Before `ln1` each token's vector has its own mean and variance; LayerNorm rescales it to "
                        "mean 0 and variance 1, then applies the learned scale and shift — which is why the "
                        "'after' columns are not exactly 0 and 1.")
            st.latex(r"\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")
        with tab_gelu:
            curves = model_anatomy.activation_curves()
            figure = go.Figure()
            for name, values_ in curves.items():
                if name != "x":
                    figure.add_trace(go.Scatter(x=curves["x"].tolist(), y=values_.tolist(), name=name, mode="lines"))
            figure.update_layout(height=360, xaxis_title="x", yaxis_title="activation", margin=dict(t=10))
            charts.show(figure, width="stretch")
            st.latex(r"\mathrm{GELU}(x) \approx 0.5\,x\left(1 + \tanh\!\left[\sqrt{2/\pi}\,(x + 0.044715\,x^3)\right]\right)")
            st.caption("GELU is smooth and lets small negative values through; ReLU cuts every negative value to 0.")
        with tab_mlp:
            if not getattr(model.config, "mlp", True):
                st.info("This model is attention-only: its blocks have no MLP (see Inside the model, section 4).")
            else:
                layer = ui.index_slider("Block", model.config.n_layers, key="mlp_layer")
                hidden = cache[f"blocks.{layer}.mlp.hidden"][0]  # (T, 4C)
                neurons = st.slider("Neurons shown", 16, hidden.shape[-1], min(64, hidden.shape[-1]), step=16)
                charts.show(charts.heatmap(hidden[:, :neurons], x_labels=list(range(neurons)), y_labels=labels,
                                               colorscale="RdBu", zmid=0.0, text_format=None,
                                               x_title="neuron", y_title="token"), width="stretch")
                fraction = model_anatomy.positive_fraction(hidden)
                st.caption(f"{fraction:.0%} of this block's {hidden.shape[-1]} MLP neurons are positive across these tokens.")


st.header("2. Look inside a trained GPT")
look_inside()
