"""The fast BPE trainer (issue #20) learns exactly the merges of llmviz's previous trainer."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmviz.data import corpus
from llmviz.tokenizers.bpe.merging import train_naive
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from tests.support.bpe_previous import previous_train_steps


def merges_and_counts(steps):
    return [(r.pair, r.new_id, r.count) for r in steps]


def assert_same(text, num_merges, pattern):
    new = merges_and_counts(BPETokenizer.train_steps(text, num_merges, pattern))
    old = merges_and_counts(previous_train_steps(text, num_merges, pattern))
    assert new == old


@pytest.mark.parametrize(
    ("name", "characters", "num_merges", "pattern"),
    [
        pytest.param("python-docs", None, 768, "gpt4", marks=pytest.mark.slow),  # the whole corpus: ~7 s quiet
        pytest.param("python-docs", 60_000, 1500, "gpt2", marks=pytest.mark.slow),  # the tail's ties: ~8 s quiet
        ("names", None, 700, "gpt4"),
        ("python-docs", 900, 100, None),  # one long sequence, no pre-split (the previous trainer is slow here)
        pytest.param("names", 700, 100, None, marks=pytest.mark.slow),  # the previous trainer takes ~15 s here
    ],
)
def test_same_merges_as_the_previous_trainer_on_corpora(name, characters, num_merges, pattern):
    text = corpus.load(name)
    assert_same(text[:characters] if characters else text, num_merges, pattern)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 57,  # runs: overlapping pairs, merged left to right
        "ab" * 100 + "ba" * 50,
        "aaabdaaabac",
        "the cat sat on the mat. " * 7 + "naïve café 東京 🙂🙂🙂",
        "x",
        "",
    ],
)
@pytest.mark.parametrize("pattern", ["gpt4", None])
def test_same_merges_on_edge_cases(text, pattern):
    assert_same(text, 300, pattern)


@pytest.mark.slow  # hypothesis: many trainings
def test_same_merges_on_random_small_alphabets():
    rng = random.Random(0)
    for _ in range(12):
        text = "".join(rng.choice("ab c\n") for _ in range(rng.randrange(1, 250)))
        for pattern in ("gpt4", None):
            assert_same(text, 80, pattern)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("aab ba\né"), max_size=200), st.sampled_from(["gpt2", None]))
def test_same_merges_on_generated_texts(text, pattern):
    assert_same(text, 60, pattern)
    assert [(r.pair, r.new_id) for r in BPETokenizer.train_steps(text, 60, pattern)] == train_naive(
        text, 256 + 60, pattern
    )


def test_recorded_leaders_are_the_top_counts():
    text = corpus.load("names")[:20_000]
    from llmviz.tokenizers.bpe.merging import get_pair_counts, merge, split_chunks

    chunks = [list(c.encode()) for c in split_chunks(text, "gpt4")]
    for record in BPETokenizer.train_steps(text, 40, "gpt4", record=True):
        counts = {}
        for chunk in chunks:
            get_pair_counts(chunk, counts)
        expected = sorted(counts.values(), reverse=True)[:10]
        assert [c for _, c in record.top_pairs] == expected
        assert record.top_pairs[0] == (record.pair, record.count)
        assert all(counts[p] == c for p, c in record.top_pairs)
        chunks = [merge(chunk, record.pair, record.new_id) for chunk in chunks]


# ---------------------------------------------------------------------------- minbpe's rules, written here

# GPT-4's split pattern as minbpe writes it (minbpe/regex.py), copied here rather than imported from llmviz
MINBPE_GPT4_SPLIT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)


def _unseen_text() -> str:
    """Text llmviz was never developed on: two standard-library modules' source and HTML5's named characters
    (accents, Greek, arrows, mathematical symbols: multi-byte UTF-8)."""
    import difflib
    import html.entities
    import inspect
    import textwrap

    symbols = " ".join(f"{name.rstrip(';')}={char}" for name, char in sorted(html.entities.html5.items())[::7])
    return inspect.getsource(textwrap)[:6000] + symbols[:3000] + inspect.getsource(difflib)[:3000]


def minbpe_train(text: str, num_merges: int, pattern: str) -> list[tuple[tuple[int, int], int]]:
    """minbpe's RegexTokenizer.train: split, then repeatedly merge the most frequent pair (the first one met
    among equals, since Python's max keeps the first maximum of a dict in insertion order)."""
    import regex

    chunks = [list(chunk.encode("utf-8")) for chunk in regex.findall(pattern, text)]
    merges = []
    for step in range(num_merges):
        stats: dict[tuple[int, int], int] = {}
        for ids in chunks:
            for pair in zip(ids, ids[1:]):
                stats[pair] = stats.get(pair, 0) + 1
        if not stats:
            break
        pair = max(stats, key=stats.get)
        new_id = 256 + step
        merged_chunks = []
        for ids in chunks:
            out, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            merged_chunks.append(out)
        chunks = merged_chunks
        merges.append((pair, new_id))
    return merges


def minbpe_encode(text: str, merges: list[tuple[tuple[int, int], int]], pattern: str) -> list[int]:
    """minbpe's encode: in each chunk, merge the pair learned earliest until none is left."""
    import regex

    ranks = dict(merges)
    out = []
    for chunk in regex.findall(pattern, text):
        ids = list(chunk.encode("utf-8"))
        while len(ids) >= 2:
            pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, float("inf")))
            if pair not in ranks:
                break
            i, merged = 0, []
            while i < len(ids):
                if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                    merged.append(ranks[pair])
                    i += 2
                else:
                    merged.append(ids[i])
                    i += 1
            ids = merged
        out.extend(ids)
    return out


def test_merges_and_encoding_equal_minbpe_on_unseen_text():
    text = _unseen_text()
    training, held_out = text[:9000], text[9000:]
    expected = minbpe_train(training, 150, MINBPE_GPT4_SPLIT)
    tokenizer = BPETokenizer.train(training, vocab_size=256 + 150, split_pattern="gpt4", special_tokens=())
    assert tokenizer.merges == expected
    assert tokenizer.encode(held_out) == minbpe_encode(held_out, expected, MINBPE_GPT4_SPLIT)
