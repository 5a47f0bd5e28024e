"""Llama-family models (Llama, Mistral, Qwen2, SmolLM2, Mixtral) in llmviz's own GPT, from Hugging Face folders.

The models that came after GPT-2 are GPT-2 with a few switches flipped (``llmviz.models.gpt``):
RoPE instead of a position table, RMSNorm instead of LayerNorm, a SwiGLU MLP, fewer key/value
heads than query heads, no biases, and for Mixtral a router over expert MLPs. So no new model
class is needed either: :func:`config_from_hf` sets the switches and the weights are renamed.

    Hugging Face (LlamaForCausalLM, Qwen2ForCausalLM, …)      llmviz (GPT)
    model.embed_tokens.weight (V, C)                           tok_emb.weight (V, C)
    model.layers.i.input_layernorm.weight                      blocks.i.ln1.scale
    model.layers.i.self_attn.{q,k,v}_proj.weight / .bias       blocks.i.attn.qkv.weight / .bias  (stacked: q, k, v)
    model.layers.i.self_attn.o_proj.weight                     blocks.i.attn.proj.weight
    model.layers.i.post_attention_layernorm.weight             blocks.i.ln2.scale
    model.layers.i.mlp.{gate,up,down}_proj.weight              blocks.i.mlp.{gate,fc,proj}.weight
    model.layers.i.block_sparse_moe.gate.weight (Mixtral)      blocks.i.mlp.router.weight
    model.layers.i.block_sparse_moe.experts.e.{w1,w3,w2}       blocks.i.mlp.experts.e.{gate,fc,proj}.weight
    model.norm.weight                                          ln_f.scale
    lm_head.weight (absent when tied)                          lm_head.weight

Every tensor is an ``nn.Linear`` weight on both sides (out, in): no transposes. RoPE pairs
dimension i with i + head_dim/2 in both. A checkpoint with anything llmviz's GPT does not
compute (scaled RoPE, a sliding window, another activation) is refused with the reason.

Weights come from a local folder (``save_pretrained``'s output) or a Hub id such as ``HuggingFaceTB/SmolLM2-135M``,
fetched once by :mod:`llmviz.hub.download` (shared with GPT-2: only :data:`FILES` says what a checkpoint of the family
consists of, here with its own ``tokenizer.json``) and read offline afterwards by :mod:`llmviz.hub.folder`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import torch

from llmviz.errors import CheckpointError, ConfigError
from llmviz.hub.download import SAFETENSORS_FILE, SAFETENSORS_INDEX, TOKENIZER_FILE, HubFiles, by_repo_id
from llmviz.hub.folder import gpt_with_weights, read_config, read_hf_weights, renamed
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.tokenizers.base import Tokenizer

DEFAULT_MODEL = "HuggingFaceTB/SmolLM2-135M"
MODEL_TYPES = ("llama", "mistral", "qwen2", "mixtral")
#: A Llama-family checkpoint: config.json, its own tokenizer.json and safetensors weights (one file or shards)
FILES = HubFiles(
    needs=(TOKENIZER_FILE,),
    weights=(SAFETENSORS_FILE, SAFETENSORS_INDEX),
    command="python -m llmviz hf download",
    example=DEFAULT_MODEL,
)


# ---------------------------------------------------------------------------- config


def _rope_theta(hf: dict) -> tuple[float, list[str]]:
    """RoPE's base θ from a transformers 5 (``rope_parameters``) or 4 (``rope_theta``, ``rope_scaling``) config."""
    problems = []
    parameters = hf.get("rope_parameters") or {}
    scaling = hf.get("rope_scaling") or {}
    kind = parameters.get("rope_type", scaling.get("rope_type", scaling.get("type", "default")))
    if kind not in ("default", None):
        problems.append(f"its RoPE is {kind!r}-scaled; llmviz's GPT rotates by the plain angles")
    return float(parameters.get("rope_theta", hf.get("rope_theta", 10000.0))), problems


