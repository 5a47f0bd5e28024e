"""What the pages draw, computed here: pages only render (no forward passes or model math in ``stages/``).

Each function takes a model (any llmviz model, on any device; it is never changed) and plain
inputs, and returns CPU tensors or small dataclasses that a chart can take as they are. They are
pure functions of their inputs, so the app caches them by (model key, inputs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn

from llmviz.lessons import embeddings
from llmviz.models import minilm
from llmviz.models.gpt import cache_name

HookName = Callable[[int, str], str]  #: a model's hook names: (layer, point) → name

MAX_ATTENTION_TOKENS = 48  # the attention charts stay readable up to this many tokens


def model_device(model: nn.Module) -> torch.device:
    """The device of the model's weights (CPU for a model without parameters)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def context_length(model: nn.Module) -> int:
    """How many tokens the model reads at once (``config.context_length``, or its window)."""
    config = getattr(model, "config", None)
    return int(getattr(config, "context_length", 0) or getattr(model, "context_length", 0) or 256)


@dataclass(frozen=True)
class AttentionPatterns:
    """Every layer's and head's attention weights for one text: ``patterns[layer, head, query, key]``."""

    ids: list[int]
    patterns: torch.Tensor  # (L, H, T, T), rows sum to 1
    cut_to_context: int  # tokens dropped because the text is longer than the context
    cut_to_shown: int  # tokens dropped to keep the charts readable

    @property
    def n_layers(self) -> int:
        return self.patterns.shape[0]

    @property
    def n_heads(self) -> int:
        return self.patterns.shape[1]


def stack_patterns(cache: dict[str, torch.Tensor], name: HookName = cache_name) -> torch.Tensor | None:
    """``cache[name(l, "attn.pattern")]`` (1, H, T, T) for every layer l → one (L, H, T, T) tensor (``name``: the
    model's hook names, GPT's :func:`~llmviz.models.gpt.cache_name` or the encoder's).

    >>> cache = {"blocks.0.attn.pattern": torch.ones(1, 2, 3, 3), "blocks.1.attn.pattern": torch.zeros(1, 2, 3, 3)}
    >>> tuple(stack_patterns(cache).shape), stack_patterns({}) is None
    ((2, 2, 3, 3), True)
    """
    layers: list[torch.Tensor] = []
    while name(len(layers), "attn.pattern") in cache:
        layers.append(cache[name(len(layers), "attn.pattern")][0])  # (H, T, T)
    return torch.stack(layers) if layers else None


@torch.no_grad()
def attention_patterns(model: nn.Module, ids: list[int], shown: int = MAX_ATTENTION_TOKENS) -> AttentionPatterns | None:
    """One recorded forward pass of ``ids`` (cut to the context, then to ``shown`` tokens): every pattern.

    None when the model has no attention (a bigram, MLP or RNN) or no named cache.
    """
    if not hasattr(model, "run_with_cache"):
        return None
    limit = context_length(model)
    kept = list(ids)[:limit]
    visible = kept[:shown]
    if not visible:
        return None
    _, _, cache = model.run_with_cache(torch.tensor([visible], device=model_device(model)))  # type: ignore[operator]
    patterns = stack_patterns(cache)
    if patterns is None:
        return None
    return AttentionPatterns(visible, patterns, len(ids) - len(kept), len(kept) - len(visible))


def embedding_table(model: nn.Module) -> torch.Tensor | None:
    """The token-embedding table (V, C) on the CPU (a detached view, never a copy to train), or None.

    >>> from llmviz.models.gpt import GPT, GPTConfig
    >>> tuple(embedding_table(GPT(GPTConfig(vocab_size=10, context_length=4, d_model=8, n_layers=1, n_heads=2))).shape)
    (10, 8)
    """
    for name in ("tok_emb", "embed", "embedding", "token_embedding"):
        module = getattr(model, name, None)
        if isinstance(module, nn.Embedding):
            return module.weight.detach().to("cpu")
    return None


@dataclass(frozen=True)
class Neighbours:
    """The ``k`` tokens whose embedding rows point most the same way as one token's row."""

    token: int
    ids: list[int]
    cosines: list[float]


