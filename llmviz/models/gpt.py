"""A GPT, the way nanoGPT's model.py writes it, that can show every intermediate.

    idx (B, T) ─ token embedding + position embedding ─► n_layers × Block ─► ln_f ─► lm_head ─► logits (B, T, V)
    Block:  x = x + attn(ln1(x));  x = x + mlp(ln2(x))          (pre-LayerNorm residual stream)

``forward(idx, targets=None, cache=None)`` returns ``(logits, loss)``; pass a dict as
``cache`` (or call ``run_with_cache``) to record every intermediate under the names listed
in :func:`cache_names`. Attention takes PyTorch's fused ``scaled_dot_product_attention``
when nothing is recorded and :func:`llmviz.attention.attention_steps` when it is.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.attention import attention_steps, causal_mask
from llmviz.errors import ConfigError
from llmviz.models.cache import Cache, RecordsIntermediates, record
from llmviz.models.layers import GELU, Dropout, LayerNorm


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 50257
    context_length: int = 1024
    d_model: int = 768
    n_heads: int = 12
    n_layers: int = 12
    dropout: float = 0.1
    qkv_bias: bool = False
    tie_weights: bool = False
    mlp: bool = True  # False: an attention-only transformer (blocks without LayerNorm 2 and MLP)

    def __post_init__(self):
        problems = []
        for name in ("vocab_size", "context_length", "d_model", "n_heads", "n_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{name} must be a whole number of at least 1 (got {value!r})")
        if not problems and self.d_model % self.n_heads:
            problems.append(
                f"d_model = {self.d_model} is not divisible by n_heads = {self.n_heads}: each head gets "
                f"d_model / n_heads dimensions. Try n_heads in {divisors(self.d_model)}."
            )
        if not (0.0 <= self.dropout < 1.0):
            problems.append(f"dropout must be in [0, 1) (got {self.dropout})")
        if problems:
            raise ConfigError("This GPT configuration cannot work: " + "; ".join(problems) + ".")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def replace(self, **changes) -> GPTConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0 and d <= 64]


PRESETS: dict[str, GPTConfig] = {
    # GPT-2 small's shapes, no bias in W_Q, W_K, W_V, untied: 163,009,536 parameters (124,412,160 tied; GPT-2 itself,
    # with the bias and tied, has 124,439,808: llmviz.inspect.published_config)
    "gpt2-124m": GPTConfig(vocab_size=50257, context_length=1024, d_model=768, n_heads=12, n_layers=12, dropout=0.1),
    "gpt-mini": GPTConfig(vocab_size=1024, context_length=128, d_model=128, n_heads=4, n_layers=4, dropout=0.0),
    "gpt-micro": GPTConfig(vocab_size=512, context_length=64, d_model=64, n_heads=4, n_layers=2, dropout=0.0),
    "gpt-nano": GPTConfig(vocab_size=256, context_length=32, d_model=32, n_heads=2, n_layers=2, dropout=0.0),
    # two attention-only layers: the smallest model that forms induction heads (Olsson et al., 2022)
    "attn-only-2l": GPTConfig(vocab_size=64, context_length=32, d_model=64, n_heads=4, n_layers=2, dropout=0.0,
                              mlp=False),
}


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.d_model = config.d_model
        self.dropout = config.dropout
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=config.qkv_bias)  # W_Q, W_K, W_V side by side
        self.proj = nn.Linear(config.d_model, config.d_model)  # W_O
        self.attn_dropout = Dropout(config.dropout)
        self.resid_dropout = Dropout(config.dropout)

    def weights(self) -> dict[str, torch.Tensor | None]:
        """W_Q, W_K, W_V, W_O as (d_in, d_out) matrices (the transposes of the Linear weights)."""
        w_q, w_k, w_v = self.qkv.weight.split(self.d_model, dim=0)
        b_q = b_k = b_v = None
        if self.qkv.bias is not None:
            b_q, b_k, b_v = self.qkv.bias.split(self.d_model)
        return {"w_q": w_q.T, "w_k": w_k.T, "w_v": w_v.T, "w_o": self.proj.weight.T,
                "b_q": b_q, "b_k": b_k, "b_v": b_v, "b_o": self.proj.bias}

    def forward(self, x: torch.Tensor, cache: Cache | None = None, prefix: str = "attn",
                past: tuple[torch.Tensor, torch.Tensor] | None = None):
        batch, tokens, width = x.size()  # (B, T, C)
        if cache is not None:
            if past is not None:
                raise ConfigError("Recording intermediates and a KV cache cannot be combined.")
            steps = attention_steps(x, num_heads=self.n_heads, mask="causal",
                                    dropout=self.attn_dropout if self.training else None, **self.weights())
            record(cache, f"{prefix}.q", steps["Q_heads"])  # (B, H, T, hd)
            record(cache, f"{prefix}.k", steps["K_heads"])
            record(cache, f"{prefix}.v", steps["V_heads"])
            record(cache, f"{prefix}.scores", steps["scaled_scores"])  # (B, H, T, T), q·k/√hd
            record(cache, f"{prefix}.masked_scores", steps["masked_scores"])
            record(cache, f"{prefix}.pattern", steps["weights"])  # softmax rows
            record(cache, f"{prefix}.z", steps["head_outputs"])  # (B, H, T, hd)
            output = self.resid_dropout(steps["output"])  # (B, T, C)
            record(cache, f"{prefix}.out", output)
            return output, None
        q, k, v = self.qkv(x).split(self.d_model, dim=2)  # 3 × (B, T, C)
        q = q.view(batch, tokens, self.n_heads, width // self.n_heads).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(batch, tokens, self.n_heads, width // self.n_heads).transpose(1, 2)  # (B, H, T, hd)
        v = v.view(batch, tokens, self.n_heads, width // self.n_heads).transpose(1, 2)  # (B, H, T, hd)
        dropout_p = self.dropout if self.training else 0.0
        if dropout_p > 0.0 and self.attn_dropout.generator is not None:
            # the fused kernel draws its dropout mask from torch's global generator: written out instead, so
            # the mask comes from the run's own stream
            if past is not None:
                raise ConfigError("A KV cache is for generation (eval mode), not training with dropout.")
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, T, T)
            scores = scores.masked_fill(~causal_mask(tokens, device=x.device), float("-inf"))
            y = self.attn_dropout(torch.softmax(scores, dim=-1)) @ v  # (B, H, T, hd)
            present = (k, v)
        elif past is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)  # (B, H, T, hd)
            present = (k, v)
        else:
            k = torch.cat([past[0], k], dim=2)  # (B, H, T_past + T, hd)
            v = torch.cat([past[1], v], dim=2)
            mask = None if tokens == 1 else causal_mask(tokens, k.shape[2], device=x.device)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
            present = (k, v)
        y = y.transpose(1, 2).contiguous().view(batch, tokens, width)  # (B, T, C)
        return self.resid_dropout(self.proj(y)), present


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(config.d_model, 4 * config.d_model)
        self.gelu = GELU()
        self.proj = nn.Linear(4 * config.d_model, config.d_model)
        self.dropout = Dropout(config.dropout)

    def forward(self, x: torch.Tensor, cache: Cache | None = None, prefix: str = "mlp") -> torch.Tensor:
        pre = self.fc(x)  # (B, T, 4C)
        record(cache, f"{prefix}.pre", pre)
        hidden = self.gelu(pre)  # (B, T, 4C)
        record(cache, f"{prefix}.hidden", hidden)
        out = self.dropout(self.proj(hidden))  # (B, T, C)
        record(cache, f"{prefix}.out", out)
        return out


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln1 = LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln2 = LayerNorm(config.d_model) if config.mlp else None
        self.mlp = MLP(config) if config.mlp else None

    def forward(self, x, cache: Cache | None = None, prefix: str = "blocks.0", past=None):
        record(cache, f"{prefix}.resid_pre", x)
        normed = self.ln1(x)
        record(cache, f"{prefix}.ln1", normed)
        attn_out, present = self.attn(normed, cache, f"{prefix}.attn", past=past)
        x = x + attn_out  # shortcut (residual) connection
        record(cache, f"{prefix}.resid_mid", x)
        if self.mlp is not None:
            normed = self.ln2(x)
            record(cache, f"{prefix}.ln2", normed)
            x = x + self.mlp(normed, cache, f"{prefix}.mlp")
        record(cache, f"{prefix}.resid_post", x)
        return x, present


class GPT(nn.Module, RecordsIntermediates):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.context_length, config.d_model)
        self.drop = Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
        self.ln_f = LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.tok_emb.weight  # one matrix for input and output
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
    def context_size(self) -> int:
        return self.config.context_length

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, cache: Cache | None = None):
        batch, tokens = idx.shape  # (B, T)
        if tokens > self.config.context_length:
            raise ConfigError(
                f"{tokens} tokens do not fit the context of {self.config.context_length}: crop the input "
                "to its last context_length tokens."
            )
        positions = torch.arange(tokens, device=idx.device)  # (T,)
        tok = self.tok_emb(idx)  # (B, T, C)
        pos = self.pos_emb(positions)  # (T, C)
        record(cache, "embed.tok", tok)
        record(cache, "embed.pos", pos)
        x = self.drop(tok + pos)  # (B, T, C)
        for layer, block in enumerate(self.blocks):
            x, _ = block(x, cache, f"blocks.{layer}")
        x = self.ln_f(x)  # (B, T, C)
        record(cache, "ln_f", x)
        logits = self.lm_head(x)  # (B, T, V): logits for every position
        record(cache, "logits", logits)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def forward_with_kv_cache(self, idx: torch.Tensor, past_key_values: list | None = None):
        """Incremental decoding: ``idx`` holds only the new tokens; returns ``(logits, presents)``.

        ``past_key_values`` is the ``presents`` of the previous call: per layer the keys and
        values of every earlier position, so they are not computed again.
        """
        past_length = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        batch, tokens = idx.shape
        if past_length + tokens > self.config.context_length:
            raise ConfigError("The KV cache is full: the sequence reached the model's context length.")
        positions = torch.arange(past_length, past_length + tokens, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(positions))  # (B, T, C)
        presents = []
        for layer, block in enumerate(self.blocks):
            x, present = block(x, None, f"blocks.{layer}",
                               past=None if past_key_values is None else past_key_values[layer])
            if present is None:  # the first call: the SDPA path returns its own keys and values
                raise AssertionError("attention must return keys and values")
            presents.append(present)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        return logits, presents

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters per component, computed from the modules (a tied matrix counts once)."""
        groups = {
            "token embedding": 0, "position embedding": 0, "attention W_Q, W_K, W_V": 0,
            "attention output W_O": 0, "MLP": 0, "LayerNorm": 0, "output head": 0,
        }
        for name, parameter in self.named_parameters():  # shared parameters are listed once
            if name.startswith("tok_emb"):
                key = "token embedding"
            elif name.startswith("pos_emb"):
                key = "position embedding"
            elif ".attn.qkv" in name:
                key = "attention W_Q, W_K, W_V"
            elif ".attn.proj" in name:
                key = "attention output W_O"
            elif ".mlp." in name:
                key = "MLP"
            elif ".ln" in name or name.startswith("ln_f"):
                key = "LayerNorm"
            elif name.startswith("lm_head"):
                key = "output head"
            else:
                raise AssertionError(f"unclassified parameter {name}")
            groups[key] += parameter.numel()
        return groups

    def num_parameters(self) -> int:
        return sum(parameter.numel() for parameter in self.parameters())


def cache_names(config: GPTConfig) -> list[str]:
    """The names ``run_with_cache`` records, in forward order."""
    names = ["embed.tok", "embed.pos"]
    for layer in range(config.n_layers):
        p = f"blocks.{layer}"
        names += [f"{p}.resid_pre", f"{p}.ln1"]
        names += [f"{p}.attn.{n}" for n in ("q", "k", "v", "scores", "masked_scores", "pattern", "z", "out")]
        names += [f"{p}.resid_mid"]
        if config.mlp:
            names += [f"{p}.ln2", f"{p}.mlp.pre", f"{p}.mlp.hidden", f"{p}.mlp.out"]
        names += [f"{p}.resid_post"]
    return names + ["ln_f", "logits"]


def count_parameters_without_building(config: GPTConfig) -> dict[str, int]:
    """The breakdown for configs too large to build here (shapes only, on the meta device)."""
    with torch.device("meta"):
        model = GPT(config)
    return model.parameter_breakdown()
