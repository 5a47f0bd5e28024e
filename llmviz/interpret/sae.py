"""Sparse autoencoders: find the *features* a model's activations are built from, by dictionary learning.

An activation vector x (d_in,) at one hook point (a layer's residual stream, or its MLP hidden layer) is written as a
sparse, non-negative mix of learned directions (Anthropic, "Towards Monosemanticity", 2023; OpenAI's TopK
autoencoders, Gao et al. 2024; the SAELens library's conventions: ours load into SAELens's, and SAELens's into ours
through :func:`from_sae_lens`, which reads from SAELens's config how its TopK chose; a raw SAELens TopK state dict
given to ``load_state_dict`` is refused in one line, a ReLU one loaded with its decoder's lengths folded):

    f = σ((x − b_dec) W_enc + b_enc)      (d_sae,)   the feature activations, mostly zero
    x̂ = f W_dec + b_dec                   (d_in,)    the reconstruction: a sum of W_dec's rows, each unit length

where σ is TopK (keep the k largest pre-activations, ReLU'd; L0 ≤ k by construction) or a ReLU with an L1 penalty
λ·Σ|f_i|·‖W_dec,i‖ in the loss. The loss is the squared error summed over d_in, averaged over the tokens (SAELens's
``mse_loss``), plus the penalty.

What a run records per step (:class:`SaeMetrics`): the reconstruction error, the **fraction of variance explained**
1 − Σ‖x − x̂‖² / Σ‖x − x̄‖², **L0** (active features per token), the **dead features** (no firing in the last
``dead_window`` tokens), and every ``eval_every`` steps the model's own loss with x̂ spliced in at the hook point
(:func:`spliced_losses`) beside the clean loss and the loss with the hook point zeroed: the share of the model's
behaviour the features keep.

:class:`SaeTrainer` is a lab run: the job worker steps it like a model's Trainer (progress, pause, stop, snapshots of
the autoencoder's weights, memory admission through :func:`llmviz.training.footprint.sparse_autoencoder`).

>>> config = SaeConfig(layer=0, point="resid_post", d_sae=16, k=2)
>>> config.hook, config.sparsity
('blocks.0.resid_post', 'TopK k=2')
>>> sae = SparseAutoencoder(d_in=4, d_sae=16, k=2)
>>> f = sae.encode(torch.randn(3, 4))
>>> tuple(f.shape), bool(((f > 0).sum(-1) <= 2).all())
((3, 16), True)
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.device import seed_problem
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT, block_points, cache_name

#: where an autoencoder may read: the residual stream before/after a block's attention and MLP, or the MLP's hidden
POINTS = ("resid_pre", "resid_mid", "resid_post", "mlp.hidden")
MAX_D_SAE = 65_536
MAX_TOKENS = 4_000_000  # activations gathered for one run
MAX_STEPS = 1_000_000
MAX_BATCH = 65_536
WEIGHTS_FILE = "sae.safetensors"
CONFIG_FILE = "sae.json"
LABELS_FILE = "labels.json"
FORMAT = "llmviz-sae"


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


@dataclass(frozen=True)
class SaeConfig:
    """One sparse autoencoder run: where it reads (``layer``, ``point``), its size and sparsity, and its training.

    ``k`` > 0: TopK with that k (``l1`` must be 0); ``k`` = 0: ReLU with the L1 coefficient ``l1`` (> 0).

    >>> SaeConfig(d_sae=64, k=0, l1=1e-3).sparsity
    'L1 λ=0.001'
    >>> SaeConfig(d_sae=8, k=9)
    Traceback (most recent call last):
    ...
    llmviz.errors.ConfigError: TopK's k = 9 must be between 1 and the dictionary size 8.
    """

    layer: int = 1
    point: str = "resid_post"
    d_sae: int = 512
    k: int = 16
    l1: float = 0.0
    lr: float = 1e-3
    steps: int = 600
    batch: int = 512
    tokens: int = 65_536  # activations gathered from the corpus
    seed: int = 0
    dead_window: int = 20_000  # a feature that has not fired in this many tokens is dead
    eval_every: int = 100  # the spliced-in loss every this many steps (0: only at the end)
    eval_windows: int = 4  # windows of the corpus the spliced-in loss is measured on

    def __post_init__(self) -> None:
        _check(self.point in POINTS, f"An autoencoder reads one of {', '.join(POINTS)} (got {self.point!r}).")
        _check(isinstance(self.layer, int) and self.layer >= 0, f"A layer is a whole number from 0 (got {self.layer}).")
        _check(1 <= self.d_sae <= MAX_D_SAE, f"The dictionary size must be 1–{MAX_D_SAE:,} (got {self.d_sae}).")
        if self.k:
            _check(
                1 <= self.k <= self.d_sae,
                f"TopK's k = {self.k} must be between 1 and the dictionary size {self.d_sae}.",
            )
            _check(self.l1 == 0, "Give TopK's k or an L1 coefficient, not both (k = 0 for L1).")
        else:
            _check(math.isfinite(self.l1) and self.l1 > 0, "Without TopK (k = 0) give an L1 coefficient above 0.")
        _check(math.isfinite(self.lr) and 0 < self.lr <= 1, f"The learning rate must be in (0, 1] (got {self.lr}).")
        _check(1 <= self.steps <= MAX_STEPS, f"Steps must be 1–{MAX_STEPS:,} (got {self.steps}).")
        _check(1 <= self.batch <= MAX_BATCH, f"The batch must be 1–{MAX_BATCH:,} tokens (got {self.batch}).")
        _check(
            self.batch <= self.tokens <= MAX_TOKENS,
            f"Gather between the batch ({self.batch}) and {MAX_TOKENS:,} tokens (got {self.tokens}).",
        )
        _check(self.dead_window >= 1 and self.eval_every >= 0, "The dead window is ≥ 1 and eval_every ≥ 0.")
        _check(1 <= self.eval_windows <= 64, "Measure the spliced-in loss on 1–64 windows.")
        _check(seed_problem(self.seed) is None, f"{str(seed_problem(self.seed)).capitalize()}.")

    @property
    def hook(self) -> str:
        return cache_name(self.layer, self.point)

    @property
    def sparsity(self) -> str:
        return f"TopK k={self.k}" if self.k else f"L1 λ={self.l1:g}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> SaeConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(values) - names
        _check(not unknown, f"An autoencoder's config has no {', '.join(sorted(unknown))}.")
        default = cls()
        for name, value in values.items():  # a damaged sae.json: one sentence, never a TypeError from a comparison
            want = type(getattr(default, name))
            kind = (int, float) if want is float else want
            _check(
                isinstance(value, kind) and not isinstance(value, bool),
                f"An autoencoder's config has {name} = {str(value)[:40]!r}, not a {want.__name__}.",
            )
        return cls(**values)


def input_width(model: GPT, config: SaeConfig) -> int:
    """d_in: the width of ``config``'s hook point in ``model``; a hook point the model lacks is refused.

    >>> from llmviz.models.presets import PRESETS
    >>> model = GPT(PRESETS["gpt-nano"])
    >>> input_width(model, SaeConfig(layer=0, point="resid_post", d_sae=8, k=1)), model.config.d_model
    (32, 32)
    """
    n_layers = model.config.n_layers
    _check(
        0 <= config.layer < n_layers, f"Layer {config.layer} does not exist: this model has layers 0–{n_layers - 1}."
    )
    _check(
        config.point in block_points(model.config),
        f"This model has no {config.point} (its blocks have {', '.join(block_points(model.config))}).",
    )
    _check(not model.config.n_experts or config.point != "mlp.hidden", "A mixture of experts has no one MLP hidden.")
    return model.config.mlp_width if config.point == "mlp.hidden" else model.config.d_model


def model_fingerprint(model: nn.Module) -> str:
    """A short id of a model's weights (sha256 of its tensors in name order): an autoencoder is for these weights.

    >>> len(model_fingerprint(nn.Linear(2, 2)))
    16
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


