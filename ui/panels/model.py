"""The Model page's figures and tables (``stages/model.py`` wires them; ``llmviz/lessons/model.py`` and the shared
:mod:`llmviz.lessons.architectures` compute the numbers): the parameters of each part, the five views of one recorded
forward pass (one function a tab), and the GPT-2 → Llama table and lab."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.adapt import memory
from llmviz.lessons import architectures, forward, model
from llmviz.models.gpt import GPTConfig
from ui import charts, picker, present, share, state
from ui.sources import ModelView
from ui.text import fixed, literal_markdown, tidy_floats
from ui.widgets import bounded_slider, index_slider


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
    table = model.parameter_table(config)
    total = sum(table.values())
    frame = pd.DataFrame({"component": list(table), "parameters": list(table.values())})
    frame["share"] = (frame["parameters"] / total).map(lambda x: f"{x:.1%}")
    charts.show(  # the page's picture first, its table under it
        parameter_bars(table, config), width="stretch", words=model.parameter_words(table)
    )
    with st.expander("As a table, with each component's share"):
        st.dataframe(frame.style.format({"parameters": "{:,}"}), hide_index=True, width="stretch")
    st.metric("Total parameters", f"{total:,}")
    m2, m3, m4 = st.columns(3)
    m2.metric("Weights in fp32", memory.human_bytes(model.memory_bytes(total, "fp32")))
    m3.metric("Weights in bf16", memory.human_bytes(model.memory_bytes(total, "bf16")))
    m4.metric(
        "KV cache per token (bf16)",
        memory.human_bytes(architectures.kv_cache_bytes(config, 1, "bf16")),
        help="Keys and values of every layer kept for each token while generating: "
        f"2 × {config.n_layers} layers × {config.kv_heads} key/value heads × {config.head_dim} "
        "dims × 2 bytes.",
    )
    if config.tie_weights:
        untied = model.other_tying(config)
        st.caption(
            f"Untied, the same sizes have {untied:,} parameters: tying saves {untied - total:,} "
            f"(the {config.vocab_size:,} × {config.d_model} output matrix)."
        )
    else:
        tied = model.other_tying(config)
        st.caption(
            f"Tied, the same sizes have {tied:,} parameters: the separate {config.vocab_size:,} × "
            f"{config.d_model} output matrix adds {total - tied:,}."
        )
    st.caption(
        "Memory counts the weights only: training also needs gradients, optimizer state "
        "(Adam: two more copies) and activations."
    )


# ------------------------------------------------------------------ one sentence through the model
@st.cache_data(show_spinner=False, max_entries=32)
def recorded_pass(model_key: str, ids: tuple[int, ...], _view: ModelView) -> dict:
    return forward.recorded_pass(_view.model, list(ids))


def tab_titles(config: GPTConfig) -> list[str]:
    """The titles of the five tabs of one recorded pass, in the order of :data:`TABS`."""
    return [
        "Residual stream",
        f"{architectures.NORM_TITLES[config.norm]} before/after",
        "LayerNorm vs RMSNorm",
        "GELU vs SwiGLU",
        "Router (mixture of experts)" if config.n_experts else "MLP activations",
    ]


def residual_tab(cache: dict, config: GPTConfig, labels: list[str]) -> None:
    """The residual stream's mean size after the embeddings and after each block."""
    norms = model.residual_norms(cache, config.n_layers)
    figure = go.Figure(go.Scatter(x=[n for n, _ in norms], y=[v for _, v in norms], mode="lines+markers"))
    figure.update_layout(yaxis_title="mean ‖x‖ per token", height=320, margin=charts.margins(10))
    charts.show(figure, width="stretch", words=model.residual_words(norms))
    st.markdown(
        "Each block **adds** its attention and MLP outputs to the residual stream (the shortcut "
        "connections), so its size tends to grow from block to block."
    )


def norm_tab(cache: dict, config: GPTConfig, labels: list[str]) -> None:
    """Each token's mean and variance before and after a block's first norm, and the norm's formula."""
    layer = index_slider("Block", config.n_layers, **share.bind("ln_layer"))
    stats = model.layernorm_before_after(cache, layer)
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


def norms_compared_tab(cache: dict, config: GPTConfig, labels: list[str]) -> None:
    """LayerNorm and RMSNorm on the same stream: what subtracting the mean changes."""
    layer = index_slider("Block", config.n_layers, **share.bind("norms_layer"))
    compared = model.norms_compared(cache, layer, config.norm_eps)
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


