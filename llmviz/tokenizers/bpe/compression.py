"""How much a BPE vocabulary compresses text as it grows: the tokenizer after its first N merges, and the
characters-per-token curve over N.
"""

from __future__ import annotations

from llmviz.tokenizers.bpe.merging import MergeRecord
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer


def truncated(tokenizer: BPETokenizer, num_merges: int) -> BPETokenizer:
    """The tokenizer a shorter training run would have produced: BPE training is prefix-consistent."""
    specials = list(tokenizer.special_tokens)
    return BPETokenizer.from_history(
        [
            MergeRecord(rank, pair, new_id, tokenizer.merge_counts[rank] if rank < len(tokenizer.merge_counts) else 0)
            for rank, (pair, new_id) in enumerate(tokenizer.merges[:num_merges])
        ],
        tokenizer.split_pattern,
        specials,
    )


def compression_curve(tokenizer: BPETokenizer, text: str, points: int = 12) -> list[tuple[int, float]]:
    """(vocabulary size, characters per token) for ``points`` truncations of the merge list."""
    if not text:
        return []
    total = len(tokenizer.merges)
    steps = sorted({round(total * i / max(1, points - 1)) for i in range(points)})
    curve = []
    for merges in steps:
        small = truncated(tokenizer, merges)
        tokens = len(small.to_tiktoken().encode(text, allowed_special="all"))
        curve.append((small.vocab_size, len(text) / max(1, tokens)))
    return curve
