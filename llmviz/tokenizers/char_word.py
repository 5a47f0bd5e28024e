"""Two tokenizers to read before BPE: one id per character, and one per word (unseen words become ``[UNK]``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import regex

from llmviz.tokenizers.base import Tokenizer, TokenizerError


class CharTokenizer(Tokenizer):
    """One id per distinct character of the training text, in sorted order.

    >>> tok = CharTokenizer.train("hello")
    >>> tok.encode("hell"), tok.vocab_size
    ([1, 0, 2, 2], 4)
    """

    name = "characters"

    def __init__(self, characters: Iterable[str]):
        self.chars = sorted(set(characters))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, text: str) -> CharTokenizer:
        if not text:
            raise TokenizerError("Cannot build a character vocabulary from empty text.")
        return cls(text)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def unknown_characters(self, text: str) -> list[str]:
        return sorted({c for c in text if c not in self.stoi})

    def encode(self, text: str, errors: str = "strict") -> list[int]:
        """``errors="strict"`` raises on characters outside the vocabulary; ``"skip"`` drops them."""
        unknown = self.unknown_characters(text)
        if unknown and errors == "strict":
            shown = ", ".join(repr(c) for c in unknown[:10])
            raise TokenizerError(
                f"{len(unknown)} character(s) are not in this {self.vocab_size}-character vocabulary: {shown}."
            )
        return [self.stoi[c] for c in text if c in self.stoi]

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.chars[i] for i in ids)

    def token_bytes(self, token_id: int) -> bytes:
        return self.chars[token_id].encode("utf-8")

    def to_dict(self) -> dict:
        return {"type": "char", "chars": "".join(self.chars)}


WORD_PATTERN = r"\w+|[^\w\s]|\s+"


class WordTokenizer(Tokenizer):
    """Words, punctuation marks and whitespace runs; anything unseen becomes ``[UNK]``.

    >>> tok = WordTokenizer.train("the cat sat on the mat.")
    >>> tok.decode(tok.encode("the dog sat."))
    'the [UNK] sat.'
    """

    name = "words"
    UNK = "[UNK]"

    def __init__(self, words: Iterable[str]):
        self.words = [self.UNK, *words]
        self.stoi = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def train(cls, text: str, max_vocab: int | None = None) -> WordTokenizer:
        counts = Counter(regex.findall(WORD_PATTERN, text))
        if not counts:
            raise TokenizerError("Cannot build a word vocabulary from empty text.")
        ranked = sorted(counts, key=lambda w: (-counts[w], w))
        return cls(ranked[: max_vocab - 1] if max_vocab else ranked)

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def split(self, text: str) -> list[str]:
        return regex.findall(WORD_PATTERN, text)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(w, 0) for w in self.split(text)]

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.words[i] for i in ids)

    def token_bytes(self, token_id: int) -> bytes:
        return self.words[token_id].encode("utf-8")
