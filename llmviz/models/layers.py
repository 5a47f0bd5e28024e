"""Building blocks written out so a page can show them: LayerNorm, GELU, the MLP.

Each has a fast path (PyTorch's fused kernel) and a step-by-step path with the textbook
formula; the tests check they agree.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


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
    """GELU in GPT-2's tanh approximation; :meth:`explicit` writes the formula out."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")

    @staticmethod
    def explicit(x: torch.Tensor) -> torch.Tensor:
        return gelu_tanh(x)
