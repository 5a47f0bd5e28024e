"""A GPT, the way nanoGPT's model.py writes it, that can show every intermediate — and, by
switches on :class:`GPTConfig`, the open models that came after GPT-2 (Llama, Qwen, SmolLM, Mixtral).

    idx (B, T) ─ token embedding (+ position embedding) ─► n_layers × Block ─► norm ─► lm_head ─► logits (B, T, V)
    Block:  x = x + attn(norm1(x));  x = x + mlp(norm2(x))          (pre-norm residual stream)

    switch          field default              GPT-2 (preset gpt2-124m)    Llama / Qwen2 / SmolLM2 / Mixtral
    positions       "learned"                  "learned" (a table, added)  "rope": queries and keys rotated
    norm            "layernorm"                "layernorm"                 "rmsnorm" (no mean, no shift)
    mlp_kind        "gelu"                     "gelu": W2·GELU(W1·x)       "swiglu": W2·(SiLU(W_gate·x) ⊙ W1·x)
    gelu            "tanh" (an approximation)  "tanh"                      none in SwiGLU (nanoGPT's model.py: "exact")
    d_mlp           None (4 × d_model)         4 × d_model                 per model (Llama: about 8/3 × d_model)
    n_kv_heads      None (= n_heads)           = n_heads (multi-head)      fewer (grouped-query), 1 (multi-query)
    n_experts       0 (one dense MLP)          0                           Mixtral: 8 MLPs, experts_top_k = 2
    bias            True                       True                        False
    qkv_bias        False                      True                        False (Qwen2: True)
    tie_weights     False                      True (lm_head = tok_emb)    per model (SmolLM2: True)

The field defaults are GPT-2's choices except two: no bias in W_Q, W_K, W_V and an output head of its own (the GPT of
earlier llmviz versions, whose checkpoints name only the fields they change). The ``gpt2-124m`` preset is GPT-2 small
as OpenAI published it: 124,439,808 parameters, as ``transformers.GPT2LMHeadModel(GPT2Config())`` counts them (tests
check the two against each other). The string switches are ``Literal`` types, so the type checker catches a typo in
code, and :class:`GPTConfig` still checks them when it is built, so a config read from JSON or a link gets a readable
error.

``forward(idx, targets=None, cache=None)`` returns ``(logits, loss)``; pass a dict as
``cache`` (or call ``run_with_cache``) to record every intermediate under the names listed
in :func:`cache_names`. Attention takes PyTorch's fused ``scaled_dot_product_attention``
when nothing is recorded and the explicit softmax(q·kᵀ/√d)·v written out below when it is.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace
from typing import Literal, get_args

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz import settings
from llmviz.device import machine_memory_bytes
from llmviz.errors import ConfigError
from llmviz.models import breakdown
from llmviz.models.attention import causal_mask
from llmviz.models.cache import Cache, RecordsIntermediates, record
from llmviz.models.layers import (
    GELU,
    Dropout,
    LayerNorm,
    RMSNorm,
    apply_rope,
    rope_cos_sin,
    sinusoidal_positions,
)
from llmviz.models.padded_head import PADDED_HEAD_FROM, padded_head

Positions = Literal["learned", "sinusoidal", "rope", "none"]
Norm = Literal["layernorm", "rmsnorm"]
MlpKind = Literal["gelu", "swiglu"]
GeluForm = Literal["tanh", "exact"]
POSITIONS: tuple[Positions, ...] = get_args(Positions)
NORMS: tuple[Norm, ...] = get_args(Norm)
MLP_KINDS: tuple[MlpKind, ...] = get_args(MlpKind)
GELU_FORMS: tuple[GeluForm, ...] = get_args(GeluForm)
SWITCHES = (
    "positions",
    "rope_theta",
    "norm",
    "norm_eps",
    "mlp_kind",
    "gelu",
    "d_mlp",
    "n_kv_heads",
    "n_experts",
    "experts_top_k",
    "router_aux_loss_coef",
    "bias",
    "qkv_bias",
    "tie_weights",
)


#: the largest size of each kind that llmviz builds or loads: far beyond GPT-2 XL (48 layers, d_model 1,600) and
#: 8-billion-parameter Llama-family models (32 layers, d_model 4,096, d_mlp 14,336, a 128,256-token vocabulary)
SIZE_LIMITS = {
    "vocab_size": 1_048_576,
    "context_length": 65_536,
    "d_model": 16_384,
    "n_heads": 256,
    "n_layers": 256,
    "n_kv_heads": 256,
    "d_mlp": 65_536,
}
MAX_EXPERTS = 256


def estimate_parameters(config: GPTConfig) -> int:
    """The parameters of a GPT of this shape, from its sizes alone (no tensor is made): the weight matrices and
    embeddings; biases and norms (a few per cent of a small model, less of a big one) are left out.

    >>> estimate_parameters(GPTConfig(vocab_size=100, context_length=8, d_model=16, n_heads=2, n_layers=1))
    6400
    """
    d, hidden = config.d_model, config.mlp_width
    attention = d * (d + 2 * config.kv_heads * config.head_dim) + d * d  # W_Q, W_K, W_V and W_O
    mlp = (3 if config.mlp_kind == "swiglu" else 2) * d * hidden if config.mlp else 0
    if config.n_experts:
        mlp = config.n_experts * mlp + d * config.n_experts  # every expert, and the router
    embeddings = config.vocab_size * d * (1 if config.tie_weights else 2)  # the token table and the output head
    positions = config.context_length * d if config.positions == "learned" else 0
    return config.n_layers * (attention + mlp) + embeddings + positions


def size_problem(config: GPTConfig) -> str | None:
    """Why a GPT of this shape is not built here (None: it can be): more parameters than ``LLMVIZ_MAX_PARAMETERS``,
    or weights alone that would not fit in this machine's memory. Asked before anything is allocated (training, a
    checkpoint's description, the GPT itself on a real device); a calculator that only counts a shape on the meta
    device (the Model page sizing GPT-3) may describe any size.
    """
    count = estimate_parameters(config)
    cap = settings.get("LLMVIZ_MAX_PARAMETERS")
    if count > cap:
        return (
            f"it would have about {count:,} parameters, more than llmviz loads or builds (LLMVIZ_MAX_PARAMETERS = "
            f"{cap:,})"
        )
    memory = machine_memory_bytes()
    if memory is not None and 4 * count > memory:
        return (
            f"it would have about {count:,} parameters, whose weights alone take {4 * count / 2**30:,.1f} GB: "
            f"more than this machine's {memory / 2**30:,.1f} GB of memory"
        )
    return None


def _whole_at_least_1(value) -> bool:
    """A size: an int (not a bool) of at least 1.

    >>> _whole_at_least_1(3), _whole_at_least_1(True), _whole_at_least_1(2.0), _whole_at_least_1(0)
    (True, False, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class GPTConfig:
    """The shape of a GPT and its architecture switches (module docstring); validated on creation.

    >>> c = GPTConfig(d_model=64, n_heads=4, n_kv_heads=2, positions="rope")
    >>> c.head_dim, c.kv_heads, c.mlp_width
    (16, 2, 256)
    """

    vocab_size: int = 50257
    context_length: int = 1024
    d_model: int = 768
    n_heads: int = 12
    n_layers: int = 12
    dropout: float = 0.1
    qkv_bias: bool = False  # biases in W_Q, W_K, W_V
    tie_weights: bool = False  # lm_head.weight is tok_emb.weight
    mlp: bool = True  # False: an attention-only transformer (blocks without norm 2 and MLP)
    positions: Positions = "learned"  # "learned", "sinusoidal", "rope" or "none"
    rope_theta: float = 10000.0  # RoPE's base θ: pair i turns by θ^(−2i/head_dim) radians per position
    norm: Norm = "layernorm"  # "layernorm" or "rmsnorm"
    norm_eps: float = 1e-5
    mlp_kind: MlpKind = "gelu"  # "gelu" or "swiglu"
    gelu: GeluForm = "tanh"  # the GELU MLP's activation: "tanh" (GPT-2's approximation) or "exact" (x·Φ(x), nanoGPT's)
    d_mlp: int | None = None  # the MLP's hidden width; None = 4 × d_model
    n_kv_heads: int | None = None  # key/value heads; None = n_heads (multi-head), 1 = multi-query
    n_experts: int = 0  # 0: one dense MLP per block; n ≥ 2: a mixture of n expert MLPs
    experts_top_k: int = 2  # experts each token is sent to
    router_aux_loss_coef: float = 0.01  # weight of the load-balancing loss added to the training loss
    bias: bool = True  # biases in W_O, the MLP and the LayerNorm shift

    def __post_init__(self):
        problems = self._shape_problems()
        problems += self._switch_problems()
        problems += self._expert_problems()
        if problems:
            raise ConfigError("This GPT configuration cannot work: " + "; ".join(problems) + ".")

    def _shape_problems(self) -> list[str]:
        """Sizes that are not whole numbers of at least 1, and heads that do not divide the width."""
        problems = []
        for name in ("vocab_size", "context_length", "d_model", "n_heads", "n_layers"):
            value = getattr(self, name)
            if not _whole_at_least_1(value):
                problems.append(f"{name} must be a whole number of at least 1 (got {value!r})")
        for name in ("n_kv_heads", "d_mlp"):
            value = getattr(self, name)
            if value is not None and not _whole_at_least_1(value):
                problems.append(f"{name} must be a whole number of at least 1, or None (got {value!r})")
        problems += [
            f"{name} = {getattr(self, name):,} is more than llmviz builds (at most {limit:,})"
            for name, limit in SIZE_LIMITS.items()
            if isinstance(getattr(self, name), int) and getattr(self, name) > limit
        ]
        return problems or self._head_problems()

    def _head_problems(self) -> list[str]:
        """Heads that do not divide the width, key/value heads that do not divide the heads, an odd RoPE head."""
        if self.d_model % self.n_heads:
            return [
                f"d_model = {self.d_model} is not divisible by n_heads = {self.n_heads}: each head gets "
                f"d_model / n_heads dimensions. Try n_heads in {divisors(self.d_model)}."
            ]
        if self.n_heads % self.kv_heads:
            return [
                f"n_heads = {self.n_heads} is not a multiple of n_kv_heads = {self.n_kv_heads}: each key/value "
                f"head serves the same number of query heads. Try n_kv_heads in {divisors(self.n_heads)}."
            ]
        if self.positions == "rope" and self.head_dim % 2:
            return [f"RoPE turns pairs of dimensions, so head_dim = {self.head_dim} must be even"]
        return []

    def _switch_problems(self) -> list[str]:
        """Architecture switches set to something the GPT does not compute."""
        problems = []
        if not (0.0 <= self.dropout < 1.0):
            problems.append(f"dropout must be in [0, 1) (got {self.dropout})")
        for name, allowed in (("positions", POSITIONS), ("norm", NORMS), ("mlp_kind", MLP_KINDS), ("gelu", GELU_FORMS)):
            if getattr(self, name) not in allowed:
                problems.append(f"{name} must be one of {', '.join(allowed)} (got {getattr(self, name)!r})")
        if not (self.rope_theta > 1.0 and math.isfinite(self.rope_theta)):
            problems.append(f"rope_theta must be a number above 1 (got {self.rope_theta})")
        if not (0.0 < self.norm_eps < 1.0):
            problems.append(f"norm_eps must be a small positive number (got {self.norm_eps})")
        return problems

    def _expert_problems(self) -> list[str]:
        """A mixture of experts that cannot route: too few experts, or more picked per token than there are."""
        problems = []
        if not isinstance(self.n_experts, int) or self.n_experts < 0 or self.n_experts == 1:
            problems.append(f"n_experts must be 0 (a dense MLP) or at least 2 (got {self.n_experts!r})")
        elif self.n_experts > MAX_EXPERTS:
            problems.append(f"n_experts = {self.n_experts:,} is more than llmviz builds (at most {MAX_EXPERTS})")
        elif self.n_experts and not 1 <= self.experts_top_k <= self.n_experts:
            problems.append(
                f"experts_top_k must be between 1 and n_experts = {self.n_experts} (got {self.experts_top_k})"
            )
        if self.n_experts and not self.mlp:
            problems.append("a mixture of experts replaces the MLP, so it needs mlp=True")
        if not (self.router_aux_loss_coef >= 0.0 and math.isfinite(self.router_aux_loss_coef)):
            problems.append(f"router_aux_loss_coef must be 0 or more (got {self.router_aux_loss_coef})")
        return problems

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads: n_heads (multi-head), fewer (grouped-query) or 1 (multi-query)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def mlp_width(self) -> int:
        return 4 * self.d_model if self.d_mlp is None else self.d_mlp

    @property
    def kv_cache_values_per_token(self) -> int:
        """Numbers a KV cache keeps per token: a key and a value vector per key/value head per layer."""
        return 2 * self.n_layers * self.kv_heads * self.head_dim

    def replace(self, **changes) -> GPTConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0 and d <= 64]


