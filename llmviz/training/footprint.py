"""The memory a training run needs, estimated before anything is built: what the server checks before it lets a run
start (:mod:`llmviz.jobs.admission`).

A training step's peak, in the worker process that trains:

- the **worker**'s own memory (:data:`WORKER_BYTES`: torch and llmviz imported and a first step taken, as a fresh
  interpreter holds them, measured on this project's Linux machine, with a margin: see below);
- the **data**: the text and its token ids (8 bytes a token), and, while the text is tokenized, Python's list of ids
  (:data:`TOKENIZING_BYTES_PER_TOKEN`);
- **parameters**, their **gradients** (trainable ones only) and the **optimizer's state** (:data:`OPTIMIZER_STATES`
  numbers per trainable parameter: Adam and AdamW keep two moments, SGD with momentum one, plain SGD none), all in
  float32 (mixed precision keeps float32 master weights);
- the **activations** the forward pass saves for the backward pass, per token of the batch (batch × context tokens),
  counted per tensor from the GPT's forward pass (:func:`gpt_activation_floats`), and the logits' working copies;
  under bf16 or fp16 autocast the matrix products' outputs take 2 bytes but norms and softmax stay in float32: the
  activations measured 18-27 % smaller on the GPT presets, counted as 25 % smaller (:data:`AUTOCAST_SCALE`), plus a
  16-bit copy of the weights;
- the optimizer step's **working memory**: Adam, AdamW, RMSprop and Adagrad compute a square root of their second
  moments for every trainable number at once (torch.optim's multi-tensor step), after the backward pass has freed
  the activations: a step holds the larger of the two;
- the backward pass's **working memory** besides them: the gradients of the activations flowing back, and blocks
  the allocator has freed but not yet handed back. Measured at 28-42 % of the saved activations (GPT nano to GPT
  mini, Llama-style, mixture of experts, batch 16-64 × 32-128: ``benchmarks/worker_memory.py``), counted as half
  (:data:`WORKING_FRACTION`);
- the **allocator**'s share: what the step holds (the model, its states and the step's peak) counted a tenth larger
  (:data:`ALLOCATOR_MARGIN`): the same run's growth varies by about ±8 % between fresh processes.

Parameters are counted exactly without building the model: on PyTorch's ``meta`` device, which allocates nothing
(:func:`llmviz.models.gpt.count_parameters_without_building` does this for the Model page). Worked example, GPT mini
on a 1,024-token vocabulary, AdamW, batch 16 × 64 tokens:

>>> from llmviz.training.config import TrainConfig
>>> mini = of_config(TrainConfig(model="gpt-mini", batch_size=16, context_length=64), vocab_size=1024)
>>> embeddings = 1024 * 128 + 64 * 128  # tokens, and the 64 positions of the run's context
>>> layer = 2 * 128 + 128 * 384 + (128 * 128 + 128) + 2 * 128 + (128 * 512 + 512) + (512 * 128 + 128)
>>> mini.parameters == embeddings + 4 * layer + 2 * 128 + 128 * 1024  # + final norm and output head
True
>>> mini.parameter_bytes, mini.gradient_bytes, mini.optimizer_bytes  # 4 bytes each; AdamW: 2 × 4 bytes each
(4248576, 4248576, 8497152)
>>> per_token = 4 * (8 * 128 + 2 * 512 + 4 + 4) + (128 + 2 + 128 + 3 * 1024 + 4)  # gpt_activation_floats
>>> mini.activation_bytes == 16 * 64 * per_token * 4
True
>>> size_text(mini.peak_bytes)  # the worker's 384 MB, (17 MB of weights and states, 45 + 23 MB of activations) × 1.1
'476 MB'

Tested against reality in ``tests/unit/training/test_footprint.py``: the activation term against the tensors autograd
really saves (counted with :class:`llmviz.adapt.memory.SavedTensors`), the whole peak against a worker's peak resident
memory after a training step, and each page's estimate against the peak of a worker started as the lab starts it
(forked from the forkserver) and of one started afresh (spawn), per model family (``tests/support/worker_peak.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from llmviz.errors import ConfigError

MB = 2**20
GB = 2**30

#: A fresh interpreter's resident memory once it has imported what a worker imports (the forkserver's preload,
#: :data:`llmviz.jobs.processes.PRELOAD`: torch 219 MB, llmviz's trainer 6 MB, torch._dynamo 71 MB), measured on this
#: project's Linux machine (torch 2.13, CPU, Python 3.11) with ``benchmarks/worker_memory.py``.
WORKER_IMPORTS_BYTES = 295 * MB
#: What a process's first backward pass and optimizer step add beyond the run's own tensors, torch._dynamo already
#: imported: autograd's engine and its threads, the allocator's first arenas (16-22 MB measured, GPT nano, 1-2 threads).
WORKER_FIRST_STEP_BYTES = 22 * MB
#: The margin on the worker's own memory: another machine's libraries and allocator, the next feature's imports.
WORKER_MARGIN = 0.2
#: A worker process's own memory while it trains: its imports and its first step's, counted as a *fresh* interpreter
#: holds them, with :data:`WORKER_MARGIN` (317 MB measured, counted 384 MB). A worker forked from the preloaded
#: forkserver (how the server starts them) shows less, 271 MB after a first step, because a forked process's resident
#: size counts only the library pages it touched since the fork; a worker that starts afresh (a Ray worker, spawn on a
#: platform without a forkserver) counts them all. This once was the forked worker's size plus a fifth (320 MB), which
#: the fresh worker's peak exceeded for small runs (GPT micro 424 MB against 368 estimated in the audit, issue 57).
WORKER_BYTES = 8 * MB * math.ceil((WORKER_IMPORTS_BYTES + WORKER_FIRST_STEP_BYTES) * (1 + WORKER_MARGIN) / (8 * MB))
#: A process's first backward pass and optimizer step, for a task that trains in a worker that may not have trained
#: yet (word vectors): autograd's engine and its threads' arenas, the optimizer's lazy imports (800 modules). 95 MB
#: measured in a fresh process here (2 threads), some 15 MB more on a many-core AMD EPYC; counted as 128 MB.
FIRST_STEP_BYTES = 128 * MB
WORKING_FRACTION = 0.5  # the backward pass's working memory, as a fraction of the saved activations
#: The allocator's share on top of what a step holds (the model, its states and the step's peak): the same run's
#: growth in a fresh process varied by ±8 % from one run to the next here (glibc's arenas and when it hands freed
#: blocks back), and once measured 18 % above its usual size under a busy CI machine; counted as a tenth more.
ALLOCATOR_MARGIN = 0.1
TOKENIZING_BYTES_PER_TOKEN = 36  # a Python int (28 bytes) and its list slot (8) per token while the text is encoded
PRECISIONS = {"float32": 4, "bf16": 2, "fp16": 2}  # bytes of a number in the matrix products
AUTOCAST_SCALE = 0.75  # activations under bf16/fp16 autocast, as a fraction of float32's
OPTIMIZER_STATES = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
SQUARE_ROOTS = {"adagrad", "rmsprop", "adam", "adamw"}  # their step makes a temporary copy of the second moments
FLOAT32 = 4

#: What a refusal calls a model.
MODEL_TITLES = {
    "gpt-nano": "GPT nano",
    "gpt-micro": "GPT micro",
    "gpt-mini": "GPT mini",
    "attn-only-2l": "the attention-only GPT",
    "llama-style": "the Llama-style GPT",
    "qwen-style": "the Qwen-style GPT",
    "moe-tiny": "the mixture of experts",
    "gpt2-124m": "GPT-2 small's shape",
    "smollm2-135m-shapes": "SmolLM2's shape",
}
#: GPT presets a refusal may suggest instead, smallest first.
SMALLER_GPTS = ("gpt-nano", "gpt-micro", "gpt-mini")


def size_text(count: float) -> str:
    """Bytes for a student: GB with one decimal from 1 GB on, whole MB below (one decimal below 1 MB).

    >>> size_text(2.1 * GB), size_text(900 * MB), size_text(3 * MB / 4), size_text(0)
    ('2.1 GB', '900 MB', '0.8 MB', '0 MB')
    """
    if count <= 0:
        return "0 MB"
    if count >= GB:
        return f"{count / GB:.1f} GB"
    if count >= MB:
        return f"{count / MB:.0f} MB"
    return f"{count / MB:.1f} MB"


def parameters_text(count: int) -> str:
    """
    >>> parameters_text(124_439_808), parameters_text(1_064_064), parameters_text(27_000)
    ('124 M parameters', '1.1 M parameters', '27,000 parameters')
    """
    if count >= 10_000_000:
        return f"{count / 1e6:.0f} M parameters"
    if count >= 1_000_000:
        return f"{count / 1e6:.1f} M parameters"
    return f"{count:,} parameters"


@dataclass(frozen=True)
class Footprint:
    """The estimated peak memory of one training run (or task) in its worker, by part, in bytes."""

    what: str  # "Training GPT mini (1.1 M parameters)"
    parameters: int = 0
    trainable: int = 0
    parameter_bytes: int = 0
    gradient_bytes: int = 0
    optimizer_bytes: int = 0
    optimizer_step_bytes: int = 0  # the optimizer step's temporary copy of its state
    activation_bytes: int = 0
    data_bytes: int = 0  # the text and its token ids, held while the run trains
    preparing_bytes: int = 0  # held only while the run is built (the text being tokenized, a model being copied)
    extra_bytes: int = 0  # other copies the run holds while it trains (LoRA's adapted copy of the model)
    worker_bytes: int = WORKER_BYTES
    device: str = "cpu"
    config: Any = None  # the TrainConfig it was estimated from, if any (to say which smaller model would fit)
    batch: int = 0  # windows per step (to say which batch would fit)
    fine_tuned: bool = False  # it trains a picked model: a smaller one is picked in the sidebar
    vocab_size: int = 0
    precision: str = "float32"

    @property
    def model_bytes(self) -> int:
        """Parameters, gradients, optimizer state and other copies of the model: held for the whole run."""
        return self.parameter_bytes + self.gradient_bytes + self.optimizer_bytes + self.extra_bytes

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def device_bytes(self) -> int:
        """What it needs on the GPU (0 on the CPU)."""
        return self.model_bytes + self.peak_step_bytes if self.on_gpu else 0

    @property
    def step_bytes(self) -> int:
        """A step's activations at its peak: those saved for the backward pass and its working memory."""
        return int(self.activation_bytes * (1 + WORKING_FRACTION))

    @property
    def peak_step_bytes(self) -> int:
        """A step's peak beyond the model: its activations, or the optimizer's temporary once they are freed."""
        return max(self.step_bytes, self.optimizer_step_bytes)

    @property
    def training_bytes(self) -> int:
        """What a step holds in the worker's own memory, besides the worker itself and the data."""
        return 0 if self.on_gpu else int((self.model_bytes + self.peak_step_bytes) * (1 + ALLOCATOR_MARGIN))

    @property
    def peak_bytes(self) -> int:
        """The worker's estimated peak resident memory (on the CPU; with a GPU, its host side)."""
        return self.worker_bytes + self.data_bytes + max(self.preparing_bytes, self.training_bytes)


