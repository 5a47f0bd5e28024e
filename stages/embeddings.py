"""The Embeddings page: token vectors, positions, cosine similarity, projections, word2vec, real sentence embeddings."""

import functools

import streamlit as st
import torch

import llmviz.lessons.quiz
import ui.panels.embeddings
from llmviz.errors import LlmvizError
from llmviz.lessons import architectures, defaults, embeddings, forward
from llmviz.tokenizers.ids import encode
from llmviz.training import tasks
from ui import boxes, charts, lab, picker, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import quiz, runs
from ui.sources import ModelView
from ui.text import literal_markdown
from ui.widgets import page_header

settings = shared_sidebar.settings()
page_header(
    "Embeddings: tokens become vectors",
    "Each token id picks one row of a learned table: a vector. Tokens used alike get vectors that point the same way.",
)


# ------------------------------------------------------------------ worked example


@sections.section("embeddings.cosine")
def cosine_example() -> None:
    defaults = ["0.2, 0.4, 0.9", "0.1, 0.5, 0.8", "0.7, 0.2, 0.1"]
    vectors = {}
    for number, (column, name, default) in enumerate(zip(st.columns(3), embeddings.VECTOR_NAMES, defaults), start=1):
        param = f"vec_{number}"  # the link's vec_1, vec_2, vec_3
        raw = column.text_input(name, default, **share.bind(param))  # at most 500 characters (share.MAX_CHARS)
        try:
            vectors[name] = embeddings.parse_vector(raw)
        except LlmvizError as error:
            column.error(str(error))
    pair = st.radio(
        "Compare", embeddings.PAIRS, horizontal=True, format_func=embeddings.pair_label, **share.bind("cos_pair")
    )
    a_name, b_name = pair
    if a_name in vectors and b_name in vectors:
        a, b = vectors[a_name], vectors[b_name]
        try:
            parts = embeddings.cosine_parts(a, b)
        except LlmvizError as error:
            st.error(str(error))
            if a.shape == b.shape:
                st.metric("Euclidean distance", f"{embeddings.euclidean(a, b):.4f}")
        else:
            ui.panels.embeddings.cosine_view(a, b, a_name, b_name, parts)


def cosine_lesson() -> None:
    st.header("2. Cosine similarity, worked out")
    st.caption(
        "Three sentences as made-up 3-dimensional vectors (edit them): 'I love programming', 'I enjoy coding' "
        "and 'I dislike programming'."
    )
    cosine_example()


# ------------------------------------------------------------------ 2. token embeddings of the picked model
@st.cache_data(show_spinner=False, max_entries=128)
def neighbours_of(model_key: str, token: int, _table: torch.Tensor) -> forward.Neighbours:
    return forward.neighbours(_table, token, k=10)


@st.cache_data(show_spinner="Projecting the table…", max_entries=64)
def projection(model_key: str, ids: tuple[int, ...], dims: int, _table: torch.Tensor) -> forward.Projection:
    return forward.project(_table, list(ids), dims)


def look_up_clicked(tokenizer) -> None:
    """A click on a token of the map: look up its nearest neighbours (the text box above the map takes it)."""
    chosen = state.value(state.widget("embedding_map")) or {}
    points = chosen.get("selection", {}).get("points", [])
    data = points[0].get("customdata") if points else None
    token = data[0] if isinstance(data, list) and data else data
    if isinstance(token, int | float):
        state.set_value("gpt_nn", tokenizer.decode([int(token)]))


