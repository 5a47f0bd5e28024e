"""LoRA: low-rank adapters on a frozen GPT (Hu et al., 2021, "LoRA: Low-Rank Adaptation of Large Language Models").

A frozen weight ``W`` (d_out × d_in) gets a trainable update of rank at most r:

    y = x Wᵀ + b + (α / r) · x Aᵀ Bᵀ          A: (r, d_in), B: (d_out, r), ΔW = (α / r) · B A

``B`` starts at zero, so the adapted model starts exactly where the pretrained one is. Adapters are
added by *swapping* ``nn.Linear`` modules by name (:func:`add_adapters`): the model's own code is
unchanged. The GPT keeps W_Q, W_K and W_V side by side in one ``attn.qkv`` matrix, so adapting only
``q`` adapts the first ``d_model`` output rows of that matrix (a row *slice*).

>>> from llmviz.models.gpt import GPT
>>> from llmviz.models.presets import PRESETS
>>> model = GPT(PRESETS["gpt-nano"])
>>> names = add_adapters(model, LoRAConfig(rank=2, alpha=4, targets=("q", "v")))
>>> names[0], trainable_parameters(model)  # 2 layers × (q, v) × r·(d_in + d_out) = 2 · 2 · 2 · (32 + 32)
('blocks.0.attn.qkv', 512)
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from typing import TypeVar, cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT, MLP, GPTConfig
from llmviz.training.trainer import Trainer, learning_rate

TARGETS = ("q", "k", "v", "proj", "mlp")
TARGET_TITLES = {
    "q": "attention W_Q",
    "k": "attention W_K",
    "v": "attention W_V",
    "proj": "attention output W_O",
    "mlp": "MLP (both layers)",
}


def target_title(target: str, config: GPTConfig) -> str:
    """What ``target`` adapts in a model of ``config``: a SwiGLU MLP has three matrices, and LoRA here adapts two.

    >>> from llmviz.models.presets import PRESETS
    >>> target_title("mlp", PRESETS["gpt-mini"]), target_title("mlp", PRESETS["llama-style"])
    ('MLP (both layers)', 'MLP (up and down; not the SwiGLU gate)')
    """
    if target == "mlp" and config.mlp_kind == "swiglu":
        return "MLP (up and down; not the SwiGLU gate)"
    return TARGET_TITLES[target]


ADAMW_STATES = 2  # AdamW keeps two floats per trained parameter: the running mean and the running square
FLOAT32_BYTES = 4


@dataclass(frozen=True)
class LoRAConfig:
    """Which matrices get an adapter, of which rank, with which scale α (the update is scaled by α / r)."""

    rank: int = 4
    alpha: float = 8.0
    targets: tuple[str, ...] = ("q", "v")

    def __post_init__(self):
        rank_ok = isinstance(self.rank, int) and not isinstance(self.rank, bool) and self.rank >= 1
        alpha_ok = isinstance(self.alpha, (int, float)) and math.isfinite(self.alpha) and self.alpha > 0
        targets_ok = bool(self.targets) and all(t in TARGETS for t in self.targets)
        checks = [
            (rank_ok, f"the rank must be a whole number of at least 1 (got {self.rank!r})"),
            (alpha_ok, f"alpha must be a positive number (got {self.alpha!r})"),
            (targets_ok, f"targets must be some of {', '.join(TARGETS)} (got {', '.join(self.targets) or 'none'})"),
        ]
        problems = [problem for ok, problem in checks if not ok]
        if problems:
            raise ConfigError("This LoRA configuration cannot work: " + "; ".join(problems) + ".")
        object.__setattr__(self, "targets", tuple(t for t in TARGETS if t in self.targets))  # a canonical order

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus low-rank updates on some of its output rows.

    ``slices`` are ``(start, stop)`` row ranges of the weight that get their own ``A`` and ``B``
    (the whole matrix by default). ``weight`` is the merged matrix ``W + ΔW``, so code that reads
    ``.weight`` directly (the GPT's recorded attention path) sees the adapted model too.
    """

    def __init__(
        self,
        base: nn.Linear,
        rank: int,
        alpha: float,
        slices: list[tuple[int, int]] | None = None,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        self.base = base
        for parameter in base.parameters():
            parameter.requires_grad_(False)
        self.rank, self.alpha, self.scaling = rank, alpha, alpha / rank
        self.slices = [tuple(s) for s in (slices or [(0, base.out_features)])]
        self.lora_A = nn.ParameterList()
        self.lora_B = nn.ParameterList()
        bound = 1 / math.sqrt(base.in_features)  # kaiming_uniform_(a=√5), as nn.Linear and peft initialise A
        for start, stop in self.slices:
            a = torch.empty(rank, base.in_features).uniform_(-bound, bound, generator=generator)  # on the CPU
            self.lora_A.append(nn.Parameter(a.to(base.weight.device)))  # (r, d_in)
            self.lora_B.append(nn.Parameter(torch.zeros(stop - start, rank, device=base.weight.device)))  # (d_out_s, r)

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base.bias

    def _rows(self, pieces: list[torch.Tensor], total: int) -> torch.Tensor:
        """Put each slice's rows (last dimension) in place, zeros in between."""
        parts, cursor = [], 0
        for (start, stop), piece in zip(self.slices, pieces):
            if start > cursor:
                parts.append(piece.new_zeros(*piece.shape[:-1], start - cursor))
            parts.append(piece)
            cursor = stop
        if cursor < total:
            parts.append(pieces[0].new_zeros(*pieces[0].shape[:-1], total - cursor))
        return torch.cat(parts, dim=-1)

    def delta_weight(self) -> torch.Tensor:
        """ΔW = (α / r) · B A on each slice, zeros elsewhere: (d_out, d_in)."""
        pieces = [(self.scaling * (b @ a)).T for a, b in zip(self.lora_A, self.lora_B)]  # (d_in, d_out_s)
        return self._rows(pieces, self.out_features).T  # (d_out, d_in)

    @property
    def weight(self) -> torch.Tensor:
        return self.base.weight + self.delta_weight()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)  # (…, d_out), the frozen path
        # x Aᵀ is (…, r), then Bᵀ gives (…, d_out_s): the d_out × d_in update is never formed
        pieces = [self.scaling * F.linear(F.linear(x, a), b) for a, b in zip(self.lora_A, self.lora_B)]
        return y + self._rows(pieces, self.out_features)

    def merged(self) -> nn.Linear:
        """A plain ``nn.Linear`` with W + ΔW: the same outputs, no adapter left."""
        linear = nn.Linear(
            self.in_features, self.out_features, bias=self.base.bias is not None, device=self.base.weight.device
        )
        with torch.no_grad():
            linear.weight.copy_(self.weight)
            if self.base.bias is not None:
                linear.bias.copy_(self.base.bias)
        return linear

    def extra_repr(self) -> str:
        return f"rank={self.rank}, alpha={self.alpha:g}, slices={self.slices}"