def worker_peak(footprints: Sequence[Footprint]) -> int:
    """One worker running all of ``footprints`` (a race steps its runners in turn): its own memory once, every
    runner's data and model, and the largest step's activations (one step runs at a time).

    >>> a = Footprint("a", parameter_bytes=100, activation_bytes=50, worker_bytes=1000)
    >>> worker_peak([a, a])  # the worker, two models, one step's 50 saved + 25 working, a tenth more for the allocator
    1302
    """
    if not footprints:
        return WORKER_BYTES
    margin = 1 + ALLOCATOR_MARGIN
    held = sum(f.data_bytes + int((0 if f.on_gpu else f.model_bytes) * margin) for f in footprints)
    steps = max(max(f.preparing_bytes, 0 if f.on_gpu else int(f.peak_step_bytes * margin)) for f in footprints)
    return max(f.worker_bytes for f in footprints) + held + steps


def describe(footprints: Sequence[Footprint]) -> str:
    """How a refusal names what was asked: the run itself, or a race ("A race of 3 runs", on the picked model).

    >>> lora = Footprint("LoRA on the picked model (124 M parameters)", parameters=124_439_808, fine_tuned=True)
    >>> describe([lora, lora])
    'A race of 2 runs on the picked model (124 M parameters)'
    """
    if len(footprints) == 1:
        return footprints[0].what
    sizes = {f.parameters for f in footprints}
    if all(f.fine_tuned for f in footprints) and len(sizes) == 1:
        return f"A race of {len(footprints)} runs on the picked model ({parameters_text(sizes.pop())})"
    return f"A race of {len(footprints)} runs"