# ---------------------------------------------------------------------------- the autoencoder


#: W_enc starts as ENCODER_INIT_SCALE × W_dec's transpose. The transpose is Gao et al. 2024's ("Scaling and evaluating
#: sparse autoencoders", §2.1/A.1); the 0.1 is SAELens's ``decoder_init_norm`` default (Anthropic's Circuits Update,
#: April 2024), which SAELens applies to W_dec and then copies to W_enc. Our decoder rows stay unit length (Gao et
#: al.'s constraint), so only the encoder takes the 0.1: Adam's steps, of a fixed size, are then ten times as large
#: relative to the encoder's entries, and a short run learns faster. On the shipped GPT's
#: activations (benchmarks/sae.py, 400 steps) variance explained went from 0.899 (scale 1) to 0.908 (SAELens 0.910).
ENCODER_INIT_SCALE = 0.1


class SparseAutoencoder(nn.Module):
    """The autoencoder: W_enc (d_in, d_sae), b_enc (d_sae,), W_dec (d_sae, d_in) with unit rows, b_dec (d_in,) —
    SAELens's names and shapes. ``k`` > 0: TopK; ``k`` = 0: ReLU (trained with an L1 penalty)."""

    def __init__(self, d_in: int, d_sae: int, k: int = 0, generator: torch.Generator | None = None):
        super().__init__()
        self.d_in, self.d_sae, self.k = d_in, d_sae, k
        rows = torch.randn(d_sae, d_in, generator=generator)  # (S, D)
        rows = rows / rows.norm(dim=1, keepdim=True)
        self.W_dec = nn.Parameter(rows)  # (S, D): each feature's direction, unit length
        self.W_enc = nn.Parameter(ENCODER_INIT_SCALE * rows.t())  # (D, S): the decoder's transpose, scaled down
        self.b_enc = nn.Parameter(torch.zeros(d_sae))  # (S,)
        self.b_dec = nn.Parameter(torch.zeros(d_in))  # (D,): the pre-encoder bias, subtracted before encoding

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        """``load_state_dict`` keeps the decoder's rows unit length on every path (:func:`unit_decoder`): a raw
        SAELens state dict (its keys are ours) with rows of other lengths is folded (ReLU, the same reconstructions)
        or refused in one line (TopK: convert it with :func:`from_sae_lens`), never loaded to reconstruct wrongly."""
        keys = {name: prefix + name for name in ("W_enc", "b_enc", "W_dec", "b_dec")}
        own = {name: state_dict[key] for name, key in keys.items() if key in state_dict}
        fits = len(own) == 4 and all(tuple(own[name].shape) == tuple(getattr(self, name).shape) for name in own)
        if fits:  # otherwise torch says what is missing or of the wrong shape
            where = "The state dict given to SparseAutoencoder.load_state_dict"
            state_dict.update({keys[name]: tensor for name, tensor in unit_decoder(own, self.k, where).items()})
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.b_dec) @ self.W_enc + self.b_enc  # (..., S)

    def activate(self, pre: torch.Tensor) -> torch.Tensor:
        """σ: TopK (the k largest, ReLU'd, the rest 0) or ReLU."""
        if not self.k:
            return F.relu(pre)  # (..., S)
        values, indices = pre.topk(self.k, dim=-1, sorted=False)  # (..., k)
        return torch.zeros_like(pre).scatter_(-1, indices, values.relu())  # (..., S)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_in) → (..., d_sae) feature activations."""
        return self.activate(self.pre_activations(x))

    def decode(self, f: torch.Tensor) -> torch.Tensor:
        """(..., d_sae) → (..., d_in)."""
        return f @ self.W_dec + self.b_dec  # (..., D)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = self.encode(x)  # (..., S)
        return self.decode(f), f

    def losses(self, x: torch.Tensor, l1: float = 0.0) -> dict[str, torch.Tensor]:
        """SAELens's training loss on a batch x (N, d_in): ``mse`` Σ_d (x̂ − x)² averaged over tokens, ``l1``
        λ·Σ_i f_i·‖W_dec,i‖ averaged over tokens, ``loss`` their sum; with ``recon`` and ``f``."""
        recon, f = self(x)  # (N, D), (N, S)
        mse = (recon - x).pow(2).sum(-1).mean()
        sparsity = l1 * (f * self.W_dec.norm(dim=1)).sum(-1).mean() if l1 else torch.zeros((), device=x.device)
        return {"loss": mse + sparsity, "mse": mse, "l1": sparsity, "recon": recon, "f": f}

    @torch.no_grad()
    def normalise_decoder(self) -> None:
        """Every decoder row back to unit length (after an optimizer step)."""
        self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12))

    @torch.no_grad()
    def remove_parallel_gradient(self) -> None:
        """Take out of W_dec's gradient its part along each row, which the unit-norm constraint undoes anyway."""
        if self.W_dec.grad is None:
            return
        along = (self.W_dec.grad * self.W_dec).sum(dim=1, keepdim=True)  # (S, 1)
        self.W_dec.grad.sub_(along * self.W_dec)


