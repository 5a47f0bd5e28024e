"""Quantization: store weights as 8- or 4-bit integers plus a scale (and a zero point).

    q = clamp(round(w / s) + z, q_min, q_max)          ŵ = (q − z) · s

- **symmetric**: z = 0, signed integers, s = max|w| / q_max (int8: q in [−127, 127]; int4: [−7, 7]);
- **zero-point** (asymmetric): unsigned integers in [0, 2^bits − 1], s = (max − min) / (2^bits − 1) and
  z = round(−min / s), so the range [min, max] (stretched to include 0) uses every level;
- **per tensor**: one (s, z) for the whole matrix; **per channel**: one per output row.

Rounding is to the nearest integer, ties to even (as ``torch.quantize_per_tensor``).

>>> w = torch.tensor([[-1.75, 0.625, 0.375, 1.0]])
>>> spec = QuantSpec(bits=4, per_channel=False, symmetric=True)
>>> s, z = quantization_parameters(w, spec)
>>> float(s), quantize(w, s, z, spec).tolist()   # s = 1.75 / 7: −7, 2.5 → 2 and 1.5 → 2 (ties to even), 4
(0.25, [[-7, 2, 2, 4]])
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT
from llmviz.training.trainer import Trainer

BITS = (8, 4)


@dataclass(frozen=True)
class QuantSpec:
    """How weights are stored: ``bits`` (8 or 4), one scale per tensor or per output channel, with or without a zero
    point."""

    bits: int = 8
    per_channel: bool = True
    symmetric: bool = True

    def __post_init__(self):
        if self.bits not in BITS:
            raise ConfigError(f"Quantization here stores 8 or 4 bits per weight (got {self.bits!r}).")

    @property
    def qmin(self) -> int:
        return -(2 ** (self.bits - 1) - 1) if self.symmetric else 0

    @property
    def qmax(self) -> int:
        return 2 ** (self.bits - 1) - 1 if self.symmetric else 2**self.bits - 1

    @property
    def levels(self) -> int:
        return self.qmax - self.qmin + 1

    @property
    def title(self) -> str:
        return (
            f"int{self.bits}, {'per channel' if self.per_channel else 'per tensor'}, "
            f"{'symmetric' if self.symmetric else 'zero-point'}"
        )


def quantization_parameters(weight: torch.Tensor, spec: QuantSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """``(scale, zero_point)``: scalars per tensor, or one per row (dimension 0) per channel."""
    w = weight.detach().float()
    if spec.per_channel:
        low, high = w.amin(dim=tuple(range(1, w.dim()))), w.amax(dim=tuple(range(1, w.dim())))  # (rows,)
    else:
        low, high = w.min(), w.max()
    low, high = torch.clamp(low, max=0.0), torch.clamp(high, min=0.0)  # the range always holds 0
    tiny = torch.finfo(torch.float32).tiny
    if spec.symmetric:
        scale = torch.clamp(torch.maximum(-low, high) / spec.qmax, min=tiny)
        zero_point = torch.zeros_like(scale, dtype=torch.long)
    else:
        scale = torch.clamp((high - low) / (spec.qmax - spec.qmin), min=tiny)
        zero_point = torch.clamp(spec.qmin - torch.round(low / scale), spec.qmin, spec.qmax).long()
    return scale, zero_point


def _broadcast(values: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return values.reshape(-1, *([1] * (weight.dim() - 1))) if values.dim() == 1 else values


def quantize(weight: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    """The integers q (int64 tensor) for ``weight``."""
    s, z = _broadcast(scale, weight), _broadcast(zero_point, weight)
    return torch.clamp(torch.round(weight.detach().float() / s) + z, spec.qmin, spec.qmax).long()


def dequantize(q: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor) -> torch.Tensor:
    """ŵ = (q − z) · s."""
    return (q - _broadcast(zero_point, q)).float() * _broadcast(scale, q)


def round_trip(weight: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    """ŵ: the weight after quantizing and dequantizing it."""
    scale, zero_point = quantization_parameters(weight, spec)
    return dequantize(quantize(weight, scale, zero_point, spec), scale, zero_point)


def stored_bytes(shape: tuple[int, ...], spec: QuantSpec) -> int:
    """Bytes to store one quantized matrix: the integers packed (two int4 in a byte), a float32 scale per
    tensor or row, and a one-byte zero point each when there is one.

    >>> stored_bytes((768, 768), QuantSpec(bits=4, per_channel=True, symmetric=False))  # 294,912 + 768·(4 + 1)
    298752
    """
    count = math.prod(shape)
    groups = shape[0] if spec.per_channel else 1
    return math.ceil(count * spec.bits / 8) + groups * 4 + (0 if spec.symmetric else groups)


def quantized_names(model: nn.Module) -> list[str]:
    """The weights that are quantized: every matrix of a linear layer or an embedding (biases and LayerNorm
    stay float32, as in weight-only quantization); a tied matrix once."""
    names, seen = [], set()
    for module_name, module in model.named_modules():
        if isinstance(module, (nn.Linear, nn.Embedding)) and id(module.weight) not in seen:
            seen.add(id(module.weight))
            names.append(f"{module_name}.weight")
    return names


@dataclass(frozen=True)
class LayerError:
    """One matrix: its shape, bytes before/after and how far ŵ is from w."""

    name: str
    shape: tuple[int, ...]
    float_bytes: int
    quantized_bytes: int
    rms_error: float  # √mean((ŵ − w)²)
    max_error: float  # max |ŵ − w|
    relative_error: float  # ‖ŵ − w‖ / ‖w‖


@dataclass
class QuantizedModel:
    """A float copy of the model holding ŵ (so it runs anywhere), with the per-layer account."""

    model: nn.Module
    spec: QuantSpec
    layers: list[LayerError] = field(default_factory=list)
    other_float_bytes: int = 0  # biases, LayerNorm: kept in float32

    @property
    def float_bytes(self) -> int:
        return sum(layer.float_bytes for layer in self.layers) + self.other_float_bytes

    @property
    def total_bytes(self) -> int:
        return sum(layer.quantized_bytes for layer in self.layers) + self.other_float_bytes


@torch.no_grad()
def quantize_model(model: nn.Module, spec: QuantSpec) -> QuantizedModel:
    """Post-training quantization of every weight matrix (the original model is not changed)."""
    copied = copy.deepcopy(model)
    names = set(quantized_names(copied))
    parameters = dict(copied.named_parameters())  # shared tensors listed once
    result = QuantizedModel(copied, spec)
    for name, parameter in parameters.items():
        if name not in names:
            result.other_float_bytes += parameter.numel() * 4
            continue
        original = parameter.detach().clone()
        restored = round_trip(original, spec)
        parameter.copy_(restored)
        difference = restored - original
        result.layers.append(
            LayerError(
                name=name,
                shape=tuple(original.shape),
                float_bytes=original.numel() * 4,
                quantized_bytes=stored_bytes(tuple(original.shape), spec),
                rms_error=float(difference.pow(2).mean().sqrt()),
                max_error=float(difference.abs().max()),
                relative_error=float(difference.norm() / original.norm().clamp(min=1e-30)),
            )
        )
    copied.eval()
    return result


# ---------------------------------------------------------------------------- before and after


@dataclass(frozen=True)
class Comparison:
    """The float model and its quantized copy on the same held-out tokens."""

    loss_before: float
    loss_after: float
    kl: float  # mean over positions of KL(p_float ‖ p_quantized), in nats
    top1_agreement: float  # share of positions whose most likely next token is the same
    tokens: int

    @property
    def perplexity_before(self) -> float:
        return math.exp(self.loss_before)

    @property
    def perplexity_after(self) -> float:
        return math.exp(self.loss_after)


def held_out_windows(ids: list[int] | torch.Tensor, context: int, max_windows: int = 8) -> torch.Tensor:
    """Consecutive windows of ``context + 1`` tokens (inputs and their next tokens), at most ``max_windows``."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    count = min(max_windows, (len(ids) - 1) // context)
    if count < 1:
        raise ConfigError(f"The held-out text has {len(ids)} tokens: at least {context + 1} are needed.")
    return ids[: count * context + 1].unfold(0, context + 1, context)[:count]  # (N, context + 1)


