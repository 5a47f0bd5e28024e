"""The pieces of byte-pair encoding (minbpe's small functions): cut text into chunks, count adjacent pairs,
merge one pair; and the textbook training loop built from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

# the split patterns of GPT-2 and GPT-4 (cl100k): text is cut into chunks first, and
# merges never cross a chunk boundary (no token spans "dog" and " the")
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
GPT4_SPLIT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
SPLIT_PATTERNS = {"gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN, None: None}


def get_pair_counts(ids: list[int], counts: dict | None = None) -> dict[tuple[int, int], int]:
    """How often each adjacent pair occurs, in order of first occurrence.

    >>> get_pair_counts([1, 2, 3, 1, 2])
    {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    """
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every occurrence of ``pair`` (left to right, no overlaps) with ``new_id``.

    >>> merge([1, 2, 3, 1, 2], (1, 2), 4)
    [4, 3, 4]
    >>> merge([5, 5, 5], (5, 5), 6)
    [6, 5]
    """
    out, i = [], 0
    while i < len(ids):
        if i < len(ids) - 1 and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


@dataclass(frozen=True)
class MergeRecord:
    """One training step: which pair became which token, and how often the pair occurred."""

    rank: int
    pair: tuple[int, int]
    new_id: int
    count: int
    top_pairs: tuple[tuple[tuple[int, int], int], ...] = ()  # with record=True: the leaders at this step


def split_chunks(text: str, split_pattern: str | None) -> list[str]:
    pattern = SPLIT_PATTERNS.get(split_pattern, split_pattern)
    if pattern is None:
        return [text] if text else []
    return regex.findall(pattern, text)


def train_naive(text: str, vocab_size: int, split_pattern: str | None = "gpt4") -> list[tuple[tuple[int, int], int]]:
    """The textbook loop (minbpe): recount every pair of the whole text after every merge.

    Same merges as :meth:`BPETokenizer.train` (without special tokens), far slower; kept as
    the version to read first and as the baseline of ``benchmarks/bpe.py``.
    """
    chunks = [list(chunk.encode("utf-8")) for chunk in split_chunks(text, split_pattern)]
    merges = []
    for step in range(vocab_size - 256):
        counts: dict[tuple[int, int], int] = {}
        for chunk in chunks:
            get_pair_counts(chunk, counts)
        if not counts:
            break
        pair = max(counts, key=lambda candidate: counts[candidate])  # the first maximal pair (first occurrence)
        new_id = 256 + step
        chunks = [merge(chunk, pair, new_id) for chunk in chunks]
        merges.append((pair, new_id))
    return merges