def neighbours(table: torch.Tensor, token: int, k: int = 10) -> Neighbours:
    """Nearest rows of ``table`` to row ``token`` by cosine, the token itself left out.

    >>> table = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> neighbours(table, 0, k=2).ids
    [1, 2]
    """
    found = embeddings.nearest_neighbours(table, table[token], k=k, exclude={token})
    return Neighbours(token, [i for i, _ in found], [float(s) for _, s in found])


@dataclass(frozen=True)
class Projection:
    """Rows of an embedding table projected by PCA: ``coords[r]`` is the point of token ``ids[r]``."""

    ids: list[int]
    coords: torch.Tensor  # (N, dims)
    explained: float  # share of the variance the axes keep


def project(table: torch.Tensor, ids: list[int], dims: int = 2) -> Projection:
    """PCA of the rows ``ids`` of ``table`` to ``dims`` axes."""
    coords, ratio = embeddings.pca(table[ids], dims)
    return Projection(list(ids), coords, float(ratio.sum()))


@torch.no_grad()
def input_embeddings(model: nn.Module, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(token rows (T, C), position rows (T, C))`` the model adds before block 0, or None when it has none."""
    if not hasattr(model, "run_with_cache") or not ids:
        return None
    _, _, cache = model.run_with_cache(  # type: ignore[operator]  # checked above (nn.Module attributes are dynamic)
        torch.tensor([list(ids)[: context_length(model)]], device=model_device(model))
    )
    if "embed.tok" not in cache or "embed.pos" not in cache:
        return None
    return cache["embed.tok"][0], cache["embed.pos"]


@dataclass(frozen=True)
class EncoderAttention:
    """A bidirectional encoder's (MiniLM's) attention on one sentence, with what was cut or unknown."""

    pieces: list[str]
    patterns: torch.Tensor  # (L, H, T, T)
    truncated: int  # wordpieces cut because the sentence is longer than the encoder reads
    unknown: int
    length: int  # wordpieces the encoder read (before cutting to the shown ones)


@torch.no_grad()
def encoder_attention(encoder, sentence: str, shown: int = MAX_ATTENTION_TOKENS) -> EncoderAttention:
    """MiniLM's (``llmviz.models.minilm.MiniLM``) patterns for one sentence, cut to ``shown`` wordpieces."""
    batch, cache = encoder.run_with_cache([sentence])
    stacked = stack_patterns(cache, minilm.cache_name)
    assert stacked is not None  # the encoder records every layer's pattern
    patterns = stacked[..., :shown, :shown]
    pieces = list(batch.tokens[0])
    return EncoderAttention(pieces[:shown], patterns, int(batch.truncated[0]), int(batch.unknown[0]), len(pieces))


def common_tokens(vocab_size: int, count: int = 400, first_merge: int = 256) -> list[int]:
    """Ids to project as a backdrop: a byte-level BPE's first ``count`` merges (its most common pieces),
    or the whole vocabulary when it is smaller than the 256 bytes plus ``count``.

    >>> common_tokens(50257)[:2], len(common_tokens(50257)), common_tokens(30) == list(range(30))
    ([256, 257], 400, True)
    """
    if vocab_size <= first_merge + count:
        return list(range(min(vocab_size, count)))
    return list(range(first_merge, first_merge + count))


@torch.no_grad()
def recorded_pass(model: nn.Module, ids: list[int]) -> dict[str, torch.Tensor]:
    """The named cache of one forward pass of ``ids`` (the last ``context`` tokens), on the CPU."""
    kept = list(ids)[-context_length(model) :]
    _, _, cache = model.run_with_cache(torch.tensor([kept], device=model_device(model)))  # type: ignore[operator]
    return cache


def dropped_characters(tokenizer, text: str) -> list[str]:
    """The characters of ``text`` that :func:`llmviz.tokenizers.ids.encode` drops: those a character vocabulary
    lacks, sorted. Byte-level and word tokenizers drop nothing (a word they lack becomes ``[UNK]``, which is
    still a token).

    >>> from llmviz.tokenizers.char_word import CharTokenizer
    >>> dropped_characters(CharTokenizer.train("abc"), "abzy a")
    [' ', 'y', 'z']
    """
    from llmviz.tokenizers.char_word import CharTokenizer

    return tokenizer.unknown_characters(text) if isinstance(tokenizer, CharTokenizer) else []
