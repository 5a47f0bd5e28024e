"""The Attention page: from dot products to multi-head attention in real models."""

import pandas as pd
import streamlit as st
import torch

import llmviz.lessons.attention
import llmviz.lessons.quiz
import ui.panels.attention
from llmviz.errors import LlmvizError
from llmviz.lessons import forward
from llmviz.lessons.defaults import openings
from llmviz.models.attention import (
    JOURNEY_EMBEDDINGS,
    JOURNEY_TOKENS,
    TOY_TOKENS,
    TOY_W_K,
    TOY_W_O,
    TOY_W_Q,
    TOY_W_V,
    attention_steps,
    simple_self_attention,
    toy_input,
    toy_matrices,
)
from ui import boxes, charts, picker, present, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import quiz
from ui.sources import ModelView
from ui.text import literal_markdown
from ui.widgets import index_slider, page_header

shared_sidebar.settings()
page_header(
    "Attention: tokens looking at each other",
    "Each token scores every earlier token (query · key), turns the scores into weights with softmax and mixes what "
    "they carry (values).",
)
# a sentence of the Python manual, every word of it among the manual's 300 most common, which the shipped GPT reads
# word by word (all but "assigned", two tokens); its repeated words ("object", "the") show heads that look back
DEFAULT_SENTENCE = "The assigned object should be a sequence object of the same type."


num = charts.tex_number


# ------------------------------------------------------------------ without weights


@sections.section("attention.without_weights")
def without_weights() -> None:
    journey = torch.tensor(JOURNEY_EMBEDDINGS)
    simple = simple_self_attention(journey)
    left, right = st.columns([3, 2])
    with left:
        charts.show(
            ui.panels.attention.journey_heatmap(simple["weights"], JOURNEY_TOKENS),
            width="stretch",
            words=llmviz.lessons.attention.pattern_words(simple["weights"], JOURNEY_TOKENS),
        )
    with right:
        st.dataframe(ui.panels.attention.embeddings_table(journey, JOURNEY_TOKENS), width="stretch")
        st.caption("The embeddings: one 3-dimensional vector per word.")
    st.subheader("One row of the weights, worked out")  # the query picker with the sums it changes (one slide)
    query = st.selectbox(
        "Query word", range(6), index=1, format_func=lambda i: JOURNEY_TOKENS[i], **share.bind("query_word")
    )
    with st.container():
        charts.latex(*ui.panels.attention.worked_row(journey, simple, query))
    with st.expander("All context vectors"):
        ui.panels.attention.show_matrix(st, simple["context"], JOURNEY_TOKENS)


def without_weights_lesson() -> None:
    st.header("2. Self-attention without trainable weights")
    st.caption(
        "Six words, 'Your journey starts with one step', each a hand-picked 3-dimensional embedding: the "
        "smallest attention there is, with no weights to learn."
    )
    without_weights()


# ------------------------------------------------------------------ the toy example
toy_x = toy_input()


