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
import time
from collections.abc import Callable, Iterator
from dataclasses import InitVar, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, cast

import torch
import torch.nn as nn

from llmviz.device import default_generator, isolated_rng, playing
from llmviz.errors import CheckpointError, ConfigError, TrainingDiverged
from llmviz.models.charlevel import build_char_model
from llmviz.models.gpt import GPT, SWITCHES
from llmviz.models.layers import draws_dropout, set_dropout_generator
from llmviz.models.presets import PRESETS
from llmviz.tokenizers.base import Tokenizer
from llmviz.training.checkpoint import (
    is_checkpoint,
    load_checkpoint,
    load_training_state,
    model_description,
    model_from_description,
    restore_training_state,
    save_checkpoint,
    training_state,
)
from llmviz.training.config import OPTIMIZER_TITLES, TrainConfig
from llmviz.training.dataset import BPE_SAMPLE_CHARS, Batches, Dataset, build_tokenizer, prepare_data
from llmviz.training.distributed import ProcessGroup, accumulation_steps, micro_batches

AUTOCAST_DTYPES = {"float32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
REPORT_EVERY_ON_ACCELERATORS = 10  # steps between reads of the losses on a GPU (one wait for the device each)


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


def build_trainer(text: str, config: TrainConfig) -> Trainer:
    """A run's :class:`Trainer`, made where it will train: a job's worker process
    (``JobManager.submit_training(build=functools.partial(build_trainer, text, config))``), so that tokenizing a
    20 MB upload never runs in the server's script thread. A BPE tokenizer learns from the first
    :data:`BPE_SAMPLE_CHARS` characters; the whole text is then tokenized and split."""
    sample = text[:BPE_SAMPLE_CHARS] if config.tokenizer == "bpe" else text
    return Trainer(config, prepare_data(text, config, build_tokenizer(sample, config.tokenizer, config.bpe_vocab_size)))


# ---------------------------------------------------------------------------- models and optimizers


def build_model(config: TrainConfig, vocab_size: int) -> nn.Module:
    if config.model in PRESETS:
        problems = config._memory_problems(vocab_size)  # the tokenizer's vocabulary, now known
        if problems:
            raise ConfigError("This training configuration cannot work: " + "; ".join(problems) + ".")
        return GPT(config.gpt_config(vocab_size))
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


#: where Adam and AdamW take PyTorch's fused kernel (one kernel for every parameter): CUDA, as nanoGPT does, and the
#: CPU, where it is several times faster than the default per-tensor loop for a small model's many tensors
FUSED_ADAM_DEVICES = ("cuda", "cpu")


def build_optimizer(config: TrainConfig, model: nn.Module, fused_adam: bool = False) -> torch.optim.Optimizer | None:
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
    betas = (config.beta1, config.beta2)
    # one kernel for every parameter on CUDA, as nanoGPT takes it (and the fp16 gradient scaler then skips a step
    # without reading the overflow flag back to the host); not for FSDP's sharded parameters
    fused = {"fused": True} if fused_adam else {}
    if config.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=config.lr, betas=betas, **fused)
    return torch.optim.AdamW(weight_decay_groups(model, config.weight_decay), lr=config.lr, betas=betas, **fused)


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


def compiled(model: nn.Module) -> nn.Module:
    """``torch.compile(model)``, or a :class:`~llmviz.errors.ConfigError` saying it cannot be used here."""
    try:
        return cast(nn.Module, torch.compile(model))
    except Exception as error:  # noqa: BLE001 - an unsupported platform or Python: said in one line
        raise CompileUnavailable(compile_message(error)) from error


class CompileUnavailable(ConfigError):
    """torch.compile cannot compile the model on this machine (no C++ compiler, an unsupported platform, …)."""


def compile_message(error: BaseException) -> str:
    """The one line that says why ``--compile`` cannot work here.

    >>> print(compile_message(RuntimeError("No working C++ compiler found")))  # doctest: +NORMALIZE_WHITESPACE
    torch.compile cannot compile this model here (RuntimeError: No working C++ compiler found): train without
    --compile (compile=False), the same model in eager mode, only slower.
    """
    error = getattr(error, "inner_exception", None) or error  # TorchDynamo wraps what the compiler raised
    first_line = (str(error).strip().splitlines() or [""])[0][:200]
    return (
        f"torch.compile cannot compile this model here ({type(error).__name__}: {first_line}): train without "
        "--compile (compile=False), the same model in eager mode, only slower."
    )


