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
from llmviz.models.word2vec import Word2VecState, train_word2vec
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


def word2vec_footprint(chars: int, window: int) -> footprint.Footprint:
    """What word2vec training on ``chars`` characters with a ``window`` needs, admitted before it starts: 60 + 20 ×
    window bytes a character (measured on 2,000,000 characters of the manual, 128 dimensions, 5,000 words: 70 bytes
    a character at window 1, 103 at 4, 127 at 5: its (centre, context) pairs grow with the window).

    >>> word2vec_footprint(1_000_000, window=2).preparing_bytes
    100000000
    """
    return footprint.task(f"word2vec on {chars:,} characters", working_bytes=(60 + 20 * window) * chars)


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