# ---------------------------------------------------------------------------- activations


def gpt_activation_floats(config, batch: int, tokens: int) -> int:
    """The numbers a GPT's training step keeps for its backward pass (float32 without autocast), counted from its
    forward pass (:class:`llmviz.models.gpt.GPT`, attention by ``F.scaled_dot_product_attention``), per token of the
    batch, and with dropout what its masks and the written-out attention weights add (:func:`dropout_bytes`):

    - each block's attention: its norm's input (and RMSNorm's normalised copy) and statistics, the norm's output
      (W_Q, W_K, W_V's input), their output (d + 2·kv dimensions), RoPE's rotated queries and keys, the attention's
      output (W_O's input) and one log-sum-exp per head;
    - each block's MLP: its norm, the MLP's input, and the hidden layer before and after GELU (SwiGLU: the gate,
      the up projection, SiLU of the gate and their product; a mixture of experts: that for each of the top-k
      experts a token goes to, with its router's scores);
    - the head: the final norm, its output, and the log-softmax of the logits (V per token), plus the logits
      themselves and their gradient while the backward pass starts (2·V), and the token ids;
    - with RoPE, the cosines and sines of every position once.

    Worked example, gpt-micro's shape (d 64, 4 heads, MLP 256, LayerNorm, learned positions) on 512 tokens, 1 × 1:

    >>> from llmviz.models.presets import PRESETS
    >>> layer = 8 * 64 + 2 * 256 + 4 + 4  # attention 6d + H + 2, MLP 2d + 2F + 2
    >>> head = 64 + 2 + 64 + 512 + 4 + 2 * 512  # final norm, its output, log-softmax, ids; logits and gradient
    >>> gpt_activation_floats(PRESETS["gpt-micro"], 1, 1) == 2 * layer + head
    True
    """
    d, heads, kv = config.d_model, config.n_heads, config.kv_heads * config.head_dim
    rms = config.norm == "rmsnorm"
    norm = 2 * d + 1 if rms else d + 2  # F.rms_norm keeps its input and the normalised input; LayerNorm its input
    rope = config.positions == "rope"
    attention = norm + d + (d + 2 * kv) + (d + kv if rope else 0) + d + heads
    width = config.mlp_width
    inner = 4 * width if config.mlp_kind == "swiglu" else 2 * width
    if not config.mlp:
        mlp = 0
    elif config.n_experts:
        mlp = norm + d + 2 * config.n_experts + config.experts_top_k * (3 * d + inner)
    else:
        mlp = norm + d + inner
    head = norm + d + config.vocab_size + 4 + 2 * config.vocab_size
    per_token = config.n_layers * (attention + mlp) + head
    fixed = 2 * tokens * config.head_dim if rope else 0  # RoPE's cos and sin
    return batch * tokens * per_token + fixed + -(-dropout_bytes(config, batch, tokens) // FLOAT32)


#: With dropout, bytes per attention weight (batch × heads × context × context, each layer): a worker's run takes
#: ``scaled_dot_product_attention`` with ``dropout_p``, which on the CPU has no fused kernel and writes the weights out:
#: the softmax, its dropout mask and the dropped weights are saved (the fused kernel without dropout saves one
#: log-sum-exp a row). Measured in a fresh process (gpt-micro's width, context 256, batch 16, 1 to 4 layers): 15.6
#: bytes a weight a layer saved and 7.9 more while one layer's backward runs; counted as 11 and 6, which the step's
#: working fraction (×1.5) makes 16.5 and 9.
DROPOUT_WEIGHT_BYTES_PER_LAYER = 11
DROPOUT_WEIGHT_BYTES_WORKING = 6


def padded_head_bytes(vocab_size: int, d_model: int, tokens: int) -> int:
    """What a GPU training step's padded output head adds (:func:`llmviz.models.padded_head.padded_head`, a head of
    at least 8,192 rows): the weight's padded copy and its gradient while the step runs (2 × (V + pad) × d), and the
    pad's extra logits (the logits, their log-softmax and gradient: 3 × tokens × pad); 0 for a smaller head.

    GPT-2 small (50,257 rows padded to 50,304, d 768) on 8 × 1,024 tokens: 309 MB and 4.6 MB.

    >>> padded_head_bytes(50_257, 768, 8 * 1024), padded_head_bytes(65, 384, 64 * 256)
    (313688064, 0)
    """
    from llmviz.models.padded_head import HEAD_MULTIPLE, PADDED_HEAD_FROM

    if vocab_size < PADDED_HEAD_FROM:
        return 0
    pad = -vocab_size % HEAD_MULTIPLE
    return FLOAT32 * (2 * (vocab_size + pad) * d_model + 3 * tokens * pad)


def dropout_bytes(config, batch: int, tokens: int) -> int:
    """What dropout adds to a GPT's training step (0 without): the attention weights it makes the step keep
    (:data:`DROPOUT_WEIGHT_BYTES_PER_LAYER`, :data:`DROPOUT_WEIGHT_BYTES_WORKING`) and one byte a number for the
    masks of the embeddings' dropout and each block's two residual dropouts (batch × tokens × d_model each).

    nanoGPT's Shakespeare config (6 layers, 6 heads, d 384, context 256, batch 64, dropout 0.2): 25 M attention
    weights a layer, 2.7 GB with the step's working fraction (measured 2.1-2.6 GB more than without dropout):

    >>> from llmviz.models.gpt import GPTConfig
    >>> nano = GPTConfig(vocab_size=65, context_length=256, d_model=384, n_heads=6, n_layers=6, dropout=0.2)
    >>> weights = 64 * 6 * 256 * 256
    >>> dropout_bytes(nano, 64, 256) == weights * (11 * 6 + 6) + 64 * 256 * 384 * (2 * 6 + 1)
    True
    >>> dropout_bytes(nano.replace(dropout=0.0), 64, 256)
    0
    """
    if not config.dropout:
        return 0
    weights = batch * config.n_heads * tokens * tokens  # (B, H, T, T) a layer
    attention = weights * (DROPOUT_WEIGHT_BYTES_PER_LAYER * config.n_layers + DROPOUT_WEIGHT_BYTES_WORKING)
    masks = batch * tokens * config.d_model * (2 * config.n_layers + 1)  # bool masks of the (B, T, C) dropouts
    return attention + masks


def char_activation_floats(model: torch.nn.Module, vocab_size: int, batch: int, tokens: int) -> int:
    """A character-level model's activations, bounded from its shapes: per token, three vocabulary-wide rows
    (logits, their log-softmax and gradient) and eight times the widest layer (an RNN's or GRU's gates, an MLP's
    hidden layer before and after its nonlinearity, an embedding window). These models are tiny beside the worker."""
    widest = max((max(p.shape) for p in model.parameters() if p.dim() >= 2), default=vocab_size)
    return batch * tokens * (3 * vocab_size + 8 * min(widest, 4096))


# ---------------------------------------------------------------------------- from a configuration


def _skeleton(config, vocab_size: int) -> torch.nn.Module:
    """The model a TrainConfig builds, on the meta device: shapes, no memory."""
    from llmviz.training.trainer import build_model

    with torch.device("meta"):
        return build_model(config, vocab_size)


@dataclass(frozen=True)
class Shape:
    """How a run steps: windows per step, tokens per window, its optimizer and device (a TrainConfig has them all;
    the names classifier's fine-tuning has no context of its own)."""

    batch_size: int
    context_length: int
    optimizer: str = "adamw"
    device: str = "cpu"

    @classmethod
    def of(cls, config, context: int | None = None) -> Shape:
        """The shape of any run's config (``context`` where the config has none)."""
        return cls(
            config.batch_size,
            getattr(config, "context_length", None) or context or 1,
            getattr(config, "optimizer", "adamw"),
            str(getattr(config, "device", "cpu")),
        )


def _activation_bytes(model: torch.nn.Module, shape: Shape, parameters: int, precision: str) -> int:
    """The bytes a training step of ``model`` keeps for its backward pass in steps of ``shape``: its activations
    (scaled under autocast, plus the 16-bit copy of its weights), and on CUDA a GPT's padded output head."""
    from llmviz.models.gpt import GPT

    batch, context = shape.batch_size, shape.context_length
    if isinstance(model, GPT):
        floats = gpt_activation_floats(model.config, batch, context)
    else:
        floats = char_activation_floats(model, getattr(model, "vocab_size", 0), batch, context)
    activation = floats * FLOAT32
    if precision != "float32":
        activation = int(activation * AUTOCAST_SCALE) + parameters * PRECISIONS[precision]  # + the 16-bit weights
    if isinstance(model, GPT) and shape.device.startswith("cuda"):
        activation += padded_head_bytes(model.config.vocab_size, model.config.d_model, batch * context)
    return activation


def of_model(
    model: torch.nn.Module,
    shape: Shape,
    *,
    what: str,
    trainable: int | None = None,
    tokens: int = 0,
    text_bytes: int = 0,
    precision: str = "float32",
    copies: int = 0,
    config: Any = None,
) -> Footprint:
    """The footprint of training ``model`` (built, or a skeleton on the meta device) in steps of ``shape``.
    ``trainable``: parameters that train (default: all that require a gradient; LoRA: the adapters'); ``tokens``: the
    tokens of the text (``text_bytes``: its size, when the worker tokenizes it); ``copies``: other whole copies of
    the weights the run holds (LoRA keeps the plain model and its adapted copy); ``config``: the TrainConfig, to say
    which smaller model would fit."""
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)} (got {precision!r})")
    parameters = sum(p.numel() for p in model.parameters())
    if trainable is None:
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if getattr(model, "trained_by_counting", False):
        trainable = 0
    activation = _activation_bytes(model, shape, parameters, precision)
    vocab = getattr(getattr(model, "config", None), "vocab_size", None) or getattr(model, "vocab_size", 0)
    return Footprint(
        what=what,
        parameters=parameters,
        trainable=trainable,
        parameter_bytes=parameters * FLOAT32,
        gradient_bytes=trainable * FLOAT32,
        optimizer_bytes=OPTIMIZER_STATES.get(shape.optimizer, 2) * trainable * FLOAT32,
        optimizer_step_bytes=trainable * FLOAT32 if shape.optimizer in SQUARE_ROOTS else 0,
        activation_bytes=activation,
        data_bytes=text_bytes + 8 * tokens,
        preparing_bytes=TOKENIZING_BYTES_PER_TOKEN * tokens if text_bytes else 0,
        extra_bytes=copies * parameters * FLOAT32,
        device=shape.device,
        config=config,
        batch=shape.batch_size,
        vocab_size=int(vocab or 0),
        precision=precision,
    )