def variance_explained(x: torch.Tensor, recon: torch.Tensor) -> float:
    """1 − Σ‖x − x̂‖² / Σ‖x − x̄‖² over the tokens of x (N, d_in).

    >>> x = torch.tensor([[1.0, 0.0], [3.0, 0.0]])
    >>> variance_explained(x, torch.tensor([[1.5, 0.0], [2.5, 0.0]]))  # error 0.5, variance 2
    0.75
    """
    x, recon = x.detach(), recon.detach()
    error = (x - recon).pow(2).sum()
    total = (x - x.mean(0)).pow(2).sum().clamp_min(1e-12)
    return float(1 - error / total)


# ---------------------------------------------------------------------------- activations from a corpus


def corpus_windows(ids: list[int] | torch.Tensor, context: int, tokens: int) -> torch.Tensor:
    """(W, context): the corpus cut into whole windows, enough of them for ``tokens`` tokens (fewer if the corpus is
    shorter). A corpus shorter than one window is refused.

    >>> corpus_windows(list(range(10)), 4, 6).tolist()
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    """
    ids = torch.as_tensor(ids, dtype=torch.long)
    _check(len(ids) >= context, f"The corpus has {len(ids)} tokens: fewer than one window of {context}.")
    count = min(len(ids) // context, math.ceil(tokens / context))
    return ids[: count * context].view(count, context)  # (W, T)


def activation_bytes(tokens: int, d_in: int) -> int:
    return 4 * tokens * d_in


class _Reached(Exception):
    """Raised by the hook that has what it needs: the rest of the forward pass is not computed."""


@torch.no_grad()
def activations_at(model: GPT, rows: torch.Tensor, hook: str) -> torch.Tensor:
    """(B, T, d_in) float32: ``model``'s tensor at ``hook`` for ``rows`` (B, T), the forward pass stopped there (the
    later blocks and the unembedding are not run: TransformerLens's ``stop_at_layer``)."""
    kept: list[torch.Tensor] = []

    def stop(x: torch.Tensor, name: str) -> None:
        kept.append(x.detach().float())
        raise _Reached

    try:
        model.run_with_hooks(rows, hooks={hook: stop})
    except _Reached:
        return kept[0]
    raise ConfigError(f"This model has no {hook}.")


@torch.no_grad()
def gather_activations(
    model: GPT, windows: torch.Tensor, hook: str, max_bytes: int | None = None, rows_per_pass: int = 16
) -> torch.Tensor:
    """(W, T, d_in) float32 activations at ``hook`` for every window (W, T), through ``run_with_hooks`` with only
    that name kept. Counted before anything is allocated (``max_bytes``); NaN or infinite activations are refused."""
    config = model.config
    width = config.mlp_width if hook.endswith("mlp.hidden") else config.d_model
    count, length = windows.shape
    need = activation_bytes(count * length, width)
    if max_bytes is not None and need > max_bytes:
        raise ConfigError(
            f"{count * length:,} tokens of {width} activations need {need / 2**20:,.0f} MB; "
            f"{max_bytes / 2**20:,.0f} MB fit: gather fewer tokens."
        )
    device = next(model.parameters()).device
    out = torch.empty(count, length, width)  # (W, T, D)
    for start in range(0, count, rows_per_pass):
        rows = windows[start : start + rows_per_pass].to(device)  # (b, T)
        out[start : start + len(rows)] = activations_at(model, rows, hook)  # (b, T, D)
    if not torch.isfinite(out).all():
        raise ConfigError(f"The activations at {hook} hold NaN or infinite numbers: this model's weights are broken.")
    return out


# ---------------------------------------------------------------------------- the model's loss with x̂ spliced in


def splice_hook(sae: SparseAutoencoder, features: list[int] | None = None, mode: str = "reconstruction"):
    """A hook that puts the autoencoder at its hook point (B, T, d_in).

    ``mode="reconstruction"``: x → x̂, with ``features`` (if any) set to 0 first; ``mode="subtract"``: x → x − Σ_i
    f_i·W_dec,i over ``features`` (the rest of x, the autoencoder's error included, stays)."""
    knocked = list(features or [])

    def hook(x: torch.Tensor, name: str) -> torch.Tensor:
        f = sae.encode(x.float())  # (B, T, S)
        if mode == "subtract":
            taken = f[..., knocked] @ sae.W_dec[knocked]  # (B, T, D)
            return (x.float() - taken).to(x.dtype)
        if knocked:
            f = f.clone()
            f[..., knocked] = 0.0
        return sae.decode(f).to(x.dtype)  # (B, T, D)

    return hook


def zero_hook(x: torch.Tensor, name: str) -> torch.Tensor:
    return torch.zeros_like(x)


@dataclass(frozen=True)
class SplicedLoss:
    """The model's mean next-token loss on some windows: ``clean``, with x̂ ``spliced`` in at the hook point, and with
    the hook point ``zeroed``. ``recovered`` = (zeroed − spliced) / (zeroed − clean): 1 when the features keep all of
    the model's behaviour there, 0 when they keep no more than nothing."""

    clean: float
    spliced: float
    zeroed: float

    @property
    def recovered(self) -> float:
        gap = self.zeroed - self.clean
        return (self.zeroed - self.spliced) / gap if abs(gap) > 1e-12 else float("nan")


@torch.no_grad()
def spliced_losses(model: GPT, sae: SparseAutoencoder, hook: str, windows: torch.Tensor) -> SplicedLoss:
    """:class:`SplicedLoss` of ``model`` on ``windows`` (W, T) with ``sae`` at ``hook``."""
    device = next(model.parameters()).device
    rows = windows.to(device)  # (W, T)
    inputs, targets = rows[:, :-1], rows[:, 1:]  # (W, T-1) each
    losses = []
    for hooks in ({}, {hook: splice_hook(sae)}, {hook: zero_hook}):
        _, loss, _ = model.run_with_hooks(inputs, targets, hooks=hooks)
        losses.append(float(loss))
    return SplicedLoss(*losses)


# ---------------------------------------------------------------------------- training, as a lab run


@dataclass(frozen=True)
class SaeMetrics:
    """One step of an autoencoder run (what a page plots)."""

    step: int
    train_loss: float  # the training loss (reconstruction + penalty)
    mse: float  # Σ_d (x − x̂)² per token
    variance_explained: float
    l0: float  # active features per token
    dead: int  # features that have not fired in the last dead_window tokens
    tokens_per_s: float
    spliced: SplicedLoss | None = None  # every eval_every steps
    val_loss: float | None = None  # the spliced-in loss when measured (a run's "validation" number)

    @property
    def perplexity(self) -> float:
        return math.exp(min(self.train_loss, 50.0))

    def summary(self) -> str:
        """A progress line: ``variance explained 0.912 · L0 16.0 · dead 3``."""
        return f"variance explained {self.variance_explained:.3f} · L0 {self.l0:.1f} · dead {self.dead}"


@dataclass
class SaeTrainer:
    """Trains a :class:`SparseAutoencoder` on gathered activations (N, d_in): a runner of the jobs layer's interface
    (:mod:`llmviz.jobs.runners`: ``kind``, ``run``, ``step``, ``history``, ``model`` for snapshots, ``config.steps``,
    ``describe``), kept in the lab as an ``"autoencoder"`` run."""

    kind: ClassVar[str] = "autoencoder"

    config: SaeConfig
    activations: torch.Tensor  # (N, D), float32
    lm: GPT | None  # the model read (for the spliced-in loss; None: activations from elsewhere, no such loss)
    eval_windows: torch.Tensor  # (E, T)
    model_id: dict = field(default_factory=dict)  # what the autoencoder is for (see save)
    tokenizer: Any = None
    step: int = 0
    history: list[SaeMetrics] = field(default_factory=list)

    def __post_init__(self) -> None:
        generator = torch.Generator().manual_seed(self.config.seed)
        _, width = self.activations.shape
        self.model = SparseAutoencoder(width, self.config.d_sae, self.config.k, generator)
        with torch.no_grad():  # b_dec starts at the mean activation (a cheap geometric-median stand-in)
            self.model.b_dec.copy_(self.activations.mean(0))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.config.lr)
        self.rng_state = generator.get_state()
        self.since_fired = torch.zeros(self.config.d_sae, dtype=torch.long)  # (S,) tokens since each last fired
        if self.lm is not None:
            self.lm.eval()

    def describe(self) -> dict:
        """What a page knows about this run before opening a snapshot (the runner interface's ``describe``)."""
        return {
            # the model it reads (name, config, weights' fingerprint): a kept run is checked against the picked model
            "description": {
                "kind": "sae",
                "config": self.config.to_dict(),
                "d_in": self.model.d_in,
                "model": self.model_id,
            },
            "config": self.config,
            "tokenizer": self.tokenizer,
            "vocab_size": self.lm.config.vocab_size if self.lm is not None else 0,
            "train_tokens": len(self.activations),
            "val_tokens": int(self.eval_windows.numel()),
        }

    def footprint(self):
        from llmviz.training import footprint

        if self.lm is None:
            return footprint.task("a sparse autoencoder", 3 * self.activations.numel() * 4)
        return footprint.sparse_autoencoder(self.lm.config, self.config, self.model.d_in)

    def batch(self, generator: torch.Generator) -> torch.Tensor:
        rows = torch.randint(len(self.activations), (self.config.batch,), generator=generator)  # (N_b,)
        return self.activations[rows]  # (N_b, D)

    def train_step(self, generator: torch.Generator) -> SaeMetrics:
        started = time.perf_counter()
        x = self.batch(generator)  # (N_b, D)
        out = self.model.losses(x, self.config.l1)
        self.optimizer.zero_grad(set_to_none=True)
        out["loss"].backward()
        self.model.remove_parallel_gradient()
        self.optimizer.step()
        self.model.normalise_decoder()
        self.step += 1
        fired = (out["f"] > 0).detach()  # (N_b, S)
        self.since_fired += len(x)
        self.since_fired[fired.any(0)] = 0
        spliced = self.maybe_spliced()
        return SaeMetrics(
            step=self.step,
            train_loss=float(out["loss"].detach()),
            mse=float(out["mse"].detach()),
            variance_explained=variance_explained(x, out["recon"].detach()),
            l0=float(fired.sum(-1).float().mean()),
            dead=int((self.since_fired >= self.config.dead_window).sum()),
            tokens_per_s=len(x) / max(time.perf_counter() - started, 1e-9),
            spliced=spliced,
            val_loss=spliced.spliced if spliced is not None else None,
        )

    def maybe_spliced(self) -> SplicedLoss | None:
        every, last = self.config.eval_every, self.step == self.config.steps
        if self.lm is None or not (last or (every and self.step % every == 0)):
            return None
        return spliced_losses(self.lm, self.model, self.config.hook, self.eval_windows)

    def run(
        self, should_stop: Callable[[], bool] = lambda: False, report_at: Callable[[int], bool] | None = None
    ) -> Iterator[SaeMetrics]:
        """Train from :attr:`step` to ``config.steps``, yielding each step's metrics; resumable (a parked run goes
        on from where it stopped, its random stream with it)."""
        generator = torch.Generator()
        generator.set_state(self.rng_state)
        while self.step < self.config.steps and not should_stop():
            metrics = self.train_step(generator)
            self.rng_state = generator.get_state()
            self.history.append(metrics)
            yield metrics

    def train(self) -> list[SaeMetrics]:
        for _ in self.run():
            pass
        return self.history

    def save(self, directory: str | Path, labels: dict[int, str] | None = None) -> Path:
        return save(self.model, self.config, directory, self.model_id, self.history, labels)


