"""word2vec (Mikolov et al., 2013): skip-gram with negative sampling, trained on a text's words, step by step.

The Embeddings page's lab task (:mod:`llmviz.training.tasks`) trains it in a worker; the page draws its vectors.

>>> words("The cat's hat, the CAT.")
['the', "cat's", 'hat', 'the', 'cat']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import regex
import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.errors import EmbeddingError


def words(text: str) -> list[str]:
    return regex.findall(r"[\p{L}']+", text.lower())


@dataclass
class Vocabulary:
    """word2vec's vocabulary: words in order of frequency, their counts, and ``index`` (word → row)."""

    words: list[str]
    counts: list[int]

    def __post_init__(self):
        self.index = {w: i for i, w in enumerate(self.words)}


def build_vocabulary(tokens: list[str], max_size: int = 5000, min_count: int = 2) -> Vocabulary:
    counts = Counter(tokens)
    kept = [(w, c) for w, c in sorted(counts.items(), key=lambda x: (-x[1], x[0])) if c >= min_count][:max_size]
    if len(kept) < 2:
        raise EmbeddingError("The text has fewer than two words that repeat: word2vec needs more text.")
    return Vocabulary([w for w, _ in kept], [c for _, c in kept])


def skipgram_pairs(ids: list[int], window: int) -> torch.Tensor:
    """(center, context) pairs for every word and every neighbour within ``window``.

    >>> skipgram_pairs([7, 8, 9], window=1).tolist()
    [[7, 8], [8, 7], [8, 9], [9, 8]]
    """
    pairs = []
    for position, center in enumerate(ids):
        for offset in range(-window, window + 1):
            other = position + offset
            if offset and 0 <= other < len(ids):
                pairs.append((center, ids[other]))
    return torch.tensor(pairs, dtype=torch.long).view(-1, 2)


class Word2Vec(nn.Module):
    """Skip-gram with negative sampling (Mikolov et al. 2013).

    For a (center, context) pair, push σ(u_context · v_center) towards 1 and, for k words
    drawn from the unigram distribution to the power 0.75, σ(u_negative · v_center) towards 0.
    """

    def __init__(self, vocab_size: int, dim: int = 50, generator: torch.Generator | None = None):
        super().__init__()
        # empty tables (no draw from torch's global generator), then word2vec's own initialisation
        self.center = nn.Embedding(vocab_size, dim, _weight=torch.empty(vocab_size, dim))  # v: the vectors we keep
        self.context = nn.Embedding(vocab_size, dim, _weight=torch.empty(vocab_size, dim))  # u
        nn.init.uniform_(self.center.weight, -0.5 / dim, 0.5 / dim, generator=generator)
        nn.init.zeros_(self.context.weight)

    def loss(self, centers: torch.Tensor, contexts: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
        v = self.center(centers)  # (B, D)
        u_pos = self.context(contexts)  # (B, D)
        u_neg = self.context(negatives)  # (B, K, D)
        positive = F.logsigmoid((u_pos * v).sum(-1))  # (B,)
        negative = F.logsigmoid(-(u_neg @ v.unsqueeze(-1)).squeeze(-1)).sum(-1)  # (B,)
        return -(positive + negative).mean()


@dataclass
class Word2VecState:
    """One progress report of word2vec training: the step, its loss, the model and its vocabulary."""

    step: int
    loss: float
    model: Word2Vec
    vocabulary: Vocabulary


def train_word2vec(
    text: str,
    dim: int = 50,
    window: int = 2,
    negatives: int = 5,
    steps: int = 2000,
    batch_size: int = 512,
    lr: float = 0.01,
    max_vocab: int = 5000,
    min_count: int = 2,
    seed: int = 0,
) -> Iterator[Word2VecState]:
    """Yield the model after every step (a page draws it, or stops between steps)."""
    generator = torch.Generator().manual_seed(seed)  # the run's own stream: weights, batches, negatives
    tokens = words(text)
    vocabulary = build_vocabulary(tokens, max_vocab, min_count)
    ids = [vocabulary.index[w] for w in tokens if w in vocabulary.index]
    pairs = skipgram_pairs(ids, window)
    if len(pairs) == 0:
        raise EmbeddingError("No word has a neighbour within the window: use more text.")
    noise = torch.tensor(vocabulary.counts, dtype=torch.float64).pow(0.75)
    noise /= noise.sum()
    model = Word2Vec(len(vocabulary.words), dim, generator=generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(1, steps + 1):
        batch = pairs[torch.randint(len(pairs), (batch_size,), generator=generator)]
        drawn = torch.multinomial(noise, batch_size * negatives, replacement=True, generator=generator)
        loss = model.loss(batch[:, 0], batch[:, 1], drawn.view(batch_size, negatives))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        yield Word2VecState(step, loss.item(), model, vocabulary)