def make_norm(config: GPTConfig) -> nn.Module:
    if config.norm == "rmsnorm":
        return RMSNorm(config.d_model, config.norm_eps)
    return LayerNorm(config.d_model, config.norm_eps, bias=config.bias)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention; with ``n_kv_heads < n_heads`` each key/value head is shared
    by ``n_heads / n_kv_heads`` query heads (grouped-query attention, Ainslie et al., 2023)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.n_kv_heads = config.kv_heads
        self.head_dim = config.head_dim
        self.d_model = config.d_model
        self.dropout = config.dropout
        # W_Q, W_K, W_V side by side: H·hd + 2·H_kv·hd outputs (3 × d_model with multi-head attention)
        self.qkv = nn.Linear(
            config.d_model, (config.n_heads + 2 * config.kv_heads) * config.head_dim, bias=config.qkv_bias
        )
        self.proj = nn.Linear(config.d_model, config.d_model, bias=config.bias)  # W_O
        self.attn_dropout = Dropout(config.dropout)
        self.resid_dropout = Dropout(config.dropout)

    def split_sizes(self) -> list[int]:
        return [self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim, self.n_kv_heads * self.head_dim]

    def weights(self) -> dict[str, torch.Tensor | None]:
        """W_Q (C, H·hd), W_K, W_V (C, H_kv·hd), W_O as (d_in, d_out) matrices (the transposes of the Linear
        weights)."""
        w_q, w_k, w_v = self.qkv.weight.split(self.split_sizes(), dim=0)
        b_q = b_k = b_v = None
        if self.qkv.bias is not None:
            b_q, b_k, b_v = self.qkv.bias.split(self.split_sizes())
        return {
            "w_q": w_q.T,
            "w_k": w_k.T,
            "w_v": w_v.T,
            "w_o": self.proj.weight.T,
            "b_q": b_q,
            "b_k": b_k,
            "b_v": b_v,
            "b_o": self.proj.bias,
        }

    def forward(
        self,
        x: torch.Tensor,
        cache: Cache | None = None,
        prefix: str = "attn",
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,
    ):
        batch, tokens, width = x.size()  # (B, T, C)
        if cache is not None and past is not None:
            raise ConfigError("Recording intermediates and a KV cache cannot be combined.")
        q, k, v = self.qkv(x).split(self.split_sizes(), dim=2)  # (B, T, H·hd), 2 × (B, T, H_kv·hd)
        q = q.view(batch, tokens, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(batch, tokens, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, hd)
        v = v.view(batch, tokens, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, hd)
        q = record(cache, f"{prefix}.q", q)  # every record() is a hook point: it may hand back an edited tensor
        k = record(cache, f"{prefix}.k", k)
        v = record(cache, f"{prefix}.v", v)
        if rope is not None:  # RoPE: turn each (q_i, q_{i+hd/2}) pair by position × its frequency
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)  # (B, H, T, hd), (B, H_kv, T, hd)
            q = record(cache, f"{prefix}.rot_q", q)
            k = record(cache, f"{prefix}.rot_k", k)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, H_kv, T_past + T, hd)
            v = torch.cat([past[1], v], dim=2)
        present = (k, v)  # what a KV cache keeps: H_kv heads, not H
        own_dropout = self.training and self.dropout > 0.0 and self.attn_dropout.generator is not None
        if own_dropout and past is not None:
            raise ConfigError("A KV cache is for generation (eval mode), not training with dropout.")
        if cache is not None or own_dropout:
            # written out: it records every step; with dropout, the mask comes from the run's own generator
            # (the fused kernel would draw it from torch's global one, shared by every session of the server). A run
            # that owns its process takes the fused kernel with dropout instead: Trainer.claim_process unsets the
            # generators and lends the device's default generator the run's stream for each step
            y = self.explicit(q, k, v, cache, prefix)  # (B, H, T, hd)
        else:
            dropout_p = self.dropout if self.training else 0.0
            grouped = self.n_kv_heads != self.n_heads
            if past is None:
                y = F.scaled_dot_product_attention(
                    q, k, v, dropout_p=dropout_p, is_causal=True, enable_gqa=grouped
                )  # (B, H, T, hd)
            else:
                mask = None if tokens == 1 else causal_mask(tokens, k.shape[2], device=x.device)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, enable_gqa=grouped)
        y = y.transpose(1, 2).contiguous().view(batch, tokens, width)  # (B, T, C)
        output = self.resid_dropout(self.proj(y))  # (B, T, C)
        output = record(cache, f"{prefix}.out", output)
        return output, present

    def explicit(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cache: Cache | None, prefix: str
    ) -> torch.Tensor:
        """softmax(q·kᵀ/√hd + causal mask)·v written out, recording scores, pattern and z."""
        group = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(group, dim=1)  # (B, H, T, hd): key/value head j serves query heads j·group …
        v = v.repeat_interleave(group, dim=1)  # (B, H, T, hd)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, T)
        scores = record(cache, f"{prefix}.scores", scores)
        allowed = causal_mask(q.shape[2], k.shape[2], device=q.device)  # (T, T): no row is all masked
        masked_scores = record(cache, f"{prefix}.masked_scores", scores.masked_fill(~allowed, float("-inf")))
        pattern = record(cache, f"{prefix}.pattern", torch.softmax(masked_scores, dim=-1))  # (B, H, T, T) rows
        z = self.attn_dropout(pattern) @ v if self.training else pattern @ v  # (B, H, T, hd)
        z = record(cache, f"{prefix}.z", z)  # head h's output is z[:, h]: what head ablation and patching edit
        return z