def of_config(
    config, vocab_size: int, *, text_bytes: int = 0, tokens: int | None = None, precision: str = "float32"
) -> Footprint:
    """The footprint of a run of TrainConfig ``config`` on a ``vocab_size`` vocabulary, without building it.
    ``text_bytes``: the text the worker will tokenize (its tokens are at most its UTF-8 bytes: a character tokenizer
    or a byte-level BPE never makes more; ``tokens`` when known)."""
    model = _skeleton(config, vocab_size)
    count = tokens if tokens is not None else text_bytes
    return of_model(
        model,
        Shape.of(config),
        config=config,
        what=f"Training {model_title(config)} ({parameters_text(sum(p.numel() for p in model.parameters()))})",
        tokens=count,
        text_bytes=text_bytes,
        precision=precision,
    )


def of_trainer(trainer) -> Footprint:
    """The footprint of a built trainer (a :class:`~llmviz.training.trainer.Trainer`, or any runner the job system
    drives: its ``model``, ``config`` and what it ``describe()``s: its tokens, other copies of its weights), whose
    model the server has built: its model as it is, its token ids, and the pickled copy the worker unpacks it from."""
    if hasattr(trainer, "footprint"):  # a run that knows its own (a sparse autoencoder's)
        return trainer.footprint()
    model, config = trainer.model, trainer.config
    given = trainer.describe()  # every runner describes itself (llmviz.jobs.runners)
    tokens = int(given.get("train_tokens", 0)) + int(given.get("val_tokens", 0))
    parameters = sum(p.numel() for p in model.parameters())
    autocast = getattr(trainer, "autocast_dtype", None)
    precision = "bf16" if autocast == torch.bfloat16 else "fp16" if autocast is not None else "float32"
    adapted = getattr(trainer, "adapted", None)
    trainable = (
        sum(p.numel() for p in adapted.parameters() if p.requires_grad) if adapted is not None else None
    )  # LoRA: the adapters train, the plain model holds the merged weights
    context = getattr(getattr(model, "config", None), "context_length", None)
    plain = hasattr(config, "model") and hasattr(config, "replace") and not getattr(config, "init", None)
    found = of_model(
        model,
        Shape.of(config, context),
        what=f"Training {model_title(config)} ({parameters_text(parameters)})",
        trainable=trainable,
        precision=precision,
        copies=int(given.get("copies", 1 if adapted is not None else 0)),  # LoRA's adapted model, DPO's reference
        config=config if plain else None,
    )
    unpacking = found.parameter_bytes + 8 * tokens  # the pickled trainer, while the worker unpacks it
    return replace(found, data_bytes=8 * tokens, preparing_bytes=unpacking + found.model_bytes, fine_tuned=not plain)