def config_from_hf(hf: dict) -> GPTConfig:
    """The :class:`GPTConfig` that computes what a Hugging Face Llama/Mistral/Qwen2/Mixtral config computes.

    >>> c = config_from_hf({"model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
    ...     "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "rope_theta": 100000,
    ...     "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "tie_word_embeddings": True})
    >>> c.positions, c.norm, c.mlp_kind, c.kv_heads, c.rope_theta, c.bias, c.tie_weights
    ('rope', 'rmsnorm', 'swiglu', 3, 100000.0, False, True)
    """
    kind = hf.get("model_type")
    if kind not in MODEL_TYPES:
        raise ConfigError(
            f"This is a {kind!r} model; llmviz reads {', '.join(MODEL_TYPES)} (and GPT-2 via llmviz.hub.gpt2)."
        )
    width, heads = hf.get("hidden_size", 4096), hf.get("num_attention_heads", 32)
    theta, problems = _rope_theta(hf)
    if hf.get("hidden_act", "silu") != "silu":
        problems.append(f"its MLP activation is {hf['hidden_act']!r}; llmviz's SwiGLU uses SiLU")
    if hf.get("head_dim") not in (None, width // heads):
        problems.append(f"its head_dim is {hf['head_dim']}, not hidden_size / heads = {width // heads}")
    if hf.get("use_sliding_window") or (
        kind == "mistral"
        and hf.get("sliding_window") not in (None, 0)
        and hf["sliding_window"] < hf.get("max_position_embeddings", 0)
    ):
        problems.append("it attends within a sliding window; llmviz's GPT attends to the whole context")
    if kind == "qwen2":  # biases in q, k, v only
        qkv_bias, bias = True, False
    else:
        qkv_bias, mlp_bias = bool(hf.get("attention_bias", False)), bool(hf.get("mlp_bias", False))
        if qkv_bias != mlp_bias:  # Llama's attention_bias also puts a bias on o_proj
            problems.append("it has biases in attention but not in the MLP (or the reverse)")
        bias = qkv_bias
    if problems:
        raise ConfigError("This checkpoint cannot be loaded into llmviz's GPT exactly: " + "; ".join(problems) + ".")
    experts = {}
    if kind == "mixtral":
        experts = dict(
            n_experts=hf.get("num_local_experts", 8),
            experts_top_k=hf.get("num_experts_per_tok", 2),
            router_aux_loss_coef=float(hf.get("router_aux_loss_coef", 0.001)),
        )
    return GPTConfig(
        vocab_size=hf.get("vocab_size", 32000),
        context_length=hf.get("max_position_embeddings", 2048),
        d_model=width,
        n_heads=heads,
        n_layers=hf.get("num_hidden_layers", 32),
        dropout=0.0,
        n_kv_heads=hf.get("num_key_value_heads") or heads,
        positions="rope",
        rope_theta=theta,
        norm="rmsnorm",
        norm_eps=float(hf.get("rms_norm_eps", 1e-6)),
        mlp_kind="swiglu",
        d_mlp=hf.get("intermediate_size", 4 * width),
        qkv_bias=qkv_bias,
        bias=bias,
        tie_weights=bool(hf.get("tie_word_embeddings", False)),
        **experts,
    )


def config_to_hf(config: GPTConfig) -> dict:
    """The inverse of :func:`config_from_hf`: a transformers config dict (Llama, Qwen2 or Mixtral) for a
    GPT whose switches are all Llama's."""
    llama_like = (
        config.positions == "rope"
        and config.norm == "rmsnorm"
        and config.mlp_kind == "swiglu"
        and config.mlp
        and (config.bias == config.qkv_bias or (config.qkv_bias and not config.bias))
    )
    if not llama_like:
        raise ConfigError("Only a GPT with RoPE, RMSNorm and a SwiGLU MLP has a Llama-family twin in transformers.")
    kind = "mixtral" if config.n_experts else ("qwen2" if config.qkv_bias and not config.bias else "llama")
    hf = {
        "model_type": kind,
        "vocab_size": config.vocab_size,
        "hidden_size": config.d_model,
        "intermediate_size": config.mlp_width,
        "num_hidden_layers": config.n_layers,
        "num_attention_heads": config.n_heads,
        "num_key_value_heads": config.kv_heads,
        "max_position_embeddings": config.context_length,
        "rms_norm_eps": config.norm_eps,
        "rope_theta": config.rope_theta,
        "tie_word_embeddings": config.tie_weights,
        "hidden_act": "silu",
    }
    if kind == "llama":
        hf.update(attention_bias=config.bias, mlp_bias=config.bias)
    if kind == "mixtral":
        hf.update(
            num_local_experts=config.n_experts,
            num_experts_per_tok=config.experts_top_k,
            router_aux_loss_coef=config.router_aux_loss_coef,
        )
    return hf


# ---------------------------------------------------------------------------- weights

_NAMES = [("model.embed_tokens.", "tok_emb."), ("model.norm.", "ln_f."), ("model.layers.", "blocks.")]
_PARTS = [
    (".input_layernorm.weight", ".ln1.scale"),
    (".post_attention_layernorm.weight", ".ln2.scale"),
    ("ln_f.weight", "ln_f.scale"),
    (".self_attn.o_proj.", ".attn.proj."),
    (".mlp.gate_proj.", ".mlp.gate."),
    (".mlp.up_proj.", ".mlp.fc."),
    (".mlp.down_proj.", ".mlp.proj."),
    (".block_sparse_moe.gate.", ".mlp.router."),
    (".block_sparse_moe.experts.", ".mlp.experts."),
    (".w1.", ".gate."),
    (".w3.", ".fc."),
    (".w2.", ".proj."),
]


def hf_name_to_llmviz(name: str) -> str:
    """llmviz's name for a Hugging Face Llama-family tensor (q, k and v are stacked separately).

    >>> hf_name_to_llmviz("model.layers.3.mlp.gate_proj.weight")
    'blocks.3.mlp.gate.weight'
    >>> hf_name_to_llmviz("model.layers.0.block_sparse_moe.experts.5.w3.weight")
    'blocks.0.mlp.experts.5.fc.weight'
    """
    return renamed(name, _NAMES, _PARTS)


def _renamed(name: str, tensor: torch.Tensor, config: GPTConfig) -> dict[str, torch.Tensor]:
    """One Hugging Face tensor (not W_Q, W_K, W_V) under llmviz's name(s): fused expert tensors (transformers 5's
    ``mlp.experts.gate_up_proj`` and ``down_proj``) split per expert, the router renamed."""
    if name.endswith(".mlp.experts.gate_up_proj"):  # (E, 2F, C): gate rows, then up rows
        prefix = hf_name_to_llmviz(name).removesuffix("gate_up_proj")
        out = {}
        for expert, matrix in enumerate(tensor):
            gate, up = matrix.chunk(2, dim=0)  # (F, C) each
            out[f"{prefix}{expert}.gate.weight"], out[f"{prefix}{expert}.fc.weight"] = gate, up
        return out
    if name.endswith(".mlp.experts.down_proj"):  # (E, C, F)
        prefix = hf_name_to_llmviz(name).removesuffix("down_proj")
        return {f"{prefix}{expert}.proj.weight": matrix for expert, matrix in enumerate(tensor)}
    if name.endswith(".mlp.gate.weight") and config.n_experts:  # transformers 5's router name
        return {hf_name_to_llmviz(name).replace(".mlp.gate.", ".mlp.router."): tensor}
    return {hf_name_to_llmviz(name): tensor}


def hf_state_to_llmviz(hf_state: dict[str, torch.Tensor], config: GPTConfig) -> dict[str, torch.Tensor]:
    """Rename a Hugging Face state dict into llmviz's GPT state dict: W_Q, W_K, W_V stacked into ``qkv``,
    fused expert tensors (transformers 5's ``mlp.experts.gate_up_proj``) split per expert."""
    state, pieces = {}, {}
    for name, tensor in hf_state.items():
        tensor = tensor.to(torch.float32)  # bfloat16 checkpoints run in float32 here
        for which in ("q", "k", "v"):
            if f".self_attn.{which}_proj." in name:
                layer, kind = name.split(".")[2], name.rsplit(".", 1)[1]  # model.layers.<i>.….<weight|bias>
                pieces[(layer, kind, which)] = tensor
                break
        else:
            state.update(_renamed(name, tensor, config))
    for layer, kind in sorted({(layer, kind) for layer, kind, _ in pieces}):
        try:
            parts = [pieces[(layer, kind, which)] for which in ("q", "k", "v")]
        except KeyError:
            raise CheckpointError(f"Layer {layer} lacks one of q_proj, k_proj, v_proj ({kind}).") from None
        state[f"blocks.{layer}.attn.qkv.{kind}"] = torch.cat(parts, dim=0).contiguous()  # (H·hd + 2·H_kv·hd, …)
    state = {name: tensor.contiguous() for name, tensor in state.items()}
    if config.tie_weights:
        state["lm_head.weight"] = state["tok_emb.weight"]
    return state


def load_hf_causal_lm(folder: str | Path, device: str = "cpu") -> GPT:
    """llmviz's GPT with the weights of a Hugging Face Llama/Mistral/Qwen2/Mixtral folder, in eval mode."""
    folder = Path(folder)
    config = config_from_hf(read_config(folder))
    return gpt_with_weights(config, hf_state_to_llmviz(read_hf_weights(folder), config), folder, device)


# ---------------------------------------------------------------------------- tokenizer


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet reversed: the printable character that stands for each byte → the byte."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    characters, extra = printable[:], 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, characters, strict=True)}


class HubTokenizer(Tokenizer):
    """A model's own ``tokenizer.json`` (read with the ``tokenizers`` library) behind llmviz's interface."""

    name = "hub"

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer as FastTokenizer

        self.fast = FastTokenizer.from_file(str(path))
        self.byte_level = "ByteLevel" in json.dumps(json.loads(self.fast.to_str()).get("decoder") or {})

    @property
    def vocab_size(self) -> int:
        return self.fast.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.fast.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Iterable[int]) -> str:
        return self.fast.decode(list(ids), skip_special_tokens=False)

    def token_bytes(self, token_id: int) -> bytes:
        token = self.fast.id_to_token(int(token_id)) or ""
        if self.byte_level:
            decoder = _byte_decoder()
            return bytes(decoder[c] for c in token if c in decoder)
        return token.replace("▁", " ").encode("utf-8")


def load(source: str | Path = DEFAULT_MODEL, device: str = "cpu", allow_download: bool = False):
    """``(model, tokenizer, meta)`` for a Llama-family checkpoint: a Hub id (from the cache, or downloaded
    when ``allow_download``) or a local folder with ``tokenizer.json``. The model is in eval mode."""
    folder = FILES.resolve(source, allow_download)
    model = load_hf_causal_lm(folder, device)
    if not (folder / TOKENIZER_FILE).exists():
        raise CheckpointError(f"{folder} has no {TOKENIZER_FILE}: llmviz cannot tokenize text for it.")
    tokenizer = HubTokenizer(folder / TOKENIZER_FILE)
    if tokenizer.vocab_size > model.config.vocab_size:
        raise CheckpointError(
            f"{source}'s tokenizer has {tokenizer.vocab_size:,} tokens but the model only "
            f"{model.config.vocab_size:,} rows of embeddings."
        )
    hub = by_repo_id(str(source))
    meta = {
        "source": str(source),
        "folder": str(folder),
        "title": hub.title if hub else str(source),
        "family": read_config(folder)["model_type"],
        "config": model.config.to_dict(),
        "parameters": model.num_parameters(),
    }
    return model, tokenizer, meta
