"""A tokenizer rebuilt from its saved form (``Tokenizer.to_dict()``, as checkpoints and the CLI keep it)."""

from __future__ import annotations

from llmviz.tokenizers.base import Tokenizer
from llmviz.tokenizers.bpe.reference import reference_tokenizer
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.tokenizers.char_word import CharTokenizer


def tokenizer_from_dict(data: dict) -> Tokenizer:
    """The tokenizer that ``data`` describes: characters, GPT-2's or cl100k's own, or a trained BPE.

    >>> tokenizer_from_dict({"type": "char", "chars": "ab"}).encode("ba")
    [1, 0]
    """
    if data.get("type") == "char":
        return CharTokenizer(data["chars"])
    if data.get("type") == "reference":  # GPT-2's or cl100k's own, rebuilt from the shipped files
        return reference_tokenizer(data["name"])
    return BPETokenizer.from_dict(data)
