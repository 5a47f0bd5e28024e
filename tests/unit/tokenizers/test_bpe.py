"""llmviz.tokenizers.bpe: the byte-level BPE against a reference written here and a hand-worked example: merges,
ties, special tokens, saving and loading, the replay, round trips."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmviz.data import corpus
from llmviz.tokenizers.base import ENDOFTEXT, TokenizerError
from llmviz.tokenizers.bpe.merging import split_chunks
from llmviz.tokenizers.bpe.reference import encoding, reference_tokenizer
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer


def reference_bpe(text, vocab_size, split_pattern):
    """A tiny independent reference: recount everything each step, ties to first occurrence."""
    sequences = [list(c.encode("utf-8")) for c in split_chunks(text, split_pattern)]
    merges = []
    for new_id in range(256, vocab_size):
        first_seen, counts = {}, {}
        position = 0
        for seq in sequences:
            for a, b in zip(seq, seq[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
                first_seen.setdefault((a, b), position)
                position += 1
            position += 1
        if not counts:
            break
        best = max(counts.values())
        pair = min((p for p in counts if counts[p] == best), key=first_seen.get)
        merges.append((pair, new_id))
        out = []
        for seq in sequences:
            merged, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
                    merged.append(new_id)
                    i += 2
                else:
                    merged.append(seq[i])
                    i += 1
            out.append(merged)
        sequences = out
    return merges


def test_hand_worked_example():
    # "abab cab": bytes a=97 b=98 c=99 space=32, no splitting.
    # pairs: ab×3 (positions 0, 2, 6), ba×1, b␣×1, ␣c×1, ca×1 → merge (97, 98) → 256
    # then: 256 256 ␣ c 256 → pairs (256,256)×1 (first), (256,32), (32,99), (99,256): all 1 → (256, 256) → 257
    bpe = BPETokenizer.train("abab cab", vocab_size=258, split_pattern=None, special_tokens=())
    assert bpe.merges == [((97, 98), 256), ((256, 256), 257)]
    assert bpe.merge_counts == [3, 1]
    assert bpe.encode("abab cab") == [257, 32, 99, 256]
    assert bpe.token_bytes(257) == b"abab"


@pytest.mark.parametrize("pattern", ["gpt4", "gpt2", None])
def test_merges_equal_the_reference_on_real_text(pattern):
    text = corpus.load("python-docs")[:6000]
    bpe = BPETokenizer.train(text, vocab_size=256 + 120, split_pattern=pattern, special_tokens=())
    assert bpe.merges == reference_bpe(text, 256 + 120, pattern)


def test_ties_follow_first_occurrence():
    # every pair occurs once: the first pair in the text wins each time
    bpe = BPETokenizer.train("xyzw", vocab_size=259, split_pattern=None, special_tokens=())
    assert bpe.merges == reference_bpe("xyzw", 259, None)
    assert bpe.merges[0] == ((ord("x"), ord("y")), 256)


def test_each_merge_is_a_maximal_pair_when_replayed():
    from llmviz.tokenizers.bpe.merging import get_pair_counts, merge

    text = corpus.load("names")[:5000]
    bpe = BPETokenizer.train(text, vocab_size=256 + 60, split_pattern="gpt4", special_tokens=())
    chunks = [list(c.encode()) for c in split_chunks(text, "gpt4")]
    for (pair, new_id), count in zip(bpe.merges, bpe.merge_counts):
        counts = {}
        for chunk in chunks:
            get_pair_counts(chunk, counts)
        assert counts[pair] == max(counts.values()) == count
        chunks = [merge(chunk, pair, new_id) for chunk in chunks]


def test_naive_trainer_gives_the_same_merges():
    from llmviz.tokenizers.bpe.merging import train_naive

    text = corpus.load("python-docs")[:4000]
    assert train_naive(text, 256 + 80) == BPETokenizer.train(text, 256 + 80, special_tokens=()).merges


@pytest.mark.parametrize("name", ["python-docs", "names"])
def test_pure_python_and_tiktoken_export_agree_on_shipped_corpora(name):
    text = corpus.load(name)
    bpe = BPETokenizer.train(text, vocab_size=600)
    ids = bpe.encode(text)
    assert bpe.to_tiktoken().encode(text, allowed_special="all") == ids
    assert bpe.decode(ids) == text


def test_special_tokens():
    bpe = BPETokenizer.train("hello world " * 20, vocab_size=300)
    eot = bpe.special_tokens[ENDOFTEXT]
    assert eot == 256 + len(bpe.merges) == bpe.vocab_size - 1
    ids = bpe.encode(f"hello{ENDOFTEXT}world", allowed_special="all")
    assert ids.count(eot) == 1
    assert bpe.decode(ids) == f"hello{ENDOFTEXT}world"
    assert eot not in bpe.encode(f"hello{ENDOFTEXT}", allowed_special="none")
    assert bpe.encode(f"hello{ENDOFTEXT}world", allowed_special={ENDOFTEXT}) == ids
    assert bpe.to_tiktoken().encode(f"hello{ENDOFTEXT}world", allowed_special="all") == ids


@pytest.mark.parametrize("name", ["bpe", "gpt2", "cl100k"])
def test_typed_special_token_text_stays_ordinary_by_default(name):
    # issue #13.10: a user who types "<|endoftext|>" gets ordinary tokens, as tiktoken's
    # encode_ordinary gives, unless the caller allows the special token
    tok = BPETokenizer.train("hello world " * 20, vocab_size=300) if name == "bpe" else reference_tokenizer(name)
    text = f"one.{ENDOFTEXT}two"
    eot = tok.special_tokens[ENDOFTEXT]
    ordinary = tok.encode(text)
    assert eot not in ordinary and tok.decode(ordinary) == text
    reference = tok.to_tiktoken() if name == "bpe" else encoding(name)
    assert ordinary == reference.encode_ordinary(text)
    allowed = tok.encode(text, allowed_special="all")
    assert allowed == reference.encode(text, allowed_special={ENDOFTEXT}) and allowed.count(eot) == 1
    with pytest.raises(TokenizerError):
        tok.encode(text, allowed_special={"<|not-a-special-token|>"})


def test_vocab_size_too_small_is_a_clear_error():
    with pytest.raises(TokenizerError, match="smallest vocabulary is 257"):
        BPETokenizer.train("abc", vocab_size=200)


def test_more_merges_than_the_text_allows_stops_cleanly():
    bpe = BPETokenizer.train("ab", vocab_size=400, split_pattern=None, special_tokens=())
    assert bpe.merges == [((97, 98), 256)]


def test_progress_can_stop_training():
    seen = []

    def progress(done, total):
        seen.append(done)
        return done < 5

    bpe = BPETokenizer.train(corpus.load("names"), vocab_size=400, progress=progress)
    assert len(bpe.merges) == 5 and bpe.stopped_early and seen == [1, 2, 3, 4, 5]


def test_save_and_load_round_trip(tmp_path):
    bpe = BPETokenizer.train(corpus.load("python-docs")[:20000], vocab_size=400)
    path = tmp_path / "tok.json"
    bpe.save(path)
    loaded = BPETokenizer.load(path)
    assert loaded.merges == bpe.merges and loaded.special_tokens == bpe.special_tokens
    text = "def f(x):\n    return x ** 2  # é 🙂"
    assert loaded.encode(text) == bpe.encode(text)
    assert '"token"' in path.read_text()  # readable: each merge shows its token


def test_load_rejects_garbage(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(TokenizerError):
        BPETokenizer.load(path)


def test_record_keeps_leaders():
    bpe = BPETokenizer.train("aaab aaab", vocab_size=258, split_pattern=None, special_tokens=(), record=True)
    assert bpe.history[0].top_pairs[0] == ((97, 97), 4)


def test_replay():
    bpe = BPETokenizer.train("aaabdaaabac", vocab_size=258, split_pattern=None, special_tokens=())
    assert bpe.replay("aaab", 0) == [[97, 97, 97, 98]]
    assert bpe.replay("aaab", 1) == [[256, 97, 98]]
    assert bpe.replay("aaab", 2) == [[257, 98]]


_BPE = BPETokenizer.train(
    "naïve café — 東京 🙂 the quick brown fox\n\tjumps over 12345 lazy dogs! " * 5, vocab_size=350
)


@pytest.mark.slow  # hypothesis: 200 texts
@settings(max_examples=200, deadline=None)
@given(st.text())
def test_bpe_round_trip_arbitrary_unicode(text):
    ids = _BPE.encode(text, allowed_special="none")
    assert _BPE.decode(ids) == text
    assert _BPE.to_tiktoken().encode(text, disallowed_special=()) == ids