def build_trainer(
    model: GPT,
    ids: list[int] | torch.Tensor,
    config: SaeConfig,
    model_id: dict | None = None,
    tokenizer: Any = None,
    max_bytes: int | None = None,
) -> SaeTrainer:
    """Gather ``config.tokens`` activations at ``config.hook`` from the corpus ``ids`` and make the trainer (the
    last ``eval_windows`` windows are held out for the spliced-in loss)."""
    width = input_width(model, config)
    context = model.config.context_length
    windows = corpus_windows(ids, context, config.tokens + config.eval_windows * context)  # (W, T)
    _check(len(windows) > config.eval_windows, "The corpus is too short for both training and the spliced-in loss.")
    train, held = windows[: -config.eval_windows], windows[-config.eval_windows :]  # (W', T), (E, T)
    acts = gather_activations(model.eval(), train, config.hook, max_bytes)  # (W', T, D)
    acts = acts.reshape(-1, width)[: config.tokens]  # (N, D)
    _check(len(acts) >= config.batch, f"The corpus gave {len(acts)} tokens: fewer than a batch of {config.batch}.")
    ident = model_id or {"fingerprint": model_fingerprint(model)}
    return SaeTrainer(config, acts, model, held, ident, tokenizer)


# ---------------------------------------------------------------------------- save and load


