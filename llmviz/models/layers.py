"""Building blocks written out so a page can show them: LayerNorm, RMSNorm, GELU (tanh or exact), SiLU, RoPE.

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
    """Make every :class:`Dropout` in ``model`` draw its masks from ``generator`` (None: torch's global one, through
    ``F.dropout``; the GPT's attention then takes the fused kernel with dropout too: what a run that owns its process
    does, :meth:`llmviz.training.trainer.Trainer.claim_process`)."""
    for module in model.modules():
        if isinstance(module, Dropout):
            module.generator = generator


def draws_dropout(model: nn.Module) -> bool:
    """Whether a training step of ``model`` draws random numbers: a dropout layer (llmviz's or torch's) or an
    attention's fused dropout with p > 0. Without one, a run that owns its process has no stream to lend the device's
    generator (:meth:`llmviz.training.trainer.Trainer.claim_process`).

    >>> draws_dropout(nn.Sequential(nn.Linear(2, 2), Dropout(0.0))), draws_dropout(nn.Sequential(nn.Dropout(0.1)))
    (False, True)
    """
    for module in model.modules():
        p = module.p if isinstance(module, (Dropout, nn.Dropout)) else getattr(module, "dropout", None)
        if isinstance(p, float) and p > 0.0:
            return True
    return False


class LayerNorm(nn.Module):
    """y = scale · (x − mean) / sqrt(var + eps) + shift, over the last axis (biased variance).

    ``bias=False`` leaves the shift out (y = scale · normalised), as some models do.
    """

    def __init__(self, width: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(width))
        self.shift = nn.Parameter(torch.zeros(width)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.scale, self.shift, self.eps)

    def steps(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """The formula one step at a time: mean, variance, normalised, output."""
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        variance = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
        normalised = (x - mean) / torch.sqrt(variance + self.eps)  # (..., width)
        output = self.scale * normalised if self.shift is None else self.scale * normalised + self.shift
        return {"mean": mean, "variance": variance, "normalised": normalised, "output": output}


class RMSNorm(nn.Module):
    """y = scale · x / sqrt(mean(x²) + eps), over the last axis (Zhang & Sennrich, 2019; Llama, Qwen).

    LayerNorm without the mean: nothing is subtracted and nothing is shifted, so it costs one
    reduction instead of two and has half the parameters.

    >>> norm = RMSNorm(2)
    >>> norm(torch.tensor([3.0, 4.0])).round(decimals=4)  # RMS = sqrt((9 + 16) / 2) = 3.5355
    tensor([0.8485, 1.1314], grad_fn=<RoundBackward1>)
    """

    def __init__(self, width: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.scale, self.eps)

    def steps(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """The formula one step at a time: mean square, RMS, normalised, output."""
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        rms = torch.sqrt(mean_square + self.eps)  # (..., 1)
        normalised = x / rms  # (..., width)
        return {"mean_square": mean_square, "rms": rms, "normalised": normalised, "output": self.scale * normalised}


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh approximation (GPT-2): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).

    >>> round(float(gelu_tanh(torch.tensor(1.0))), 4)
    0.8412
    """
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gelu_exact(x: torch.Tensor) -> torch.Tensor:
    """GELU as defined (Hendrycks & Gimpel, 2016): x·Φ(x) = 0.5·x·(1 + erf(x/√2)), Φ the normal distribution's CDF.

    >>> round(float(gelu_exact(torch.tensor(1.0))), 4)
    0.8413
    """
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


class GELU(nn.Module):
    """GELU in GPT-2's tanh approximation (``form="tanh"``) or exact (``form="exact"``: x·Φ(x), what nanoGPT's
    ``nn.GELU()`` and BERT compute); :meth:`explicit` writes the formula out.

    The two differ by less than 0.001 anywhere, but they are different functions (a checkpoint trained with one is
    run with the same one). On the CPU PyTorch's tanh kernel costs about 2.3 times the exact one (forward and
    backward): the GELU of a small GPT's MLP is then a few per cent of its training step.

    >>> GELU("exact")(torch.tensor([1.0])), GELU()(torch.tensor([1.0]))
    (tensor([0.8413]), tensor([0.8412]))
    """

    def __init__(self, form: str = "tanh"):
        super().__init__()
        self.form = form
        self.approximate = "tanh" if form == "tanh" else "none"  # F.gelu's name for each form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate=self.approximate)

    def explicit(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_tanh(x) if self.form == "tanh" else gelu_exact(x)

    def extra_repr(self) -> str:
        return f"form={self.form!r}"


def silu(x: torch.Tensor) -> torch.Tensor:
    """SiLU (swish), the gate of SwiGLU: x · sigmoid(x).

    >>> round(float(silu(torch.tensor(1.0))), 4)
    0.7311
    """
    return x * torch.sigmoid(x)


# ---------------------------------------------------------------------------- positions


def sinusoidal_positions(positions: torch.Tensor, width: int) -> torch.Tensor:
    """The fixed position vectors of the original Transformer (Vaswani et al., 2017), (T, width):
    PE[p, 2i] = sin(p / 10000^(2i/width)), PE[p, 2i+1] = cos(p / 10000^(2i/width)).

    >>> sinusoidal_positions(torch.tensor([0, 1]), 4).round(decimals=4)
    tensor([[0.0000, 1.0000, 0.0000, 1.0000],
            [0.8415, 0.5403, 0.0100, 1.0000]])
    """
    frequencies = 1.0 / (10000.0 ** (torch.arange(0, width, 2, dtype=torch.float32, device=positions.device) / width))
    angles = positions.float()[:, None] * frequencies[None, :]  # (T, width/2)
    table = torch.zeros(len(positions), width, device=positions.device)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : width // 2])
    return table  # (T, width)


def rope_frequencies(head_dim: int, theta: float = 10000.0, device=None) -> torch.Tensor:
    """RoPE's angle per position for each pair of dimensions: θ^(−2i/head_dim), i = 0 … head_dim/2 − 1.

    >>> rope_frequencies(4, theta=100.0)
    tensor([1.0000, 0.1000])
    """
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim))


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every rotation angle, (T, head_dim) each, laid out as Llama's rotary embedding
    lays them out: dimension i is paired with dimension i + head_dim/2 and both turn by the angle
    position · θ^(−2i/head_dim) (Su et al., 2021, "RoFormer")."""
    angles = positions.float()[:, None] * rope_frequencies(head_dim, theta, positions.device)[None, :]  # (T, hd/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, hd)
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) → (−x2, x1) on the two halves of the last axis: a quarter turn of every pair."""
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate every pair (x_i, x_{i+hd/2}) of a (B, H, T, hd) query or key by its position's angle.

    >>> cos, sin = rope_cos_sin(torch.tensor([1]), 2, theta=10000.0)  # one pair, angle 1 radian
    >>> apply_rope(torch.tensor([[[[1.0, 0.0]]]]), cos, sin).round(decimals=4)  # (cos 1, sin 1)
    tensor([[[[0.5403, 0.8415]]]])
    """
    return x * cos + rotate_half(x) * sin  # (B, H, T, hd)
