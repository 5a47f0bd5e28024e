"""The Tokens page's numbers (stages/tokens.py wires them, ui/panels/tokens.py draws them): the tokenizers it
compares, a trained BPE's compression and Zipf counts, the BPE training task and the input–target windows.

No streamlit here.
"""

from __future__ import annotations

import functools
import json

from llmviz.data import corpus
from llmviz.lab.live_status import KeptResult
from llmviz.lessons import words
from llmviz.tokenizers import base, char_word, zipf
from llmviz.tokenizers.bpe import compression
from llmviz.tokenizers.bpe.reference import reference_tokenizer
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.training import tasks

WORD_VOCAB = 5000  # entries of the word vocabulary, [UNK] included


def reference(name: str):
    """A reference tokenizer (``gpt2`` or ``cl100k``), tiktoken's files."""
    return reference_tokenizer(name)


def corpus_tokenizers(sample: str) -> tuple[char_word.CharTokenizer, char_word.WordTokenizer]:
    """The characters and the :data:`WORD_VOCAB` most common words of a corpus sample (of "a" when it is empty).

    >>> chars, words = corpus_tokenizers("to be or not to be")
    >>> chars.vocab_size, words.vocab_size
    (7, 6)
    """
    return char_word.CharTokenizer.train(sample or "a"), char_word.WordTokenizer.train(
        sample or "a", max_vocab=WORD_VOCAB
    )


def bpe_measures(bpe: BPETokenizer, sample: str):
    """The compression curve of a BPE on a sample and the rank–frequency counts of its tokens there."""
    curve = compression.compression_curve(bpe, sample)
    return curve, zipf.rank_frequency(bpe.to_tiktoken().encode(sample, allowed_special="all"))


def bpe_key(bpe: BPETokenizer) -> str:
    """The content key of a BPE tokenizer: its merges and special tokens, as its JSON writes them."""
    return corpus.text_key(json.dumps(bpe.to_dict(), sort_keys=True))


def zipf_verdict(fit) -> str:
    """Say what the fitted log–log line shows, from its R² (never claim a straight line that is not there)."""
    shape = (
        "close to a straight line (Zipf's law)"
        if fit.r_squared >= 0.95
        else "roughly a straight line, with clear bends"
        if fit.r_squared >= 0.85
        else "not a straight line: Zipf's law does not describe these tokens well"
    )
    return (
        f"The points are {shape}: a line fitted to log count vs log rank has slope {fit.slope:.2f} and "
        f"R² = {fit.r_squared:.3f} (1 would be a perfect line)."
    )


def bpe_training(sample: str, vocab_size: int, pattern: str | None):
    """The BPE training task for the lab (a job): (its function, how many merges, its memory footprint)."""
    merges = BPETokenizer.merges_for(vocab_size, [base.ENDOFTEXT])
    task = functools.partial(tasks.bpe_training, text=sample, merges=merges, split_pattern=pattern)
    return task, merges, tasks.bpe_training_footprint(len(sample))


def bpe_from_job(history, pattern: str | None) -> BPETokenizer:
    """The BPE a finished (or stopped) training job learned, its history kept for the replay."""
    return BPETokenizer.from_history(history, pattern, [base.ENDOFTEXT], keep_history=True)


#: what the Tokens page remembers of a BPE it trained (the cards' and the merge table's captions), kept with it
BPE_ORIGIN_FIELDS = ("pattern", "vocab_size", "corpus", "corpus_key")


def bpe_keeping(origin: dict) -> KeptResult:
    """What the lab keeps of a BPE training (its merges, and ``origin``: what it was trained on and with), so that a
    reload or a restarted server gives the student their tokenizer back (:func:`bpe_from_kept`).

    >>> bpe_keeping({"pattern": "gpt4", "vocab_size": 300, "corpus": "a.txt", "corpus_key": "k", "x": 1}).facts
    {'pattern': 'gpt4', 'vocab_size': 300, 'corpus': 'a.txt', 'corpus_key': 'k'}
    """
    return KeptResult("bpe", {key: origin.get(key) for key in BPE_ORIGIN_FIELDS}, tasks.bpe_result)