def fine_tuning(
    gpt_config,
    config,
    *,
    what: str,
    text_bytes: int,
    trainable: int | None = None,
    copies: int = 0,
    precision: str = "float32",
) -> Footprint:
    """Fine-tuning a GPT of ``gpt_config`` (a picked model, sent to the worker with the run) as TrainConfig
    ``config`` says: its weights arrive pickled and are copied before training (``preparing``); ``trainable``
    and ``copies`` as in :func:`of_model`."""
    from llmviz.models.gpt import GPT

    with torch.device("meta"):
        model = GPT(gpt_config, initialise=False)
    found = of_model(
        model,
        Shape.of(config, gpt_config.context_length),
        what=what,
        trainable=trainable,
        tokens=text_bytes,
        text_bytes=text_bytes,
        precision=precision,
        copies=copies,
    )
    arriving = 2 * found.parameter_bytes  # the pickled weights and the model unpacked from them, then the copy
    return replace(found, preparing_bytes=max(found.preparing_bytes, arriving + found.model_bytes), fine_tuned=True)


def task(what: str, working_bytes: int = 0) -> Footprint:
    """A task that is not a training run (a BPE tokenizer, word vectors): the worker and what it says it uses."""
    return Footprint(what=f"This task ({what})", preparing_bytes=working_bytes)