def model_identity(model: GPT, name: str = "") -> dict:
    """What an autoencoder is for: the model's name (a folder, ``gpt2``), its config and its weights' fingerprint."""
    return {"name": name, "config": model.config.to_dict(), "fingerprint": model_fingerprint(model)}


def save(
    sae: SparseAutoencoder,
    config: SaeConfig,
    directory: str | Path,
    model_id: dict,
    history: list[SaeMetrics] | None = None,
    labels: dict[int, str] | None = None,
) -> Path:
    """``directory``/sae.safetensors (the weights) and sae.json (config, the model it is for, the curves), with
    labels.json when there are labels."""
    from safetensors.torch import save_file

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().contiguous().cpu() for name, tensor in sae.state_dict().items()}
    save_file(state, str(folder / WEIGHTS_FILE))
    curves = [
        {**{k: v for k, v in asdict(m).items() if k != "spliced"}, "spliced": asdict(m.spliced) if m.spliced else None}
        for m in history or []
    ]
    meta = {
        "format": FORMAT,
        "version": 1,
        "config": config.to_dict(),
        "d_in": sae.d_in,
        "model": model_id,
        "history": curves,
    }
    (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=1))
    if labels:
        save_labels(folder, labels)
    return folder


MAX_JSON_BYTES = 32 * 2**20