def is_compile_failure(error: BaseException) -> bool:
    """An error raised by torch.compile's machinery (TorchDynamo, Inductor) rather than by the model."""
    return type(error).__module__.startswith(("torch._dynamo", "torch._inductor"))


def read_back(values: list) -> list[float]:
    """Numbers that may still be on the device, read to the host at once: one wait for the device, not one each.

    >>> read_back([torch.tensor(1.5), 2.0, torch.tensor([0.25])])
    [1.5, 2.0, 0.25]
    """
    by_device: dict[torch.device, list[int]] = {}
    for index, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            by_device.setdefault(value.device, []).append(index)
    read = [value if isinstance(value, torch.Tensor) else float(value) for value in values]
    for indices in by_device.values():
        numbers = torch.stack([values[i].detach().float().reshape(()) for i in indices]).tolist()  # (n,): one read
        for index, number in zip(indices, numbers):
            read[index] = number
    return cast(list[float], read)


def to_device(batch: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A CPU batch on ``device``: through pinned memory and without waiting for the GPU on CUDA (a plain copy from
    pageable memory waits until the GPU has finished everything before it)."""
    if device.type == "cuda":
        return batch.pin_memory().to(device, non_blocking=True)
    return batch.to(device)


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


class _Clock:
    """The wall time of the steps between two reports, without the time their consumer took in between."""

    def __init__(self, start: float):
        self.start = start
        self.window: float | None = None  # when the first step since the last report began

    def begin(self) -> None:
        if self.window is None:
            self.window = time.perf_counter()

    def lap(self, steps: int) -> tuple[float, float]:
        """(seconds per step since the last report, seconds since the start), and a new window."""
        now = time.perf_counter()
        step_time = (now - (self.window if self.window is not None else now)) / steps
        self.window = None
        return step_time, now - self.start


@dataclass
class Trainer:
    """Trains one model on one :class:`Dataset` as :class:`TrainConfig` says, step by step: :meth:`run` yields
    :class:`StepMetrics` after each step (the job system, the CLI and notebooks drive it), :meth:`save` writes a
    resumable safetensors checkpoint. Under ``torchrun`` every process holds one and trains its slice of the batch.
    Picklable: the app sends it to a worker process (:mod:`llmviz.jobs.worker`)."""

    kind: ClassVar[str] = "training"  # what the lab keeps its run as (llmviz.jobs.runners)
    # what a step reports: a subclass lists in ``SERIES`` what the lab keeps with each curve point (a memory run's
    # tokens/s, llmviz.adapt.memory.MemoryStepMetrics)
    metrics_class: ClassVar[type[StepMetrics]] = StepMetrics
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
        if self.config.compile:
            self.train_model = compiled(self.train_model)
        self.optimizer = build_optimizer(
            self.config, self.model, fused_adam=self.device.type in FUSED_ADAM_DEVICES and not self.group.sharded
        )
        stride = self.config.stride or self.config.context_length
        self.train_generator = torch.Generator().manual_seed(self.config.seed)
        # checkpoints keep this one's state (rng.val); evaluate() draws from its own fixed stream
        self.val_generator = torch.Generator().manual_seed(self.config.seed + 1)
        self.train_batches = Batches(self.dataset.train_ids, self.config.context_length, stride, self.train_generator)
        # mixed precision (config.precision; llmviz.adapt.memory.MemoryTrainer sets its own): the forward pass under
        # autocast in this dtype, and float16's loss scaling; None, None: plain float32
        self.autocast_dtype: torch.dtype | None = AUTOCAST_DTYPES[self.config.precision]
        self.grad_scaler: torch.amp.GradScaler | None = None
        if self.config.precision == "fp16":
            if self.group.sharded:
                raise ConfigError("fp16 with FSDP is not supported here: train in bf16 (no gradient scaler needed).")
            self.grad_scaler = torch.amp.GradScaler(self.device.type)
        # whether this run owns its process (claim_process): a worker process or the command line
        self.owns_process = False
        # read the losses and norms back every this many steps (each read waits for the device), and whenever a
        # step is evaluated or asked for; on the CPU reading costs nothing: every step
        self.report_every = 1 if self.device.type == "cpu" else REPORT_EVERY_ON_ACCELERATORS

    def claim_process(self) -> None:
        """Say that this run owns its process (a worker process, the command line, a benchmark), so it may use the
        device's default random generator and the process's matmul settings:

        - dropout, in attention included, runs in PyTorch's fused kernels (``F.dropout``, and
          ``scaled_dot_product_attention`` with ``dropout_p``), which draw from the device's default generator; for
          every step that generator is set to the run's own dropout stream and the stream's new state is kept
          afterwards, so the masks depend only on the run's seed (runners of a race that share a worker process
          never take each other's draws) and checkpoints keep the stream as before;
        - on CUDA, float32 matmuls may use TF32 (``torch.set_float32_matmul_precision("high")``).

        Unclaimed (a thread of the Streamlit server, tests, notebooks) a run never touches what other sessions
        share: its dropout masks come from its own generator in the written-out attention, and float32 stays
        float32. Both are reproducible from the seed; with dropout they draw different masks."""
        self.owns_process = True
        # whether its steps draw dropout masks at all (no dropout: no stream to lend the default generator)
        self.draws_dropout = draws_dropout(self.model)
        if self.device.type in ("cpu", "cuda"):
            set_dropout_generator(self.model, None)
        if self.device.type == "cuda":
            torch.set_float32_matmul_precision("high")

    def _dropout_stream(self) -> contextlib.AbstractContextManager:
        """For one step of a run that owns its process: the device's default generator plays the run's dropout
        stream (see :meth:`claim_process`); nothing otherwise."""
        if not self.owns_process or not self.draws_dropout or self.device.type not in ("cpu", "cuda"):
            return contextlib.nullcontext()  # (with no dropout the step draws nothing: both streams stay as they are)
        return playing(default_generator(self.device), self.dropout_generator)

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
        come from that model: ``initial_model`` and ``tokenizer`` when given (a Hugging Face GPT-2:
        :func:`llmviz.hub.initial.load_initial` loads one), else the llmviz checkpoint it names, loaded here."""
        if config.init is not None and (initial_model is None or tokenizer is None):
            if not is_checkpoint(config.init):
                raise ConfigError(
                    f"{config.init} is not an llmviz checkpoint: load it with llmviz.hub.initial.load_initial and "
                    "pass initial_model and tokenizer."
                )
            initial_model, tokenizer, _ = load_checkpoint(config.init)
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

    def describe(self) -> dict:
        """What a page and the memory estimate need of the run (:mod:`llmviz.jobs.runners`): its model's description,
        its config, tokenizer and vocabulary, and the tokens it trains and is measured on."""
        return {
            "description": model_description(self.model),
            "config": self.config,
            "tokenizer": self.dataset.tokenizer,
            "vocab_size": self.dataset.vocab_size,
            "train_tokens": len(self.dataset.train_ids),
            "val_tokens": len(self.dataset.val_ids),
        }

    @torch.no_grad()
    def evaluate(self, batches: int | None = None) -> float:
        """Mean validation loss over a fixed set of batches (the same ones every time), in the run's precision.

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
        count = batches or self.config.eval_batches
        total = torch.zeros((), device=self.device)
        for _ in range(count):
            inputs, targets = fixed.sample(self.config.batch_size)  # (B, T)
            if self.sharded:
                inputs, targets = self.group.shard(inputs), self.group.shard(targets)  # (B / world_size, T)
            with self._autocast():
                _, loss = self.model(to_device(inputs, self.device), to_device(targets, self.device))
            total += (self.group.mean(loss) if self.sharded else loss).detach().float()
        self.model.train()
        return total.item() / count  # one read, after the last batch

    def train_step(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One optimizer step on one batch; returns the batch's mean loss and the gradient norm before clipping, as
        0-dimensional tensors on the device (reading them waits for the device: :meth:`run` reads them in bulk)."""
        inputs, targets = self.train_batches.sample(self.config.batch_size)  # (B, T): the same on every rank
        inputs, targets = self.group.shard(inputs), self.group.shard(targets)  # (B / world_size, T): this rank's
        inputs, targets = to_device(inputs, self.device), to_device(targets, self.device)
        if self.counting:
            cast(Any, self.model).update_counts(inputs, targets)  # a counting model (bigram, n-gram)
            with torch.no_grad():
                _, loss = self.model(inputs, targets)
            return loss.detach(), torch.zeros((), device=loss.device)
        assert self.optimizer is not None  # every model but a counting one has an optimizer
        lr = learning_rate(self.config, self.step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        with self._dropout_stream():
            loss = self._forward_backward(inputs, targets)
        return loss, self._clip_and_step()

    def _forward_backward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The gradients of the whole batch, a micro-batch at a time; the batch's mean loss over every process."""
        if self.accumulation == 1 and not self.group.distributed:
            # one micro-batch in one process: the same numbers as below (a share of 1, a mean over 1) without the
            # bookkeeping's extra operations and autograd node in every step
            with self._autocast():
                loss = self._forward(inputs, targets)
            (self.grad_scaler.scale(loss) if self.grad_scaler is not None else loss).backward()
            return loss.detach().float()
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
                    micro_loss = self._forward(micro_inputs, micro_targets)
                share = micro_loss / self.accumulation
                (self.grad_scaler.scale(share) if self.grad_scaler is not None else share).backward()
            total += micro_loss.detach().float()
        return self.group.mean(total / self.accumulation)  # the mean loss over the whole global batch

    def _forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The training model's loss; a failure of torch.compile's machinery is said in one line."""
        if not self.config.compile:
            return self.train_model(inputs, targets)[1]
        try:
            return self.train_model(inputs, targets)[1]
        except Exception as error:
            if is_compile_failure(error):
                raise CompileUnavailable(compile_message(error)) from error
            raise

    def _clip_and_step(self) -> torch.Tensor:
        """Unscale (fp16), clip, step; the gradient norm before clipping, left on the device."""
        assert self.optimizer is not None
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
        return grad_norm.detach()

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
        set_dropout_generator(self.model, None if self.owns_process else self.dropout_generator)
        self.optimizer = build_optimizer(self.config, self.model, fused_adam=self.device.type in FUSED_ADAM_DEVICES)
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

    def run(
        self,
        steps: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        report_at: Callable[[int], bool] | None = None,
    ) -> Iterator[StepMetrics]:
        """Train up to ``config.steps`` (or ``steps`` more); yield metrics for every step.

        The losses and gradient norms stay on the device until a *report step*: every :attr:`report_every` steps
        (1 on the CPU), an evaluated step, the last step, a stop, and any step ``report_at(step)`` asks for (the
        job worker asks for the steps it keeps snapshots or samples of). There they are read back at once and the
        steps since the last report are yielded in order, so :attr:`step` and the weights are those of the last
        of them; the history always holds every step taken."""
        end = self.config.steps if steps is None else self.step + steps
        self.model.train()
        # a run that goes on (resumed, or a paused job in a new worker) keeps counting its time and its first loss,
        # what an explosion is measured against
        self._first_loss: float | None = self.history[0].train_loss if self.history else None
        clock = _Clock(time.perf_counter() - (self.history[-1].elapsed_s if self.history else 0.0))
        pending: list[tuple[int, Any, Any, float | None]] = []
        while self.step < end:
            if should_stop is not None and should_stop():
                break
            clock.begin()
            loss, grad_norm = self.train_step()
            self.step += 1
            val_loss = self.evaluate() if self._evaluates_at(end) else None
            pending.append((self.step, loss, grad_norm, val_loss))
            if self._reports_at(end, val_loss, report_at):
                yield from self._report(pending, clock)
                pending = []
        yield from self._report(pending, clock)

    def _evaluates_at(self, end: int) -> bool:
        """Whether this step is evaluated: every ``eval_interval`` steps and the last, in the process(es) that
        evaluate (FSDP: every process takes part in the forward passes)."""
        evaluates = self.group.is_main or self.sharded
        return evaluates and (self.step % self.config.eval_interval == 0 or self.step == end)

    def _reports_at(self, end: int, val_loss: float | None, report_at: Callable[[int], bool] | None) -> bool:
        """Whether this step is a report step (see :meth:`run`)."""
        if val_loss is not None or self.step == end or self.step % self.report_every == 0:
            return True
        return report_at is not None and report_at(self.step)

    def _report(self, pending: list[tuple[int, Any, Any, float | None]], clock: _Clock) -> Iterator[StepMetrics]:
        """Read the pending steps' numbers back (one wait for the device), check them, record and yield them."""
        if not pending:
            return
        numbers = read_back([loss for _, loss, _, _ in pending] + [norm for _, _, norm, _ in pending])
        losses, norms = numbers[: len(pending)], numbers[len(pending) :]
        step_time, elapsed = clock.lap(len(pending))  # the steps since the last report shared the time evenly
        tokens_per_step = self.config.batch_size * self.config.context_length
        made: list[StepMetrics] = []
        for index, ((step, _, _, val_loss), loss, norm) in enumerate(zip(pending, losses, norms)):
            try:
                self._check_divergence(loss, step)
            except TrainingDiverged:
                self.history.extend(made)
                raise
            made.append(
                self.metrics_class(
                    step=step,
                    train_loss=loss,
                    val_loss=val_loss,
                    perplexity=math.exp(min(loss, 50.0)),
                    lr=0.0 if self.counting else shown_rate(learning_rate(self.config, step - 1)),
                    tokens_per_s=tokens_per_step / max(step_time, 1e-9),
                    grad_norm=norm,
                    elapsed_s=elapsed - (len(pending) - 1 - index) * step_time,
                )
            )
        self.history.extend(made)  # before yielding: a consumer that stops listening still leaves a whole history
        yield from made

    def _check_divergence(self, loss: float, step: int) -> None:
        """NaN or infinity at any step, or (after step 5) more than 3 × the run's first loss and 3 ln V above it."""
        if not math.isfinite(loss):
            advice = divergence_advice(self.config)
            raise TrainingDiverged(f"The loss became {loss} at step {step}: training diverged. {advice}")
        first = self._first_loss
        if first is None:
            self._first_loss = loss
            return
        if step > 5 and loss > max(3 * first, first + 3 * math.log(self.dataset.vocab_size)):
            advice = divergence_advice(self.config)
            raise TrainingDiverged(
                f"The loss exploded at step {step} ({loss:.2f}, it started at {first:.2f}). {advice}"
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

    # ------------------------------------------------------------------ the lab's resume state

    def training_state(self) -> tuple[dict[str, torch.Tensor], dict]:
        """Everything but the weights this run needs to go on as if it had never stopped: ``(tensors, scalars)``
        (:func:`llmviz.training.checkpoint.training_state`: optimizer moments, random streams, the metrics so far;
        the step and the optimizer's groups as JSON). The lab keeps it beside a snapshot of the weights."""
        return training_state(self)

    def load_training_state(self, tensors: dict[str, torch.Tensor], scalars: dict) -> None:
        """Go on from :meth:`training_state`'s ``(tensors, scalars)``; the weights of that step are loaded already."""
        rows, dropout_restored = load_training_state(self, tensors, scalars)
        self.history = [self.metrics_class(**row) for row in rows]
        if not dropout_restored:  # a CPU's stream on a GPU: a fresh one, never the first steps' again
            self.dropout_generator.manual_seed(dropout_seed(self.config.seed, self.group.rank, self.step))


# ---------------------------------------------------------------------------- checkpoints


def resume(
    directory: str | Path, text: str, device: str = "cpu", group: ProcessGroup | None = None, **changes
) -> Trainer:
    """A :class:`Trainer` that continues exactly where the saved one stopped (``changes``: e.g. more ``steps``),
    in one process or several: the checkpoint does not depend on how many processes wrote it."""
    model, tokenizer, meta = load_checkpoint(directory, device)  # every field of checkpoint.json checked
    try:
        config = TrainConfig.from_dict({**meta["train_config"], "device": device, **changes})
        history = [StepMetrics(**m) for m in meta.get("metrics", [])]
    except (KeyError, TypeError) as error:
        raise CheckpointError(
            f"{Path(directory).name} cannot be resumed: its training config or metrics are "
            f"incomplete ({type(error).__name__}: {error})."
        ) from None
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
    trainer.step = meta.get("step", 0)
    trainer.history = history
    if not restore_training_state(trainer, directory, model, meta):
        # the other ranks' dropout streams were not saved: fresh ones, never the first steps' again
        trainer.dropout_generator.manual_seed(dropout_seed(config.seed, trainer.group.rank, trainer.step))
    return trainer