def model_task(what: str, model: torch.nn.Module, copies: float, working_bytes: int = 0) -> Footprint:
    """A task on a model (a LoRA demo, a quantization report, a memory measurement): the worker receives its own copy
    of the model, and the task makes ``copies`` more of its weights' size (adapted copies, gradients, an optimizer's
    moments, quantized copies), plus ``working_bytes`` (activations).

    >>> model_task("a demo", torch.nn.Linear(1000, 1000), copies=2).preparing_bytes  # (1 + 2) × 1,001,000 × 4 bytes
    12012000
    """
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    return task(what, int((1 + copies) * weights) + working_bytes)


def sparse_autoencoder(model_config, config, d_in: int) -> Footprint:
    """A sparse autoencoder run (:class:`llmviz.interpret.sae.SaeConfig` ``config``) reading ``d_in`` numbers of a
    GPT of ``model_config``: the autoencoder's weights, gradients and Adam's two moments, a batch's activations
    (pre-activations, features, their gradients), the gathered activations (float32), and the model it reads (for
    the spliced-in loss). Gathering runs the model over windows of 16 rows (``preparing``).

    >>> from llmviz.models.presets import PRESETS
    >>> from llmviz.interpret.sae import SaeConfig
    >>> found = sparse_autoencoder(PRESETS["gpt-mini"], SaeConfig(d_sae=1024, k=16, tokens=65_536), 128)
    >>> found.parameters, found.data_bytes // MB
    (263296, 36)
    """
    parameters = 2 * d_in * config.d_sae + config.d_sae + d_in
    weights = 4 * parameters
    from llmviz.models.gpt import GPT

    with torch.device("meta"):
        model_bytes = 4 * sum(p.numel() for p in GPT(model_config, initialise=False).parameters())
    data = activation_floats = 4 * config.tokens * d_in
    step = 4 * config.batch * (6 * config.d_sae + 4 * d_in)  # pre, f, their grads, topk's copies; x, x̂, errors
    rows = 16 * model_config.context_length  # one gathering pass: the model's activations for 16 windows
    gathering = 4 * rows * (12 * model_config.d_model + 2 * model_config.mlp_width) + activation_floats
    return Footprint(
        what=f"A sparse autoencoder of {config.d_sae:,} features on {d_in} numbers at {config.hook}",
        parameters=parameters,
        trainable=parameters,
        parameter_bytes=weights,
        gradient_bytes=weights,
        optimizer_bytes=2 * weights,
        activation_bytes=int(step / (1 + WORKING_FRACTION)),
        data_bytes=data + model_bytes,
        preparing_bytes=gathering,
    )