class MLP(nn.Module):
    """GELU: proj(GELU(fc(x))); SwiGLU (Shazeer, 2020): proj(SiLU(gate(x)) ⊙ fc(x))."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.swiglu = config.mlp_kind == "swiglu"
        self.gate = nn.Linear(config.d_model, config.mlp_width, bias=config.bias) if self.swiglu else None
        self.fc = nn.Linear(config.d_model, config.mlp_width, bias=config.bias)  # SwiGLU's "up" projection
        self.gelu = None if self.swiglu else GELU(config.gelu)
        self.proj = nn.Linear(config.mlp_width, config.d_model, bias=config.bias)  # "down"
        self.dropout = Dropout(config.dropout)

    def forward(self, x: torch.Tensor, cache: Cache | None = None, prefix: str = "mlp") -> torch.Tensor:
        if self.gate is not None:  # SwiGLU
            pre = record(cache, f"{prefix}.pre", self.gate(x))  # (B, T, F): the gate, before SiLU
            up = record(cache, f"{prefix}.up", self.fc(x))  # (B, T, F)
            hidden = F.silu(pre) * up  # (B, T, F)
        else:
            assert self.gelu is not None  # built whenever there is no gate
            pre = record(cache, f"{prefix}.pre", self.fc(x))  # (B, T, 4C)
            hidden = self.gelu(pre)  # (B, T, 4C)
        hidden = record(cache, f"{prefix}.hidden", hidden)
        out = self.dropout(self.proj(hidden))  # (B, T, C)
        return record(cache, f"{prefix}.out", out)


class MixtureOfExperts(nn.Module):
    """Mixtral's sparse MLP: a router scores n_experts MLPs per token, the token goes through its
    top-k and their outputs are summed with the router's probabilities renormalised over those k."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.top_k = config.experts_top_k
        self.router = nn.Linear(config.d_model, config.n_experts, bias=False)
        self.experts = nn.ModuleList([MLP(config) for _ in range(config.n_experts)])

    def forward(
        self, x: torch.Tensor, cache: Cache | None = None, prefix: str = "mlp", router_probs: list | None = None
    ) -> torch.Tensor:
        batch, tokens, width = x.shape  # (B, T, C)
        flat = x.reshape(-1, width)  # (N, C), N = B·T
        logits = self.router(flat)  # (N, E)
        logits = record(cache, f"{prefix}.router_logits", logits.view(batch, tokens, -1)).reshape(flat.shape[0], -1)
        probs = F.softmax(logits.float(), dim=-1)  # (N, E)
        probs = record(cache, f"{prefix}.router_probs", probs.view(batch, tokens, -1)).reshape(flat.shape[0], -1)
        top_probs, top_experts = probs.topk(self.top_k, dim=-1)  # (N, k)
        top_weights = (top_probs / top_probs.sum(dim=-1, keepdim=True)).to(x.dtype)  # (N, k), rows sum to 1
        top_experts = record(cache, f"{prefix}.experts", top_experts.view(batch, tokens, -1)).reshape(-1, self.top_k)
        top_weights = record(cache, f"{prefix}.expert_weights", top_weights.view(batch, tokens, -1)).reshape(
            -1, self.top_k
        )  # (N, k)
        out = torch.zeros_like(flat)  # (N, C)
        for index, expert in enumerate(self.experts):
            rows, slot = torch.where(top_experts == index)  # the tokens that chose this expert
            if rows.numel():
                out.index_add_(0, rows, expert(flat[rows]) * top_weights[rows, slot, None])
        out = record(cache, f"{prefix}.out", out.view(batch, tokens, width))  # (B, T, C)
        if router_probs is not None:
            router_probs.append(probs)
        return out


