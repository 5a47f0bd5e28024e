"""The Sampling page: temperature, top-k, top-p, greedy and beam search, one token at a time.

It opens on the picked model's next-token bars for a prompt, transform by transform; step mode, generation, three
temperatures and the KV cache are tabs under them (inside the same section: moving a slider redraws the open tab).
"""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from llmviz.errors import LlmvizError
from llmviz.generation import sampling
from llmviz.lessons import quiz
from llmviz.lessons.defaults import DEFAULT_PROMPT
from ui import charts, picker, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.text import literal_html, literal_markdown, tidy_floats

settings = ui.settings()
ui.page_header(
    "Sampling: how a model writes",
    "The model only gives a score (logit) to every token of its vocabulary. Turning scores into one chosen "
    "token is a choice of its own: softmax, then temperature, top-k and top-p reshape the distribution.",
)

view = picker.current()
if view.family == "minilm":
    st.info(
        f"{literal_markdown(view.label)} is an encoder: it reads a whole sentence at once and does not write text. "
        f"This page "
        "shows the shipped GPT instead; pick a GPT or one of your runs in the sidebar."
    )
    view = picker.shipped_default()
model, tokenizer, meta, label = view.model, view.tokenizer, view.meta, view.content_key
is_names = "names" in label or meta.get("corpus") == "names"
st.caption(f"Model: {literal_markdown(view.label)} (picked in the sidebar).")


BEAM_TOKENS = 12  # the depth of the beam-search tree the page draws


@st.cache_data(show_spinner=False, max_entries=256)
def distribution_for(
    model_key: str, prompt: str, temperature: float, top_k: int, top_p: float, _view: picker.ModelView
) -> sampling.NextTokenView:
    """The next-token view, cached by (model, prompt, settings): one forward pass per new input."""
    return sampling.next_token_view(_view.model, _view.tokenizer, prompt, temperature, top_k, top_p)


