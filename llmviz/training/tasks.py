"""Work a page starts that trains something other than a model run — a BPE tokenizer, word vectors — as a job.

Each function here is a *task loop* for :meth:`llmviz.jobs.manager.JobManager.submit_task`: it yields ``(step, loss)``
(``nan`` when the step has no loss), checks ``should_stop()`` before every step, and returns what it made —
also when it was stopped, so a Stop keeps what was learned so far. They are module-level functions, picklable
with ``functools.partial``, so they run in a worker process like any training run and count in the session's
share of the server.

>>> loop = bpe_training(lambda: False, "low lower lowest " * 20, merges=3, split_pattern="gpt2")
>>> progress = []
>>> try:
...     while True:
...         progress.append(next(loop)[0])
... except StopIteration as end:
...     records = end.value
>>> progress, [record.new_id for record in records]
([1, 2, 3], [256, 257, 258])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

import torch

from llmviz.interpret import ablation, patching, steering
from llmviz.models.word2vec import Vocabulary, Word2Vec, Word2VecState, train_word2vec
from llmviz.tokenizers.bpe.merging import MergeRecord
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.training import footprint

if TYPE_CHECKING:
    from llmviz.models.gpt import GPT


#: the memory BPE training holds per character of its text, at most: measured (growth of the process's peak) on 1 MB
#: of text, 80 bytes a character as one sequence (no pre-split pattern), 69 for a text of unique words split by
#: GPT-4's pattern, 2 for the Python manual split (its words repeat, and are counted once each)
BPE_BYTES_PER_CHAR = 100


def bpe_training_footprint(chars: int) -> footprint.Footprint:
    """What a BPE training task on ``chars`` characters needs, admitted before it starts.

    >>> bpe_training_footprint(1_000_000).preparing_bytes
    100000000
    """
    return footprint.task(f"BPE training on {chars:,} characters", working_bytes=BPE_BYTES_PER_CHAR * chars)


def bpe_training(
    should_stop: Callable[[], bool], text: str, merges: int, split_pattern: str | None
) -> Generator[tuple[int, float], None, list[MergeRecord]]:
    """Learn up to ``merges`` BPE merges of ``text``; returns the :class:`MergeRecord` list (for
    :meth:`BPETokenizer.from_history`), the merges learned so far when stopped."""
    records: list[MergeRecord] = []
    for record in BPETokenizer.train_steps(text, merges, split_pattern, record=True):
        records.append(record)
        yield len(records), math.nan
        if should_stop():
            break
    return records


def bpe_result(records: list[MergeRecord]) -> tuple[dict[str, torch.Tensor], dict]:
    """What the lab keeps of a BPE training's result (:class:`~llmviz.lab.live_status.KeptResult`): one row per merge,
    ``(left, right, new id, count)``; what the Tokens page draws of a BPE (its merges and their counts).

    >>> tensors, meta = bpe_result([MergeRecord(0, (97, 97), 256, 3), MergeRecord(1, (256, 256), 257, 1)])
    >>> tensors["merges"].tolist(), meta
    ([[97, 97, 256, 3], [256, 256, 257, 1]], {'merges': 2})
    """
    rows = [[r.pair[0], r.pair[1], r.new_id, r.count] for r in records]
    merges = torch.tensor(rows, dtype=torch.int64).reshape(len(rows), 4)  # (M, 4)
    return {"merges": merges}, {"merges": len(rows)}


def bpe_records(tensors: dict[str, torch.Tensor]) -> list[MergeRecord]:
    """The merges :func:`bpe_result` kept, as :class:`MergeRecord` s again (for :meth:`BPETokenizer.from_history`).

    >>> bpe_records(bpe_result([MergeRecord(0, (97, 97), 256, 3)])[0])
    [MergeRecord(rank=0, pair=(97, 97), new_id=256, count=3, top_pairs=())]
    """
    rows = tensors["merges"].tolist()
    return [MergeRecord(rank, (int(a), int(b)), int(new), int(count)) for rank, (a, b, new, count) in enumerate(rows)]


#: word2vec's words per character at most, for an estimate made before the text is split (the Python manual has 0.14,
#: English prose about 0.18: 5-6 characters a word with its space; a quarter covers texts of short words)
WORD2VEC_WORDS_PER_CHAR = 0.25


def word2vec_footprint(chars: int, window: int) -> footprint.Footprint:
    """What word2vec training on ``chars`` characters with a ``window`` needs, admitted before it starts: a process's
    first training step (:data:`~llmviz.training.footprint.FIRST_STEP_BYTES`) and, per word, what
    :func:`~llmviz.models.word2vec.train_word2vec` holds at once while it builds its pairs: the word's string
    (about 56 bytes) and its list slots in the words and the ids (8 + 8), and for each of its 2 × window (centre,
    context) pairs a Python tuple and its list slot (56 + 8, the list over-allocating by an eighth: 72) and the pair in
    the tensor (16). Words are counted as a quarter of the characters (:data:`WORD2VEC_WORDS_PER_CHAR`).

    Measured (fresh process, 128 dimensions, 5,000 words, the manual) 97 MB on 20,000 characters, 153 MB on 1,000,000
    at window 5 here (2 cores) and 168 MB on a many-core AMD EPYC: the old 60 + 20 × window bytes a character
    (160 MB) had no room for the first step, which differs by machine. This counts 128 MB + 1,000,000 × 0.25 × (72 +
    10 × 88) bytes = 372 MB there.

    >>> word2vec_footprint(1_000_000, window=5).preparing_bytes
    372217728
    """
    per_word = 72 + 2 * window * 88
    working = footprint.FIRST_STEP_BYTES + int(WORD2VEC_WORDS_PER_CHAR * chars * per_word)
    return footprint.task(f"word2vec on {chars:,} characters", working_bytes=working)


def word2vec_training(
    should_stop: Callable[[], bool], text: str, dim: int, window: int, steps: int, max_vocab: int, seed: int
) -> Generator[tuple[int, float], None, Word2VecState | None]:
    """Train skip-gram word vectors (:func:`llmviz.lessons.embeddings.train_word2vec`); returns the last
    :class:`Word2VecState` (the vectors learned so far when stopped)."""
    state: Word2VecState | None = None
    for state in train_word2vec(text, dim=dim, window=window, steps=steps, max_vocab=max_vocab, seed=seed):
        yield state.step, state.loss
        if should_stop():
            break
    return state


def word2vec_result(state: Word2VecState) -> tuple[dict[str, torch.Tensor], dict]:
    """What the lab keeps of word2vec's result: both tables of vectors, and the vocabulary (its words and counts)
    with the step and loss as JSON.

    >>> model = Word2Vec(2, dim=4)
    >>> tensors, meta = word2vec_result(Word2VecState(7, 0.5, model, Vocabulary(["a", "b"], [3, 2])))
    >>> sorted(tensors), meta
    (['center', 'context'], {'step': 7, 'loss': 0.5, 'words': ['a', 'b'], 'counts': [3, 2]})
    """
    tensors = {"center": state.model.center.weight.detach(), "context": state.model.context.weight.detach()}  # (V, D)
    words = state.vocabulary
    return tensors, {"step": state.step, "loss": float(state.loss), "words": words.words, "counts": words.counts}


def word2vec_state(tensors: dict[str, torch.Tensor], meta: dict) -> Word2VecState:
    """The :class:`Word2VecState` :func:`word2vec_result` kept.

    >>> model = Word2Vec(2, dim=4)
    >>> again = word2vec_state(*word2vec_result(Word2VecState(7, 0.5, model, Vocabulary(["a", "b"], [3, 2]))))
    >>> again.step, again.vocabulary.index, bool((again.model.center.weight == model.center.weight).all())
    (7, {'a': 0, 'b': 1}, True)
    """
    vocab_size, dim = tensors["center"].shape  # (V, D)
    model = Word2Vec(vocab_size, dim)
    model.load_state_dict({"center.weight": tensors["center"], "context.weight": tensors["context"]})
    vocabulary = Vocabulary(list(meta["words"]), [int(c) for c in meta["counts"]])
    return Word2VecState(int(meta["step"]), float(meta["loss"]), model, vocabulary)


def head_effects_sweep(
    should_stop: Callable[[], bool], model: GPT, ids: list[int], mode: str
) -> Generator[tuple[int, float], None, ablation.HeadEffects | None]:
    """Knock out every head of ``model`` alone (:func:`llmviz.interpret.ablation.head_effect_steps`): yields
    ``(heads done, nan)``; returns the grid (NaN for the heads not reached when stopped)."""
    result = None
    for result in ablation.head_effect_steps(model, ids, mode):
        yield result.done, math.nan
        if should_stop():
            break
    return result


def patching_sweep(
    should_stop: Callable[[], bool],
    model: GPT,
    clean: list[int],
    corrupted: list[int],
    answer: int,
    wrong: int,
    component: str,
) -> Generator[tuple[int, float], None, patching.Patching | None]:
    """Patch every cell (:func:`llmviz.interpret.patching.patching_steps`): yields ``(cells done, nan)``; returns the
    sweep (NaN for the cells not reached when stopped)."""
    result = None
    for result in patching.patching_steps(model, clean, corrupted, answer, wrong, component):
        yield result.done, math.nan
        if should_stop():
            break
    return result


def steering_generation(
    should_stop: Callable[[], bool],
    model: GPT,
    ids: list[int],
    layer: int,
    direction: list[float],
    alpha: float,
    new_tokens: int,
    temperature: float,
    seed: int,
) -> Generator[tuple[int, float], None, steering.SteeredPair | None]:
    """Generate with and without ``alpha × direction`` at ``layer`` (:func:`llmviz.interpret.steering.steered_steps`):
    yields ``(tokens written, nan)``, the plain text's then the steered one's; returns the pair (cut short when
    stopped)."""
    pair = None
    vector = torch.tensor(direction)
    for pair in steering.steered_steps(model, ids, layer, vector, alpha, new_tokens, temperature, seed):
        yield len(pair.plain) + len(pair.steered), math.nan
        if should_stop():
            break
    return pair
