"""Character-level language models, the ladder of Karpathy's makemore, smallest first.

Every model maps ``idx (B, T)`` to ``logits (B, T, V)``: one next-character prediction at
every position, from the characters up to it. ``forward(idx, targets=None, cache=None)``
returns ``(logits, loss)`` with the same named cache as the GPT. Models that look at a fixed
window of earlier characters pad the left edge with id 0, the boundary token (the newline
in the names corpus, makemore's '.').

    counts bigram   P(next | current) = (N[current, next] + smoothing) / row sum
    neural bigram   logits = onehot(current) @ W              (W: V × V, learned)
    MLP             Bengio et al. 2003: embed n previous chars, concatenate, tanh layer
    WaveNet         the same window fused two at a time in a tree (van den Oord et al. 2016)
    RNN             h_t = tanh(x_t W_xh + h_{t-1} W_hh + b)
    GRU             gated: update z, reset r, candidate n; h_t = (1 − z)·n + z·h_{t-1}
    Transformer     a small GPT (llmviz.models.gpt)
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.models.cache import Cache, RecordsIntermediates, record
from llmviz.models.gpt import GPT, GPTConfig


def _loss(logits: torch.Tensor, targets: torch.Tensor | None) -> torch.Tensor | None:
    if targets is None:
        return None
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)


def context_windows(idx: torch.Tensor, size: int) -> torch.Tensor:
    """For each position, the ``size`` ids ending there, left-padded with 0.

    >>> context_windows(torch.tensor([[5, 6, 7]]), 2)
    tensor([[[0, 5],
             [5, 6],
             [6, 7]]])
    """
    padded = F.pad(idx, (size - 1, 0), value=0)  # (B, T + size − 1)
    return padded.unfold(dimension=1, size=size, step=1)  # (B, T, size)


class CharModel(nn.Module, RecordsIntermediates):
    """Base of the character-level models (bigram, MLP, WaveNet, RNN, GRU, transformer): ``forward(idx, targets) ->
    (logits, loss)``, a named cache, and how much context each sees."""

    kind = "char"
    trained_by_counting = False

    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    @property
    def context_length(self) -> int:  # how many earlier characters it can see
        return 10**9


class BigramCounts(CharModel):
    """The 27×27 count table: no gradient descent, training is counting pairs."""

    trained_by_counting = True
    counts: torch.Tensor  # (V, V) buffer: how often each character followed each

    def __init__(self, vocab_size: int, smoothing: float = 1.0):
        super().__init__(vocab_size)
        self.smoothing = smoothing
        self.register_buffer("counts", torch.zeros(vocab_size, vocab_size))

    @property
    def context_length(self) -> int:
        return 1

    @torch.no_grad()
    def update_counts(self, idx: torch.Tensor, targets: torch.Tensor) -> None:
        """N[current, next] += 1 for every (current, next) pair in the batch."""
        keep = targets.reshape(-1) >= 0
        self.counts.index_put_(
            (idx.reshape(-1)[keep], targets.reshape(-1)[keep]),
            torch.ones(int(keep.sum()), device=self.counts.device),
            accumulate=True,
        )

    def probabilities(self) -> torch.Tensor:
        smoothed = self.counts + self.smoothing  # (V, V); smoothing avoids log(0) for unseen pairs
        return smoothed / smoothed.sum(dim=1, keepdim=True)

    def forward(self, idx, targets=None, cache: Cache | None = None):
        log_probs = self.probabilities().log()  # (V, V)
        logits = log_probs[idx]  # (B, T, V): a row of log-probabilities per current character
        record(cache, "bigram.counts", self.counts[idx])
        record(cache, "logits", logits)
        return logits, _loss(logits, targets)


class NeuralBigram(CharModel):
    """One weight matrix: logits = onehot(current) @ W, trained by gradient descent."""

    def __init__(self, vocab_size: int):
        super().__init__(vocab_size)
        self.W = nn.Parameter(torch.randn(vocab_size, vocab_size) * 0.01)

    @property
    def context_length(self) -> int:
        return 1

    def forward(self, idx, targets=None, cache: Cache | None = None):
        onehot = F.one_hot(idx, self.vocab_size).float()  # (B, T, V)
        record(cache, "onehot", onehot)
        logits = onehot @ self.W  # (B, T, V) = the row W[idx]
        record(cache, "logits", logits)
        return logits, _loss(logits, targets)


class MLP(CharModel):
    """Bengio-style: embed the last ``context`` characters, concatenate, one tanh layer."""

    def __init__(self, vocab_size: int, context: int = 3, embedding_dim: int = 10, hidden: int = 200):
        super().__init__(vocab_size)
        self.context = context
        self.embedding = nn.Embedding(vocab_size, embedding_dim)  # the table C
        self.hidden = nn.Linear(context * embedding_dim, hidden)
        self.output = nn.Linear(hidden, vocab_size)
        with torch.no_grad():
            self.output.weight.mul_(0.1)

    @property
    def context_length(self) -> int:
        return self.context

    def forward(self, idx, targets=None, cache: Cache | None = None):
        windows = context_windows(idx, self.context)  # (B, T, n)
        embedded = self.embedding(windows)  # (B, T, n, e)
        record(cache, "embed.tok", embedded)
        concatenated = embedded.flatten(start_dim=2)  # (B, T, n·e)
        pre = self.hidden(concatenated)  # (B, T, h)
        record(cache, "mlp.pre", pre)
        hidden = torch.tanh(pre)
        record(cache, "mlp.hidden", hidden)
        logits = self.output(hidden)  # (B, T, V)
        record(cache, "logits", logits)
        return logits, _loss(logits, targets)


class WaveNet(CharModel):
    """Hierarchical MLP: a window of 2^levels characters fused two at a time."""

    def __init__(self, vocab_size: int, levels: int = 3, embedding_dim: int = 24, hidden: int = 128):
        super().__init__(vocab_size)
        self.levels = levels
        self.context = 2**levels
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        widths = [embedding_dim] + [hidden] * levels
        self.fuse = nn.ModuleList([nn.Linear(2 * widths[i], widths[i + 1]) for i in range(levels)])
        self.norms = nn.ModuleList([nn.LayerNorm(widths[i + 1]) for i in range(levels)])
        self.output = nn.Linear(hidden, vocab_size)
        with torch.no_grad():
            self.output.weight.mul_(0.1)

    @property
    def context_length(self) -> int:
        return self.context

    def forward(self, idx, targets=None, cache: Cache | None = None):
        windows = context_windows(idx, self.context)  # (B, T, 2^L)
        x = self.embedding(windows)  # (B, T, 2^L, e)
        record(cache, "embed.tok", x)
        for level, (fuse, norm) in enumerate(zip(self.fuse, self.norms)):
            batch, tokens, groups, width = x.shape
            x = x.reshape(batch, tokens, groups // 2, 2 * width)  # neighbours side by side
            x = torch.tanh(norm(fuse(x)))  # (B, T, groups/2, h)
            record(cache, f"layers.{level}.hidden", x)
        logits = self.output(x.squeeze(2))  # (B, T, V)
        record(cache, "logits", logits)
        return logits, _loss(logits, targets)


class RNN(CharModel):
    """A vanilla (Elman) recurrent network, unrolled step by step."""

    def __init__(self, vocab_size: int, embedding_dim: int = 16, hidden: int = 64):
        super().__init__(vocab_size)
        self.hidden_size = hidden
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.input_to_hidden = nn.Linear(embedding_dim, hidden)  # W_xh, b
        self.hidden_to_hidden = nn.Linear(hidden, hidden, bias=False)  # W_hh
        self.output = nn.Linear(hidden, vocab_size)

    def step(self, x_t: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One time step: the new hidden state, and what it computed on the way (gates, for the cache)."""
        return torch.tanh(self.input_to_hidden(x_t) + self.hidden_to_hidden(h)), {}

    def forward(self, idx, targets=None, cache: Cache | None = None):
        embedded = self.embedding(idx)  # (B, T, e)
        record(cache, "embed.tok", embedded)
        h = torch.zeros(idx.shape[0], self.hidden_size, device=idx.device)  # (B, h)
        states: list[torch.Tensor] = []
        gates: dict[str, list[torch.Tensor]] = {}
        for t in range(idx.shape[1]):
            h, step_gates = self.step(embedded[:, t], h)
            states.append(h)
            for name, value in step_gates.items():
                gates.setdefault(name, []).append(value)
        for name, values in gates.items():  # what each step computed before its new state, in that order
            record(cache, name, torch.stack(values, dim=1))  # (B, T, h)
        hidden = torch.stack(states, dim=1)  # (B, T, h)
        record(cache, "rnn.hidden", hidden)
        logits = self.output(hidden)  # (B, T, V)
        record(cache, "logits", logits)
        return logits, _loss(logits, targets)


