"""The Embeddings page's lesson on word2vec, whole: training word vectors live on the sidebar's corpus (a job of the
student's, kept by the lab), then their nearest neighbours, analogies and map. The numbers come from
llmviz.lessons.embeddings_word2vec and llmviz.lessons.embeddings; stages/embeddings.py opens it as the tab Word2vec."""

from __future__ import annotations

import functools

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from llmviz.errors import LlmvizError
from llmviz.lessons import embeddings, embeddings_word2vec
from llmviz.training import tasks
from ui import charts, lab, picker, scatter_labels, sections, share, shared_sidebar, state
from ui.panels import task_jobs
from ui.panels.embeddings import axis_ranges
from ui.text import literal_markdown, tidy_floats


def words_table(rows: list[tuple[str, float]]) -> pd.DataFrame:
    """(word, cosine) rows as a table."""
    return tidy_floats(pd.DataFrame([{"word": word, "cosine": cosine} for word, cosine in rows]))


def _word_markers(shown_rows: list[int], highlight: set[int], labelled) -> dict:
    """Orange and larger for the looked-up word and its neighbours, blue for the labelled ones, grey the rest."""
    return dict(
        size=[10 if r in highlight else 6 for r in shown_rows],
        color=["#e8590c" if r in highlight else "#4c6ef5" if r in labelled else "#ced4da" for r in shown_rows],
    )


def word2vec_map(coords: torch.Tensor, shown_rows: list[int], words: list[str], looked_up: list[int], labelled):
    """The most common words in 2D: the looked-up word and its neighbours in orange, the labelled ones in blue."""
    where = {r: n for n, r in enumerate(shown_rows)}
    ranked = list(dict.fromkeys(looked_up + sorted(labelled)))  # which labels have the first claim to room
    x_range, y_range = axis_ranges(coords)
    places = scatter_labels.spread_labels(  # the plot: about 440 × 450 px on a screen 1400 px wide
        [float(coords[where[r], 0]) for r in ranked],
        [float(coords[where[r], 1]) for r in ranked],
        [words[r] for r in ranked],
        width_px=380,
        height_px=400,
        char_px=6.0,
        x_range=x_range,
        y_range=y_range,
    )
    named = {r: place for r, place in zip(ranked, places) if place}
    highlight = set(looked_up)
    figure = go.Figure(
        go.Scatter(
            x=coords[:, 0].tolist(),
            y=coords[:, 1].tolist(),
            mode="markers+text",
            text=[words[r] if r in named else "" for r in shown_rows],
            textposition=[named.get(r, "top center") for r in shown_rows],
            textfont=dict(size=10),
            hovertext=[words[r] for r in shown_rows],
            hoverinfo="text",
            marker=_word_markers(shown_rows, highlight, labelled),
        )
    )
    figure.update_layout(
        height=520,
        margin=charts.margins(10),
        xaxis=dict(title=dict(text="PC1"), range=list(x_range)),
        yaxis=dict(title=dict(text="PC2"), range=list(y_range)),
    )
    return figure


def word2vec_map_view(vectors_: torch.Tensor, words: list[str], looked_up: list[int], labelled: set[int]) -> None:
    """The 300 most common words (and the labelled ones) in 2D, with the share of the variance it keeps."""
    shown_rows = sorted(set(range(min(300, len(words)))) | labelled)
    coords, ratio = embeddings.pca(vectors_[shown_rows], 2)
    figure = word2vec_map(coords, shown_rows, words, looked_up, labelled)
    where = {r: n for n, r in enumerate(shown_rows)}
    point = {r: coords[where[r]].tolist() for r in looked_up}  # every looked-up row is labelled, so drawn
    said = embeddings.map_words(
        {"words": len(shown_rows)},
        (words[looked_up[0]], point[looked_up[0]]) if looked_up else None,
        [(words[r], point[r]) for r in looked_up[1:]],
    )
    charts.show(figure, width="stretch", words=f"PCA keeps {float(ratio.sum()):.0%} of the variance. {said}")
    st.caption(
        f"The {len(shown_rows)} most common words, PCA to 2D ({float(ratio.sum()):.0%} of the variance): the "
        "looked-up word and its neighbours in orange, the 40 most common words in blue, each labelled where its "
        "label does not cover another; hover any dot for its word."
    )


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
        word = st.text_input(
            "Nearest neighbours of", embeddings_word2vec.opening_word(vocab.words), **share.bind("w2v_nn")
        )
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
            st.dataframe(words_table(rows), hide_index=True, width="stretch")
        st.markdown("**Analogy** a − b + c")
        a1, a2, a3 = st.columns(3)
        words = [a1.text_input("a", "function"), a2.text_input("b", "functions"), a3.text_input("c", "methods")]
        missing = [w for w in words if w.strip().lower() not in vocab.index]
        if missing:
            st.warning(f"Not in the vocabulary: {literal_markdown(', '.join(missing))}.")
        else:
            i, j, k = (vocab.index[w.strip().lower()] for w in words)
            rows = [(vocab.words[r], cosine) for r, cosine in embeddings.analogy(vectors_, i, j, k)]
            st.dataframe(words_table(rows), hide_index=True, width="stretch")
    with right:
        word2vec_map_view(vectors_, vocab.words, looked_up, labelled)


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
                    seed=shared_sidebar.settings().run_seed(),
                ),
                label=f"word2vec · {dim} dimensions · {corpus_label}",
                total=steps,
                returns_when_stopped=True,
                footprint=tasks.word2vec_footprint(len(text[:2_000_000]), window),
                keep=embeddings_word2vec.word2vec_keeping(corpus_label, steps),  # a reload or a restart gives it back
            )
        except LlmvizError as error:
            st.warning(str(error))
        else:
            state.W2V_JOB.set(dict(id=job.id, corpus=corpus_label, steps=steps))
    spec = state.W2V_JOB.get()
    if spec is None and not state.W2V.present():  # a reload, another tab, a restarted server: the newest kept one
        if (kept := lab.kept_result("word2vec", embeddings_word2vec.word2vec_from_kept)) is not None:
            state.W2V.set(kept)
    ended = task_jobs.follow_task(
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