@sections.section("embeddings.projection")
def embedding_map(view: ModelView, table: torch.Tensor, ids: list[int]) -> None:
    """The key picture: the table's tokens as a 2D/3D map, the looked-up token and its nearest neighbours. The map's
    switch, the looked-up token and a click on the map re-draw only this part."""
    tokenizer = view.tokenizer
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    opening = state.follow_default("gpt_nn", tokenizer, defaults.DEFAULT_QUERY, defaults.LETTER_QUERY)
    query_text = c1.text_input("Nearest neighbours of", opening, max_chars=100, **share.bind("gpt_nn"))
    dims = c2.radio("Projection", [2, 3], horizontal=True, format_func=lambda d: f"{d}D PCA", **share.bind("pca_dims"))
    query_ids = encode(tokenizer, query_text)
    found = neighbours_of(view.content_key, query_ids[0], table) if query_ids else None
    groups = {token: "your tokens" for token in ids}
    groups |= {token: "nearest neighbours" for token in (found.ids if found else [])}
    groups |= {token: "looked up" for token in query_ids[:1]}
    population = forward.common_tokens(table.shape[0])
    projected = projection(view.content_key, tuple(dict.fromkeys(population + list(groups))), dims, table)
    left, right = st.columns([3, 1])
    with left:
        charts.show(
            ui.panels.embeddings.map_figure(view.tokenizer, projected, dims, groups),
            width="stretch",
            **(
                dict(
                    key=state.widget("embedding_map"),
                    on_select=functools.partial(look_up_clicked, tokenizer),
                    selection_mode="points",
                )
                if dims == 2
                else {}
            ),
        )
    with right:
        if len(query_ids) != 1:
            st.warning(
                f"{literal_markdown(repr(query_text))} is {len(query_ids)} tokens for this tokenizer; the neighbours "
                "of its first token are shown."
                if query_ids
                else "Type a token to look up."
            )
        if found is not None:
            st.markdown(f"**Nearest to {literal_markdown(repr(tokenizer.printable(query_ids[0])))}**")
            ui.panels.embeddings.show_neighbours(ui.panels.embeddings.neighbour_table(tokenizer, found))
    st.caption(
        f"{literal_markdown(view.label)}: a {table.shape[0]:,} × {table.shape[1]} table, one learned row per token. "
        f"{len(population)} common tokens (grey), yours, the looked-up token and its nearest neighbours, projected on "
        f"the {dims} directions of largest spread ({projected.explained:.0%} of the variance)"
        + (": click a point to look it up, hover a grey one for its token. " if dims == 2 else ". ")
        + f"Neighbours by cosine in all {table.shape[1]} dimensions need not look close in {dims}D."
    )


@sections.section("embeddings.neighbours_before_after")
def neighbours_before_after(query_text: str) -> None:
    """The nearest neighbours of one token at step 0 and at the picked step."""

    def render(shown: ModelView, column: str) -> None:
        table = forward.embedding_table(shown.model)
        query_ids = encode(shown.tokenizer, query_text)
        if table is None or not query_ids:
            st.info("Nothing to compare here.")
            return
        found = neighbours_of(shown.content_key, query_ids[0], table)
        ui.panels.embeddings.show_neighbours(
            ui.panels.embeddings.neighbour_table(shown.tokenizer, found),
            key=state.widget("nn_", column),
        )

    picker.before_after(render, what="the nearest neighbours")


@sections.section("embeddings.tokens")
def token_embeddings() -> None:
    view = picker.current()
    st.header("1. The embedding space of the picked model")
    table = forward.embedding_table(view.model) if view.family != "minilm" else None
    if table is None:
        st.info(
            f"{literal_markdown(view.label)} has no token-embedding table of its own to show here (it counts pairs "
            "or is a sentence encoder): pick a GPT or one of your runs in the sidebar. MiniLM's sentence embeddings "
            "are in the tab Sentence embeddings below."
        )
        return
    opening = state.follow_default("words", view.tokenizer, defaults.DEFAULT_WORDS, defaults.LETTERS)
    typed = st.text_input(
        "Tokens to compare", opening, help="Words are split into the model's tokens.", **share.bind("words")
    )
    share.carried_note("words")
    ids = list(dict.fromkeys(encode(view.tokenizer, typed)))[:24]
    embedding_map(view, table, ids)
    if not ids:
        st.warning("Type some text: there are no tokens to compare.")
    else:
        ui.panels.embeddings.token_vectors(view.tokenizer, table, ids)
    if view.run_id is not None:  # a run has steps: its table at step 0 was random
        query_text = state.value("gpt_nn") or defaults.first_read(
            view.tokenizer, defaults.DEFAULT_QUERY, defaults.LETTER_QUERY
        )
        st.subheader("Step 0 vs step N: the nearest neighbours")
        st.caption(
            "At step 0 the table is random, so the neighbours are arbitrary; training pulls tokens used alike together."
        )
        if box := sections.lazy("Compare step 0 with the picked step", "embeddings_before_after"):
            with box:
                neighbours_before_after(query_text)


# ------------------------------------------------------------------ 3. positions
@st.cache_data(show_spinner=False, max_entries=64)
def input_rows(model_key: str, sentence: str, _view: ModelView):
    ids = encode(_view.tokenizer, sentence)
    rows = forward.input_embeddings(_view.model, ids)
    return ids[: len(rows[0])] if rows else ids, rows


