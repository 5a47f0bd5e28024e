"""Training: corpus → tokenizer → train/validation windows → a generator of metrics per step.

The loop is a generator, so the Streamlit page and the CLI drive the same code and can stop
it between any two steps:

>>> config = TrainConfig(model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=3,
... eval_interval=1)
>>> trainer = Trainer.from_text("hello world\\n" * 20, config)
>>> [m.step for m in trainer.run()]
[1, 2, 3]
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import InitVar, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, cast, get_args

import torch
import torch.nn as nn

from llmviz.device import isolated_rng
from llmviz.errors import ConfigError, TrainingDiverged
from llmviz.models.charlevel import CHAR_MODELS, CharModelName, build_char_model
from llmviz.models.gpt import GPT, PRESETS, SWITCHES, PresetName
from llmviz.models.layers import set_dropout_generator
from llmviz.tokenizers.base import Tokenizer
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.tokenizers.char_word import CharTokenizer
from llmviz.training.checkpoint import (
    META_FILE,
    load_checkpoint,
    model_description,
    model_from_description,
    restore_training_state,
    save_checkpoint,
)
from llmviz.training.distributed import ProcessGroup, accumulation_steps, micro_batches

Optimizer = Literal["sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw"]
OPTIMIZERS: list[Optimizer] = list(get_args(Optimizer))
ModelName = PresetName | CharModelName  # a GPT preset or a character-level model
TokenizerKind = Literal["char", "bpe"]
Schedule = Literal["cosine", "constant"]
OPTIMIZER_TITLES = {
    "sgd": "SGD",
    "momentum": "SGD with momentum",
    "adagrad": "Adagrad",
    "rmsprop": "RMSprop",
    "adam": "Adam",
    "adamw": "AdamW",
}
MODEL_CHOICES = list(PRESETS) + list(CHAR_MODELS)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides a training run (model, tokenizer, batches, optimizer, schedule, seed, device),
    frozen and validated on creation: a bad value raises :class:`~llmviz.errors.ConfigError` saying what to change.
    Stored in every checkpoint, so a run can be resumed or reproduced from it."""

    model: ModelName = "gpt-micro"  # a GPT preset (llmviz.models.gpt.PRESETS) or a char-level model name
    tokenizer: TokenizerKind = "bpe"  # "char" or "bpe"
    bpe_vocab_size: int = 512
    context_length: int = 64
    # positions a GPT preset can read (its context_length); None = context_length. Longer: the positions past
    # context_length exist (a learned table has rows for them) but training never reaches them, so a race can be
    # measured beyond its training context (llmviz.lessons.architectures.extrapolation)
    model_context: int | None = None
    stride: int | None = None  # distance between window starts; None = context_length
    batch_size: int = 16  # windows per optimizer step, over all processes together
    micro_batch_size: int | None = None  # windows per forward pass; smaller → gradient accumulation
    steps: int = 200
    optimizer: Optimizer = "adamw"
    lr: float = 3e-3
    momentum: float = 0.9
    weight_decay: float = 0.01
    warmup_steps: int = 10
    schedule: Schedule = "cosine"  # "cosine" (to lr/10) or "constant"
    grad_clip: float | None = 1.0
    eval_interval: int = 25
    eval_batches: int = 4
    val_fraction: float = 0.1
    seed: int = 1337
    device: str = "cpu"
    dropout: float = 0.0
    d_model: int | None = None  # optional overrides of the preset's sizes
    n_layers: int | None = None
    n_heads: int | None = None
    # architecture switches that override the GPT preset's (llmviz.models.gpt.SWITCHES), such as
    # {"positions": "rope"} or {"norm": "rmsnorm", "mlp_kind": "swiglu"}: two runs differing in one switch race
    architecture: dict | None = None
    # start from trained weights instead of random ones (fine-tuning): a Hugging Face GPT-2 ("gpt2",
    # "gpt2-medium", or a save_pretrained folder) or an llmviz checkpoint folder; the model, its sizes
    # and its tokenizer then come from there, and model/tokenizer/bpe_vocab_size/d_model/... are unused
    init: str | None = None

    def __post_init__(self):
        problems = self._model_problems() + self._loop_problems()
        if problems:
            raise ConfigError("This training configuration cannot work: " + "; ".join(problems) + ".")

    def _model_problems(self) -> list[str]:
        """The model, its architecture switches and its tokenizer."""
        problems = []
        if self.init is not None and (not isinstance(self.init, str) or not self.init.strip()):
            problems.append("init must name a model (such as gpt2) or a checkpoint folder")
        if self.model not in MODEL_CHOICES:
            problems.append(f"model must be one of {', '.join(MODEL_CHOICES)} (got {self.model!r})")
        if self.architecture:
            problems += self._architecture_problems()
        if self.tokenizer not in ("char", "bpe"):
            problems.append("tokenizer must be 'char' or 'bpe'")
        if self.model_context is not None and (
            self.model not in PRESETS
            or not isinstance(self.model_context, int)
            or self.model_context < self.context_length
        ):
            problems.append(
                f"model_context must be a whole number of at least context_length = {self.context_length}, "
                "for a GPT preset"
            )
        if not (0.0 <= self.dropout < 1.0):
            problems.append("dropout must be in [0, 1)")
        return problems

    def _architecture_problems(self) -> list[str]:
        switches = self.architecture or {}
        unknown = sorted(set(switches) - set(SWITCHES))
        if unknown:
            return [f"architecture switches must be among {', '.join(SWITCHES)} (got {', '.join(unknown)})"]
        if self.model not in PRESETS:
            return [f"architecture switches apply to the GPT presets, not to {self.model!r}"]
        try:
            PRESETS[self.model].replace(**switches)
        except (ConfigError, TypeError) as error:
            return [str(error).removeprefix("This GPT configuration cannot work: ").rstrip(".")]
        return []

    def _loop_problems(self) -> list[str]:
        """The optimizer, the batches and the schedule."""
        problems = []
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        for name in ("context_length", "batch_size", "steps", "eval_interval", "eval_batches"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1")
        if self.micro_batch_size is not None and not 1 <= self.micro_batch_size <= self.batch_size:
            problems.append("micro_batch_size must be between 1 and batch_size")
        if self.stride is not None and self.stride < 1:
            problems.append("stride must be at least 1")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append(f"the learning rate must be a positive number (got {self.lr})")
        if not (0.0 < self.val_fraction < 0.5):
            problems.append("val_fraction must be between 0 and 0.5")
        if self.schedule not in ("cosine", "constant"):
            problems.append("schedule must be 'cosine' or 'constant'")
        return problems

    def replace(self, **changes) -> TrainConfig:
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        """The config a checkpoint saved (``context_size`` is the old name of ``context_length``).

        >>> TrainConfig.from_dict({"model": "mlp", "tokenizer": "char", "context_size": 12}).context_length
        12
        """
        known = {f.name for f in fields(cls)}
        renamed = {"context_size": "context_length"}
        data = {renamed.get(k, k): v for k, v in data.items()}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class StepMetrics:
    """What one training step measured: the losses, perplexity, learning rate, throughput and gradient norm."""

    step: int
    train_loss: float
    val_loss: float | None
    perplexity: float  # e^train_loss
    lr: float
    tokens_per_s: float
    grad_norm: float
    elapsed_s: float


# ---------------------------------------------------------------------------- data


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
    """Random batches of windows (``context_length`` tokens, starting every ``stride``) from one split."""

    def __init__(self, ids: torch.Tensor, context_length: int, stride: int, generator: torch.Generator):
        self.ids = ids
        self.context_length = context_length
        self.starts = torch.arange(0, len(ids) - context_length, stride)  # (N,)
        self.generator = generator

    def sample(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        choice = torch.randint(len(self.starts), (batch_size,), generator=self.generator)
        offsets = torch.arange(self.context_length)
        positions = self.starts[choice][:, None] + offsets  # (B, T)
        return self.ids[positions], self.ids[positions + 1]  # inputs, targets shifted by one


# ---------------------------------------------------------------------------- models and optimizers


def build_model(config: TrainConfig, vocab_size: int) -> nn.Module:
    if config.model in PRESETS:
        overrides = {k: getattr(config, k) for k in ("d_model", "n_layers", "n_heads") if getattr(config, k)}
        gpt_config = PRESETS[config.model].replace(
            vocab_size=vocab_size,
            context_length=config.model_context or config.context_length,
            dropout=config.dropout,
            **(config.architecture or {}),
            **overrides,
        )
        return GPT(gpt_config)
    kwargs = {"context_length": config.context_length} if config.model == "transformer" else {}
    return build_char_model(config.model, vocab_size, **kwargs)


def weight_decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW parameter groups as nanoGPT makes them: every parameter with 2 or more dimensions
    (the weight matrices of linear layers and the embeddings) decays; the rest (biases and
    LayerNorm gains and shifts) does not.

    >>> layer = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    >>> [(g["weight_decay"], [tuple(p.shape) for p in g["params"]]) for g in weight_decay_groups(layer, 0.1)]
    [(0.1, [(3, 4)]), (0.0, [(3,), (3,), (3,)])]
    """
    parameters = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in parameters if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0},
    ]


def build_optimizer(config: TrainConfig, model: nn.Module) -> torch.optim.Optimizer | None:
    parameters = [p for p in model.parameters() if p.requires_grad]
    if not parameters:
        return None  # the counts bigram learns by counting
    if config.optimizer == "sgd":
        return torch.optim.SGD(parameters, lr=config.lr)
    if config.optimizer == "momentum":
        return torch.optim.SGD(parameters, lr=config.lr, momentum=config.momentum)
    if config.optimizer == "adagrad":
        return torch.optim.Adagrad(parameters, lr=config.lr)
    if config.optimizer == "rmsprop":
        return torch.optim.RMSprop(parameters, lr=config.lr)
    if config.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=config.lr)
    return torch.optim.AdamW(weight_decay_groups(model, config.weight_decay), lr=config.lr)


def learning_rate(config: TrainConfig, step: int) -> float:
    """Linear warmup over ``warmup_steps``, then cosine decay to lr/10 at the last step.

    >>> c = TrainConfig(lr=1.0, warmup_steps=10, steps=110)
    >>> learning_rate(c, 0), learning_rate(c, 4), learning_rate(c, 10), round(learning_rate(c, 110), 6)
    (0.1, 0.5, 1.0, 0.1)
    """
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return config.lr
    decay_steps = max(1, config.steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / decay_steps)
    minimum = config.lr / 10
    return minimum + 0.5 * (config.lr - minimum) * (1 + math.cos(math.pi * progress))


def shown_rate(rate: float) -> float:
    """A learning rate as the metrics (and their CSV) record it: 12 significant digits, so that the optimizer's
    3e-3 / 10 is written 3e-4, not 0.00030000000000000003 (the optimizer itself uses the exact value).

    >>> shown_rate(3e-3 / 10), 3e-3 / 10
    (0.0003, 0.00030000000000000003)
    """
    return float(f"{rate:.12g}")


def divergence_advice(config: TrainConfig) -> str:
    """What to change when a run diverges, for the optimizer it used.

    >>> divergence_advice(TrainConfig(optimizer="sgd", lr=0.5))
    'Lower the learning rate (now 0.5; try 0.05), or use Adam/AdamW instead of SGD.'
    >>> divergence_advice(TrainConfig(optimizer="adam", lr=0.1, grad_clip=None, warmup_steps=0))
    'Lower the learning rate (now 0.1; try 0.01), turn on gradient clipping, or add warmup steps.'
    """
    advice = [f"Lower the learning rate (now {config.lr:g}; try {config.lr / 10:g})"]
    if not config.grad_clip:
        advice.append("turn on gradient clipping")
    if config.optimizer in ("adam", "adamw"):
        if config.warmup_steps == 0:
            advice.append("add warmup steps")
    else:
        advice.append(f"use Adam/AdamW instead of {OPTIMIZER_TITLES[config.optimizer]}")
    if len(advice) == 1:
        return advice[0] + "."
    return ", ".join(advice[:-1]) + ", or " + advice[-1] + "."


# ---------------------------------------------------------------------------- the loop


def dropout_seed(seed: int, rank: int = 0, step: int = 0) -> int:
    """The seed of a run's dropout stream on one rank (after ``step`` steps, for a resumed rank > 0): distinct
    for every rank, and unrelated to the batch streams (``seed``, ``seed + 1``, ``seed + 2``).

    >>> dropout_seed(1337, 0) != dropout_seed(1337, 1) != dropout_seed(1338, 0)
    True
    """
    digest = hashlib.sha256(f"llmviz dropout {seed} {rank} {step}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # 63 bits: what torch.Generator.manual_seed takes


def load_initial(init: str, device: str = "cpu") -> tuple[nn.Module, Tokenizer]:
    """The model and tokenizer to fine-tune: an llmviz checkpoint folder, else a Hugging Face GPT-2
    (a folder, or a Hub id that is downloaded once when not cached)."""
    if os.path.lexists(Path(init) / META_FILE) or Path(init).suffix == ".safetensors":
        model, tokenizer, _ = load_checkpoint(init, device)
        return model, tokenizer
    from llmviz.hub import gpt2

    model, tokenizer, _ = gpt2.load(init, device=device, allow_download=True)
    return model, tokenizer


def fine_tuning_copy(model: nn.Module, config: TrainConfig) -> nn.Module:
    """A trainable copy of ``model`` (the original, perhaps shared, is never changed), with this
    run's dropout; its context must hold the run's windows."""
    if isinstance(model, GPT):
        if config.context_length > model.config.context_length:
            raise ConfigError(
                f"The context size {config.context_length} is longer than the model's context of "
                f"{model.config.context_length} tokens: use --context {model.config.context_length} "
                "or less."
            )
        copy = GPT(model.config.replace(dropout=config.dropout))
        copy.load_state_dict(model.state_dict())
    else:
        import copy as copying

        copy = cast(GPT, copying.deepcopy(model))
    for parameter in copy.parameters():
        parameter.requires_grad_(True)
    return copy


@dataclass
class Trainer:
    """Trains one model on one :class:`Dataset` as :class:`TrainConfig` says, step by step: :meth:`run` yields
    :class:`StepMetrics` after each step (the job system, the CLI and notebooks drive it), :meth:`save` writes a
    resumable safetensors checkpoint. Under ``torchrun`` every process holds one and trains its slice of the batch.
    Picklable: the app sends it to a worker process (:mod:`llmviz.jobs.worker`)."""

    config: TrainConfig
    dataset: Dataset
    model: nn.Module = field(init=False)
    optimizer: torch.optim.Optimizer | None = field(init=False)
    step: int = 0
    history: list[StepMetrics] = field(default_factory=list)
    group: ProcessGroup = field(default_factory=ProcessGroup)  # one process unless torchrun started several
    initial_model: InitVar[nn.Module | None] = None  # fine-tuning: start from (a copy of) these weights

    def __post_init__(self, initial_model: nn.Module | None = None):
        self.device = torch.device(self.config.device)
        if initial_model is None and self.config.init is not None:
            raise ConfigError(
                "This run starts from trained weights: create it with Trainer.from_text, which loads them."
            )
        # the same seed on every rank: the same initial weights; drawn without moving anyone else's randomness
        with isolated_rng(self.config.seed):
            if initial_model is not None:
                model = fine_tuning_copy(initial_model, self.config)
            else:
                model = build_model(self.config, self.dataset.vocab_size)
        self.model = model.to(self.device)
        # dropout draws from the run's own stream, a different one on every rank (the ranks' slices are different
        # windows; equal masks would correlate them)
        self.dropout_generator = torch.Generator(device=self.device).manual_seed(
            dropout_seed(self.config.seed, self.group.rank)
        )
        set_dropout_generator(self.model, self.dropout_generator)
        self.accumulation = accumulation_steps(
            self.config.batch_size, self.group.world_size, self.config.micro_batch_size
        )
        if self.group.distributed and getattr(self.model, "trained_by_counting", False):
            raise ConfigError("The counting bigram learns by counting, not by gradients: train it in one process.")
        # DistributedDataParallel across processes; with FSDP the model itself is sharded in place (the optimizer
        # below then holds only this process's shards of the parameters and of their Adam moments)
        self.train_model = self.group.wrap(self.model)
        self.optimizer = build_optimizer(self.config, self.model)
        stride = self.config.stride or self.config.context_length
        self.train_generator = torch.Generator().manual_seed(self.config.seed)
        # checkpoints keep this one's state (rng.val); evaluate() draws from its own fixed stream
        self.val_generator = torch.Generator().manual_seed(self.config.seed + 1)
        self.train_batches = Batches(self.dataset.train_ids, self.config.context_length, stride, self.train_generator)
        # mixed precision (set by llmviz.adapt.memory.MemoryTrainer): the forward pass under autocast in this dtype, and
        # float16's loss scaling; None, None: plain float32
        self.autocast_dtype: torch.dtype | None = None
        self.grad_scaler: torch.amp.GradScaler | None = None

    @classmethod
    def from_text(
        cls,
        text: str,
        config: TrainConfig,
        tokenizer: Tokenizer | None = None,
        progress=None,
        group: ProcessGroup | None = None,
        initial_model: nn.Module | None = None,
    ) -> Trainer:
        """Tokenize ``text`` and set up the run; with ``config.init``, the weights and the tokenizer
        come from that model (loaded here unless ``initial_model`` and ``tokenizer`` are given)."""
        if config.init is not None and (initial_model is None or tokenizer is None):
            initial_model, tokenizer = load_initial(config.init)
        return cls(
            config,
            prepare_data(text, config, tokenizer, progress),
            group=group or ProcessGroup(),
            initial_model=initial_model,
        )

    @property
    def counting(self) -> bool:
        return getattr(self.model, "trained_by_counting", False)

    @property
    def sharded(self) -> bool:
        """Trained with FSDP across processes: every process holds a shard of the model, not all of it."""
        return self.group.sharded

    @torch.no_grad()
    def evaluate(self, batches: int | None = None) -> float:
        """Mean validation loss over a fixed set of batches (the same ones every time).

        With FSDP every process must call it (a forward pass gathers the weights from all of them): each
        evaluates its slice of every batch and the slices' losses are averaged, the whole batch's loss."""
        self.model.eval()
        generator = torch.Generator().manual_seed(self.config.seed + 2)
        fixed = Batches(
            self.dataset.val_ids,
            self.train_batches.context_length,
            self.config.stride or self.config.context_length,
            generator,
        )
        losses = []
        for _ in range(batches or self.config.eval_batches):
            inputs, targets = fixed.sample(self.config.batch_size)  # (B, T)
            if self.sharded:
                inputs, targets = self.group.shard(inputs), self.group.shard(targets)  # (B / world_size, T)
            _, loss = self.model(inputs.to(self.device), targets.to(self.device))
            losses.append((self.group.mean(loss) if self.sharded else loss).item())
        self.model.train()
        return sum(losses) / len(losses)

    def train_step(self) -> tuple[float, float]:
        inputs, targets = self.train_batches.sample(self.config.batch_size)  # (B, T): the same on every rank
        inputs, targets = self.group.shard(inputs), self.group.shard(targets)  # (B / world_size, T): this rank's
        inputs, targets = inputs.to(self.device), targets.to(self.device)
        if self.counting:
            cast(Any, self.model).update_counts(inputs, targets)  # a counting model (bigram, n-gram)
            with torch.no_grad():
                _, loss = self.model(inputs, targets)
            return loss.item(), 0.0
        assert self.optimizer is not None  # every model but a counting one has an optimizer
        lr = learning_rate(self.config, self.step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        micro_size = inputs.shape[0] // self.accumulation
        total = torch.zeros((), device=self.device)
        chunks = list(zip(micro_batches(inputs, micro_size), micro_batches(targets, micro_size)))
        for index, (micro_inputs, micro_targets) in enumerate(chunks):
            last = index == len(chunks) - 1
            # DDP and FSDP average gradients across processes on the last micro-batch only
            syncing: contextlib.AbstractContextManager = contextlib.nullcontext()
            wrapped: Any = self.train_model  # FSDP2's module or DDP's wrapper
            if self.sharded:
                wrapped.set_requires_gradient_sync(last)  # FSDP2's no_sync: keep unsharded gradients
            elif not last and self.group.distributed:
                syncing = wrapped.no_sync()
            with syncing:
                with self._autocast():
                    _, micro_loss = self.train_model(micro_inputs, micro_targets)
                share = micro_loss / self.accumulation
                (self.grad_scaler.scale(share) if self.grad_scaler is not None else share).backward()
            total += micro_loss.detach()
        loss = self.group.mean(total / self.accumulation)  # the mean loss over the whole global batch
        if self.grad_scaler is not None:
            self.grad_scaler.unscale_(self.optimizer)  # true gradients, for the norm and the clipping
        if self.config.grad_clip:
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        else:
            grad_norm = torch.nn.utils.get_total_norm([p.grad for p in self.model.parameters() if p.grad is not None])
        if self.sharded:  # a DTensor: the norm over all the shards, the same on every process
            grad_norm = cast(Any, grad_norm).full_tensor()
        if (
            self.grad_scaler is not None
        ):  # float16: the step is skipped (and the scale halved) when a gradient overflowed
            self.grad_scaler.step(self.optimizer)
            self.grad_scaler.update()
        else:
            self.optimizer.step()
        return loss.item(), float(grad_norm)

    def _autocast(self) -> contextlib.AbstractContextManager:
        """The forward pass's precision: autocast to :attr:`autocast_dtype` when set, else nothing."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def unshard(self) -> None:
        """FSDP: gather the full weights and optimizer states onto rank 0, as an ordinary model and optimizer
        (for :func:`save_checkpoint`, which then writes the same files as one process). Every process must
        call it; afterwards only rank 0's trainer is whole, and the run takes no more steps.
        Nothing to do without FSDP."""
        if not self.sharded:
            return
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
            get_optimizer_state_dict,
        )

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)  # the whole tensors, on rank 0 only
        assert self.optimizer is not None  # FSDP shards only models trained by gradient
        weights = get_model_state_dict(self.model, options=options)
        optimizer_state: dict[str, Any] = cast(
            dict[str, Any], get_optimizer_state_dict(self.model, self.optimizer, options=options)
        )
        if not self.group.is_main:
            return
        with isolated_rng(self.config.seed):
            model = model_from_description(model_description(self.model))
        model.load_state_dict(weights, strict=True)
        self.model = self.train_model = model.to(self.device)
        set_dropout_generator(self.model, self.dropout_generator)
        self.optimizer = build_optimizer(self.config, self.model)
        if self.optimizer is not None:  # FSDP names each parameter's state by its name; torch.optim by its index
            names = {id(p): name for name, p in self.model.named_parameters()}
            order = [names[id(p)] for group in self.optimizer.param_groups for p in group["params"]]
            index = {name: i for i, name in enumerate(order)}
            self.optimizer.load_state_dict(
                {
                    "state": {index[name]: value for name, value in optimizer_state["state"].items()},
                    "param_groups": [
                        {**saved, "params": [index[name] for name in saved["params"]]}
                        for saved in optimizer_state["param_groups"]
                    ],
                }
            )
        self.group = replace(self.group, fully_sharded=False)

    def run(self, steps: int | None = None, should_stop: Callable[[], bool] | None = None) -> Iterator[StepMetrics]:
        """Train up to ``config.steps`` (or ``steps`` more); yield metrics after every step."""
        end = self.config.steps if steps is None else self.step + steps
        self.model.train()
        start_time = time.perf_counter()
        first_loss = None
        tokens_per_step = self.config.batch_size * self.config.context_length
        while self.step < end:
            if should_stop is not None and should_stop():
                return
            step_start = time.perf_counter()
            train_loss, grad_norm = self.train_step()
            self.step += 1
            self._check_divergence(train_loss, first_loss)
            first_loss = train_loss if first_loss is None else first_loss
            val_loss = None
            evaluates = self.group.is_main or self.sharded  # FSDP: every process takes part in the forward passes
            if evaluates and (self.step % self.config.eval_interval == 0 or self.step == end):
                val_loss = self.evaluate()
            step_time = time.perf_counter() - step_start
            metrics = StepMetrics(
                step=self.step,
                train_loss=train_loss,
                val_loss=val_loss,
                perplexity=math.exp(min(train_loss, 50.0)),
                lr=0.0 if self.counting else shown_rate(learning_rate(self.config, self.step - 1)),
                tokens_per_s=tokens_per_step / max(step_time, 1e-9),
                grad_norm=grad_norm,
                elapsed_s=time.perf_counter() - start_time,
            )
            self.history.append(metrics)
            yield metrics

    def _check_divergence(self, loss: float, first_loss: float | None) -> None:
        advice = divergence_advice(self.config)
        if not math.isfinite(loss):
            raise TrainingDiverged(f"The loss became {loss} at step {self.step}: training diverged. {advice}")
        baseline = math.log(self.dataset.vocab_size)
        if first_loss is not None and self.step > 5 and loss > max(3 * first_loss, first_loss + 3 * baseline):
            raise TrainingDiverged(
                f"The loss exploded at step {self.step} ({loss:.2f}, it started at {first_loss:.2f}). {advice}"
            )

    # ------------------------------------------------------------------ generation and files

    def generate_sample(
        self,
        prompt: str = "",
        max_new_tokens: int = 100,
        temperature: float = 0.8,
        top_k: int = 0,
        seed: int | None = None,
    ) -> str:
        from llmviz.generation.sampling import generate_text

        return generate_text(
            self.model,
            self.dataset.tokenizer,
            prompt,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_k=top_k,
            seed=self.config.seed if seed is None else seed,
        )

    def save(self, directory: str | Path) -> Path:
        return save_checkpoint(directory, self)


