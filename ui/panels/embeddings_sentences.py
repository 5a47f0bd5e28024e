"""The Embeddings page's lesson on real sentence embeddings, whole: pretrained MiniLM's vectors for the student's
sentences, their cosines and their map. stages/embeddings.py opens it as the tab Sentence embeddings."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
import torch

from llmviz.lessons import embeddings
from ui import charts, picker, sections, share
from ui.errors import friendly_errors
from ui.panels.embeddings import signed_heatmap
from ui.text import literal_markdown


def sentences_map(coords: torch.Tensor, numbered: list[str], short: list[str]) -> go.Figure:
    """Sentences in 2D (PCA), labelled by number, their text on hover."""
    figure = go.Figure(
        go.Scatter(
            x=coords[:, 0].tolist(),
            y=coords[:, 1].tolist(),
            mode="markers+text",
            text=numbered,
            hovertext=short,
            hoverinfo="text",
            textposition="top center",
        )
    )
    figure.update_layout(height=420, margin=charts.margins(10), xaxis_title="PC1", yaxis_title="PC2")
    return figure


def sentences_view(sentences: list[str], vectors_: torch.Tensor) -> None:
    """MiniLM's sentences: their cosines, a 2D map, and what it says of love and dislike."""
    short = charts.unique_labels([s if len(s) <= 30 else s[:28] + "…" for s in sentences])
    numbered = [f"S{n + 1}" for n in range(len(sentences))]
    left, right = st.columns(2)
    # rows carry the sentence, columns its number: long labels on both axes squash the matrix to nothing
    cosines = embeddings.cosine_matrix(vectors_)
    rows = [f"S{n + 1} · {s}" for n, s in enumerate(short)]
    charts.show_in(
        left,
        signed_heatmap(
            cosines,
            numbered,
            rows,
            "cosine similarity",
            text_format=".2f",
            zmin=-1,
            zmax=1,
            height=max(320, 34 * len(sentences) + 140),
        ),
        width="stretch",
        words=embeddings.cosine_words(rows, cosines.tolist()),
    )
    with right:
        if len(sentences) < 2:
            st.info("A projection needs at least two sentences.")
        else:
            coords, _ = embeddings.pca(vectors_, 2)
            charts.show(
                sentences_map(coords, numbered, short),
                width="stretch",
                words=embeddings.closest_words(rows, coords.tolist()),
            )
    if {"I love programming", "I dislike programming"} <= set(sentences):
        i, j = sentences.index("I love programming"), sentences.index("I dislike programming")
        st.markdown(
            f"The made-up vectors of section 2 make 'I love programming' and 'I dislike programming' "
            "dissimilar; the real model "
            "gives them a cosine of "
            f"**{embeddings.cosine_parts(vectors_[i], vectors_[j]).cosine:.3f}**: they share "
            f"a topic and most "
            "words, and this model was trained to match topics more than sentiment."
        )


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
            sentences_view(sentences, vectors_)