def unknown() -> Footprint:
    """A run built in its worker with no estimate given: the worker's own memory only (the CLI, notebooks)."""
    return Footprint(what="This run")


def model_title(config) -> str:
    from llmviz.models.charlevel import CHAR_MODEL_TITLES

    if getattr(config, "init", None):
        return f"a model fine-tuned from {config.init}"
    if not hasattr(config, "model"):
        return "a fine-tuned model"
    if config.model in CHAR_MODEL_TITLES:
        return f"the character-level {CHAR_MODEL_TITLES[config.model]}"
    return MODEL_TITLES.get(config.model, config.model)


# ---------------------------------------------------------------------------- what would fit


def largest_batch(footprint: Footprint, left: int) -> int | None:
    """The largest batch below the footprint's that fits in ``left`` bytes (activations grow with the batch), or None.

    >>> f = Footprint("f", activation_bytes=800, worker_bytes=1000, batch=8)  # 150 bytes a window at its peak
    >>> largest_batch(f, 1700), largest_batch(f, 1100)
    (4, None)
    """
    if footprint.batch <= 1:
        return None
    per_window = footprint.step_bytes / footprint.batch
    room = left - (footprint.worker_bytes + footprint.data_bytes + footprint.model_bytes)
    if room < per_window:
        return None
    batch = min(footprint.batch - 1, int(room // per_window))
    return 2 ** int(math.log2(batch)) if batch >= 1 else None


def suggestion(footprints: Sequence[Footprint], left: int) -> str:
    """What would fit in ``left`` bytes instead, as the end of a refusal: ": pick GPT mini, or lower the batch to 4";
    "" when nothing simple would.

    >>> from llmviz.training.config import TrainConfig
    >>> big = of_config(TrainConfig(model="gpt2-124m", batch_size=8, context_length=128), vocab_size=512)
    >>> suggestion([big], 500 * MB)  # its weights and AdamW states alone are 1.4 GB: no batch makes it fit
    ': pick GPT mini'
    >>> suggestion([big], 2 * GB)
    ': pick GPT mini, or lower the batch to 2'
    >>> suggestion([big], 100 * MB)  # less than a worker's own memory
    ': stop one of your runs, or wait until one ends'
    """
    if footprints and left < max(f.worker_bytes for f in footprints):  # not even a worker's own memory is left
        return ": stop one of your runs, or wait until one ends"
    if len(footprints) != 1:
        if all(f.fine_tuned for f in footprints):
            return ": pick a smaller model in the sidebar"
        return ": stop one of your runs, or race fewer or smaller models" if left else ""
    footprint, ideas = footprints[0], []
    if footprint.fine_tuned:
        ideas.append("pick a smaller model in the sidebar")
    elif footprint.config is not None and footprint.vocab_size:
        smaller = smaller_model(footprint, left)
        if smaller:
            ideas.append(f"pick {MODEL_TITLES[smaller]}")
    batch = largest_batch(footprint, left)
    if batch is not None:
        ideas.append(f"lower the batch to {batch}")
    return ": " + ", or ".join(ideas) if ideas else ""


def smaller_model(footprint: Footprint, left: int) -> str | None:
    """The largest of :data:`SMALLER_GPTS` that is smaller than the footprint's model and fits in ``left`` bytes."""
    from llmviz.models.presets import PRESETS

    config = footprint.config
    for name in reversed(SMALLER_GPTS):
        if name == config.model or name not in PRESETS:
            continue
        preset = config.replace(model=name, d_model=None, n_layers=None, n_heads=None, architecture=None)
        smaller = of_config(preset, footprint.vocab_size)
        if smaller.parameters < footprint.parameters and smaller.peak_bytes <= left:
            return name
    return None


# ---------------------------------------------------------------------------- the GPU


def device_free_bytes(device: str) -> int:
    """Free memory on a CUDA device now (``torch.cuda.mem_get_info``); 0 when there is no such device."""
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return 0
    free, _total = torch.cuda.mem_get_info(torch.device(device).index)  # None: the current device
    return int(free)