# ---------------------------------------------------------------------------- checkpoints


def resume(
    directory: str | Path, text: str, device: str = "cpu", group: ProcessGroup | None = None, **changes
) -> Trainer:
    """A :class:`Trainer` that continues exactly where the saved one stopped (``changes``: e.g. more ``steps``),
    in one process or several: the checkpoint does not depend on how many processes wrote it."""
    model, tokenizer, meta = load_checkpoint(directory, device)
    config = TrainConfig.from_dict({**meta["train_config"], "device": device, **changes})
    if isinstance(model, GPT) and config.model in PRESETS and config.init is None:
        # a run saved before its preset changed (gpt2-124m had no bias in W_Q, W_K, W_V and an untied head): the
        # saved weights decide its switches, not today's preset
        built = PRESETS[config.model].replace(**(config.architecture or {}))
        differ = {name: getattr(model.config, name) for name in SWITCHES}
        differ = {name: value for name, value in differ.items() if getattr(built, name) != value}
        if differ:
            config = replace(config, architecture={**(config.architecture or {}), **differ})
    trainer = Trainer(
        config,
        prepare_data(text, config, tokenizer),
        group=group or ProcessGroup(),
        initial_model=model if config.init is not None else None,
    )
    trainer.step = meta["step"]
    trainer.history = [StepMetrics(**m) for m in meta.get("metrics", [])]
    if not restore_training_state(trainer, directory, model, meta):
        # the other ranks' dropout streams were not saved: fresh ones, never the first steps' again
        trainer.dropout_generator.manual_seed(dropout_seed(config.seed, trainer.group.rank, trainer.step))
    return trainer


def smooth(values: list[float], weight: float = 0.9) -> list[float]:
    """Exponential moving average with bias correction (as TensorBoard's smoothing slider).

    >>> smooth([1.0, 3.0], weight=0.5)
    [1.0, 2.3333333333333335]
    """
    if not 0.0 <= weight < 1.0:
        raise ConfigError("The smoothing weight must be in [0, 1).")
    out, average = [], 0.0
    for step, value in enumerate(values, start=1):
        average = weight * average + (1 - weight) * value
        out.append(average / (1 - weight**step))
    return out