def activations_tab(cache: dict, config: GPTConfig, labels: list[str]) -> None:
    """GELU and SwiGLU: their curves, and one token's stream through the same random neurons."""
    curves = architectures.activation_curves()
    figure = go.Figure()
    for name, values_ in curves.items():
        if name != "x":
            figure.add_trace(go.Scatter(x=curves["x"].tolist(), y=values_.tolist(), name=name, mode="lines"))
    figure.update_layout(height=320, xaxis_title="x", yaxis_title="activation", margin=charts.margins(10))
    charts.show(figure, width="stretch", words=architectures.activation_words(curves))
    st.latex(
        r"\mathrm{GELU\,MLP}(x) = W_2\,\mathrm{GELU}(W_1 x) \qquad "
        r"\mathrm{SwiGLU}(x) = W_2\,\big(\mathrm{SiLU}(W_{gate}\,x) \odot W_1 x\big)"
    )
    layer = index_slider("Block", config.n_layers, **share.bind("swiglu_layer"))
    token = index_slider("Token", len(labels), **share.bind("swiglu_token"))
    both = model.mlps_compared(cache, layer)
    frame = pd.DataFrame(
        {
            "neuron": list(range(model.SWIGLU_NEURONS)),
            "W₁x": both["up"][token].tolist(),
            "GELU(W₁x)": both["gelu"][token].tolist(),
            "gate SiLU(W_gate x)": both["gate"][token].tolist(),
            "SwiGLU: gate × W₁x": both["swiglu"][token].tolist(),
        }
    )
    figure = go.Figure([go.Bar(x=frame["neuron"], y=frame[c], name=c) for c in frame.columns[2:]])
    figure.update_layout(height=300, barmode="group", xaxis_title="neuron", margin=charts.margins(10))
    charts.show(
        figure,
        width="stretch",
        words=model.gates_words(
            labels[token], both["gelu"][token].tolist(), both["gate"][token].tolist(), both["swiglu"][token].tolist()
        ),
    )
    st.caption(
        f"The same stream (block {layer}'s input to its MLP, token {labels[token]!r}, normalised) through "
        "32 neurons with the same random W₁ and a random gate: GELU decides from W₁x alone whether a "
        "neuron passes; SwiGLU lets a second projection open or close it (gate near 0 closes it). "
        "SwiGLU has three matrices instead of two, so Llama makes it 8/3 × d_model wide instead of "
        "4 × to keep the parameter count."
    )


def router_view(cache: dict, config: GPTConfig, labels: list[str]) -> None:
    """A mixture of experts: the router's probabilities, each token's chosen experts and each expert's load."""
    layer = index_slider("Block", config.n_layers, **share.bind("router_layer"))
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
        words=architectures.router_words(labels, router.probs, config.experts_top_k),
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
        words=architectures.load_words([int(n) for n in router.load.tolist()], config.experts_top_k),
    )
    st.caption(
        f"Each token goes through {config.experts_top_k} of the {config.n_experts} expert MLPs, "
        "mixed with the router's probabilities renormalised over the chosen ones. Training adds a "
        f"load-balancing loss (× {config.router_aux_loss_coef:g}) so that the experts share the "
        "tokens instead of a few taking them all."
    )


def mlp_view(cache: dict, config: GPTConfig, labels: list[str]) -> None:
    """A dense MLP's neurons, token by token, and how many are positive."""
    layer = index_slider("Block", config.n_layers, **share.bind("mlp_layer"))
    hidden = model.mlp_hidden(cache, layer)  # (T, F)
    neurons = bounded_slider(
        "Neurons shown", 16, hidden.shape[-1], min(64, hidden.shape[-1]), step=16, **share.bind("mlp_neurons")
    )
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
        words=model.mlp_words(labels, hidden[:, :neurons].tolist(), hidden.shape[-1]),
    )
    fraction = model.positive_fraction(hidden)
    st.caption(f"{fraction:.0%} of this block's {hidden.shape[-1]} MLP neurons are positive across these tokens.")


def mlp_tab(cache: dict, config: GPTConfig, labels: list[str]) -> None:
    """The router of a mixture of experts, or a dense MLP's neurons (or a note: an attention-only model has none)."""
    if not getattr(config, "mlp", True):
        st.info("This model is attention-only: its blocks have no MLP (see Inside the model, section 4).")
    elif config.n_experts:
        router_view(cache, config, labels)
    else:
        mlp_view(cache, config, labels)


TABS = (residual_tab, norm_tab, norms_compared_tab, activations_tab, mlp_tab)


# ------------------------------------------------------------------ GPT-2 → Llama
@st.cache_data(show_spinner=False)
def gpt2_to_llama_rows(kv_heads: int) -> list[dict]:
    return model.gpt2_to_llama_table(kv_heads)


def gpt2_to_llama_table(kv_heads: int) -> None:
    """The steps from GPT-2 small to Llama's design: parameters, the change from the step before, the KV cache."""
    frame = pd.DataFrame(gpt2_to_llama_rows(kv_heads))
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


def llama_lab_jobs() -> list:
    """This session's GPT-2 → Llama lab runs, those still kept."""
    spec = state.LLAMA_LAB.get() or {}
    found = [picker.runs().live(job_id) for job_id in spec.get("ids", [])]
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
        charts.show(
            figure,
            width="stretch",
            key=state.widget("llama_lab_chart"),
            words=architectures.llama_lab_words(
                list(measured["step"]), [float(v) for v in measured["validation loss"]]
            ),
        )
    st.caption(
        f"Each row trained {spec.get('steps', '?')} steps on {literal_markdown(str(spec.get('corpus', '')))} "
        "(characters, context 32, batch 16), with the same seed and batches. Differences of a few hundredths "
        "after a short run are within what another seed gives; the races on the Training page show whole "
        "curves (these runs are listed there too, and in the sidebar)."
    )
