"""A training run's settings: :class:`TrainConfig` (frozen, validated on creation, saved in every checkpoint), the
optimizers, models and precisions it may name, and the precision a device trains in by default.

>>> TrainConfig(model="mlp", tokenizer="char", context_length=8).context_length
8
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Literal, cast, get_args

import torch

from llmviz.device import machine_memory_bytes, seed_problem
from llmviz.errors import ConfigError
from llmviz.models.charlevel import CHAR_MODELS, CharModelName
from llmviz.models.gpt import SIZE_LIMITS, SWITCHES, GPTConfig, estimate_parameters, size_problem
from llmviz.models.presets import PRESETS, PresetName

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
#: numbers an optimizer keeps per parameter besides the weight and its gradient (momentum, Adam's two moments)
OPTIMIZER_STATE = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
PRECISIONS = ("auto", "float32", "bf16", "fp16")


PRECISION_TITLES = {
    "float32": "float32",
    "bf16": "bfloat16 (autocast)",
    "fp16": "float16 (autocast + loss scaling)",
}


#: Why fp16 is refused off CUDA. Not the gradient scaler (``torch.amp.GradScaler("cpu")`` works): float16 matrix
#: products have no fast kernel on CPUs without float16 instructions, so fp16 costs time and saves nothing bf16 does not
#: (benchmarks/cpu_precision.py, docs/benchmarks/cpu_precision.md).
FP16_ON_CPU = (
    "fp16 is for CUDA GPUs: on {device} torch runs float16 autocast with a CPU gradient scaler, but CPUs without "
    "float16 instructions multiply float16 matrices on a slow path (an AMD EPYC: a training step 3.3× float32's time, "
    "one matrix product 50×); use bf16 or float32 (bf16 saves the same memory and needs no loss scaling)"
)


def precision_choices(device: str) -> list[str]:
    """The precisions a run can train in on ``device``: float32 and bf16, and fp16 on CUDA (its gradient scaler).

    >>> precision_choices("cpu")
    ['float32', 'bf16']
    """
    cuda = device.startswith("cuda")
    gpu_without_bf16 = cuda and torch.cuda.is_available() and not torch.cuda.is_bf16_supported()
    return ["float32"] + ([] if gpu_without_bf16 else ["bf16"]) + (["fp16"] if cuda else [])


def default_precision(device: str) -> str:
    """bf16 on a CUDA GPU that has bfloat16 (Ampere and later), float32 everywhere else.

    >>> default_precision("cpu")
    'float32'
    """
    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return "bf16"
    return "float32"


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides a training run (model, tokenizer, batches, optimizer, schedule, seed, device),
    frozen and validated on creation: a bad value raises :class:`~llmviz.errors.ConfigError` saying what to change.
    Stored in every checkpoint, so a run can be resumed or reproduced from it."""

    model: ModelName = "gpt-micro"  # a GPT preset (llmviz.models.presets.PRESETS) or a char-level model name
    tokenizer: TokenizerKind = "bpe"  # "char" or "bpe"
    bpe_vocab_size: int = 512
    context_length: int = 64
    # positions a GPT preset can read (its context_length); None = context_length. Longer: the positions past
    # context_length exist (a learned table has rows for them) but training never reaches them, so a race can be
    # measured beyond its training context (llmviz.lessons.architectures.extrapolation)
    model_context: int | None = None
    # distance between window starts: 1 = a window at every position, as nanoGPT's get_batch draws them (a 1 MB text
    # gives ~1 million windows instead of ~4,000 that a run would soon learn by heart); None = context_length
    # (windows side by side: how runs trained before stride 1 was the default, and what older checkpoints saved)
    stride: int | None = 1
    batch_size: int = 16  # windows per optimizer step, over all processes together
    micro_batch_size: int | None = None  # windows per forward pass; smaller → gradient accumulation
    steps: int = 200
    optimizer: Optimizer = "adamw"
    lr: float = 3e-3
    momentum: float = 0.9
    beta1: float = 0.9  # Adam/AdamW's β1 and β2 (nanoGPT's shakespeare-char config takes β2 = 0.99)
    beta2: float = 0.999
    weight_decay: float = 0.01
    warmup_steps: int = 10
    schedule: Schedule = "cosine"  # "cosine" (to lr/10) or "constant"
    grad_clip: float | None = 1.0
    eval_interval: int = 25
    eval_batches: int = 4
    val_fraction: float = 0.1
    seed: int = 1337
    device: str = "cpu"
    # "float32", "bf16" (the forward pass under bfloat16 autocast) or "fp16" (float16 autocast with a gradient
    # scaler: CUDA only); "auto" becomes bf16 on a CUDA GPU that has it, float32 elsewhere (default_precision)
    precision: str = "auto"
    compile: bool = False  # torch.compile the model for training (long runs; the first steps wait for the compiler)
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
        if self.precision == "auto":  # a frozen config: the choice is made once, and saved with the run
            object.__setattr__(self, "precision", default_precision(self.device))
        problems = self._model_problems() + self._loop_problems() + self._precision_problems()
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
        problems += self._size_problems()
        if not (0.0 <= self.dropout < 1.0):
            problems.append("dropout must be in [0, 1)")
        if not problems and self.model in PRESETS and self.init is None:
            problems += self._memory_problems()
        return problems

    def _size_problems(self) -> list[str]:
        """The model's sizes: its width, layers and heads, the BPE vocabulary and a preset's own context."""
        problems = []
        for name in ("d_model", "n_layers", "n_heads"):
            value, limit = getattr(self, name), SIZE_LIMITS[name]
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit):
                problems.append(f"{name} must be a whole number from 1 to {limit:,}, or unset (got {value!r})")
        if not isinstance(self.bpe_vocab_size, int) or not 1 <= self.bpe_vocab_size <= SIZE_LIMITS["vocab_size"]:
            problems.append(f"bpe_vocab_size must be a whole number from 1 to {SIZE_LIMITS['vocab_size']:,}")
        if self.model_context is not None and (
            self.model not in PRESETS
            or not isinstance(self.model_context, int)
            or self.model_context < self.context_length
        ):
            problems.append(
                f"model_context must be a whole number of at least context_length = {self.context_length}, "
                "for a GPT preset"
            )
        return problems

    def gpt_config(self, vocab_size: int) -> GPTConfig:
        """The GPT this config builds for a vocabulary of ``vocab_size`` (a GPT preset with its overrides)."""
        overrides = {k: getattr(self, k) for k in ("d_model", "n_layers", "n_heads") if getattr(self, k)}
        return PRESETS[cast(PresetName, self.model)].replace(
            vocab_size=vocab_size,
            context_length=self.model_context or self.context_length,
            dropout=self.dropout,
            **(self.architecture or {}),
            **overrides,
        )

    def _memory_problems(self, vocab_size: int | None = None) -> list[str]:
        """A GPT too big for this machine, found from its sizes before anything is allocated: one whose weights alone
        would not fit, or beyond ``LLMVIZ_MAX_PARAMETERS`` (``llmviz.models.gpt.size_problem``); training also keeps
        a gradient and the optimizer's state for every weight. ``vocab_size``: the tokenizer's, once known (before:
        the BPE vocabulary asked for, or 256 characters)."""
        vocab = vocab_size or (self.bpe_vocab_size if self.tokenizer == "bpe" else 256)
        if not 1 <= self.context_length <= SIZE_LIMITS["context_length"]:
            return [f"context_length must be a whole number from 1 to {SIZE_LIMITS['context_length']:,}"]
        try:
            gpt = self.gpt_config(vocab)
        except ConfigError as error:
            return [str(error).removeprefix("This GPT configuration cannot work: ").rstrip(".")]
        except TypeError:
            return []  # an unknown switch: said by _architecture_problems
        problem = size_problem(gpt)
        if problem is not None:
            return [problem]
        count = estimate_parameters(gpt)
        need = (2 + OPTIMIZER_STATE.get(self.optimizer, 2)) * 4 * count
        memory = machine_memory_bytes()
        if memory is not None and need > memory:
            return [
                f"the model would have about {count:,} parameters; training it takes at least "
                f"{need / 2**30:,.1f} GB (each weight, its gradient and the optimizer's state, 4 bytes each), more "
                f"than this machine's {memory / 2**30:,.1f} GB of memory"
            ]
        return []

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
        """The optimizer and the batches."""
        problems = []
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        for name in ("context_length", "batch_size", "steps", "eval_interval", "eval_batches"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1")
        if seed_problem(self.seed):
            problems.append(str(seed_problem(self.seed)))
        if self.micro_batch_size is not None and not 1 <= self.micro_batch_size <= self.batch_size:
            problems.append("micro_batch_size must be between 1 and batch_size")
        if self.stride is not None and self.stride < 1:
            problems.append("stride must be at least 1")
        if not (0.0 < self.val_fraction < 0.5):
            problems.append("val_fraction must be between 0 and 0.5")
        return problems + self._schedule_problems()

    def _schedule_problems(self) -> list[str]:
        """The learning rate, its schedule and warm-up, and Adam's betas."""
        problems = []
        if self.warmup_steps < 0:
            problems.append(f"warmup_steps must be 0 or more (got {self.warmup_steps})")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append(f"the learning rate must be a positive number (got {self.lr})")
        if self.schedule not in ("cosine", "constant"):
            problems.append("schedule must be 'cosine' or 'constant'")
        if not (0.0 <= self.beta1 < 1.0 and 0.0 <= self.beta2 < 1.0):
            problems.append("beta1 and beta2 must be in [0, 1)")
        return problems

    def _precision_problems(self) -> list[str]:
        if self.precision not in PRECISIONS:
            return [f"precision must be one of {', '.join(PRECISIONS)} (got {self.precision!r})"]
        cuda = self.device.startswith("cuda")
        if self.precision == "fp16" and not cuda:
            return [FP16_ON_CPU.format(device=self.device)]
        if self.precision == "bf16" and cuda and torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
            return ["this GPU has no bfloat16: use fp16 (with its gradient scaler) or float32"]
        return []

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
        # saved before these existed: such a run trained in float32, on windows side by side
        data = {"precision": "float32", "stride": None, **data}
        return cls(**{k: v for k, v in data.items() if k in known})
