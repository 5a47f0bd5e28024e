"""Training in less memory: what a training step keeps, and how to keep less.

- **Activations** saved for the backward pass are measured exactly: every tensor autograd saves goes
  through :func:`torch.autograd.graph.saved_tensors_hooks`, and the distinct storages are added up
  (the weights themselves, also saved by linear layers, are not activations and are left out).
- **Gradient checkpointing** keeps only each block's input and recomputes the block in the backward pass
  (the inputs it keeps are counted too).
  It is switched on by changing each block's class to :class:`CheckpointedBlock` (the model's code and its
  state dict are unchanged).
- **Mixed precision**: ``torch.autocast`` runs matrix products in bfloat16 (2 bytes instead of 4), or in
  float16 (on CUDA, where it is fast) with a gradient scaler: float16's smallest numbers are far larger
  than bfloat16's, so the loss is multiplied before the backward pass (small gradients would round to
  zero) and the gradients divided back before the optimizer's step (``torch.amp.GradScaler``).
- **Sharding** (ZeRO / FSDP): with N processes, each keeps 1/N of the optimizer states (stage 1), of the
  gradients too (stage 2), and of the parameters too (stage 3, which is what FSDP does).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT, Block
from llmviz.training.trainer import StepMetrics, Trainer


class CheckpointedBlock(Block):
    """A GPT block whose forward pass, while training, saves only its input (torch.utils.checkpoint)."""

    def forward(self, x, cache=None, prefix: str = "blocks.0", past=None, rope=None, router_probs: list | None = None):
        if cache is not None or past is not None or not torch.is_grad_enabled():
            return super().forward(x, cache, prefix, past, rope, router_probs)
        for counter in _ACTIVE:  # checkpoint keeps the block's input itself, outside autograd's saved tensors
            counter.keep(x)

        def block(x):  # a mixture of experts' router probabilities come out as outputs: the backward pass runs
            probs: list = []  # this again, and must not add them to the caller's list a second time
            output, present = Block.forward(self, x, None, prefix, None, rope, probs)
            return output, present, *probs

        output, present, *probs = checkpoint(block, x, use_reentrant=False)
        if router_probs is not None:
            router_probs.extend(probs)
        return output, present


def set_checkpointing(model: GPT, on: bool) -> GPT:
    """Switch gradient checkpointing on or off for every block of ``model`` (in place)."""
    for block in model.blocks:
        block.__class__ = CheckpointedBlock if on else Block
    return model


_ACTIVE: list = []  # SavedTensors counters open now (CheckpointedBlock reports what it keeps to them)


def _storage_key(tensor: torch.Tensor) -> tuple:
    storage = tensor.untyped_storage()
    return (storage.data_ptr(), storage.nbytes(), tensor.device.type)


class SavedTensors:
    """Counts what autograd saves for the backward pass while the ``with`` block runs.

    ``bytes`` adds up distinct storages (a tensor saved twice counts once), leaving out ``exclude``
    (the weights). ``count`` is how many times a tensor was saved.

    >>> a = torch.ones(100, requires_grad=True)
    >>> with SavedTensors(exclude=[a]) as saved:
    ...     b = a.exp()     # saves its result b: 400 bytes
    ...     c = b.sin()     # saves its input, the same b: nothing new
    >>> saved.bytes, saved.count
    (400, 2)
    """

    def __init__(self, exclude=()):
        exclude = list(exclude)  # model.parameters() is a generator: read it once
        self.excluded = {_storage_key(t) for t in exclude}
        self.weights_by_shape: dict[tuple, list[torch.Tensor]] = {}  # each weight, and a matrix's transpose too
        for weight in exclude:
            for view in (weight, weight.t()) if weight.dim() == 2 else (weight,):
                self.weights_by_shape.setdefault(tuple(view.shape), []).append(view)
        self.storages: dict[tuple, int] = {}
        self.cast_weights: set[tuple] = set()  # storages of weights autocast cast to 16 bits (a subset of storages)
        self.count = 0
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def keep(self, tensor: torch.Tensor) -> None:
        key = _storage_key(tensor)
        if key not in self.excluded:
            self.storages[key] = key[1]

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self.count += 1
        self.keep(tensor)
        if tensor.dtype in (torch.bfloat16, torch.float16) and any(  # autocast's 16-bit copy of a weight
            torch.equal(tensor, weight.detach().to(tensor.dtype))
            for weight in self.weights_by_shape.get(tuple(tensor.shape), ())
        ):
            self.cast_weights.add(_storage_key(tensor))
        return tensor

    @staticmethod
    def _unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())

    @property
    def cast_weight_bytes(self) -> int:
        """Of :attr:`bytes`: the 16-bit copies of weights that autocast made and saved for the backward pass."""
        return sum(self.storages[key] for key in self.cast_weights if key in self.storages)

    def __enter__(self) -> SavedTensors:
        self._hooks.__enter__()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self)
        self._hooks.__exit__(*exc)


@dataclass(frozen=True)
class StepMeasure:
    """One training step (forward and backward) under one setting."""

    checkpointing: bool
    bf16: bool
    saved_bytes: int  # activations saved for the backward pass (distinct storages, weights excluded)
    saved_tensors: int
    loss: float
    seconds: float
    peak_cuda_bytes: int | None  # torch.cuda.max_memory_allocated, on CUDA only
    fp16: bool = False  # float16 autocast (the loss scaled for the backward pass)
    cast_weight_bytes: int = 0  # of saved_bytes: autocast's 16-bit copies of the weights, saved for backward


def _autocast(device: torch.device, bf16: bool, fp16: bool) -> contextlib.AbstractContextManager:
    if bf16 and fp16:
        raise ConfigError("Choose one precision for autocast: bf16 or fp16.")
    if bf16 or fp16:
        return torch.autocast(device.type, dtype=torch.bfloat16 if bf16 else torch.float16)
    return contextlib.nullcontext()


def measure_step(
    model: GPT,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    checkpointing: bool = False,
    bf16: bool = False,
    fp16: bool = False,
) -> StepMeasure:
    """Run one forward and backward pass of a copy of ``model`` and measure what it saved (``fp16``: the loss
    scaled by a ``GradScaler`` for the backward pass, as a float16 training step does)."""
    copied = GPT(model.config.replace(dropout=0.0))  # no dropout: the four settings see the same computation
    copied.load_state_dict(model.state_dict())
    model = set_checkpointing(copied.to(next(model.parameters()).device), checkpointing).train()
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    device = next(model.parameters()).device
    inputs, targets = inputs.to(device), targets.to(device)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    autocast = _autocast(device, bf16, fp16)
    start = time.perf_counter()
    with SavedTensors(exclude=model.parameters()) as saved:
        with autocast:
            _, loss = model(inputs, targets)
    (torch.amp.GradScaler(device.type).scale(loss) if fp16 else loss).backward()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return StepMeasure(
        checkpointing,
        bf16,
        saved.bytes,
        saved.count,
        float(loss.detach()),
        seconds,
        torch.cuda.max_memory_allocated() if cuda else None,
        fp16,
        saved.cast_weight_bytes,
    )


@dataclass
class MemoryStepMetrics(StepMetrics):
    """A memory run's step: the lab keeps its tokens/s with each curve point (``SERIES``), so the speed that
    checkpointing and mixed precision cost is drawn from the record after a restart as it was live.

    >>> MemoryStepMetrics(3, 2.0, None, 7.39, 1e-3, 950.0, 0.5, 1.2).SERIES
    ('tokens_per_s',)
    """

    SERIES: ClassVar[tuple[str, ...]] = ("tokens_per_s",)


@dataclass
class MemoryTrainer(Trainer):
    """A training run with gradient checkpointing and/or mixed precision switched on (a lab run): bf16 autocast
    (CPU or CUDA), or fp16 autocast with a gradient scaler (meant for CUDA; it runs on the CPU too, slowly).

    Checkpointing changes the blocks' class only, so snapshots and checkpoints stay an ordinary GPT's."""

    metrics_class: ClassVar[type[StepMetrics]] = MemoryStepMetrics
    checkpointing: bool = False
    bf16: bool = False
    fp16: bool = False

    def __post_init__(self, initial_model: nn.Module | None = None):
        super().__post_init__(initial_model)
        if not isinstance(self.model, GPT):
            raise ConfigError("Gradient checkpointing here works on GPT models.")
        _autocast(self.device, self.bf16, self.fp16)  # both at once is refused here, before any step
        if self.fp16 and (self.group.distributed or self.accumulation != 1):
            raise ConfigError("fp16 runs here train in one process, the whole batch at once.")
        if self.bf16 or self.fp16:  # Trainer.train_step autocasts the forward pass and, for fp16, scales the loss
            self.autocast_dtype = torch.bfloat16 if self.bf16 else torch.float16
            self.grad_scaler = torch.amp.GradScaler(self.device.type) if self.fp16 else None
        set_checkpointing(self.model, self.checkpointing)


# ---------------------------------------------------------------------------- ZeRO / FSDP arithmetic

STAGES = ("DDP (no sharding)", "ZeRO-1: optimizer states", "ZeRO-2: + gradients", "ZeRO-3 / FSDP: + parameters")


@dataclass(frozen=True)
class ShardBytes:
    """Bytes one process holds for parameters, gradients and AdamW states."""

    stage: str
    parameters: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer


def sharding(
    parameter_count: int, processes: int, bytes_per_value: int = 4, optimizer_values: int = 2
) -> list[ShardBytes]:
    """Per process, for each stage (training in float32 with AdamW: 4 + 4 + 2·4 = 16 bytes per parameter unsharded).

    >>> [round(s.total) for s in sharding(1000, 4)]   # 16000, then 4000 + 4000 + 8000/4, 4000 + 1000 + 2000, 16000/4
    [16000, 10000, 7000, 4000]
    """
    if processes < 1:
        raise ConfigError("There must be at least one process.")
    p = parameter_count * bytes_per_value
    o = parameter_count * bytes_per_value * optimizer_values
    n = processes
    return [
        ShardBytes(STAGES[0], p, p, o),
        ShardBytes(STAGES[1], p, p, o / n),
        ShardBytes(STAGES[2], p, p / n, o / n),
        ShardBytes(STAGES[3], p / n, p / n, o / n),
    ]


def rough_seconds(seconds: float) -> str:
    """A wall-clock time as precise as one measurement on a shared machine is: two significant digits, in ms below
    a second.

    >>> rough_seconds(0.012345), rough_seconds(0.1789), rough_seconds(2.345), rough_seconds(0.0004)
    ('12 ms', '180 ms', '2.3 s', '0.4 ms')
    """
    if seconds >= 1:
        return f"{float(f'{seconds:.2g}'):g} s"
    milliseconds = float(f"{seconds * 1000:.2g}")
    return f"{milliseconds:g} ms"


def human_bytes(count: float) -> str:
    """
    >>> human_bytes(1536), human_bytes(3 * 2**30)
    ('1.5 KiB', '3.00 GiB')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.2f} {unit}" if unit == "GiB" else f"{count / size:.1f} {unit}"
    return f"{math.floor(count)} B"
