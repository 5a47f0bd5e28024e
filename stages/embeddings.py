"""The Embeddings page: five lessons on one page, linked by one tab parameter (``embeddings_tab``). Drawn here: the
picked model's token vectors and their map (the page opens on it) and cosine similarity worked out; the tabs Positions,
Word2vec and Sentence embeddings are each a panel of their own, whole (ui/panels/embeddings_positions.py,
embeddings_word2vec.py, embeddings_sentences.py)."""

import functools

import streamlit as st
import torch

import ui.panels.embeddings
import ui.panels.embeddings_positions
import ui.panels.embeddings_sentences
import ui.panels.embeddings_word2vec
from llmviz.errors import LlmvizError
from llmviz.lessons import defaults, embeddings, forward
from llmviz.tokenizers.ids import encode
from ui import charts, picker, sections, share, shared_sidebar, state
from ui.sources import ModelView
from ui.text import literal_markdown
from ui.widgets import page_header

shared_sidebar.settings()
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
        raw = column.text_input(name, default, **share.bind(param))  # at most 500 characters (link_params.MAX_CHARS)
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
            words=ui.panels.embeddings.map_words(view.tokenizer, projected, groups),
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


# ------------------------------------------------------------------ the page: the map first, the lessons one click away
token_embeddings()
LINKED = {"Positions": ("head_dim", "rope_theta", "sin_dims"), "Sentence embeddings": ("sentences",)}  # open their tab
LESSONS = {
    "Cosine similarity": cosine_lesson,
    "Positions": ui.panels.embeddings_positions.positions_lesson,
    "Word2vec": ui.panels.embeddings_word2vec.word2vec_lesson,
    "Sentence embeddings": ui.panels.embeddings_sentences.minilm_lesson,
}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("embeddings_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