def bpe_from_kept(tensors: dict, meta: dict) -> tuple[BPETokenizer, dict]:
    """The BPE tokenizer and its origin that :func:`bpe_keeping` kept: the same merges, ids and counts.

    >>> records = BPETokenizer.train("low lower lowest " * 20, 260, "gpt2", record=True).history
    >>> kept = tasks.bpe_result(records)[0]
    >>> bpe, origin = bpe_from_kept(kept, {"pattern": "gpt2", "vocab_size": 260, "corpus": "c"})
    >>> bpe.merges == BPETokenizer.from_history(records, "gpt2", [base.ENDOFTEXT]).merges, origin["vocab_size"]
    (True, 260)
    """
    origin = {key: meta.get(key) for key in BPE_ORIGIN_FIELDS}
    return bpe_from_job(tasks.bpe_records(tensors), origin["pattern"]), origin


def split_characters(token_bytes: list[bytes], text: str) -> tuple[int, int, str] | None:
    """How many tokens hold only part of a character (bytes that are no UTF-8 text on their own), the first of them,
    and a character of
    ``text`` that UTF-8 writes in several bytes, for the note under a tokenizer's chips; None when every token is
    whole text.

    >>> split_characters([b"caf", b"\\xc3", b"\\xa9"], "café")
    (2, 1, 'é')
    >>> split_characters([b"na", b"\\xc3\\xafve", b" \\xe6", b"\\x97", b"\\xa5"], "naïve 日")  # GPT-2's pieces
    (3, 2, '日')
    >>> split_characters([b"caf", b"\\xc3\\xa9"], "café") is None
    True
    """

    def whole(piece: bytes) -> bool:
        try:
            piece.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    partial = [i for i, piece in enumerate(token_bytes) if not whole(piece)]
    if not partial:
        return None
    several = [c for c in dict.fromkeys(text) if ord(c) > 127]  # UTF-8 writes these in 2 to 4 bytes; once each
    # the characters some token holds whole: UTF-8 resynchronises at every lead byte, so a character's bytes inside a
    # token decode to it even beside a cut one (linear: checking every character against every token was 40 million
    # steps, 20 s, for a pasted 100,000 characters of emoji and kanji)
    held = set("".join(piece.decode("utf-8", errors="ignore") for piece in set(token_bytes)))
    cut = next((c for c in several if c not in held), None)  # in no token whole
    return len(partial), partial[0], cut or (several or ["é"])[0]


def utf8_bytes(character: str) -> str:
    r"""A character's UTF-8 bytes as the chips write them.

    >>> utf8_bytes("é")
    '\\xc3\\xa9'
    """
    return "".join(f"\\x{byte:02x}" for byte in character.encode("utf-8"))


def compression_words(curve: list[tuple[int, float]]) -> str:
    """The compression curve in words: characters per token at the smallest and the largest vocabulary measured.

    >>> compression_words([(257, 1.0), (280, 1.4), (300, 1.62)])
    'Characters per token: 1 with a vocabulary of 257, 1.62 with 300 (1.62 times fewer tokens).'
    """
    if not curve:
        return "Nothing measured."
    (small, first), (large, last) = curve[0], curve[-1]
    return (
        f"Characters per token: {words.number(first)} with a vocabulary of {words.number(small)}, "
        f"{words.number(last)} with {words.number(large)} ({words.number(last / first)} times fewer tokens)."
    )


def zipf_words(counts: list[int], slope: float | None) -> str:
    """The Zipf chart in words: the commonest token's count, the 10th's and the 100th's (where there are so many),
    and the fitted line's slope (Zipf's law: about −1).

    >>> for part in zipf_words([1000, 500, 330] + [100] * 7, -1.02).split("; "):
    ...     print(part)
    10 distinct tokens: the commonest occurs 1,000 times, the 10th 100
    the fitted line's slope is -1.02 (Zipf's law: about -1).
    """
    if not counts:
        return "No token counted."
    ranks = [r for r in (1, 10, 100, 1000) if r <= len(counts)]
    said = [
        f"the commonest occurs {words.number(counts[0])} times",
        *(f"the {r}th {words.number(counts[r - 1])}" for r in ranks[1:]),
    ]
    fitted = f"; the fitted line's slope is {slope:.2f} (Zipf's law: about -1)" if slope is not None else ""
    return f"{len(counts)} distinct tokens: {', '.join(said)}{fitted}."