def target_modules(model: nn.Module, targets: tuple[str, ...]) -> dict[str, list[tuple[int, int]]]:
    """Module name → the row slices to adapt, for the chosen targets.

    >>> from llmviz.models.presets import PRESETS
    >>> target_modules(GPT(PRESETS["gpt-nano"]), ("k", "mlp"))["blocks.1.attn.qkv"]
    [(32, 64)]
    """
    if not isinstance(model, GPT):
        raise ConfigError("LoRA here adapts the GPT's linear layers: pick a GPT (the shipped one, GPT-2 or a GPT run).")
    d = model.config.d_model
    kv = model.config.kv_heads * model.config.head_dim  # d, or less with grouped-query attention
    rows = {"q": (0, d), "k": (d, d + kv), "v": (d + kv, d + 2 * kv)}
    chosen: dict[str, list[tuple[int, int]]] = {}
    for layer, block in enumerate(model.blocks):
        prefix = f"blocks.{layer}"
        qkv = [rows[t] for t in ("q", "k", "v") if t in targets]
        if qkv:
            chosen[f"{prefix}.attn.qkv"] = qkv
        if "proj" in targets:
            chosen[f"{prefix}.attn.proj"] = [(0, d)]
        if "mlp" in targets and block.mlp is not None:
            if not isinstance(block.mlp, MLP):
                raise ConfigError(
                    "LoRA here adapts a dense MLP; this model's blocks hold a mixture of experts: "
                    "choose attention matrices."
                )
            chosen[f"{prefix}.mlp.fc"] = [(0, block.mlp.fc.out_features)]
            chosen[f"{prefix}.mlp.proj"] = [(0, d)]
    if not chosen:
        raise ConfigError("None of the chosen matrices exist in this model (an attention-only model has no MLP).")
    return chosen


def _set_module(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, module)


