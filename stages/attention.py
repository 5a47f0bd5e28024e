"""The Attention page: from dot products to multi-head attention in real models."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

import ui
from llmviz.adapt import memory
from llmviz.errors import ConfigError, LlmvizError
from llmviz.lessons import architectures, quiz
from llmviz.lessons import forward as views
from llmviz.models import attention as att
from llmviz.models.gpt import PRESETS, GPTConfig
from llmviz.tokenizers.ids import encode
from ui import charts, picker, present, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.text import literal_markdown, tidy_floats

ui.settings()
ui.page_header(
    "Attention: tokens looking at each other",
    "Each token scores every earlier token (query · key), turns the scores into weights with softmax and mixes what "
    "they carry (values).",
)
# a sentence of the Python manual, every word of it among the manual's 300 most common, which the shipped GPT reads
# word by word (all but "assigned", two tokens); its repeated words ("object", "the") show heads that look back
DEFAULT_SENTENCE = "The assigned object should be a sequence object of the same type."


num = charts.tex_number


def matrix_table(matrix: torch.Tensor, rows, columns=None) -> pd.DataFrame:
    values = matrix.detach().numpy()
    columns = columns or [f"d{j}" for j in range(values.shape[1])]
    return tidy_floats(pd.DataFrame(values, index=list(rows), columns=list(columns)))


def show_matrix(where, matrix: torch.Tensor, rows) -> None:
    """A small matrix as a table, every number to 4 decimals (a column format: no pandas Styler to render)."""
    frame = matrix_table(matrix, rows)
    where.dataframe(
        frame,
        width="stretch",
        column_config={name: st.column_config.NumberColumn(format="%.4f") for name in frame.columns},
    )


# ------------------------------------------------------------------ without weights


@sections.section("attention.without_weights")
def without_weights() -> None:
    journey = torch.tensor(att.JOURNEY_EMBEDDINGS)
    simple = att.simple_self_attention(journey)
    left, right = st.columns([3, 2])
    with left:
        charts.show(
            charts.heatmap(
                simple["weights"],
                att.JOURNEY_TOKENS,
                att.JOURNEY_TOKENS,
                title="attention weights = softmax(x_i · x_j) per row",
                x_title="key",
                y_title="query",
            ),
            width="stretch",
        )
    with right:
        st.dataframe(
            tidy_floats(pd.DataFrame(journey.numpy(), index=att.JOURNEY_TOKENS, columns=["x", "y", "z"])).style.format(
                "{:.2f}"
            ),
            width="stretch",
        )
        st.caption("The embeddings: one 3-dimensional vector per word.")
    st.subheader("One row of the weights, worked out")  # the query picker with the sums it changes (one slide)
    query = st.selectbox(
        "Query word", range(6), index=1, format_func=lambda i: att.JOURNEY_TOKENS[i], **share.bind("query_word")
    )
    with st.container():
        x_q = journey[query]
        dots = " + ".join(f"{num(a, '.2f')}\\cdot{num(b, '.2f')}" for a, b in zip(x_q.tolist(), journey[0].tolist()))
        scores = simple["scores"][query]
        total = float(simple["softmax_denominators"][query])
        z = simple["context"][query]
        charts.latex(
            rf"\omega_{{{query},0}} = x_{{{query}}} \cdot x_0 = {dots} = {float(simple['scores'][query, 0]):.4f}",
            r"\omega_{" + str(query) + r"} = [" + ", ".join(f"{v:.4f}" for v in scores.tolist()) + "]",
            rf"\alpha_{{{query},j}} = \frac{{e^{{\omega_{{{query},j}}}}}}{{\sum_k e^{{\omega_{{{query},k}}}}}},\quad "
            rf"\textstyle\sum_k e^{{\omega_{{{query},k}}}} = {total:.4f}",
            r"\alpha_{"
            + str(query)
            + r"} = ["
            + ", ".join(f"{v:.4f}" for v in simple["weights"][query].tolist())
            + "]",
            rf"z_{{{query}}} = \sum_j \alpha_{{{query},j}}\, x_j = [" + ", ".join(f"{v:.4f}" for v in z.tolist()) + "]",
        )
    with st.expander("All context vectors"):
        show_matrix(st, simple["context"], att.JOURNEY_TOKENS)


def without_weights_lesson() -> None:
    st.header("2. Self-attention without trainable weights")
    st.caption(
        "Six words, 'Your journey starts with one step', each a hand-picked 3-dimensional embedding: the "
        "smallest attention there is, with no weights to learn."
    )
    without_weights()


# ------------------------------------------------------------------ the toy example
toy_x = att.toy_input()


@sections.section("attention.toy")
def toy_example() -> None:
    editors = {}
    grid_cells = [cell for row in (st.columns(2), st.columns(2)) for cell in row]
    for column, (name, default) in zip(
        grid_cells, [("X", toy_x.tolist()), ("W_Q", att.TOY_W_Q), ("W_K", att.TOY_W_K), ("W_V", att.TOY_W_V)]
    ):
        with column:
            st.markdown(f"**{name}**")
            frame = pd.DataFrame(
                default,
                columns=[f"c{j}" for j in range(4)],
                index=att.TOY_TOKENS if name == "X" else [f"r{i}" for i in range(4)],
            )
            editors[name] = st.data_editor(frame, key=state.widget("edit_", name), num_rows="fixed")
    t1, t2, t3 = st.columns(3)
    scaled = t1.toggle("Scale by √d_k", value=True, **share.bind("scale"))
    causal = t2.toggle("Causal mask", value=True, **share.bind("mask"))
    heads = t3.radio(
        "Heads",
        [1, 2, 3],
        horizontal=True,
        help="2 heads: the example's per-head matrices are the column "
        "halves of W_Q, W_K, W_V. 3 heads cannot split a width of 4.",
        **share.bind("heads"),
    )
    w_o = torch.tensor(att.TOY_W_O) if heads > 1 else None
    try:  # a cleared cell, or 3 heads for a width of 4: a message that names the problem
        matrices = att.toy_matrices({name: frame.to_numpy(dtype=object) for name, frame in editors.items()})
        steps = att.attention_steps(
            matrices["X"],
            matrices["W_Q"],
            matrices["W_K"],
            matrices["W_V"],
            num_heads=heads,
            mask="causal" if causal else "none",
            w_o=w_o,
            scale=scaled,
        )
    except LlmvizError as error:
        st.error(str(error))
        return
    tokens = att.TOY_TOKENS
    st.subheader("Q = X W_Q, K = X W_K, V = X W_V")
    q1, q2, q3 = st.columns(3)
    for column, name in zip((q1, q2, q3), ("Q", "K", "V")):
        column.markdown(f"**{name}**")
        show_matrix(column, steps[name], tokens)
    x0, wq = matrices["X"][0], matrices["W_Q"][:, 0]
    charts.latex(
        r"Q_{\text{The},0} = "
        + " + ".join(f"{num(a)}\\cdot{num(b)}" for a, b in zip(x0.tolist(), wq.tolist()))
        + f" = {float(steps['Q'][0, 0]):.4f}"
    )
    for head in range(heads):
        toy_head(steps, head, heads, scaled=scaled, causal=causal)
    if heads > 1:
        st.subheader("Concatenate the heads, then project with W_O")
        c1, c2 = st.columns(2)
        c1.markdown("**Concat**")
        show_matrix(c1, steps["concat"], tokens)
        c2.markdown("**Concat · W_O** (the example's W_O)")
        show_matrix(c2, steps["output"], tokens)
    if causal:
        st.info(
            "Under the causal mask the first token ('The') can only attend to itself: its weight on "
            "itself is 1, so its output is exactly its own value vector. It never averages in 'cat': "
            "that would let it see the future."
        )
    if not scaled:
        st.caption(
            "Without scaling, scores grow with d_k, the softmax gets peakier, and its gradients vanish; "
            "dividing by √d_k keeps the scores' spread about 1."
        )


def toy_head(steps: dict[str, torch.Tensor], head: int, heads: int, scaled: bool, causal: bool) -> None:
    """One head of the toy example: its four steps in one figure, the weight of 'cat' on 'The' worked out, and
    its output (everything computed by :func:`llmviz.models.attention.attention_steps`)."""
    tokens = att.TOY_TOKENS
    d_k = steps["Q_heads"].shape[-1]
    st.subheader(f"Head {head + 1}" if heads > 1 else "Scores, mask, softmax, output")
    q_h, k_h = steps["Q_heads"][head], steps["K_heads"][head]
    masked = steps["masked_scores"][head].clone()
    # one figure of four panels (a browser draws it far faster than four); a projector's slide holds
    # the four steps in one row, a page two rows of two
    charts.show(
        charts.heatmap_panels(
            [
                dict(matrix=steps["scores"][head], x_labels=tokens, y_labels=tokens, title="Q Kᵀ"),
                dict(
                    matrix=steps["scaled_scores"][head],
                    x_labels=tokens,
                    y_labels=tokens,
                    title=f"÷ √{d_k}" if scaled else "not scaled",
                ),
                dict(
                    matrix=masked.masked_fill(~torch.isfinite(masked), float("nan")),
                    x_labels=tokens,
                    y_labels=tokens,
                    title="masked (blank = −∞)" if causal else "no mask",
                ),
                dict(
                    matrix=steps["weights"][head],
                    x_labels=tokens,
                    y_labels=tokens,
                    title="softmax weights",
                    zmin=0,
                    zmax=1,
                ),
            ],
            columns=4 if present.enabled() else 2,
        ),
        width="stretch",
        key=state.widget("attention_steps_", head),
    )
    st.subheader(f"The weight of 'cat' on 'The'{f', head {head + 1}' if heads > 1 else ''}, worked out")
    row = 1
    terms = " + ".join(f"{num(a, '.4f')}\\cdot{num(b, '.4f')}" for a, b in zip(q_h[row].tolist(), k_h[0].tolist()))
    raw, shown = float(steps["scores"][head][row, 0]), float(steps["scaled_scores"][head][row, 0])
    dot_line = rf"q_{{\text{{cat}}}} \cdot k_{{\text{{The}}}} = {terms} = {raw:.4f}" + (
        rf"\;\Rightarrow\; \frac{{{raw:.4f}}}{{\sqrt{{{d_k}}}}} = {shown:.4f}" if scaled else ""
    )
    weights_row = steps["weights"][head][row]
    allowed = [j for j in range(3) if bool(steps["mask"][0, row, j])] if steps["mask"].dim() == 3 else list(range(3))
    exps = " + ".join(f"e^{{{float(steps['scaled_scores'][head][row, j]):.4f}}}" for j in allowed)
    charts.latex(
        dot_line,
        rf"\alpha_{{\text{{cat}},\text{{The}}}} = \frac{{e^{{{shown:.4f}}}}}{{{exps}}}"
        rf" = {float(weights_row[0]):.4f}",
    )
    st.markdown(f"**Output of {'head ' + str(head + 1) if heads > 1 else 'attention'}** (weights × V)")
    show_matrix(st, steps["head_outputs"][head], tokens)


def toy_lesson() -> None:
    st.header("3. Scaled dot-product attention, step by step")
    st.caption(
        "A toy example small enough to check by hand: 'The cat sat', d_model = 4, embeddings plus small "
        "positional offsets, and hand-picked W_Q, W_K, W_V and W_O. Edit any matrix: every number below is "
        "recomputed."
    )
    toy_example()


# ------------------------------------------------------------------ shapes
def shapes_lesson() -> None:
    st.header("4. Multi-head attention: the shapes")
    shapes = att.head_split_steps(torch.arange(24, dtype=torch.float32).view(1, 3, 8), num_heads=2)
    small, split, transposed = shapes["input"], shapes["viewed"], shapes["transposed"]
    st.markdown("`(batch, tokens, d_out)` = (1, 3, 8)")  # all eight columns in view: the full width
    st.dataframe(tidy_floats(pd.DataFrame(small[0].numpy(), index=["t0", "t1", "t2"])), width="stretch")
    s2, s3 = st.columns(2)
    s2.markdown("`.view(1, 3, 2, 4)` → (batch, tokens, heads, head_dim)")
    s2.dataframe(
        pd.DataFrame(
            {
                f"head {head}": [str(split[0, t, head].int().tolist()) for t in range(3)]  # a table,
                for head in range(2)
            },
            index=["t0", "t1", "t2"],
        ),
        width="stretch",
    )  # no code block to load
    s3.markdown("`.transpose(1, 2)` → (batch, heads, tokens, head_dim)")
    for head in range(2):
        s3.markdown(f"head {head}")
        s3.dataframe(tidy_floats(pd.DataFrame(transposed[0, head].numpy(), index=["t0", "t1", "t2"])), width="stretch")
    st.caption(
        "Each head gets its own slice of the width and attends over all tokens at once; afterwards "
        "`.transpose(1, 2).contiguous().view(1, 3, 8)` puts the heads side by side again (the concatenation)."
    )


# ------------------------------------------------------------------ masks
def masks_lesson() -> None:
    st.header("5. Masks side by side")
    encoder_tokens = ["Le", "chat", "était", "assis"]
    encoder_out = torch.randn(4, 4, generator=torch.Generator().manual_seed(1)) * 0.5  # the page's own stream
    padding = torch.tensor([[True, True, False]])  # the last token is padding
    eye = torch.eye(4)
    x = toy_x
    variants = {
        "none": att.attention_steps(x, eye, eye, eye),
        "causal": att.attention_steps(x, eye, eye, eye, mask="causal"),
        "padding (last is [PAD])": att.attention_steps(x, eye, eye, eye, padding_mask=padding),
        "cross-attention": att.attention_steps(x, eye, eye, eye, kv=encoder_out),
    }
    mask_panels = []
    for name, steps_ in variants.items():
        padded = [*att.TOY_TOKENS[:-1], "[PAD]"]  # the padding variant's last token is padding, not "sat"
        keys = encoder_tokens if name == "cross-attention" else padded if name.startswith("padding") else att.TOY_TOKENS
        queries = padded if name.startswith("padding") else att.TOY_TOKENS
        mask_panels.append(
            dict(
                matrix=steps_["weights"][0],
                x_labels=keys,
                y_labels=queries,
                title=name,
                zmin=0,
                zmax=1,
                text_format=".2f",
            )
        )
    charts.show(
        charts.heatmap_panels(mask_panels, columns=4 if present.enabled() else 2),
        width="stretch",
        key=state.widget("masks"),
    )
    st.caption(
        "These four use the toy example's X with W_Q = W_K = W_V = the identity (no learned weights), so their "
        "numbers differ from section 3's, which uses its own W_Q, W_K and W_V. "
        "Causal: no looking ahead (GPT). Padding: nobody attends to padding (batches of unequal length). "
        "Cross-attention (the decoder of an encoder–decoder Transformer, as in 'Attention Is All You Need'): queries "
        "from the decoder, keys and values from the encoder's "
        "output — 3 queries over 4 keys, so the matrix need not be square."
    )


# ------------------------------------------------------------------ your sentence through the picked model
@st.cache_data(show_spinner=False, max_entries=64)
def gpt_patterns(model_key: str, sentence: str, _view: picker.ModelView) -> views.AttentionPatterns | None:
    """Every pattern of the picked model on the sentence, cached by (its weights id, sentence)."""
    return views.attention_patterns(_view.model, encode(_view.tokenizer, sentence))


@st.cache_data(show_spinner="Running MiniLM…", max_entries=64)
def minilm_patterns(sentence: str) -> views.EncoderAttention:
    return views.encoder_attention(picker.load("pretrained:minilm").model, sentence)


def token_labels(view: picker.ModelView, ids: list[int]) -> list[str]:
    return charts.unique_labels([view.tokenizer.printable(i) for i in ids])


def pattern_heatmap(pattern, labels: list[str], title: str):
    return charts.heatmap(
        pattern,
        labels,
        labels,
        title=title,
        text_format=None,
        x_title="key (attended to)",
        y_title="query",
        zmin=0,
        zmax=1,
        height=max(400, 18 * len(labels) + 180),
    )


def lines_figure(pattern, labels: list[str], query) -> go.Figure:
    figure = go.Figure()
    queries = range(len(labels)) if query == "all" else [query]
    buckets: dict[int, tuple[list, list]] = {}  # lines of similar weight share one trace (fast to build and draw)
    for i in queries:
        for j in range(len(labels)):
            weight = float(pattern[i, j])
            if weight > 0.02:
                xs, ys = buckets.setdefault(min(10, round(weight * 10)), ([], []))
                xs += [0, 1, None]
                ys += [-i, -j, None]
    for bucket, (xs, ys) in sorted(buckets.items()):
        weight = bucket / 10
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                line=dict(width=1 + 8 * weight, color=f"rgba(76,110,245,{min(1, 0.2 + weight)})"),
            )
        )
    picked = set(queries)
    figure.add_trace(
        go.Scatter(
            x=[-0.02] * len(labels),
            y=[-i for i in range(len(labels))],
            text=labels,
            mode="text",
            textposition="middle left",
            hoverinfo="skip",
            textfont=dict(color=["#212529" if i in picked else "#adb5bd" for i in range(len(labels))]),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[1.02] * len(labels),
            y=[-i for i in range(len(labels))],
            text=labels,
            mode="text",
            textposition="middle right",
            hoverinfo="skip",
        )
    )
    figure.update_layout(
        showlegend=False,
        height=max(320, 22 * len(labels) + 40),
        xaxis_visible=False,
        yaxis_visible=False,
        margin=charts.margins(10),
        xaxis_range=[-0.5, 1.5],
        yaxis_range=[-len(labels) + 0.4, 1.4],
        annotations=[
            dict(x=0, y=0.9, text="<b>query</b>", showarrow=False, xanchor="right"),
            dict(x=1, y=0.9, text="<b>key</b>", showarrow=False, xanchor="left"),
        ],
    )
    return figure


@sections.section("attention.head")
def attention_views(patterns, labels: list[str], key: str, compare_sentence: str | None = None) -> None:
    """One head's pattern as a heatmap and as lines: layer, head and query re-draw only this part.

    ``compare_sentence``: also draw the same head at step 0 and at the picked step (it follows these sliders)."""
    n_layers, n_heads = patterns.shape[:2]
    c1, c2 = st.columns(2)
    bind_layer, bind_head = (
        (share.bind("layer"), share.bind("head")) if key == "gpt" else (share.bind("enc_layer"), share.bind("enc_head"))
    )
    layer = ui.index_slider("Layer", n_layers, where=c1, **bind_layer)
    head = ui.index_slider("Head", n_heads, where=c2, **bind_head)
    pattern = patterns[layer, head]  # (T, T)
    left, right = st.columns([1, 1])
    charts.show_in(
        left,
        pattern_heatmap(pattern, labels, f"layer {layer}, head {head}"),
        width="stretch",
        key=state.widget("attention_heat_", key),
    )
    with right:
        query = st.selectbox(
            "Lines from query",
            ["all"] + list(range(len(labels))),
            key=state.widget("attention_query_", key),
            format_func=lambda i: "all tokens" if i == "all" else labels[i],
        )
        charts.show(lines_figure(pattern, labels, query), width="stretch", key=state.widget("attention_lines_", key))
        st.caption(
            "Each line joins a query (left) to a key (right); the thicker and darker the line, the larger "
            "the attention weight."
        )
    if compare_sentence is not None and picker.current().run_id is not None:  # only a run has a step 0
        st.subheader("Step 0 vs step N")
        st.caption(
            f"Layer {layer}, head {head} (the sliders above) before training (random weights: attention "
            "spreads almost evenly over the visible tokens) and at the step picked in the sidebar."
        )
        if box := sections.lazy("Compare step 0 with the picked step", "attention_before_after"):
            with box:
                attention_before_after(compare_sentence, layer, head)


def attention_grid(patterns, key: str) -> None:
    st.subheader("Every layer and head at once")
    charts.show(charts.head_grid(patterns), width="stretch", key=state.widget("attention_grid_", key))
    st.caption(
        "Every layer × head as a thumbnail: some heads look at the previous token, some at the first token, "
        "some spread out."
    )


def attention_before_after(sentence: str, layer: int, head: int) -> None:
    """One head at step 0 and at the picked step, side by side (drawn inside the head section, so its layer and
    head sliders decide which head)."""

    def render(shown: picker.ModelView, column: str) -> None:
        found = gpt_patterns(shown.content_key, sentence, shown)
        if found is None:
            st.info("This model has no attention to show.")
            return
        charts.show(
            pattern_heatmap(found.patterns[layer, head], token_labels(shown, found.ids), f"layer {layer}, head {head}"),
            width="stretch",
            key=state.widget("attention_before_after_", column),
        )

    picker.before_after(render, what="the attention patterns")


def attention_quiz(view: picker.ModelView, found: views.AttentionPatterns) -> list:
    cache = {f"blocks.{layer}.attn.pattern": found.patterns[layer : layer + 1] for layer in range(found.n_layers)}
    layer = min(int(state.value("layer", 0)), found.n_layers - 1)
    head = min(int(state.value("head", 0)), found.n_heads - 1)
    return quiz.attention_questions(cache, [view.tokenizer.printable(i) for i in found.ids], layer, head)


@sections.section("attention.sentence")
def your_sentence() -> None:
    """The key picture, the pattern of your sentence through the picked model, and the same sentence through MiniLM:
    typing a new sentence re-draws only them."""
    st.header("1. Your sentence through the model picked in the sidebar")
    sentence = st.text_input("Sentence", DEFAULT_SENTENCE, **share.bind("sentence"))
    share.carried_note("sentence")
    if not sentence.strip():
        st.warning("Type a sentence to see its attention patterns.")
        return
    view = picker.current()
    if view.family == "minilm":
        st.info("The picked model is the pretrained MiniLM encoder: its attention is further down, under MiniLM.")
    else:
        with ui.friendly_errors("the attention patterns"):
            gpt_attention(view, sentence)
    minilm_attention(sentence)


def gpt_attention(view: picker.ModelView, sentence: str) -> None:
    found = gpt_patterns(view.content_key, sentence, view)
    if found is None:
        st.info(
            f"{literal_markdown(view.label)} has no attention layers (it reads a fixed window of characters or keeps a "
            "running state): pick a GPT in the sidebar to see attention patterns."
        )
        return
    total = len(found.ids) + found.cut_to_shown + found.cut_to_context
    if found.cut_to_context:  # one notice, however many cuts
        context = views.context_length(view.model)
        st.warning(
            f"{total} tokens are more than the context of {context}: the model reads the first {context}"
            + (
                f", and the charts show the first {len(found.ids)} of those (more would not be readable)."
                if found.cut_to_shown
                else "."
            )
        )
    elif found.cut_to_shown:
        st.info(f"{total} tokens: the charts show the first {len(found.ids)}.")
    attention_views(found.patterns, token_labels(view, found.ids), "gpt", compare_sentence=sentence)
    st.caption(f"Model: {literal_markdown(view.label)} (picked in the sidebar).")
    quiz_ui.section("attention", lambda: attention_quiz(view, found))
    if box := sections.lazy("Every layer × head at a glance", "attention_grid"):
        with box:
            attention_grid(found.patterns, "gpt")
    picker.offer_bigger_model(
        "A model trained on billions of words of web text has heads you can name (one looks at the previous token, "
        "another finds where a phrase began): compare its patterns on your sentence with this small model's.",
        page="attention",
    )


def minilm_attention(sentence: str) -> None:
    st.subheader("The same sentence through a pretrained encoder (MiniLM)")
    st.caption(
        "all-MiniLM-L6-v2, a real pretrained BERT-style model (6 layers × 12 heads), implemented in llmviz. "
        "Its attention is bidirectional: every token sees the whole sentence, the future included."
    )
    if (box := sections.lazy("Run the sentence through MiniLM", "attention_minilm")) is None:
        return
    with box, ui.friendly_errors("the MiniLM encoder"):
        encoded = minilm_patterns(sentence)
        if encoded.truncated:
            st.warning(f"The sentence is longer than {encoded.length} wordpieces: {encoded.truncated} were cut.")
        if encoded.unknown:
            st.info(f"{encoded.unknown} piece(s) are outside MiniLM's vocabulary and became [UNK].")
        attention_views(encoded.patterns, charts.unique_labels(encoded.pieces), "minilm")
        attention_grid(encoded.patterns, "minilm")


# ------------------------------------------------------------------ grouped-query attention
@sections.section("attention.grouped_query")
def grouped_query() -> None:
    st.markdown(
        "While a model generates, it keeps every earlier token's keys and values (the **KV cache**) so "
        "they are not computed again. With many heads and long texts that cache fills the memory. "
        "**Grouped-query attention** keeps every query head but lets a group of them read the **same** key "
        "and value head; **multi-query attention** is the extreme, one key/value head for all."
    )
    c1, c2, c3 = st.columns(3)
    n_heads = c1.select_slider("Query heads", [4, 8, 12, 16, 32], value=12, **share.bind("query_heads"))
    kv_choices = [d for d in range(1, n_heads + 1) if n_heads % d == 0]
    n_kv_heads = c2.select_slider(
        "Key/value heads",
        kv_choices,
        value=kv_choices[len(kv_choices) // 2],
        help="As many as the query heads: multi-head (GPT-2). Fewer: grouped-query "
        "(Llama 2 70B, Llama 3, Qwen2, SmolLM2). One: multi-query.",
    )
    tokens = c3.select_slider(
        "Tokens in the cache", [1024, 2048, 4096, 8192, 32768, 131072], value=8192, format_func=lambda t: f"{t:,}"
    )
    try:
        config = GPTConfig(d_model=64 * n_heads, n_heads=n_heads, n_kv_heads=n_kv_heads, n_layers=24, dropout=0.0)
    except ConfigError as error:
        st.error(str(error))
        return
    quiz_ui.section("gqa", lambda: [architectures.kv_cache_question(n_heads, n_kv_heads, tokens)])
    groups = architectures.kv_groups(config)
    owner = [[j for j, heads in enumerate(groups) if h in heads][0] for h in range(n_heads)]
    figure = go.Figure(
        go.Heatmap(
            z=[owner],
            x=[f"Q{h}" for h in range(n_heads)],
            y=["reads K/V head"],
            text=[[f"K{j} V{j}" for j in owner]],
            texttemplate="%{text}",
            colorscale="Viridis",
            showscale=False,
        )
    )
    figure.update_layout(height=140, margin=charts.margins(10))
    charts.show(figure, width="stretch")
    st.caption(
        f"{architectures.attention_kind(config).capitalize()}: query heads of one colour share one key head and one "
        f"value head. Each "
        "query head still computes its own pattern over the shared keys."
    )
    st.subheader("The KV cache, counted")  # a slide of its own in presenter mode
    rows = []
    for kv in sorted({n_heads, n_kv_heads, 1}, reverse=True):
        shape = config.replace(n_kv_heads=kv)
        rows.append(
            {
                "attention": architectures.attention_kind(shape) + (" (picked)" if kv == n_kv_heads else ""),
                "K/V heads": kv,
                "KV cache per token": memory.human_bytes(architectures.kv_cache_bytes(shape, 1, "bf16")),
                f"for {tokens:,} tokens": memory.human_bytes(architectures.kv_cache_bytes(shape, tokens, "bf16")),
                "W_K + W_V per layer": f"{2 * config.d_model * kv * config.head_dim:,}",
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("W_K + W_V per layer: the parameters of the key and value projections of one block.")
    saved = 1 - n_kv_heads / n_heads
    charts.equation(
        rf"\text{{KV bytes}} = 2 \times L \times H_{{kv}} \times d_{{head}} \times \text{{tokens}} \times 2"
        rf" = 2 \times 24 \times {n_kv_heads} \times 64 \times {tokens:,} \times 2"
        rf" = {architectures.kv_cache_bytes(config, tokens, 'bf16'):,}\ \text{{bytes}}"
    )
    st.caption(
        f"A model of 24 layers with head_dim 64 in bf16 (2 bytes a number). {n_kv_heads} key/value heads "
        f"instead of {n_heads} keep {saved:.0%} less in the cache"
        + (". " if saved else " (none saved: this is multi-head attention). ")
        + "Real models: "
        + "; ".join(
            f"{name}: {PRESETS[name].kv_heads} of {PRESETS[name].n_heads} heads, "
            f"{memory.human_bytes(architectures.kv_cache_bytes(PRESETS[name], 1, 'bf16'))} per token"
            for name in ("gpt2-124m", "smollm2-135m-shapes")
        )
        + "."
    )


def grouped_query_lesson() -> None:
    st.header("6. Grouped-query attention: heads that share keys and values")
    st.caption(
        "Modern models (Llama 2 70B, Llama 3, Qwen2) let several query heads share one key head and one value "
        "head, so that the KV cache kept while generating takes a fraction of the memory."
    )
    grouped_query()


# ------------------------------------------------------------------ the page: your sentence first, the lessons under it
your_sentence()
LINKED = {  # a link that sets these opens their tab
    "Without weights": ("query_word",),
    "Step by step": ("scale", "mask", "heads"),
    "Grouped-query": ("query_heads",),
}
LESSONS = {
    "Without weights": without_weights_lesson,
    "Step by step": toy_lesson,
    "Shapes": shapes_lesson,
    "Masks": masks_lesson,
    "Grouped-query": grouped_query_lesson,
}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("attention_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