@sections.section("attention.toy")
def toy_example() -> None:
    editors = {}
    grid_cells = [cell for row in (st.columns(2), st.columns(2)) for cell in row]
    for column, (name, default) in zip(
        grid_cells, [("X", toy_x.tolist()), ("W_Q", TOY_W_Q), ("W_K", TOY_W_K), ("W_V", TOY_W_V)]
    ):
        with column:
            st.markdown(f"**{name}**")
            frame = pd.DataFrame(
                default,
                columns=[f"c{j}" for j in range(4)],
                index=TOY_TOKENS if name == "X" else [f"r{i}" for i in range(4)],
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
    w_o = torch.tensor(TOY_W_O) if heads > 1 else None
    try:  # a cleared cell, or 3 heads for a width of 4: a message that names the problem
        matrices = toy_matrices({name: frame.to_numpy(dtype=object) for name, frame in editors.items()})
        steps = attention_steps(
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
    tokens = TOY_TOKENS
    st.subheader("Q = X W_Q, K = X W_K, V = X W_V")
    q1, q2, q3 = st.columns(3)
    for column, name in zip((q1, q2, q3), ("Q", "K", "V")):
        column.markdown(f"**{name}**")
        ui.panels.attention.show_matrix(column, steps[name], tokens)
    x0, wq = matrices["X"][0], matrices["W_Q"][:, 0]
    charts.latex(
        r"Q_{\text{The},0} = "
        + " + ".join(f"{num(a)}\\cdot{num(b)}" for a, b in zip(x0.tolist(), wq.tolist()))
        + f" = {float(steps['Q'][0, 0]):.4f}"
    )
    for head in range(heads):
        toy_head(steps, head, heads, scaled=scaled, causal=causal)
    toy_output(steps, heads, scaled, causal)


def toy_output(steps: dict[str, torch.Tensor], heads: int, scaled: bool, causal: bool) -> None:
    """After the heads: their concatenation projected with W_O (more than one head), and what the switches did."""
    tokens = TOY_TOKENS
    if heads > 1:
        st.subheader("Concatenate the heads, then project with W_O")
        c1, c2 = st.columns(2)
        c1.markdown("**Concat**")
        ui.panels.attention.show_matrix(c1, steps["concat"], tokens)
        c2.markdown("**Concat · W_O** (the example's W_O)")
        ui.panels.attention.show_matrix(c2, steps["output"], tokens)
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
    tokens = TOY_TOKENS
    d_k = steps["Q_heads"].shape[-1]
    st.subheader(f"Head {head + 1}" if heads > 1 else "Scores, mask, softmax, output")
    q_h, k_h = steps["Q_heads"][head], steps["K_heads"][head]
    # a projector's slide holds the four steps in one row, a page two rows of two
    charts.show(
        ui.panels.attention.toy_steps_figure(
            steps, head, tokens, scaled, causal, columns=4 if present.enabled() else 2
        ),
        width="stretch",
        key=state.widget("attention_steps_", head),
        words=llmviz.lessons.attention.steps_words(
            steps["scores"][head], steps["scaled_scores"][head], steps["masked_scores"][head], d_k
        )
        + " Softmax weights. "
        + llmviz.lessons.attention.pattern_words(steps["weights"][head], tokens),
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
    ui.panels.attention.show_matrix(st, steps["head_outputs"][head], tokens)


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
    small, viewed, heads = ui.panels.attention.head_split_tables(llmviz.lessons.attention.head_split_example())
    st.markdown("`(batch, tokens, d_out)` = (1, 3, 8)")  # all eight columns in view: the full width
    st.dataframe(small, width="stretch")
    s2, s3 = st.columns(2)
    s2.markdown("`.view(1, 3, 2, 4)` → (batch, tokens, heads, head_dim)")
    s2.dataframe(viewed, width="stretch")  # a table, no code block to load
    s3.markdown("`.transpose(1, 2)` → (batch, heads, tokens, head_dim)")
    for head, table in enumerate(heads):
        s3.markdown(f"head {head}")
        s3.dataframe(table, width="stretch")
    st.caption(
        "Each head gets its own slice of the width and attends over all tokens at once; afterwards "
        "`.transpose(1, 2).contiguous().view(1, 3, 8)` puts the heads side by side again (the concatenation)."
    )


# ------------------------------------------------------------------ masks
def masks_lesson() -> None:
    st.header("5. Masks side by side")
    variants = llmviz.lessons.attention.mask_variants()
    charts.show(
        ui.panels.attention.masks_figure(variants, columns=4 if present.enabled() else 2),
        width="stretch",
        key=state.widget("masks"),
        words=llmviz.lessons.attention.masks_words({name: w.tolist() for name, (w, _, _) in variants.items()}),
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
def gpt_patterns(model_key: str, sentence: str, _view: ModelView) -> forward.AttentionPatterns | None:
    """Every pattern of the picked model on the sentence, cached by (its weights id, sentence)."""
    return llmviz.lessons.attention.patterns_for(_view.model, _view.tokenizer, sentence)


@st.cache_data(show_spinner="Running MiniLM…", max_entries=64)
def minilm_patterns(sentence: str) -> forward.EncoderAttention:
    return forward.encoder_attention(picker.load("pretrained:minilm").model, sentence)


@sections.section("attention.head")
def attention_views(patterns, labels: list[str], key: str, compare_sentence: str | None = None) -> None:
    """One head's pattern as a heatmap and as lines: layer, head and query re-draw only this part.

    ``compare_sentence``: also draw the same head at step 0 and at the picked step (it follows these sliders)."""
    n_layers, n_heads = patterns.shape[:2]
    c1, c2 = st.columns(2)
    bind_layer, bind_head = (
        (share.bind("layer"), share.bind("head")) if key == "gpt" else (share.bind("enc_layer"), share.bind("enc_head"))
    )
    layer = index_slider("Layer", n_layers, where=c1, **bind_layer)
    head = index_slider("Head", n_heads, where=c2, **bind_head)
    pattern = patterns[layer, head]  # (T, T)
    left, right = st.columns([1, 1])
    said = llmviz.lessons.attention.pattern_words(pattern, labels)  # both pictures' words: the same numbers
    charts.show_in(
        left,
        ui.panels.attention.pattern_heatmap(pattern, labels, f"layer {layer}, head {head}"),
        width="stretch",
        key=state.widget("attention_heat_", key),
        words=said,
    )
    with right:
        query = st.selectbox(
            "Lines from query",
            ["all"] + list(range(len(labels))),
            key=state.widget("attention_query_", key),
            format_func=lambda i: "all tokens" if i == "all" else labels[i],
        )
        charts.show(
            ui.panels.attention.lines_figure(pattern, labels, query),
            width="stretch",
            key=state.widget("attention_lines_", key),
            words=said,
        )
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
    """Every head's pattern as a thumbnail, with its words and its numbers as a table (issue 70)."""
    st.subheader("Every layer and head at once")
    charts.show(
        charts.head_grid(patterns),
        width="stretch",
        key=state.widget("attention_grid_", key),
        words=llmviz.lessons.attention.heads_words(patterns),
    )
    st.caption(
        "Every layer × head as a thumbnail: some heads look at the previous token, some at the first token, "
        "some spread out. The table: each head's mean weight on each (from the third token on); sort a column."
    )
    rows = llmviz.lessons.attention.head_rows(patterns)  # the thumbnails as numbers, for a screen reader too
    if rows:
        kinds = [name for name in rows[0] if name not in ("layer", "head")]
        st.dataframe(
            pd.DataFrame(rows),
            hide_index=True,
            height=min(400, 36 * len(rows) + 40),
            column_config={kind: st.column_config.NumberColumn(format="%.3f") for kind in kinds},
        )


def attention_before_after(sentence: str, layer: int, head: int) -> None:
    """One head at step 0 and at the picked step, side by side (drawn inside the head section, so its layer and
    head sliders decide which head)."""

    def render(shown: ModelView, column: str) -> None:
        found = gpt_patterns(shown.content_key, sentence, shown)
        if found is None:
            st.info("This model has no attention to show.")
            return
        labels = ui.panels.attention.token_labels(shown.tokenizer, found.ids)
        charts.show(
            ui.panels.attention.pattern_heatmap(found.patterns[layer, head], labels, f"layer {layer}, head {head}"),
            width="stretch",
            key=state.widget("attention_before_after_", column),
            words=llmviz.lessons.attention.pattern_words(found.patterns[layer, head], labels),
        )

    picker.before_after(render, what="the attention patterns")


def attention_quiz(view: ModelView, found: forward.AttentionPatterns) -> list:
    layer, head = int(state.value("layer", 0)), int(state.value("head", 0))
    return llmviz.lessons.attention.quiz_questions(view.model, view.tokenizer, found, layer, head)


@sections.section("attention.sentence")
def your_sentence() -> None:
    """The key picture, the pattern of your sentence through the picked model, and the same sentence through MiniLM:
    typing a new sentence re-draws only them."""
    st.header("1. Your sentence through the model picked in the sidebar")
    view = picker.current()
    opening = state.follow_default("sentence", view.tokenizer, *openings(DEFAULT_SENTENCE))
    sentence = boxes.text_input("Sentence", opening, 5000, "Your sentence", **share.bind("sentence"))
    if not sentence.strip():
        st.warning("Type a sentence to see its attention patterns.")
        return
    if view.family == "minilm":
        st.info("The picked model is the pretrained MiniLM encoder: its attention is further down, under MiniLM.")
    else:
        with friendly_errors("the attention patterns"):
            gpt_attention(view, sentence)
    minilm_attention(sentence)


def gpt_attention(view: ModelView, sentence: str) -> None:
    found = gpt_patterns(view.content_key, sentence, view)
    if found is None:
        st.info(
            f"{literal_markdown(view.label)} has no attention layers (it reads a fixed window of characters or keeps a "
            "running state): pick a GPT in the sidebar to see attention patterns."
        )
        return
    total = len(found.ids) + found.cut_to_shown + found.cut_to_context
    if found.cut_to_context:  # one notice, however many cuts
        context = forward.context_length(view.model)
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
    attention_views(
        found.patterns, ui.panels.attention.token_labels(view.tokenizer, found.ids), "gpt", compare_sentence=sentence
    )
    st.caption(f"Model: {literal_markdown(view.label)} (picked in the sidebar).")
    quiz.section("attention", lambda: attention_quiz(view, found))
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
    with box, friendly_errors("the MiniLM encoder"):
        encoded = minilm_patterns(sentence)
        if encoded.truncated:
            st.warning(f"The sentence is longer than {encoded.length} wordpieces: {encoded.truncated} were cut.")
        if encoded.unknown:
            st.info(f"{encoded.unknown} piece(s) are outside MiniLM's vocabulary and became [UNK].")
        attention_views(encoded.patterns, charts.unique_labels(encoded.pieces), "minilm")
        attention_grid(encoded.patterns, "minilm")


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
    "Grouped-query": ui.panels.attention.grouped_query_lesson,
}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("attention_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