class GRU(RNN):
    """Gated recurrent unit (Cho et al. 2014), written out gate by gate."""

    def __init__(self, vocab_size: int, embedding_dim: int = 16, hidden: int = 64):
        super().__init__(vocab_size, embedding_dim, hidden)
        self.input_gates = nn.Linear(embedding_dim, 3 * hidden)  # x → update, reset, candidate
        self.hidden_gates = nn.Linear(hidden, 3 * hidden)  # h → update, reset, candidate
        del self.input_to_hidden, self.hidden_to_hidden

    def step(self, x_t, h):
        xz, xr, xn = self.input_gates(x_t).chunk(3, dim=-1)
        hz, hr, hn = self.hidden_gates(h).chunk(3, dim=-1)
        reset = torch.sigmoid(xr + hr)  # r: how much of the old state the candidate sees
        update = torch.sigmoid(xz + hz)  # z: how much of the old state to keep
        candidate = torch.tanh(xn + reset * hn)  # n
        gates = {"gru.reset_gate": reset, "gru.update_gate": update, "gru.candidate": candidate}
        return (1 - update) * candidate + update * h, gates


class CharTransformer(GPT):
    """A small GPT over characters."""

    kind = "char"
    trained_by_counting = False

    def __init__(
        self, vocab_size: int, context_length: int = 32, d_model: int = 64, n_heads: int = 4, n_layers: int = 2
    ):
        super().__init__(
            GPTConfig(
                vocab_size=vocab_size,
                context_length=context_length,
                d_model=d_model,
                n_heads=n_heads,
                n_layers=n_layers,
                dropout=0.0,
            )
        )
        self.vocab_size = vocab_size


CharModelName = Literal["bigram-counts", "bigram-neural", "mlp", "wavenet", "rnn", "gru", "transformer"]
CHAR_MODELS: dict[CharModelName, type[nn.Module]] = {
    "bigram-counts": BigramCounts,
    "bigram-neural": NeuralBigram,
    "mlp": MLP,
    "wavenet": WaveNet,
    "rnn": RNN,
    "gru": GRU,
    "transformer": CharTransformer,
}

CHAR_MODEL_TITLES = {
    "bigram-counts": "Bigram (count table)",
    "bigram-neural": "Bigram (neural)",
    "mlp": "MLP (Bengio et al.)",
    "wavenet": "WaveNet-style MLP",
    "rnn": "RNN",
    "gru": "GRU",
    "transformer": "Transformer",
}


def build_char_model(name: str, vocab_size: int, **kwargs) -> nn.Module:
    from llmviz.errors import ConfigError

    if name not in CHAR_MODELS:
        raise ConfigError(f"Unknown character-level model {name!r}; choose one of {', '.join(CHAR_MODELS)}.")
    return CHAR_MODELS[name](vocab_size, **kwargs)