def read_meta(directory: str | Path) -> dict:
    path = Path(directory) / CONFIG_FILE
    _check(path.is_file(), f"{directory} has no {CONFIG_FILE}: not a saved autoencoder.")
    _check(path.stat().st_size <= MAX_JSON_BYTES, f"{path} is larger than an autoencoder's config can be.")
    try:
        meta = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not valid JSON ({error}).") from None
    _check(isinstance(meta, dict) and meta.get("format") == FORMAT, f"{path} is not an llmviz autoencoder.")
    width = meta.get("d_in")
    _check(
        isinstance(meta.get("config"), dict)
        and isinstance(width, int)
        and not isinstance(width, bool)
        and 1 <= width <= 2**20
        and isinstance(meta.get("model", {}), dict),
        f"{path} is damaged: its config, width (d_in) or model is not what an autoencoder's sae.json holds.",
    )
    return meta


def check_for_model(meta: dict, model: GPT) -> None:
    """Refuse an autoencoder saved for another model: its width or its weights' fingerprint differ."""
    config = SaeConfig.from_dict(meta["config"])
    try:
        width = input_width(model, config)
    except ConfigError as error:
        raise ConfigError(f"This autoencoder is for another model: {error}") from None
    _check(
        width == meta["d_in"],
        f"This autoencoder reads {meta['d_in']} numbers at {config.hook}; this model has {width} there: "
        "it was trained on another model.",
    )
    wanted = meta.get("model", {}).get("fingerprint")
    if wanted is not None:
        found = model_fingerprint(model)
        _check(
            found == wanted,
            f"This autoencoder was trained on {meta['model'].get('name') or 'another model'} (weights {wanted}); "
            f"the picked model's weights are {found}.",
        )