st.subheader("The next token, transform by transform")  # its controls share its slide (presenter mode)
prompt = st.text_input("Prompt", "" if is_names else DEFAULT_PROMPT, **share.bind("prompt"))
share.carried_note("prompt")
TOP_K_DEFAULT = min(10, tokenizer.vocab_size)


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
    top_k = ui.bounded_slider(
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


encoded = sampling.encode_prompt(tokenizer, prompt, model)
if encoded.dropped:
    st.warning(
        f"This model's vocabulary has no {literal_markdown(', '.join(repr(c) for c in encoded.dropped))}: "
        "those characters were left out of the prompt."
    )
if encoded.cropped:
    st.warning(
        f"The prompt was cut: this model sees at most {sampling.visible_tokens(model)} tokens, so its first "
        f"{encoded.cropped} were left out and the model sees the last {len(encoded.ids)}."
    )
if encoded.start_token:
    st.info(
        f"{'Empty prompt' if not prompt else 'Nothing of the prompt is left'}: generation starts from the "
        f"boundary token {encoded.start_token}."
    )

quiz_ui.section(
    "sampling",
    lambda: quiz.sampling_questions(
        distribution_for(view.content_key, prompt, *chosen_settings(), view).distribution.logits,
        tokenizer.printable,
        *chosen_settings(),
    ),
)


# ------------------------------------------------------------------ the distribution
@sections.section("sampling.distribution", what="the next-token distribution")
def distribution_section(view: picker.ModelView, prompt: str, encoded) -> None:
    """Temperature, top-k and top-p with the distribution they shape and the step mode they drive: moving a
    slider reruns this section alone."""
    temperature, top_k, top_p = sampler_controls()
    distribution_panels(view, prompt, temperature, top_k, top_p)
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


def step_mode_part(view: picker.ModelView, encoded, temperature: float, top_k: int, top_p: float) -> None:
    st.subheader("Step mode: one token at a time, and take a different branch")
    step_mode(view, encoded, temperature, top_k, top_p)


def generate_part(view: picker.ModelView, encoded) -> None:
    st.subheader("Generate")
    generate_section(view, encoded)


def temperatures_part(view: picker.ModelView, encoded) -> None:
    st.subheader("The same prompt at three temperatures")
    three_temperatures(view, encoded)


def kv_cache_part(view: picker.ModelView, encoded) -> None:
    st.subheader("The KV cache: the same tokens, less work")
    kv_cache(view, encoded)


def distribution_panels(view: picker.ModelView, prompt: str, temperature: float, top_k: int, top_p: float) -> None:
    tokenizer = view.tokenizer
    with ui.friendly_errors("computing the distribution"):
        shown_view = distribution_for(view.content_key, prompt, temperature, top_k, top_p, view)
        dist, shown = shown_view.distribution, shown_view.shown
        names = charts.unique_labels([tokenizer.printable(i) for i in shown])
        stages = [
            ("raw softmax", dist.raw_probs),
            (f"temperature {temperature:g}", dist.temperature_probs),
            (f"top-k {top_k or 'off'}", dist.top_k_probs),
            (f"top-p {top_p:g}", dist.final_probs),
        ]
        columns = st.columns(4)
        largest = max(float(probs[shown].max()) for _, probs in stages)
        for column, (title, probs), entropy in zip(columns, stages, dist.entropies.values()):
            with column:
                figure = go.Figure(
                    go.Bar(
                        y=names,
                        x=[float(probs[i]) for i in shown],
                        orientation="h",
                        marker_color="#4c6ef5",
                        texttemplate="%{x:.3f}",
                        textposition="outside",
                        cliponaxis=False,
                    )
                )
                figure.update_layout(
                    title=title, height=360, margin=charts.margins(40, 5, 5), xaxis_range=[0, min(1.0, largest * 1.25)]
                )
                figure.update_yaxes(autorange="reversed", type="category", dtick=1)  # every token named, big type too
                charts.show(figure)
                # entropy is never negative; rounding error can make a certain token's −0.000
                st.metric("entropy", f"{max(0.0, entropy):.3f} nats", help="−Σ p ln p: 0 when one token is certain.")
        kept = dist.kept
        st.caption(
            f"{kept:,} of {tokenizer.vocab_size:,} tokens can still be chosen. The 15 tokens the raw model "
            "likes most are shown in every panel."
        )
        best = shown[0]
        z = float(dist.logits[best])
        if not sampling.is_greedy(temperature):
            charts.latex(
                rf"p_i = \frac{{e^{{z_i/T}}}}{{\sum_j e^{{z_j/T}}}}:\quad z_{{\text{{top}}}} = {z:.3f},\; "
                rf"z/T = {z / temperature:.3f},\; p = {float(dist.temperature_probs[best]):.4f}"
            )
        else:
            st.latex(r"T = 0:\; \text{all probability on } \arg\max_i z_i \text{ (greedy)}")
    st.subheader("Step 0 vs step N: the next token, before and after training")
    st.caption("The same prompt's 10 most likely next tokens at step 0 (random weights: nearly uniform) and now.")

    def render(shown_model: picker.ModelView, column: str) -> None:
        found = distribution_for(shown_model.content_key, prompt, 1.0, 0, 1.0, shown_model)
        top = found.shown[:10]
        probs = found.distribution.raw_probs
        figure = go.Figure(
            go.Bar(
                y=charts.unique_labels([shown_model.tokenizer.printable(i) for i in top]),
                x=[float(probs[i]) for i in top],
                orientation="h",
                marker_color="#4c6ef5",
                texttemplate="%{x:.3f}",
            )
        )
        figure.update_layout(height=340, margin=charts.margins(10, 5, 5), xaxis_range=[0, 1])
        figure.update_yaxes(autorange="reversed", type="category")
        charts.show(figure, key=state.widget("next_", column))
        st.metric("entropy of the raw softmax", f"{max(0.0, found.distribution.entropies['raw softmax']):.3f} nats")

    if box := sections.lazy("Compare step 0 with the picked step", "sampling_before_after"):
        with box:
            picker.before_after(render, what="the next-token distribution", view=view)


# ------------------------------------------------------------------ generation


@sections.section("sampling.generate")
def generate_section(view: picker.ModelView, encoded) -> None:
    model, tokenizer, label = view.model, view.tokenizer, view.content_key
    temperature, top_k, top_p = chosen_settings()
    m1, m2 = st.columns([3, 1])
    method = m1.radio(
        "Method", ["sampling", "greedy", "beam search"], horizontal=True, persist_state="page", **share.bind("method")
    )
    width = m2.slider(
        "Beam width", 1, 8, 3, disabled=method != "beam search", persist_state="page", **share.bind("beam_width")
    )
    st.caption("Generate uses the temperature, top-k and top-p set in section 1 when you press it.")
    g1, g2 = st.columns([1, 3])
    new_tokens = g1.slider("Tokens to generate", 1, 200, 40, persist_state="page", **share.bind("new_tokens"))
    limit, keep = sampling.visible_tokens(model), sampling.shift_keep(model)
    if len(encoded.ids) + new_tokens > limit:
        g1.caption(
            f"This model sees at most {limit} tokens: when the text outgrows that, the window keeps its last "
            f"{keep} and goes on" + (" (a context shift)." if keep < limit else " (it slides by one token).")
        )
    if method == "beam search" and new_tokens > BEAM_TOKENS:
        g1.caption(
            f"Beam search writes {BEAM_TOKENS} tokens here, not {new_tokens}: its tree below draws every "
            "beam at every depth, and more depths would not fit on the page."
        )
    if g1.button("Generate", type="primary"):
        with ui.friendly_errors("generation"):
            if method == "beam search":
                result = sampling.beam_search(
                    model, encoded.ids, width=width, max_new_tokens=min(new_tokens, BEAM_TOKENS)
                )
                state.BEAM.set((label, result, list(encoded.ids)))
            else:
                t = 0.0 if method == "greedy" else temperature
                records = list(
                    sampling.generate(model, encoded.ids, new_tokens, t, top_k, top_p, seed=settings.run_seed())
                )
                state.GENERATED.set((label, records, encoded.kept_text))
    with g2:
        if method != "beam search" and state.GENERATED.get(default=(None,))[0] == label:
            _, records, shown_prompt = state.GENERATED.get()
            spans = [f"<span style='color:#868e96'>{literal_html(shown_prompt)}</span>"]
            for record in records:
                piece = tokenizer.decode([record.token])
                alternatives = " | ".join(f"{tokenizer.printable(t)} {p:.2f}" for t, p in record.top[:5])
                alpha = 0.15 + 0.85 * record.probability
                spans.append(
                    f"<span title='p = {record.probability:.3f} · top: {literal_html(alternatives)}' "
                    f"style='background: rgba(76,110,245,{alpha:.2f}); white-space: "
                    f"break-spaces'>{literal_html(piece)}</span>"
                )
            # a highlighted space at the end of a line wraps too (pre-wrap let it hang past the column's edge), and a
            # run with no space in it (a long identifier, a row of '=') breaks inside the column
            st.markdown(
                "<div class='llmviz-generated' style='font-family:monospace;line-height:1.8;"
                "overflow-wrap:anywhere;word-break:break-word'>" + "".join(spans) + "</div>",
                unsafe_allow_html=True,
            )
            st.caption(
                "Darker = the token had a higher probability when it was chosen. Hover for the top alternatives."
            )

    # ------------------------------------------------------------------ beam search tree
    if method == "beam search" and state.BEAM.get(default=(None,))[0] == label:
        _, result, prompt_ids = state.BEAM.get()
        st.subheader(f"Beam search, width {width}: best score {result.score:.3f}")
        st.code(tokenizer.decode(prompt_ids) + tokenizer.decode(result.tokens), language=None, wrap_lines=True)
        layout = sampling.beam_layout(result)
        winners = sampling.beam_path(result)
        on_path = set(winners)
        figure = go.Figure()
        for kept, colour, width_ in ((False, "#dee2e6", 1), (True, "#91a7ff", 2)):
            xs, ys = [], []
            for node in result.nodes:
                if node.parent is not None and node.kept == kept and node.node_id not in on_path:
                    (x0, y0), (x1, y1) = layout[node.parent], layout[node.node_id]
                    xs += [x0, x1, None]
                    ys += [-y0, -y1, None]
            figure.add_trace(
                go.Scatter(
                    x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False, line=dict(color=colour, width=width_)
                )
            )
        figure.add_trace(
            go.Scatter(
                x=[layout[n][0] for n in winners],
                y=[-layout[n][1] for n in winners],
                mode="lines",
                line=dict(color="#e8590c", width=5),
                name="the winning path",
                hoverinfo="skip",
            )
        )
        groups = {
            "pruned (fell out of the beam)": [n for n in result.nodes[1:] if not n.kept],
            "kept in the beam": [n for n in result.nodes[1:] if n.kept and n.node_id not in on_path],
            "winning path": [n for n in result.nodes[1:] if n.node_id in on_path],
        }
        styles = {
            "pruned (fell out of the beam)": dict(size=6, color="#ced4da"),
            "kept in the beam": dict(size=10, color="#4c6ef5"),
            "winning path": dict(size=13, color="#e8590c"),
        }
        for name, nodes in groups.items():
            figure.add_trace(
                go.Scatter(
                    x=[layout[n.node_id][0] for n in nodes],
                    y=[-layout[n.node_id][1] for n in nodes],
                    mode="markers" if name.startswith("pruned") else "markers+text",
                    name=name,
                    marker=styles[name],
                    text=[tokenizer.printable(n.token) for n in nodes],
                    textposition="top center",
                    textfont=dict(
                        size=13 if name == "winning path" else 10,
                        color="#e8590c" if name == "winning path" else "#343a40",
                    ),
                    hovertext=[
                        f"{tokenizer.printable(n.token)}: log p = {n.log_prob:.3f}, path score = {n.score:.3f}"
                        for n in nodes
                    ],
                    hoverinfo="text",
                )
            )
        widest = max(
            (sum(1 for n in result.nodes if n.depth == d) for d in range(1, result.nodes[-1].depth + 1)), default=1
        )
        figure.update_layout(
            height=max(380, 26 * widest + 120),
            xaxis_title="depth (tokens generated)",
            yaxis_visible=False,
            margin=charts.margins(10),
            legend=dict(orientation="h", y=-0.15),
            xaxis=dict(dtick=1),
        )
        charts.show(figure)
        st.caption(
            "Every expanded candidate is a dot, best score on top within its parent's group; blue ones "
            "survived the cut to the beam width at their depth, grey ones fell out. The orange path is the "
            "winner. A path's score is the sum of its tokens' log-probabilities."
        )


# ------------------------------------------------------------------ step mode


@sections.section("sampling.step_mode")
def step_mode(view: picker.ModelView, encoded, temperature: float, top_k: int, top_p: float) -> None:
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
    with ui.friendly_errors("step mode"):
        record = next(sampling.generate(model, sequence, 1, temperature, top_k, top_p, seed=step_seed + len(sequence)))
        # the raw model's top 10, whatever top-k and top-p cut: its real runner-ups, never probability-0 padding
        candidates = sampling.raw_top(record.distribution, 10)
        final = record.distribution.final_probs
        frame = pd.DataFrame(
            {
                "token": [tokenizer.printable(t) for t, _, _ in candidates],
                "id": [t for t, _, _ in candidates],
                "raw probability": [p for _, p, _ in candidates],
                "after temperature, top-k, top-p": [float(final[t]) for t, _, _ in candidates],
                "can be sampled": ["yes" if ok else "no: filtered out" for _, _, ok in candidates],
            }
        )
        st.dataframe(
            tidy_floats(frame).style.format({"raw probability": "{:.4f}", "after temperature, top-k, top-p": "{:.4f}"}),
            hide_index=True,
            width="stretch",
        )
        s1, s2, s3 = st.columns(3)
        # callbacks change the sequence before the section is drawn again (no second rerun needed)
        s1.button(
            f"Take the sampled token: {literal_markdown(repr(tokenizer.printable(record.token)))}",
            on_click=sequence.append,
            args=(record.token,),
        )
        allowed = {t: ok for t, _, ok in candidates}
        s2.selectbox(
            "…or force one of the top 10",
            [t for t, _, _ in candidates],
            key=state.widget("step_forced_", label),
            persist_state="page",
            format_func=lambda t: f"{tokenizer.printable(t)} (id {t})" + ("" if allowed[t] else " · filtered out"),
        )
        s2.button(
            "Take this one (branch)",
            on_click=lambda: sequence.append(int(state.value(state.widget("step_forced_", label)))),
        )
        s3.button("Undo", disabled=len(sequence) <= len(encoded.ids), on_click=sequence.pop)


# ------------------------------------------------------------------ three temperatures


@sections.section("sampling.temperatures")
def three_temperatures(view: picker.ModelView, encoded) -> None:
    model, tokenizer, label = view.model, view.tokenizer, view.content_key
    _, top_k, top_p = chosen_settings()
    temperatures = st.multiselect(
        "Temperatures", [0.0, 0.2, 0.5, 0.8, 1.0, 1.3, 1.8, 2.5], default=[0.2, 1.0, 1.8], max_selections=3
    )
    if st.button("Generate at these temperatures"):
        outputs, seed = {}, settings.run_seed()
        for t in temperatures:
            try:
                outputs[t] = sampling.generate_text(
                    model, tokenizer, prompt, 60, temperature=t, top_k=top_k, top_p=top_p, seed=seed
                )
            except LlmvizError as error:
                outputs[t] = f"(error: {error})"
        state.THREE.set((label, outputs))
    if state.THREE.get(default=(None,))[0] == label:
        outputs = state.THREE.get()[1]
        for column, (t, text) in zip(st.columns(max(1, len(outputs))), outputs.items()):
            column.markdown(f"**T = {t:g}**")
            column.code(text, language=None, wrap_lines=True)
        st.caption(
            "Low temperature repeats the safest tokens; high temperature tries rare ones, and drifts into nonsense."
        )


# ------------------------------------------------------------------ the KV cache


@sections.section("sampling.kv_cache")
def kv_cache(view: picker.ModelView, encoded) -> None:
    temperature, top_k, top_p = chosen_settings()
    method = state.value("method", "sampling")
    model, tokenizer, label = view.model, view.tokenizer, view.content_key
    st.caption(
        "Without a cache, every new token runs the model over the whole text again. With a KV cache the keys and "
        "values of earlier positions are kept, and only the new position runs. Both must write the same tokens."
    )
    k1, k2 = st.columns([1, 3])
    kv_tokens = k1.slider(
        "Tokens to generate", 10, 300, 100, step=10, key=state.widget("kv_tokens"), persist_state="page"
    )
    # the button's label whole (in the slider's narrow column it was cut to "Generate with and without the c…")
    if k1.button("Generate both ways", key=state.widget("kv_run"), help="With the KV cache, then without it."):
        with ui.friendly_errors("the KV-cache comparison"):
            t = 0.0 if method == "greedy" else temperature
            state.KV_COMPARISON.set(
                (
                    label,
                    sampling.compare_kv_cache(model, encoded.ids, kv_tokens, t, top_k, top_p, seed=settings.run_seed()),
                )
            )
    if state.KV_COMPARISON.get(default=(None,))[0] == label:
        comparison = state.KV_COMPARISON.get()[1]
        with k2:
            if not comparison.cache_supported:
                st.info(
                    "This model has no KV cache (it is not a transformer, or it reads a fixed window): both runs "
                    "took the same path."
                )
            m1, m2, m3 = st.columns(3)
            m1.metric("with the KV cache", f"{comparison.seconds_with_cache:.3f} s")
            m2.metric("without it", f"{comparison.seconds_without_cache:.3f} s")
            m3.metric("speed-up", f"{comparison.speedup:.1f}×")
            if comparison.identical:
                st.success(
                    f"Identical: all {len(comparison.tokens_with_cache)} tokens are the same with and without "
                    "the cache."
                )
            else:
                first = next(
                    i
                    for i, (a, b) in enumerate(zip(comparison.tokens_with_cache, comparison.tokens_without_cache))
                    if a != b
                )
                st.warning(
                    f"The two runs part at token {first}: float rounding differs between the two paths and "
                    "tipped a near-tie."
                )
        left, right = st.columns(2)
        left.markdown("**with the KV cache**")
        left.code(tokenizer.decode(comparison.tokens_with_cache), language=None, wrap_lines=True)
        right.markdown("**without it**")
        right.code(tokenizer.decode(comparison.tokens_without_cache), language=None, wrap_lines=True)
        st.caption(
            "Times are wall-clock on this server, shared with everyone using it: run it twice and they vary. "
            "The gap grows with the text: without the cache each token costs work proportional to the whole "
            "window, with it one position."
        )


distribution_section(view, prompt, encoded)
