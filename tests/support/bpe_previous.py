"""The BPE trainer llmviz shipped before issue #20, kept verbatim as a slow reference.

Its cost per merge grew with the vocabulary (all pairs of equal count were popped to break a
tie); tests/unit/tokenizers/test_bpe_training.py checks that the new trainer gives the same merges.
"""

import heapq
from collections import Counter

from llmviz.tokenizers.bpe.merging import MergeRecord, merge, split_chunks


def previous_train_steps(text: str, num_merges: int, split_pattern: str | None = "gpt4", record: bool = False):
    """llmviz's previous trainer (before issue #20), kept as a slow reference: same merges expected.

    Identical chunks are counted once (with their frequency), and after each merge only
    the pairs around the merged positions are recounted. Ties between pairs of equal
    count go to the pair that occurs first in the text (minbpe's rule). The generator
    ends early when no pair is left to merge.
    """
    # the distinct chunks in order of first appearance, each with its frequency
    frequency = Counter(chunk.encode("utf-8") for chunk in split_chunks(text, split_pattern))
    words = [list(chunk) for chunk in frequency]  # dict order = first appearance
    counts_per_word = list(frequency.values())

    pair_counts: dict[tuple[int, int], int] = {}
    where: dict[tuple[int, int], set[int]] = {}  # pair → indices of the words that contain it
    for index, (word, freq) in enumerate(zip(words, counts_per_word)):
        for pair in zip(word, word[1:]):
            pair_counts[pair] = pair_counts.get(pair, 0) + freq
            where.setdefault(pair, set()).add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    def first_occurrence(pair):
        index = min(where[pair])  # the earliest word that still holds the pair
        word = words[index]
        return index, next(i for i in range(len(word) - 1) if (word[i], word[i + 1]) == pair)

    for step in range(num_merges):
        # pop the pairs with the highest current count (lazy heap: skip stale entries)
        best_count, tied = None, []
        while heap:
            negative, pair = heap[0]
            current = pair_counts.get(pair, 0)
            if current != -negative or current == 0:
                heapq.heappop(heap)
                if current > 0:
                    heapq.heappush(heap, (-current, pair))
                continue
            if best_count is None:
                best_count = current
            if current != best_count:
                break
            tied.append(heapq.heappop(heap)[1])
        if not tied:
            return  # every chunk is a single token: nothing left to merge
        pair = min(tied, key=first_occurrence) if len(tied) > 1 else tied[0]
        for other in tied:
            if other != pair:
                heapq.heappush(heap, (-best_count, other))
        top = ()
        if record:
            leaders = heapq.nsmallest(10, ((-c, p) for p, c in pair_counts.items() if c > 0))
            top = tuple((p, -c) for c, p in leaders)
        new_id = 256 + step

        # apply the merge only to the words that contain the pair, updating counts around it
        for index in list(where.get(pair, ())):
            word, freq = words[index], counts_per_word[index]
            new_word = merge(word, pair, new_id)
            old_pairs = set(zip(word, word[1:]))
            new_pairs = set(zip(new_word, new_word[1:]))
            for old in zip(word, word[1:]):
                pair_counts[old] -= freq
            for p in zip(new_word, new_word[1:]):
                pair_counts[p] = pair_counts.get(p, 0) + freq
            for gone in old_pairs - new_pairs:
                where[gone].discard(index)
            for added in new_pairs - old_pairs:
                where.setdefault(added, set()).add(index)
            for p in new_pairs:
                heapq.heappush(heap, (-pair_counts[p], p))
            words[index] = new_word
        pair_counts.pop(pair, None)
        where.pop(pair, None)
        yield MergeRecord(step, pair, new_id, best_count, top)
