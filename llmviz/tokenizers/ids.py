"""The ids of any text by any llmviz tokenizer: what every page and lesson tokenizes a student's text with (a character
vocabulary skips the characters it lacks instead of failing)."""

from __future__ import annotations

from llmviz.tokenizers.char_word import CharTokenizer


def encode(tokenizer, text: str, allowed_special: str = "none") -> list[int]:
    """The ids of ``text`` by any llmviz tokenizer; a character vocabulary skips the characters it lacks instead of
    failing.

    ``allowed_special`` ("none": special-token text stays ordinary, "all": it becomes the special token) reaches
    only tokenizers that have special tokens; character and word vocabularies have none.

    >>> encode(CharTokenizer.train("abc"), "abz")
    [0, 1]
    >>> encode(CharTokenizer.train("<|>"), "<|>", allowed_special="all")
    [0, 2, 1]
    """
    if isinstance(tokenizer, CharTokenizer):
        return tokenizer.encode(text, errors="skip")
    if getattr(tokenizer, "special_tokens", None) is not None:
        return tokenizer.encode(text, allowed_special=allowed_special)
    return tokenizer.encode(text)