@dataclass(frozen=True)
class LoadedSae:
    """A saved autoencoder read back: its weights, config, everything in sae.json, and its features' labels."""

    sae: SparseAutoencoder
    config: SaeConfig
    meta: dict
    labels: dict[int, str]

    @property
    def hook(self) -> str:
        return self.config.hook


def load(directory: str | Path, model: GPT | None = None) -> LoadedSae:
    """An autoencoder saved by :func:`save` (safetensors: nothing unpickled); with ``model``, one trained for
    another model is refused."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    meta = read_meta(directory)
    if model is not None:
        check_for_model(meta, model)
    try:
        state = load_file(str(Path(directory) / WEIGHTS_FILE))
    except (OSError, SafetensorError) as error:
        raise ConfigError(f"{directory}/{WEIGHTS_FILE} cannot be read ({error}).") from None
    return from_state(meta, state, f"{directory}/{WEIGHTS_FILE}", load_labels(directory))


def from_state(meta: dict, state: dict[str, torch.Tensor], where: str, labels: dict[int, str] | None = None):
    """The :class:`LoadedSae` of weights ``state`` described by ``meta`` (``config``, ``d_in``: what :func:`save` writes
    beside them, or a run's snapshot and description), its shapes checked against its config (``where`` names the
    weights in the message)."""
    config = SaeConfig.from_dict(meta["config"])
    sae = SparseAutoencoder(int(meta["d_in"]), config.d_sae, config.k)
    shapes = {name: tuple(t.shape) for name, t in sae.state_dict().items()}
    found = {name: tuple(t.shape) for name, t in state.items()}
    _check(found == shapes, f"{where} holds {found}, not the shapes its config says ({shapes}).")
    sae.load_state_dict(unit_decoder(state, config.k, where))
    return LoadedSae(sae.eval(), config, meta, labels or {})


#: how far a decoder row's length may be from 1 and still count as unit length (float32 rounding after training)
UNIT_TOLERANCE = 1e-4


def fold_decoder_norms(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The decoder's rows divided by their lengths n_i, the encoder's columns and biases multiplied by them
    (SAELens's ``fold_W_dec_norm``): every pre-activation is then n_i times larger and every feature's direction unit
    length, so f_i·W_dec,i is unchanged wherever σ(n·a) = n·σ(a) (ReLU; a TopK that already chose by n_i·a_i).

    >>> state = {"W_enc": torch.ones(2, 2), "b_enc": torch.ones(2), "W_dec": torch.tensor([[3.0, 4.0], [0.0, 2.0]]),
    ...          "b_dec": torch.zeros(2)}
    >>> folded = fold_decoder_norms(state)
    >>> folded["W_dec"].round(decimals=4).tolist(), folded["W_enc"].tolist(), folded["b_enc"].tolist()
    ([[0.6000000238418579, 0.800000011920929], [0.0, 1.0]], [[5.0, 2.0], [5.0, 2.0]], [5.0, 2.0])
    """
    norms = state["W_dec"].norm(dim=1).clamp_min(1e-8)  # (S,)
    return {
        **state,
        "W_dec": state["W_dec"] / norms[:, None],  # (S, D)
        "W_enc": state["W_enc"] * norms[None, :],  # (D, S)
        "b_enc": state["b_enc"] * norms,  # (S,)
    }


def unit_decoder(state: dict[str, torch.Tensor], k: int, where: str) -> dict[str, torch.Tensor]:
    """``state`` with unit-length decoder rows, as llmviz's autoencoders keep them (a feature's direction, its logit
    effects and its steering vector all read W_dec's row): a ReLU autoencoder whose rows are not unit length (a raw
    SAELens ``StandardTrainingSAE``) has its norms folded into the encoder, which changes no reconstruction; a TopK
    one is refused with the reason, since its weights alone do not say whether it chose its k features by the
    pre-activations or by them times the rows' lengths (SAELens's ``rescale_acts_by_decoder_norm``, on by default in
    ``TopKTrainingSAE``): :func:`from_sae_lens` converts it from SAELens's config, which does."""
    norms = state["W_dec"].float().norm(dim=1)  # (S,)
    if bool(((norms - 1).abs() <= UNIT_TOLERANCE).all()):
        return state
    low, high = float(norms.min()), float(norms.max())
    _check(
        not k,
        f"{where}: its decoder rows are {low:.3g} to {high:.3g} long, not unit length, so it was not saved by llmviz "
        "(a raw SAELens TopK state dict?), and its weights do not say whether its TopK chose by the pre-activations "
        "or by them times the rows' lengths: convert it with llmviz.interpret.sae.from_sae_lens(state, cfg), which "
        "reads that from SAELens's config.",
    )
    return fold_decoder_norms(state)