def load_balancing_loss(router_probs: list[torch.Tensor], top_k: int) -> torch.Tensor:
    """Switch Transformer's auxiliary loss (Fedus et al., 2021, eqs. 4–6), as Mixtral computes it over
    all layers' tokens together: E · Σ_e f_e · P_e, where f_e = the share of routing slots that went to
    expert e (Σ_e f_e = k) and P_e = the mean router probability of expert e. It is k when routing is
    perfectly even and grows as a few experts take the tokens.

    >>> load_balancing_loss([torch.tensor([[0.5, 0.5], [0.5, 0.5]])], top_k=1)
    tensor(1.)
    """
    probs = torch.cat(router_probs)  # (L·N, E)
    n_experts = probs.shape[-1]
    chosen = probs.topk(top_k, dim=-1).indices  # (L·N, k)
    fraction = F.one_hot(chosen, n_experts).sum(dim=1).float().mean(dim=0)  # (E,) f_e
    mean_prob = probs.mean(dim=0)  # (E,) P_e
    return n_experts * (fraction * mean_prob).sum()


class Block(nn.Module):
    """One transformer block, pre-norm: x + attention(norm(x)), then x + MLP (or experts)(norm(x))."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln1 = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln2 = make_norm(config) if config.mlp else None
        if not config.mlp:
            self.mlp = None
        else:
            self.mlp = MixtureOfExperts(config) if config.n_experts else MLP(config)

    def forward(
        self,
        x,
        cache: Cache | None = None,
        prefix: str = "blocks.0",
        past=None,
        rope=None,
        router_probs: list | None = None,
    ):
        x = record(cache, f"{prefix}.resid_pre", x)
        normed = record(cache, f"{prefix}.ln1", self.ln1(x))
        attn_out, present = self.attn(normed, cache, f"{prefix}.attn", past=past, rope=rope)
        x = record(cache, f"{prefix}.resid_mid", x + attn_out)  # shortcut (residual) connection
        if self.mlp is not None and self.ln2 is not None:
            normed = record(cache, f"{prefix}.ln2", self.ln2(x))
            if isinstance(self.mlp, MixtureOfExperts):
                x = x + self.mlp(normed, cache, f"{prefix}.mlp", router_probs=router_probs)
            else:
                x = x + self.mlp(normed, cache, f"{prefix}.mlp")
        x = record(cache, f"{prefix}.resid_post", x)
        return x, present


class GPT(nn.Module, RecordsIntermediates):
    """The decoder-only transformer of :class:`GPTConfig`: GPT-2 by default, Llama-like by switches.

    ``initialise=False`` skips GPT-2's initialisation (normal(0, 0.02), the scaled residual projections): for a
    skeleton on the meta device whose shapes are read, or whose weights are assigned next."""

    def __init__(self, config: GPTConfig, initialise: bool = True):
        super().__init__()
        if torch.empty(0).device.type != "meta":  # a real build: refused before any weight is allocated
            problem = size_problem(config)
            if problem is not None:
                raise ConfigError(f"This GPT cannot be built here: {problem}.")
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        # only learned positions are parameters; sinusoidal ones are computed, RoPE acts inside attention
        self.pos_emb = nn.Embedding(config.context_length, config.d_model) if config.positions == "learned" else None
        self.drop = Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
        self.ln_f = make_norm(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.tok_emb.weight  # one matrix for input and output
        if not initialise:
            return
        self.apply(self._init_weights)
        for name, parameter in self.named_parameters():
            if name.endswith("proj.weight"):  # GPT-2: scale residual projections by 1/√(2·layers)
                nn.init.normal_(parameter, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    @property
    def context_length(self) -> int:
        return self.config.context_length

    def embed(self, idx: torch.Tensor, start: int = 0, cache: Cache | None = None):
        """Token vectors plus (learned or sinusoidal) position vectors for positions start … start+T−1,
        and RoPE's (cos, sin) for those positions when the model rotates instead."""
        positions = torch.arange(start, start + idx.shape[1], device=idx.device)  # (T,)
        tok = record(cache, "embed.tok", self.tok_emb(idx))  # (B, T, C)
        rope = None
        if self.pos_emb is not None:  # learned positions
            pos = self.pos_emb(positions)  # (T, C)
        elif self.config.positions == "sinusoidal":
            pos = sinusoidal_positions(positions, self.config.d_model).to(tok.dtype)  # (T, C)
        else:  # "rope" and "none" add nothing to the token vectors
            pos = torch.zeros(len(positions), self.config.d_model, dtype=tok.dtype, device=idx.device)  # (T, C)
            if self.config.positions == "rope":
                rope = tuple(
                    t.to(tok.dtype) for t in rope_cos_sin(positions, self.config.head_dim, self.config.rope_theta)
                )  # 2 × (T, hd)
        pos = record(cache, "embed.pos", pos)
        return self.drop(tok + pos), rope  # (B, T, C)

    def trunk(
        self, idx: torch.Tensor, cache: Cache | None = None, router_probs: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        """Embeddings, every block and the final norm: the hidden states (B, T, C) the output head reads, and
        what a classifier head (``llmviz.adapt.finetune``) reads instead. ``router_probs`` collects a mixture of
        experts' router probabilities, for the load-balancing loss."""
        tokens = idx.shape[1]  # idx: (B, T)
        if tokens > self.config.context_length:
            raise ConfigError(
                f"{tokens} tokens do not fit the context of {self.config.context_length}: crop the input "
                "to its last context_length tokens."
            )
        x, rope = self.embed(idx, 0, cache)  # (B, T, C)
        for layer, block in enumerate(self.blocks):
            x, _ = block(x, cache, f"blocks.{layer}", rope=rope, router_probs=router_probs)
        return record(cache, "ln_f", self.ln_f(x))  # (B, T, C)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, cache: Cache | None = None):
        router_probs: list[torch.Tensor] | None = [] if self.config.n_experts else None
        x = self.trunk(idx, cache, router_probs)  # (B, T, C)
        logits, for_loss = self.head(x)  # (B, T, V), and (B, T, V + pad) in a GPU's training step
        logits = record(cache, "logits", logits)  # (B, T, V): logits for every position
        aux_loss = None
        if router_probs:
            aux_loss = record(cache, "aux_loss", load_balancing_loss(router_probs, self.config.experts_top_k))
        loss = None
        if targets is not None:
            if cache is not None:  # the recorded (or hooked) logits are the ones the loss reads
                for_loss = logits
            loss = F.cross_entropy(for_loss.reshape(-1, for_loss.size(-1)), targets.reshape(-1), ignore_index=-1)
            if aux_loss is not None and self.training:  # training only: validation loss stays cross-entropy
                loss = loss + self.config.router_aux_loss_coef * aux_loss
        return logits, loss

    def head(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The output head: lm_head(x) (B, T, V), and what the loss reads. A training step on a GPU pads a large
        head's rows for the matrix kernels (:func:`padded_head`: the loss then reads (B, T, V + pad) logits whose
        extra columns are −inf; a character model's 65 rows are left as they are, there the padding costs more
        than it saves); a head an adapter replaced, and everything else, is the module as it is."""
        plain = (
            type(self.lm_head) is nn.Linear and self.lm_head.bias is None and self.config.vocab_size >= PADDED_HEAD_FROM
        )
        if x.is_cuda and self.training and torch.is_grad_enabled() and plain:
            return padded_head(x, self.lm_head.weight)  # (B, T, V), (B, T, V + pad)
        logits = self.lm_head(x)  # (B, T, V)
        return logits, logits

    def final_hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """The final norm's output for ``idx`` (B, T), with gradients (:meth:`trunk` without a cache). The same as
        ``run_with_cache``'s ``ln_f``."""
        return self.trunk(idx)  # (B, T, C)

    @torch.no_grad()
    def forward_with_kv_cache(self, idx: torch.Tensor, past_key_values: list | None = None):
        """Incremental decoding: ``idx`` holds only the new tokens; returns ``(logits, presents)``.

        ``past_key_values`` is the ``presents`` of the previous call: per layer the keys (already
        rotated, with RoPE) and values of every earlier position, n_kv_heads of each, so they are
        not computed again. The new tokens' positions continue where the cache ends.
        """
        past_length = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        batch, tokens = idx.shape
        if past_length + tokens > self.config.context_length:
            raise ConfigError("The KV cache is full: the sequence reached the model's context length.")
        x, rope = self.embed(idx, past_length)  # (B, T, C)
        presents = []
        for layer, block in enumerate(self.blocks):
            x, present = block(
                x, None, f"blocks.{layer}", rope=rope, past=None if past_key_values is None else past_key_values[layer]
            )
            presents.append(present)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        return logits, presents

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters per component, computed from the modules (a tied matrix counts once)."""
        norm = "RMSNorm" if self.config.norm == "rmsnorm" else "LayerNorm"
        first = ["token embedding", "position embedding", "attention W_Q, W_K, W_V", "attention output W_O", "MLP"]
        first += [norm, "output head"] + (["MoE router"] if self.config.n_experts else [])
        rules = [
            (r"^tok_emb", "token embedding"),
            (r"^pos_emb", "position embedding"),
            (r"\.attn\.qkv", "attention W_Q, W_K, W_V"),
            (r"\.attn\.proj", "attention output W_O"),
            (r"\.mlp\.router", "MoE router"),
            (r"\.mlp\.", "MLP"),
            (r"\.ln|^ln_f", norm),
            (r"^lm_head", "output head"),
        ]
        return breakdown.parameter_breakdown(self, rules, first)

    def num_parameters(self) -> int:
        return sum(parameter.numel() for parameter in self.parameters())


#: The hook points of one block, in forward order (``cache_name(layer, point)`` names them); a model has those its
#: switches build (:func:`cache_names`).
BLOCK_POINTS = (
    "resid_pre",
    "ln1",
    "attn.q",
    "attn.k",
    "attn.v",
    "attn.rot_q",
    "attn.rot_k",
    "attn.scores",
    "attn.masked_scores",
    "attn.pattern",
    "attn.z",
    "attn.out",
    "resid_mid",
    "ln2",
    "mlp.router_logits",
    "mlp.router_probs",
    "mlp.experts",
    "mlp.expert_weights",
    "mlp.pre",
    "mlp.up",
    "mlp.hidden",
    "mlp.out",
    "resid_post",
)
#: The hook points outside the blocks (``cache_name(None, point)``).
MODEL_POINTS = ("embed.tok", "embed.pos", "ln_f", "logits", "aux_loss")


def cache_name(layer: int | None, point: str) -> str:
    """The name of one hook point: ``point`` of block ``layer`` (one of :data:`BLOCK_POINTS`), or of the whole model
    when ``layer`` is None (:data:`MODEL_POINTS`). The one place a name is built: pages and llmviz.interpret ask here.

    >>> cache_name(0, "attn.pattern"), cache_name(3, "resid_post"), cache_name(None, "ln_f")
    ('blocks.0.attn.pattern', 'blocks.3.resid_post', 'ln_f')
    >>> cache_name(0, "hook_pattern")
    Traceback (most recent call last):
    ...
    llmviz.errors.ConfigError: No hook point 'hook_pattern' in a block: use one of resid_pre, ln1, attn.q, attn.k, \
attn.v, attn.rot_q, attn.rot_k, attn.scores, attn.masked_scores, attn.pattern, attn.z, attn.out, resid_mid, ln2, \
mlp.router_logits, mlp.router_probs, mlp.experts, mlp.expert_weights, mlp.pre, mlp.up, mlp.hidden, mlp.out, \
resid_post.
    """
    if layer is None:
        if point not in MODEL_POINTS:
            raise ConfigError(f"No hook point {point!r} outside the blocks: use one of {', '.join(MODEL_POINTS)}.")
        return point
    if point not in BLOCK_POINTS:
        raise ConfigError(f"No hook point {point!r} in a block: use one of {', '.join(BLOCK_POINTS)}.")
    if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
        raise ConfigError(f"A layer is a whole number from 0 (got {layer!r}).")
    return f"blocks.{layer}.{point}"


def block_points(config: GPTConfig) -> list[str]:
    """The hook points one block of ``config`` has, in forward order.

    >>> from llmviz.models.presets import PRESETS
    >>> block_points(PRESETS["attn-only-2l"])
    ['resid_pre', 'ln1', 'attn.q', 'attn.k', 'attn.v', 'attn.scores', 'attn.masked_scores', 'attn.pattern', \
'attn.z', 'attn.out', 'resid_mid', 'resid_post']
    """
    skip = set()
    if config.positions != "rope":
        skip |= {"attn.rot_q", "attn.rot_k"}
    if not config.mlp:
        skip |= {point for point in BLOCK_POINTS if point == "ln2" or point.startswith("mlp.")}
    elif config.n_experts:
        skip |= {"mlp.pre", "mlp.up", "mlp.hidden"}
    else:
        skip |= {"mlp.router_logits", "mlp.router_probs", "mlp.experts", "mlp.expert_weights"}
        if config.mlp_kind != "swiglu":
            skip.add("mlp.up")
    return [point for point in BLOCK_POINTS if point not in skip]


def cache_names(config: GPTConfig) -> list[str]:
    """The names ``run_with_cache`` records (and ``run_with_hooks`` can edit), in forward order.

    >>> from llmviz.models.presets import PRESETS
    >>> [n for n in cache_names(PRESETS["moe-tiny"]) if n.startswith("blocks.0.") and ("rot" in n or "router" in n)]
    ['blocks.0.attn.rot_q', 'blocks.0.attn.rot_k', 'blocks.0.mlp.router_logits', 'blocks.0.mlp.router_probs']
    """
    names = [cache_name(None, "embed.tok"), cache_name(None, "embed.pos")]
    points = block_points(config)
    for layer in range(config.n_layers):
        names += [cache_name(layer, point) for point in points]
    return names + ["ln_f", "logits"] + (["aux_loss"] if config.n_experts else [])


def count_parameters_without_building(config: GPTConfig) -> dict[str, int]:
    """The breakdown for configs too large to build here (shapes only, on the meta device, not initialised: the
    initialisers alone took 13 s on the meta device for the Model page's largest custom sizes, 3,072 experts).

    Remembered per config (a frozen dataclass): the Model page asks for the same few configs on every open."""
    return dict(_parameter_breakdown(config))


@functools.lru_cache(maxsize=256)
def _parameter_breakdown(config: GPTConfig) -> dict[str, int]:
    with torch.device("meta"):
        model = GPT(config, initialise=False)
    return model.parameter_breakdown()