def add_adapters(model: nn.Module, config: LoRAConfig, seed: int = 0) -> list[str]:
    """Freeze ``model`` and swap the chosen ``nn.Linear`` s for :class:`LoRALinear` (in place); the names swapped."""
    chosen = target_modules(model, config.targets)
    smallest = min(
        min(stop - start, cast(nn.Linear, model.get_submodule(name)).in_features)
        for name, slices in chosen.items()
        for start, stop in slices
    )
    if config.rank > smallest:  # checked before any adapter is allocated: a rank of 1e9 would fill the memory
        raise ConfigError(
            f"A LoRA rank of {config.rank:,} is more than the adapted matrices allow: a rank-r update of a "
            f"d_out × d_in matrix needs r ≤ min(d_out, d_in), and the smallest here is {smallest:,}. Choose a rank "
            f"from 1 to {smallest:,}."
        )
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    generator = torch.Generator(device="cpu").manual_seed(seed)
    for name, slices in chosen.items():
        base = model.get_submodule(name)
        if not isinstance(base, nn.Linear):
            raise ConfigError(f"{name} already has an adapter.")
        adapter = LoRALinear(base, config.rank, config.alpha, slices, generator=generator)
        _set_module(model, name, adapter)
    return list(chosen)


def adapters(model: nn.Module) -> dict[str, LoRALinear]:
    return {name: module for name, module in model.named_modules() if isinstance(module, LoRALinear)}


Model = TypeVar("Model", bound=nn.Module)


def merge_adapters(model: Model) -> Model:
    """Replace every adapter by a plain ``nn.Linear`` holding W + ΔW (in place); returns ``model``."""
    for name, adapter in adapters(model).items():
        _set_module(model, name, adapter.merged())
    return model


def merged_copy(model: Model) -> Model:
    """A plain GPT (no adapter modules) with the adapters folded into its weights."""
    return merge_adapters(copy.deepcopy(model))


def trainable_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@dataclass(frozen=True)
class AdaptedMatrix:
    """One matrix of a block that gets an adapter, with its real shape: A is (r, d_in), B is (d_out, r)."""

    title: str  # "W_Q", "W_V", "MLP fc", …
    d_in: int
    d_out: int

    def adapter_parameters(self, rank: int) -> int:
        return rank * (self.d_in + self.d_out)


def adapted_matrices(model: GPT, targets: tuple[str, ...]) -> list[AdaptedMatrix]:
    """The matrices of one block that ``targets`` adapt (every block has the same), with the model's own shapes:
    W_K and W_V have kv_heads · head_dim rows (fewer than d_model with grouped-query attention), the MLP's
    layers its own width (d_mlp, not always 4 · d_model).

    >>> from llmviz.models.presets import PRESETS
    >>> [(m.title, m.d_in, m.d_out) for m in adapted_matrices(GPT(PRESETS["llama-style"]), ("v", "mlp"))]
    [('W_V', 128, 64), ('MLP fc', 128, 344), ('MLP proj', 344, 128)]
    """
    chosen = target_modules(model, targets)
    titles = {"q": "W_Q", "k": "W_K", "v": "W_V"}
    d = model.config.d_model
    kv = model.config.kv_heads * model.config.head_dim
    starts = {0: "q", d: "k", d + kv: "v"}
    block = model.blocks[0]
    out = []
    for name, slices in chosen.items():
        if not name.startswith("blocks.0."):
            continue
        base = block.get_submodule(name.removeprefix("blocks.0."))
        if not isinstance(base, nn.Linear):
            raise ConfigError(f"{name} already has an adapter.")
        d_in = base.in_features
        if name.endswith("attn.qkv"):
            out += [AdaptedMatrix(titles[starts[start]], d_in, stop - start) for start, stop in slices]
        else:
            title = {"attn.proj": "W_O", "mlp.fc": "MLP fc", "mlp.proj": "MLP proj"}[name.removeprefix("blocks.0.")]
            out += [AdaptedMatrix(title, d_in, stop - start) for start, stop in slices]
    return out


def adapter_count(model: GPT, config: LoRAConfig) -> int:
    """Parameters the adapters add (and train): layers · Σ r·(d_in + d_out), from the model's real shapes.

    >>> from llmviz.models.presets import PRESETS
    >>> adapter_count(GPT(PRESETS["llama-style"]), LoRAConfig(rank=4, targets=("q", "v")))  # 4·4·(256 + 192)
    7168
    """
    per_layer = sum(m.adapter_parameters(config.rank) for m in adapted_matrices(model, config.targets))
    return model.config.n_layers * per_layer


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes that training needs besides the activations: weights, gradients and AdamW's two states."""

    total_parameters: int
    trained_parameters: int
    bytes_per_float: int = FLOAT32_BYTES

    @property
    def weight_bytes(self) -> int:
        return self.total_parameters * self.bytes_per_float

    @property
    def gradient_bytes(self) -> int:
        return self.trained_parameters * self.bytes_per_float

    @property
    def optimizer_bytes(self) -> int:
        return ADAMW_STATES * self.trained_parameters * self.bytes_per_float

    @property
    def total_bytes(self) -> int:
        return self.weight_bytes + self.gradient_bytes + self.optimizer_bytes