@sections.section("embeddings.sinusoidal")
def sinusoidal() -> None:
    c1, c2 = st.columns(2)
    positions = c1.slider("Positions", 2, 256, 64, **share.bind("sin_positions"))
    d_model = c2.slider("d_model", 2, 256, 64, step=2, **share.bind("sin_d_model"))
    encoding = embeddings.sinusoidal_encoding(positions, d_model)
    left, right = st.columns(2)
    charts.show_in(
        left,
        ui.panels.embeddings.signed_heatmap(
            encoding,
            list(range(d_model)),
            list(range(positions)),
            "PE[pos, i]",
            x_title="dimension i",
            y_title="position",
        ),
        width="stretch",
    )
    with right:
        default = [d for d in (0, 1, 4, 10) if d < d_model]
        shown = st.multiselect("Dimensions", list(range(d_model)), default=default, **share.bind("sin_dims"))
        charts.show(ui.panels.embeddings.sinusoidal_lines(encoding, shown), width="stretch")
    st.latex(
        r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\quad "
        r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)"
    )
    if d_model >= 4 and positions >= 2:
        charts.equation(
            rf"PE_{{(1,\,2)}} = \sin\!\left(\frac{{1}}{{10000^{{2/{d_model}}}}}\right) = {float(encoding[1, 2]):.4f}"
        )


@sections.section("embeddings.token_plus_position")
def token_plus_position() -> None:
    view = picker.current()
    positions = getattr(getattr(view.model, "config", None), "positions", "learned")
    tables = {"learned": "learned tables", "sinusoidal": "learned token table, sinusoidal positions"}.get(positions)
    st.subheader(
        f"Token + position = input, for your sentence ({literal_markdown(view.label)}"
        + (f"'s {tables})" if tables else ")")
    )
    opening = state.follow_default("positions_text", view.tokenizer, *defaults.openings(defaults.POSITIONS_TEXT))
    sentence = boxes.text_input("Sentence", opening, 500, "Your sentence", **share.bind("positions_text"))
    if view.family == "minilm":
        st.info("MiniLM adds a position and a segment vector too; this view shows GPTs' two tables.")
        return
    sentence_ids, rows = input_rows(view.content_key, sentence, view)
    if not sentence_ids:
        st.warning("Type a sentence.")
    elif rows is None:
        st.info(
            f"{literal_markdown(view.label)} adds no position table (it reads a fixed window or a running state): "
            f"pick a GPT."
        )
    elif getattr(getattr(view.model, "config", None), "positions", "learned") in ("rope", "none"):
        kind = view.model.config.positions
        st.info(
            f"{literal_markdown(view.label)} adds no position vector to its token vectors: "
            + (
                "it rotates each query and key by its position inside attention (RoPE, next section)."
                if kind == "rope"
                else "it has no position information at all (NoPE): only the causal mask "
                "tells it which tokens came first."
            )
        )
    else:
        tok, pos = rows
        labels = charts.unique_labels([view.tokenizer.printable(i) for i in sentence_ids])
        learned = getattr(getattr(view.model, "config", None), "positions", "learned") == "learned"
        ui.panels.embeddings.token_plus_position(tok, pos, labels, view.label, learned)


@st.cache_data(show_spinner=False, max_entries=16)
def rope_numbers(head_dim: int, theta: float, positions: int):
    return (
        architectures.rope_angles(head_dim, theta, positions),
        architectures.rope_scores(head_dim, theta, min(positions, 48)),
    )