@torch.no_grad()
def compare(before: nn.Module, after: nn.Module, windows: torch.Tensor) -> Comparison:
    """Loss, perplexity, KL divergence and top-1 agreement of two models on the same windows."""
    inputs, targets = windows[:, :-1], windows[:, 1:]  # (N, T)
    logits_before, _ = before(inputs)  # (N, T, V)
    logits_after, _ = after(inputs)
    vocab = logits_before.size(-1)
    loss_before = F.cross_entropy(logits_before.reshape(-1, vocab), targets.reshape(-1))
    loss_after = F.cross_entropy(logits_after.reshape(-1, vocab), targets.reshape(-1))
    log_p, log_q = F.log_softmax(logits_before, -1), F.log_softmax(logits_after, -1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1).mean()
    agreement = (logits_before.argmax(-1) == logits_after.argmax(-1)).float().mean()
    return Comparison(float(loss_before), float(loss_after), float(kl), float(agreement), targets.numel())


# ---------------------------------------------------------------------------- quantization-aware training


class FakeQuantLinear(nn.Linear):
    """An ``nn.Linear`` whose forward pass uses ŵ (quantized, then dequantized) while its float weight trains.

    The gradient goes straight through the rounding (the straight-through estimator): ∂ŵ/∂w is taken as 1.
    Its state dict is an ordinary Linear's, so the run's snapshots load into a plain GPT.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, spec: QuantSpec | None = None, device=None
    ):
        super().__init__(in_features, out_features, bias=bias, device=device)
        self.spec = spec or QuantSpec()

    def fake_weight(self) -> torch.Tensor:
        with torch.no_grad():
            restored = round_trip(self.weight, self.spec)
        return self.weight + (restored - self.weight).detach()  # forward: ŵ; backward: identity

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.fake_weight(), self.bias)

    @classmethod
    def from_linear(cls, linear: nn.Linear, spec: QuantSpec) -> FakeQuantLinear:
        fake = cls(
            linear.in_features,
            linear.out_features,
            bias=linear.bias is not None,
            spec=spec,
            device=linear.weight.device,
        )
        fake.weight = linear.weight  # the same parameters (tied heads stay tied)
        if linear.bias is not None:
            fake.bias = linear.bias
        return fake


def add_fake_quant(model: nn.Module, spec: QuantSpec) -> list[str]:
    """Swap every ``nn.Linear`` of ``model`` for a :class:`FakeQuantLinear` (in place); the names swapped."""
    swapped = []
    for name, module in list(model.named_modules()):
        if type(module) is nn.Linear:
            parent_name, _, child = name.rpartition(".")
            setattr(
                model.get_submodule(parent_name) if parent_name else model,
                child,
                FakeQuantLinear.from_linear(module, spec),
            )
            swapped.append(name)
    return swapped


def remove_fake_quant(model: nn.Module) -> nn.Module:
    """Back to plain ``nn.Linear`` s holding the float weights (in place)."""
    for name, module in list(model.named_modules()):
        if isinstance(module, FakeQuantLinear):
            plain = nn.Linear(
                module.in_features, module.out_features, bias=module.bias is not None, device=module.weight.device
            )
            plain.weight, plain.bias = module.weight, module.bias
            parent_name, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent_name) if parent_name else model, child, plain)
    return model


@dataclass
class QATTrainer(Trainer):
    """Quantization-aware training: fine-tune with every linear layer's weight fake-quantized in the forward pass.

    ``model`` is the GPT itself (its linear layers are :class:`FakeQuantLinear`, with an ordinary state dict),
    so snapshots and checkpoints hold the float weights; quantize them after training (:func:`quantize_model`)
    with the same spec to get the deployable model. Start it with ``initial_model``.
    """

    quant: QuantSpec = field(default_factory=QuantSpec)

    def __post_init__(self, initial_model: nn.Module | None = None):
        if initial_model is None:
            raise ConfigError(
                "Quantization-aware training fine-tunes a trained model: give it the model to start from."
            )
        super().__post_init__(initial_model)
        if not isinstance(self.model, GPT):
            raise ConfigError("Quantization-aware training here works on GPT models.")
        add_fake_quant(self.model, self.quant)
