"""The decoder of a small encoder–decoder Transformer (Vaswani et al., 2017), in llmviz's style.

    token ids (B, T) ─ Embed ─► n_layers × DecoderLayer ─► Linear ─► logits (B, T, V)
    DecoderLayer (post-LayerNorm, as in "Attention Is All You Need"):
        x = LN(x + MaskedMultiHeadSelfAttention(x))
        x = LN(x + MultiHeadCrossAttention(queries=x, keys=values=encoder output))
        x = LN(x + FFN(x))                      FFN = Linear(d_model, d_ff) → ReLU → Linear(d_ff, d_model)

The toy configuration (:data:`TOY_CONFIG`): vocab 12, d_model 32, d_q = d_k = d_v = 4, 8 heads, d_ff 128,
6 layers, sequences of 8 (a [start] token with id 0, then 7 labels). Attention weights are
stored as ``nn.Linear`` stores them: W_Q is ``(heads·d_q, d_model)`` and used as ``X W_Qᵀ``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.models import breakdown
from llmviz.models.attention import attention_steps
from llmviz.models.cache import Cache, record


@dataclass(frozen=True)
class DecoderConfig:
    """The sizes of the encoder–decoder transformer's decoder (small by default, so that every tensor can be shown)."""

    vocab_size: int = 12
    d_model: int = 32
    d_q: int = 4
    d_k: int = 4
    d_v: int = 4
    n_heads: int = 8
    d_ff: int = 128
    n_layers: int = 6
    seq_len: int = 8

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"DecoderConfig.{name} must be a whole number of at least 1 (got {value!r}).")
        if self.d_q != self.d_k:
            raise ConfigError(
                f"d_q ({self.d_q}) must equal d_k ({self.d_k}): scores are dot products of queries and keys."
            )


TOY_CONFIG = DecoderConfig()


class MultiHeadAttention(nn.Module):
    """Masked multi-head self-attention (``kv=None``) and multi-head cross-attention (``kv`` = encoder output) in one
    class."""

    def __init__(self, config: DecoderConfig, masked: bool):
        super().__init__()
        self.masked = masked
        self.n_heads = config.n_heads
        self.W_Q = nn.Parameter(torch.randn(config.d_q * config.n_heads, config.d_model))
        self.W_K = nn.Parameter(torch.randn(config.d_k * config.n_heads, config.d_model))
        self.W_V = nn.Parameter(torch.randn(config.d_v * config.n_heads, config.d_model))
        self.W_O = nn.Parameter(torch.randn(config.d_model, config.d_v * config.n_heads))
        for parameter in (self.W_Q, self.W_K, self.W_V, self.W_O):
            parameter.data.mul_(config.d_model**-0.5)  # keep activations O(1) so 6 layers train

    def forward(self, x, kv=None, cache: Cache | None = None, prefix: str = "attn"):
        steps = attention_steps(
            x,
            self.W_Q.T,
            self.W_K.T,
            self.W_V.T,
            num_heads=self.n_heads,
            mask="causal" if self.masked else "none",
            w_o=self.W_O.T,
            kv=kv,
        )
        record(cache, f"{prefix}.scores", steps["scaled_scores"])  # (B, H, T_q, T_k)
        record(cache, f"{prefix}.pattern", steps["weights"])
        record(cache, f"{prefix}.out", steps["output"])  # (B, T_q, d_model)
        return steps["output"]


class FFN(nn.Module):
    """The position-wise feed-forward network: Linear → ReLU → Linear."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff)
        self.linear2 = nn.Linear(config.d_ff, config.d_model)

    def forward(self, x):
        return self.linear2(F.relu(self.linear1(x)))  # (B, T, d_model)


class DecoderLayer(nn.Module):
    """One decoder layer: masked self-attention, cross-attention to the encoder, feed-forward, each followed by a
    residual connection and LayerNorm."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config, masked=True)
        self.cross_attn = MultiHeadAttention(config, masked=False)
        self.ffn = FFN(config)
        self.ln_self = nn.LayerNorm(config.d_model)
        self.ln_cross = nn.LayerNorm(config.d_model)
        self.ln_ffn = nn.LayerNorm(config.d_model)

    def forward(self, x, encoder_output, cache: Cache | None = None, prefix: str = "layers.0"):
        x = self.ln_self(x + self.self_attn(x, cache=cache, prefix=f"{prefix}.self_attn"))  # (B, T, d)
        x = self.ln_cross(x + self.cross_attn(x, kv=encoder_output, cache=cache, prefix=f"{prefix}.cross_attn"))
        x = self.ln_ffn(x + self.ffn(x))
        record(cache, f"{prefix}.out", x)
        return x


class Decoder(nn.Module):
    """The decoder stack: token embedding, ``n_layers`` decoder layers and a linear layer to the vocabulary."""

    def __init__(self, config: DecoderConfig = TOY_CONFIG):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.n_layers)])
        self.output = nn.Linear(config.d_model, config.vocab_size)

    def forward(self, token_ids, encoder_output, targets=None, cache: Cache | None = None):
        x = self.embed(token_ids)  # (B, T, d_model)
        record(cache, "embed.tok", x)
        for number, layer in enumerate(self.layers):
            x = layer(x, encoder_output, cache, f"layers.{number}")
        logits = self.output(x)  # (B, T, V)
        record(cache, "logits", logits)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss

    @torch.no_grad()
    def run_with_cache(self, token_ids, encoder_output, targets=None):
        cache: Cache = {}
        logits, loss = self(token_ids, encoder_output, targets, cache=cache)
        return logits, loss, cache

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters per component (:func:`llmviz.models.breakdown.parameter_breakdown`)."""
        rules = [
            (r"^embed", "embedding"),
            (r"^output", "output layer"),
            (r"\.self_attn\.", "masked self-attention"),
            (r"\.cross_attn\.", "cross-attention"),
            (r"\.ffn\.", "FFN"),
            (r"\.ln_", "LayerNorm"),
        ]
        return breakdown.parameter_breakdown(self, rules)


def toy_task(config: DecoderConfig = TOY_CONFIG, batch_size: int = 10, seed: int = 0):
    """The toy task, made offline: random labels, a [start] token 0, random encoder output.

    Returns ``(inputs, targets, encoder_output)``: inputs are ``[0, l1, …, l6]`` and targets
    the labels ``[l1, …, l7]`` — each position predicts the next token (shifted by one).
    """
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(1, config.vocab_size, (batch_size, config.seq_len - 1), generator=generator)
    start = torch.zeros(batch_size, 1, dtype=torch.long)
    token_ids = torch.cat([start, labels], dim=1)  # (B, seq_len)
    inputs = token_ids[:, :-1]  # (B, seq_len − 1)
    targets = token_ids[:, 1:]  # (B, seq_len − 1), = labels
    encoder_output = torch.randn(batch_size, config.seq_len, config.d_model, generator=generator)
    return inputs, targets, encoder_output
