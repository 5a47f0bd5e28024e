"""A run's data: the text tokenized once and split into training and validation ids (:class:`Dataset`), and the
random batches of windows drawn from one split (:class:`Batches`).

>>> dataset = prepare_data("hello world\\n" * 20, TrainConfig(model="mlp", tokenizer="char", context_length=8))
>>> len(dataset.train_ids) + len(dataset.val_ids), dataset.vocab_size
(240, 9)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from llmviz.errors import ConfigError
from llmviz.tokenizers.base import Tokenizer
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.tokenizers.char_word import CharTokenizer
from llmviz.training.config import TrainConfig


@dataclass
class Dataset:
    """A text tokenized once and split into training and validation ids (with the tokenizer that made them)."""

    tokenizer: Tokenizer
    train_ids: torch.Tensor
    val_ids: torch.Tensor

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size


def build_tokenizer(text: str, kind: str, vocab_size: int = 512, progress=None) -> Tokenizer:
    if kind == "char":
        return CharTokenizer.train(text)
    return BPETokenizer.train(text, vocab_size=vocab_size, progress=progress)


BPE_SAMPLE_CHARS = 1_000_000  #: the characters a page's run trains its BPE tokenizer on (the first ones)


def vocab_bound(text: str, config: TrainConfig, sample: int = BPE_SAMPLE_CHARS) -> int:
    """The vocabulary a run on ``text`` will have, known without tokenizing it (for its memory estimate): a BPE's
    size, or the distinct characters of the text's first ``sample`` characters (plus one for any later new one).

    >>> vocab_bound("abcab", TrainConfig(model="mlp", tokenizer="char"))
    4
    """
    if config.tokenizer == "bpe":
        return config.bpe_vocab_size
    return len(set(text[:sample])) + 1


def prepare_data(text: str, config: TrainConfig, tokenizer: Tokenizer | None = None, progress=None) -> Dataset:
    """Tokenize ``text`` and split it: the first 1 − val_fraction for training, the rest for validation."""
    if not text or not text.strip():
        raise ConfigError("There is no text to train on: pick a corpus or upload a file with some text in it.")
    tokenizer = tokenizer or build_tokenizer(text, config.tokenizer, config.bpe_vocab_size, progress)
    ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    split = int(len(ids) * (1 - config.val_fraction))
    train_ids, val_ids = ids[:split], ids[split:]
    needed = config.context_length + 1
    if len(train_ids) < needed or len(val_ids) < needed:
        largest = min(len(train_ids), len(val_ids)) - 1  # the longest context whose window fits in both parts
        remedy = (
            f"Use a longer text or a context size of at most {largest}."
            if largest >= 1
            else f"Use a longer text: even a context of 1 token needs 2 tokens in each part, about "
            f"{math.ceil(2 / config.val_fraction):,} tokens in all."
        )
        raise ConfigError(
            f"The text gives {len(ids):,} token{'s' if len(ids) != 1 else ''}: {len(train_ids):,} for training and "
            f"{len(val_ids):,} for validation, but one window needs context size + 1 = {needed} tokens in each "
            f"part. {remedy}"
        )
    return Dataset(tokenizer, train_ids, val_ids)


class Batches:
    """Random batches of windows (``context_length`` tokens, starting every ``stride``) from one split.

    The starts are never listed (a 20 MB text would need 160 MB for them at stride 1): window ``i`` starts at
    ``i · stride``, and a batch draws ``i`` uniformly among the ``⌈(len(ids) − context_length) / stride⌉`` windows
    whose target (shifted by one) still fits.

    >>> batches = Batches(torch.arange(10), context_length=4, stride=3, generator=torch.Generator().manual_seed(0))
    >>> batches.count, batches.starts.tolist()
    (2, [0, 3])
    >>> inputs, targets = batches.sample(3)  # windows 0, 1, 1; each target row is its input shifted by one
    >>> inputs.tolist(), targets[:, -1].tolist()
    ([[0, 1, 2, 3], [3, 4, 5, 6], [3, 4, 5, 6]], [4, 7, 7])
    """

    def __init__(self, ids: torch.Tensor, context_length: int, stride: int, generator: torch.Generator):
        self.ids = ids
        self.context_length = context_length
        self.stride = stride
        self.count = -(-(len(ids) - context_length) // stride)  # windows whose last target is inside ids
        self.generator = generator

    @property
    def starts(self) -> torch.Tensor:
        """Every window's first position, (count,)."""
        return torch.arange(self.count) * self.stride

    def sample(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        choice = torch.randint(self.count, (batch_size,), generator=self.generator)  # (B,)
        offsets = torch.arange(self.context_length)  # (T,)
        positions = (choice * self.stride)[:, None] + offsets  # (B, T)
        return self.ids[positions], self.ids[positions + 1]  # inputs, targets shifted by one


# ---------------------------------------------------------------------------- models and optimizers
