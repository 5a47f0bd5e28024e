"""Building blocks written out so a page can show them: LayerNorm, GELU, the MLP.

Each has a fast path (PyTorch's fused kernel) and a step-by-step path with the textbook
formula; the tests check they agree.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Dropout(nn.Module):
    """``nn.Dropout`` whose masks come from a run's own ``generator`` when one is set.

    One server process serves every session; ``nn.Dropout`` draws from torch's global generator, which every run
    (and every rank of a data-parallel job) would share. :func:`set_dropout_generator` gives a model's dropout
    layers one stream; without one, this is exactly ``F.dropout``. Same state dict as ``nn.Dropout`` (none).

    >>> layer = Dropout(0.5)
    >>> set_dropout_generator(layer, torch.Generator().manual_seed(0))
    >>> layer(torch.ones(6)).tolist()  # kept values are scaled by 1 / (1 − p)
    [0.0, 2.0, 0.0, 0.0, 0.0, 2.0]
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = float(p)
        self.generator: torch.Generator | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.generator is None:
            return F.dropout(x, self.p, training=True)
        keep = torch.rand(x.shape, generator=self.generator, device=x.device) >= self.p  # (same shape as x)
        return x * keep / (1.0 - self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def set_dropout_generator(model: nn.Module, generator: torch.Generator | None) -> None:
    """Make every :class:`Dropout` in ``model`` draw its masks from ``generator`` (None: torch's global one)."""
    for module in model.modules():
        if isinstance(module, Dropout):
            module.generator = generator


class LayerNorm(nn.Module):
    """y = scale · (x − mean) / sqrt(var + eps) + shift, over the last axis (biased variance)."""

    def __init__(self, width: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(width))
        self.shift = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.scale, self.shift, self.eps)

    def steps(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """The formula one step at a time: mean, variance, normalised, output."""
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        variance = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
        normalised = (x - mean) / torch.sqrt(variance + self.eps)  # (..., width)
        return {"mean": mean, "variance": variance, "normalised": normalised,
                "output": self.scale * normalised + self.shift}


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh approximation (GPT-2): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).

    >>> round(float(gelu_tanh(torch.tensor(1.0))), 4)
    0.8412
    """
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class GELU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")

    @staticmethod
    def explicit(x: torch.Tensor) -> torch.Tensor:
        return gelu_tanh(x)