@sections.section("embeddings.rope")
def rotary_positions() -> None:
    st.subheader("Rotary positions (RoPE): turning instead of adding")
    st.markdown(
        "Llama, Qwen, Mistral and SmolLM add **no** position vector. Inside attention they split each query "
        "and key (head_dim numbers) into pairs and **turn** every pair by an angle: position × its "
        "frequency. Pair 0 turns fast, the last pair barely moves, like the hands of a clock."
    )
    c1, c2, c3 = st.columns(3)
    head_dim = c1.select_slider("head_dim", [8, 16, 32, 64, 128], value=64, **share.bind("head_dim"))
    theta = c2.select_slider(
        "Base θ",
        [100.0, 10_000.0, 100_000.0, 500_000.0, 1_000_000.0],
        value=10_000.0,
        **share.bind("rope_theta"),
        format_func=lambda t: f"{t:,.0f}",
        help="10,000 in the RoPE paper and Llama 2, 100,000 in SmolLM2, 500,000 in Llama 3, "
        "1,000,000 in Qwen2: a larger base turns the slow pairs slower still.",
    )
    positions = c3.slider("Positions", 8, 256, 64, step=8, **share.bind("rope_positions"))
    angles, scores = rope_numbers(head_dim, theta, positions)
    left, right = st.columns(2)
    charts.show_in(left, ui.panels.embeddings.rope_angles_heatmap(angles.angles), width="stretch")
    pairs = sorted({0, 1, head_dim // 8, head_dim // 2 - 1})
    with right:
        charts.show(ui.panels.embeddings.rope_circle(angles.angles, pairs), width="stretch")
    st.subheader("Each pair turns at its own speed")  # a slide of its own in presenter mode
    st.dataframe(ui.panels.embeddings.rope_pairs_table(angles, pairs, head_dim), hide_index=True, width="stretch")
    pair = pairs[1]
    charts.equation(
        rf"\text{{angle}}(p, i) = p \cdot \theta^{{-2i/d_{{head}}}}:\quad "
        rf"\text{{angle}}(3, {pair}) = 3 \cdot {theta:,.0f}^{{-{2 * pair}/{head_dim}}} "
        rf"= {3 * float(angles.frequencies[pair]):.4f}\ \text{{radians}}"
    )
    quiz.section("rope", lambda: [llmviz.lessons.quiz.rope_question(head_dim, theta)])
    st.subheader("The score depends only on how far apart")
    st.markdown(
        "Put the **same** query and key at every pair of positions (m for the query, n for the key) and "
        "take their dot product after rotating: every diagonal (the same distance m − n) holds one number, "
        "because turning both by m and n leaves only the turn by m − n between them."
    )
    ui.panels.embeddings.rope_scores(scores)


def positions_lesson() -> None:
    st.header("3. Positions: sinusoidal, learned and rotary (RoPE)")
    sinusoidal()
    token_plus_position()
    rotary_positions()


# ------------------------------------------------------------------ 4. word2vec
@sections.section("embeddings.word2vec")
def word2vec_explorer() -> None:
    """Neighbours, analogies and the map of the trained word vectors: their inputs re-draw only this part."""
    label, trained, asked = state.W2V.get()
    vectors_ = trained.model.center.weight.detach()
    vocab = trained.vocabulary
    st.caption(
        f"Trained on {literal_markdown(label)} for {trained.step} steps ({len(vocab.words):,} words, loss "
        f"{trained.loss:.3f})."
        + (
            f" Stopped at step {trained.step} of {asked}: the vectors learned so far are kept."
            if trained.step < asked
            else ""
        )
    )
    left, right = st.columns(2)
    labelled: set[int] = set(range(min(40, len(vocab.words))))
    looked_up: list[int] = []  # the looked-up word and its neighbours, in orange and labelled first
    with left:
        word = st.text_input("Nearest neighbours of", embeddings.opening_word(vocab.words), **share.bind("w2v_nn"))
        key = word.strip().lower()
        if key not in vocab.index:
            st.warning(
                f"{literal_markdown(repr(word))} is not in the vocabulary (only the {len(vocab.words):,} most common "
                f"words are)."
            )
        else:
            neighbours = embeddings.nearest_neighbours(vectors_, vectors_[vocab.index[key]], 10, {vocab.index[key]})
            looked_up = [vocab.index[key], *(i for i, _ in neighbours)]
            labelled |= set(looked_up)
            rows = [(vocab.words[i], cosine) for i, cosine in neighbours]
            st.dataframe(ui.panels.embeddings.words_table(rows), hide_index=True, width="stretch")
        st.markdown("**Analogy** a − b + c")
        a1, a2, a3 = st.columns(3)
        words = [a1.text_input("a", "function"), a2.text_input("b", "functions"), a3.text_input("c", "methods")]
        missing = [w for w in words if w.strip().lower() not in vocab.index]
        if missing:
            st.warning(f"Not in the vocabulary: {literal_markdown(', '.join(missing))}.")
        else:
            i, j, k = (vocab.index[w.strip().lower()] for w in words)
            rows = [(vocab.words[r], cosine) for r, cosine in embeddings.analogy(vectors_, i, j, k)]
            st.dataframe(ui.panels.embeddings.words_table(rows), hide_index=True, width="stretch")
    with right:
        ui.panels.embeddings.word2vec_map_view(vectors_, vocab.words, looked_up, labelled)


def word2vec_lesson() -> None:
    st.header("4. Word2vec: learn word vectors live")
    loaded = shared_sidebar.corpus_text()
    if loaded is None:
        return
    corpus_label, text = loaded
    c1, c2, c3, c4 = st.columns(4)
    dim = c1.slider("Vector size", 8, 128, 32, step=8, **share.bind("w2v_dim"))
    window = c2.slider("Window", 1, 5, 2, **share.bind("w2v_window"))
    steps = c3.slider("Steps", 100, 5000, 1500, step=100, **share.bind("w2v_train_steps"))
    vocab_size = c4.slider("Vocabulary (most common words)", 200, 5000, 2000, step=100, **share.bind("w2v_vocab"))
    if st.button("Train word2vec", type="primary", key=state.widget("train_w2v")):
        try:  # trains as a job of this session (a worker process), like every run
            job = picker.runs().submit_task(
                functools.partial(
                    tasks.word2vec_training,
                    text=text[:2_000_000],
                    dim=dim,
                    window=window,
                    steps=steps,
                    max_vocab=vocab_size,
                    seed=settings.run_seed(),
                ),
                label=f"word2vec · {dim} dimensions · {corpus_label}",
                total=steps,
                returns_when_stopped=True,
                footprint=tasks.word2vec_footprint(len(text[:2_000_000]), window),
                keep=embeddings.word2vec_keeping(corpus_label, steps),  # a reload or a restart gives it back
            )
        except LlmvizError as error:
            st.warning(str(error))
        else:
            state.W2V_JOB.set(dict(id=job.id, corpus=corpus_label, steps=steps))
    spec = state.W2V_JOB.get()
    if spec is None and not state.W2V.present():  # a reload, another tab, a restarted server: the newest kept one
        if (kept := lab.kept_result("word2vec", embeddings.word2vec_from_kept)) is not None:
            state.W2V.set(kept)
    ended = runs.follow_task(
        state.W2V_JOB,
        name="embeddings.w2v_job",
        describe=lambda status: (
            f"step {status.step}/{status.total}"
            + (f" · loss {status.losses[-1][1]:.3f}" if status.losses else " · building the vocabulary…")
        ),
    )
    if ended is not None:
        status = ended.status()
        if ended.result is None:
            st.error(status.error or f"Word2vec ended before its first step ({status.describe()}).")
        else:
            state.W2V.set((spec["corpus"], ended.result, spec["steps"]))
    if state.W2V.present():
        word2vec_explorer()


# ------------------------------------------------------------------ 5. MiniLM sentence embeddings


@st.cache_data(show_spinner="Running MiniLM…", max_entries=32)
def sentence_vectors(sentences: tuple[str, ...]):
    minilm = picker.load("pretrained:minilm").model
    batch = minilm.tokenize(list(sentences))
    return list(batch.truncated), list(batch.unknown), minilm.encode(list(sentences))


@sections.section("embeddings.minilm")
def sentence_embeddings() -> None:
    default_sentences = (
        "I love programming\nI enjoy coding\nI dislike programming\nThe weather is lovely today\n"
        "Python is a programming language"
    )
    minilm_sentences(default_sentences)


def minilm_lesson() -> None:
    st.header("5. Real sentence embeddings (pretrained MiniLM)")
    st.caption(
        "all-MiniLM-L6-v2: mean of the token vectors over the sentence, scaled to length 1. Cosine similarity of "
        "two sentences is then just their dot product."
    )
    sentence_embeddings()


def minilm_sentences(default_sentences: str) -> None:
    typed = st.text_area("One sentence per line", default_sentences, height=140, **share.bind("sentences"))
    share.carried_note("sentences")
    sentences = [line.strip() for line in typed.splitlines()]
    empty = sum(1 for s in sentences if not s)
    sentences = [s for s in sentences if s][:30]
    if empty:
        st.info(f"{empty} empty line(s) were skipped.")
    if not sentences:
        st.warning("Type at least one sentence.")
    else:
        with friendly_errors("the MiniLM encoder"):
            truncated, unknowns, vectors_ = sentence_vectors(tuple(sentences))
            for sentence, cut, unknown in zip(sentences, truncated, unknowns):
                if cut:
                    st.warning(
                        f"{literal_markdown(repr(sentence[:40]))}… is longer than 256 wordpieces: {cut} were cut off."
                    )
                if unknown:
                    st.info(
                        f"{literal_markdown(repr(sentence[:40]))} has {unknown} piece(s) outside the vocabulary: "
                        f"they became [UNK]."
                    )
            ui.panels.embeddings.sentences_view(sentences, vectors_)


# ------------------------------------------------------------------ the page: the map first, the lessons one click away
token_embeddings()
LINKED = {"Positions": ("head_dim", "rope_theta", "sin_dims"), "Sentence embeddings": ("sentences",)}  # open their tab
LESSONS = {
    "Cosine similarity": cosine_lesson,
    "Positions": positions_lesson,
    "Word2vec": word2vec_lesson,
    "Sentence embeddings": minilm_lesson,
}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("embeddings_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