def memory_comparison(model: GPT, config: LoRAConfig) -> dict[str, TrainingMemory]:
    """Full fine-tuning vs LoRA on ``model``: parameters trained and the bytes they need.

    The adapters themselves are extra weights (counted in LoRA's weights)."""
    extra = adapter_count(model, config)
    total = model.num_parameters()
    return {"full fine-tuning": TrainingMemory(total, total), "LoRA": TrainingMemory(total + extra, extra)}


def delta_weights(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """ΔW = W_after − W_before for every matrix that changed (LoRA run: step N minus step 0)."""
    return {
        name: after[name] - before[name]
        for name in after
        if name in before and after[name].dim() == 2 and not torch.equal(after[name], before[name])
    }


def singular_values(matrix: torch.Tensor) -> torch.Tensor:
    """Singular values, largest first: a rank-r matrix has at most r that are not (numerically) zero."""
    return torch.linalg.svdvals(matrix.double()).float()


def numerical_rank(values: torch.Tensor, relative: float = 1e-5) -> int:
    """How many singular values exceed ``relative`` × the largest one.

    >>> numerical_rank(torch.tensor([3.0, 1.0, 1e-9]))
    2
    """
    if values.numel() == 0 or float(values.max()) == 0.0:
        return 0
    return int((values > relative * values.max()).sum())


# ---------------------------------------------------------------------------- a lab run


@dataclass
class LoRATrainer(Trainer):
    """Fine-tune with LoRA: the adapters train, the rest is frozen.

    ``model`` is a plain GPT that always holds the merged weights W + ΔW (what snapshots, the picker
    and checkpoints see: an ordinary GPT); ``adapted`` is the model with adapter modules that trains.
    Start it with ``initial_model`` (the pretrained GPT).
    """

    lora: LoRAConfig = field(default_factory=LoRAConfig)

    def __post_init__(self, initial_model: nn.Module | None = None):
        if initial_model is None:
            raise ConfigError("A LoRA run adapts a trained model: give it the model to start from.")
        # its own train_step below trains in float32 on every device: its config (what pages and checkpoints name)
        # says so, not what "auto" would pick on a GPU
        self.config = replace(self.config, precision="float32")
        super().__post_init__(initial_model)
        if self.group.distributed:
            raise ConfigError("LoRA runs here train in one process.")
        adapted = copy.deepcopy(self.model)
        if not isinstance(adapted, GPT):
            raise ConfigError(
                "LoRA here adapts the GPT's linear layers: pick a GPT (the shipped one, GPT-2 or a GPT run)."
            )
        self.adapted = adapted
        self.adapted_names = add_adapters(self.adapted, self.lora, seed=self.config.seed)
        self.adapted.train()
        self.train_model = self.adapted
        parameters = [p for p in self.adapted.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(parameters, lr=self.config.lr, weight_decay=0.0)
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)

    @torch.no_grad()
    def _sync(self) -> None:
        """Copy W + ΔW into the plain model."""
        for name, adapter in adapters(self.adapted).items():
            self.model.get_parameter(f"{name}.weight").copy_(adapter.weight)

    def train_step(self) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, targets = self.train_batches.sample(self.config.batch_size)
        inputs, targets = inputs.to(self.device), targets.to(self.device)
        optimizer = self.optimizer
        if optimizer is None:
            raise RuntimeError("the LoRA trainer's optimizer is made in __post_init__")
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(self.config, self.step)
        optimizer.zero_grad(set_to_none=True)
        _, loss = self.adapted(inputs, targets)
        loss.backward()
        trained = [p for p in self.adapted.parameters() if p.requires_grad]
        if self.config.grad_clip:
            grad_norm = torch.nn.utils.clip_grad_norm_(trained, self.config.grad_clip)
        else:
            grad_norm = torch.norm(torch.stack([p.grad.norm() for p in trained if p.grad is not None]))
        optimizer.step()
        self._sync()
        return loss.detach(), grad_norm.detach()  # read back by Trainer.run, with the other steps
