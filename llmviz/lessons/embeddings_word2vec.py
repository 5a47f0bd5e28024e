"""The numbers of the Embeddings page's word2vec lesson: what the lab keeps of a word2vec training and reads back,
the vectors in word2vec's own text format (``lab export``), and the word the explorer opens on."""

from __future__ import annotations

from llmviz.lab.live_status import KeptResult
from llmviz.models.word2vec import Word2VecState
from llmviz.training import tasks


def word2vec_keeping(corpus: str, steps: int) -> KeptResult:
    """What the lab keeps of a word2vec training (its vectors and vocabulary, the corpus's name and the steps asked
    for), so that a reload or a restarted server gives the student their word vectors back
    (:func:`word2vec_from_kept`).

    >>> word2vec_keeping("manual", 1500).facts
    {'corpus': 'manual', 'steps': 1500}
    """
    return KeptResult("word2vec", {"corpus": corpus, "steps": steps}, tasks.word2vec_result)


def word2vec_from_kept(tensors: dict, meta: dict) -> tuple[str, Word2VecState, int]:
    """``(corpus, the word2vec state, the steps asked for)`` that :func:`word2vec_keeping` kept."""
    trained = tasks.word2vec_state(tensors, meta)
    return str(meta.get("corpus", "")), trained, int(meta.get("steps") or trained.step)


def word2vec_text(trained: Word2VecState) -> str:
    """Word vectors in word2vec's text format (Mikolov's ``-binary 0``, which gensim's ``load_word2vec_format``
    reads): a line ``<words> <dimensions>``, then one line per word, the word and its vector.

    >>> import torch
    >>> from llmviz.models.word2vec import Vocabulary, Word2Vec
    >>> model = Word2Vec(2, dim=2)
    >>> _ = model.center.weight.data.copy_(torch.tensor([[0.5, -1.0], [0.25, 2.0]]))
    >>> print(word2vec_text(Word2VecState(3, 0.1, model, Vocabulary(["cat", "mat"], [4, 2]))), end="")
    2 2
    cat 0.5 -1
    mat 0.25 2
    """
    vectors = trained.model.center.weight.detach()  # (V, D)
    lines = [f"{vectors.shape[0]} {vectors.shape[1]}"]
    for word, row in zip(trained.vocabulary.words, vectors.tolist(), strict=True):
        lines.append(" ".join([word, *(f"{value:.7g}" for value in row)]))
    return "\n".join(lines) + "\n"


OPENING_WORDS = ("must", "shall", "will", "should")  # modal verbs: their neighbours are their kin (may, can, could)


def opening_word(vocabulary: list[str]) -> str:
    """The word whose neighbours the word2vec explorer opens on: a modal verb, whose nearest neighbours on an English
    corpus are its kin (on the Python manual, "must": may, can, should, will, whatever the seed), rather than a
    function word ("by": again, checking, directly); a corpus without one (first names) opens on its 21st word.

    >>> opening_word(["the", "a", "must", "may"]), opening_word(["emma", "olivia"])
    ('must', 'olivia')
    """
    return next((word for word in OPENING_WORDS if word in vocabulary), vocabulary[min(20, len(vocabulary) - 1)])
