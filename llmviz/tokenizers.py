"""Tokenizers a student can read: characters, words, and byte-level BPE (minbpe's style).

One interface for all (:mod:`llmviz.tokenizer_base`): ``encode(text) -> list[int]``, ``decode(ids) -> str``,
``vocab_size``, and ``token_bytes(id)`` / ``printable(id)`` to show a token. Each part lives in a module of its
own; this one gathers their names (``from llmviz.tokenizers import BPETokenizer`` keeps working) and rebuilds a
tokenizer from its saved form:

- :mod:`llmviz.char_word_tokenizers` — one id per character, one per word;
- :mod:`llmviz.bpe` — byte-level BPE: merging, the fast trainer, GPT-2's and cl100k's encodings, compression;
- :mod:`llmviz.windows` — (input, target) windows for next-token prediction;
- :mod:`llmviz.zipf` — counts by rank and Zipf's line.
"""

from __future__ import annotations

from llmviz.bpe.compression import compression_curve, truncated
from llmviz.bpe.merging import (
    GPT2_SPLIT_PATTERN,
    GPT4_SPLIT_PATTERN,
    SPLIT_PATTERNS,
    MergeRecord,
    get_pair_counts,
    merge,
    split_chunks,
    train_naive,
)
from llmviz.bpe.reference import (
    GPT2_ENCODER_JSON_SHA256,
    GPT2_VOCAB_BPE_SHA256,
    _gpt2_files,
    encoding,
    merges_from_ranks,
    reference_tokenizer,
)
from llmviz.bpe.tokenizer import BPETokenizer
from llmviz.char_word_tokenizers import WORD_PATTERN, CharTokenizer, WordTokenizer
from llmviz.tokenizer_base import ENDOFTEXT, Tokenizer, TokenizerError, printable
from llmviz.windows import sliding_windows
from llmviz.zipf import ZipfFit, rank_frequency, zipf_fit

__all__ = [
    "ENDOFTEXT", "GPT2_ENCODER_JSON_SHA256", "GPT2_SPLIT_PATTERN", "GPT2_VOCAB_BPE_SHA256", "GPT4_SPLIT_PATTERN",
    "SPLIT_PATTERNS", "WORD_PATTERN", "BPETokenizer", "CharTokenizer", "MergeRecord", "Tokenizer",
    "TokenizerError", "WordTokenizer", "ZipfFit", "_gpt2_files", "compression_curve", "encoding",
    "get_pair_counts", "merge", "merges_from_ranks", "printable", "rank_frequency", "reference_tokenizer",
    "sliding_windows", "split_chunks", "tokenizer_from_dict", "train_naive", "truncated", "zipf_fit",
]


def tokenizer_from_dict(data: dict) -> Tokenizer:
    if data.get("type") == "char":
        return CharTokenizer(data["chars"])
    if data.get("type") == "reference":  # GPT-2's or cl100k's own, rebuilt from the shipped files
        return reference_tokenizer(data["name"])
    return BPETokenizer.from_dict(data)