#: SAELens architectures (``cfg["architecture"]``) whose forward pass llmviz's autoencoder computes
SAE_LENS_ARCHITECTURES = {"topk": "TopK", "standard": "ReLU"}


def from_sae_lens(state: dict[str, torch.Tensor], cfg: dict) -> SparseAutoencoder:
    """An llmviz autoencoder computing what a SAELens autoencoder computes, from its state dict (``sae.state_dict()``,
    or ``sae_weights.safetensors``) and its config (``sae.cfg.to_dict()``, or ``cfg.json``), as SAELens's own helpers
    would make it: the decoder's rows unit length with their norms folded into the encoder (``fold_W_dec_norm``; for
    TopK only where it ranked by them, ``rescale_acts_by_decoder_norm``), and with ``apply_b_dec_to_input`` off, the
    encoder's bias shifted by b_dec·W_enc (llmviz always subtracts b_dec first). Reconstructions equal SAELens's to
    float32 rounding; a ReLU autoencoder's feature activations come out n_i times SAELens's (as after its fold).
    Refused in one line: another architecture (JumpReLU's thresholds, gated, BatchTopK's batch-wide choice, …),
    activations normalised by a factor not in the state dict, or a TopK that ranked by unnormalised pre-activations
    with rows not unit length (no unit-length decoder picks the same k features)."""
    architecture = str(cfg.get("architecture", ""))
    _check(
        architecture in SAE_LENS_ARCHITECTURES,
        f"A SAELens {architecture or 'unnamed'} autoencoder cannot be converted: llmviz's computes "
        f"{' or '.join(f'{v} ({k})' for k, v in SAE_LENS_ARCHITECTURES.items())} only.",
    )
    normalize = cfg.get("normalize_activations", "none")
    _check(
        normalize in (None, "none"),
        f"This autoencoder normalises its input ({normalize}) by a factor its weights do not hold: fold it first "
        "(SAELens's fold_activation_norm_scaling_factor).",
    )
    wanted = {"W_enc", "b_enc", "W_dec", "b_dec"}
    _check(
        set(state) == wanted,
        f"A {architecture} autoencoder's state dict holds {', '.join(sorted(wanted))}; this one holds "
        f"{', '.join(sorted(state))}.",
    )
    weights = {name: tensor.detach().float().clone() for name, tensor in state.items()}
    d_in, d_sae = weights["W_enc"].shape
    _check(
        weights["W_dec"].shape == (d_sae, d_in)
        and weights["b_enc"].shape == (d_sae,)
        and weights["b_dec"].shape == (d_in,),
        f"Its weights' shapes do not fit together: { ({n: tuple(t.shape) for n, t in weights.items()}) }.",
    )
    if not cfg.get("apply_b_dec_to_input", True):  # x·W_enc + b_enc = (x − b_dec)·W_enc + (b_enc + b_dec·W_enc)
        weights["b_enc"] = weights["b_enc"] + weights["b_dec"] @ weights["W_enc"]  # (S,)
    k = int(cfg.get("k", 0)) if architecture == "topk" else 0
    _check(architecture != "topk" or 0 < k <= d_sae, f"A TopK autoencoder's k must be 1 to {d_sae} (got {k}).")
    if architecture == "standard" or cfg.get("rescale_acts_by_decoder_norm", False):
        weights = fold_decoder_norms(weights)
    norms = weights["W_dec"].norm(dim=1)  # (S,)
    _check(
        bool(((norms - 1).abs() <= UNIT_TOLERANCE).all()),
        f"This TopK autoencoder ranks its pre-activations as they are (rescale_acts_by_decoder_norm off) and its "
        f"decoder rows are {float(norms.min()):.3g} to {float(norms.max()):.3g} long, not unit length: no unit-length "
        "decoder picks the same k features.",
    )
    sae = SparseAutoencoder(d_in, d_sae, k)
    sae.load_state_dict(weights)
    return sae.eval()


def save_labels(directory: str | Path, labels: dict[int, str]) -> None:
    """A student's names for features, kept beside the weights (labels.json)."""
    clean = {str(int(index)): str(text)[:200] for index, text in labels.items() if str(text).strip()}
    (Path(directory) / LABELS_FILE).write_text(json.dumps(clean, indent=1, ensure_ascii=False))


def load_labels(directory: str | Path) -> dict[int, str]:
    path = Path(directory) / LABELS_FILE
    if not path.is_file() or path.stat().st_size > MAX_JSON_BYTES:
        return {}
    try:
        values = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return {}
    return {int(k): str(v) for k, v in values.items() if str(k).isdigit()} if isinstance(values, dict) else {}
