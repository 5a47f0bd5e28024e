"""OpenAI's GPT-2 in llmviz's own :class:`~llmviz.models.gpt.GPT`, from a Hugging Face checkpoint.

GPT-2 is the model llmviz's GPT is written after, so no new model class is needed: only a
map from Hugging Face's parameter names to llmviz's, and four transposes.

    Hugging Face (GPT2LMHeadModel)              llmviz (GPT)
    wte.weight (V, C)                           tok_emb.weight (V, C)
    wpe.weight (T, C)                           pos_emb.weight (T, C)
    h.i.ln_1.weight / .bias                     blocks.i.ln1.scale / .shift
    h.i.attn.c_attn.weight (C, 3C)  Conv1D      blocks.i.attn.qkv.weight (3C, C)  transposed
    h.i.attn.c_proj.weight (C, C)   Conv1D      blocks.i.attn.proj.weight (C, C)  transposed
    h.i.mlp.c_fc.weight (C, 4C)     Conv1D      blocks.i.mlp.fc.weight (4C, C)    transposed
    h.i.mlp.c_proj.weight (4C, C)   Conv1D      blocks.i.mlp.proj.weight (C, 4C)  transposed
    ln_f.weight / .bias                         ln_f.scale / .shift
    (lm_head.weight = wte.weight)               lm_head.weight is tok_emb.weight (tied)

Hugging Face's ``Conv1D`` stores its weight as (in, out), ``nn.Linear`` as (out, in): hence
the transposes. ``c_attn`` holds W_Q, W_K and W_V side by side, exactly as llmviz's ``qkv``
does, so the fused matrix needs no splitting. GPT-2's other choices — biases everywhere,
LayerNorm ε = 1e-5, the tanh GELU ("gelu_new"), tied input/output embeddings — are what
``GPTConfig(qkv_bias=True, tie_weights=True)`` builds (the ``gpt2-124m`` preset is GPT-2 small's
config read this way; a config whose activation is "gelu", the exact GELU, gives ``gelu="exact"``); a checkpoint
that differs otherwise is refused with the reason rather than loaded wrong.

Weights come from a local folder (``save_pretrained``'s output) or a Hub id such as ``"gpt2"``, fetched once by
:mod:`llmviz.hub.download` (shared with the Llama family: only :data:`FILES` says what a GPT-2 checkpoint consists of),
and read by :mod:`llmviz.hub.folder`: ``model.safetensors``, or for an old repository with only ``pytorch_model.bin``,
``torch.load(weights_only=True)``, which refuses pickled code.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from llmviz.errors import CheckpointError, ConfigError
from llmviz.hub.download import CONFIG_FILE, PYTORCH_FILE, SAFETENSORS_FILE, HubFiles, by_repo_id
from llmviz.hub.folder import gpt_with_weights, read_config, read_hf_weights, renamed
from llmviz.models.gpt import GPT, GeluForm, GPTConfig

DEFAULT_MODEL = "gpt2"
#: A GPT-2 checkpoint: config.json and model.safetensors (an old repository: pytorch_model.bin); the tokenizer is
#: GPT-2's own, shipped with tiktoken
FILES = HubFiles(
    needs=(),
    weights=(SAFETENSORS_FILE, PYTORCH_FILE),
    command="python -m llmviz gpt2 download",
    example="gpt2 or openai-community/gpt2-medium",
)


# ---------------------------------------------------------------------------- config


#: Hugging Face's names (``activation_function``) of the GELUs llmviz's GPT computes, and its own (GPTConfig.gelu)
HF_GELUS: dict[str, GeluForm] = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu": "exact"}


def config_from_hf(hf: dict, dropout: float | None = None) -> GPTConfig:
    """The :class:`GPTConfig` that computes what a Hugging Face ``GPT2Config`` (as a dict) computes.

    >>> c = config_from_hf({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
    ...                     "n_head": 12, "n_layer": 12})
    >>> c.vocab_size, c.context_length, c.d_model, c.n_heads, c.n_layers, c.dropout, c.qkv_bias, c.tie_weights
    (50257, 1024, 768, 12, 12, 0.1, True, True)
    """
    problems = []
    if hf.get("model_type", "gpt2") != "gpt2":
        problems.append(f"it is a {hf.get('model_type')!r} model, not GPT-2")
    activation = hf.get("activation_function", "gelu_new")
    if activation not in HF_GELUS:
        problems.append(f"its activation is {activation!r}; llmviz's GPT uses the tanh GELU or the exact one")
    if float(hf.get("layer_norm_epsilon", 1e-5)) != 1e-5:
        problems.append(f"its LayerNorm epsilon is {hf['layer_norm_epsilon']}; llmviz's GPT uses 1e-5")
    width = hf.get("n_embd", 768)
    if hf.get("n_inner") not in (None, 4 * width):
        problems.append(f"its MLP is {hf['n_inner']} wide; llmviz's GPT uses 4 × d_model = {4 * width}")
    if not hf.get("scale_attn_weights", True) or hf.get("scale_attn_by_inverse_layer_idx", False):
        problems.append("its attention scores are not scaled by 1/√head_dim")
    if hf.get("add_cross_attention", False):
        problems.append("it has cross-attention")
    if problems:
        raise ConfigError("This checkpoint cannot be loaded into llmviz's GPT exactly: " + "; ".join(problems) + ".")
    if dropout is None:  # GPT-2 uses 0.1 for embeddings, attention and residuals alike
        dropout = float(hf.get("resid_pdrop", 0.1))
    return GPTConfig(
        vocab_size=hf.get("vocab_size", 50257),
        context_length=hf.get("n_positions", 1024),
        d_model=width,
        n_heads=hf.get("n_head", 12),
        n_layers=hf.get("n_layer", 12),
        dropout=dropout,
        qkv_bias=True,
        tie_weights=bool(hf.get("tie_word_embeddings", True)),
        gelu=HF_GELUS.get(activation, "tanh"),
    )


# ---------------------------------------------------------------------------- weights

_CONV1D = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")
_PREFIXES = [("wte.", "tok_emb."), ("wpe.", "pos_emb."), ("h.", "blocks.")]
_PARTS = [
    (".ln_1.weight", ".ln1.scale"),
    (".ln_1.bias", ".ln1.shift"),
    (".ln_2.weight", ".ln2.scale"),
    (".ln_2.bias", ".ln2.shift"),
    ("ln_f.weight", "ln_f.scale"),
    ("ln_f.bias", "ln_f.shift"),
    (".attn.c_attn.", ".attn.qkv."),
    (".attn.c_proj.", ".attn.proj."),
    (".mlp.c_fc.", ".mlp.fc."),
    (".mlp.c_proj.", ".mlp.proj."),
]


def hf_name_to_llmviz(name: str) -> str | None:
    """llmviz's name for a Hugging Face GPT-2 tensor; None for buffers that are not weights.

    >>> hf_name_to_llmviz("transformer.h.3.attn.c_attn.weight")
    'blocks.3.attn.qkv.weight'
    >>> hf_name_to_llmviz("h.0.ln_1.weight"), hf_name_to_llmviz("ln_f.bias")
    ('blocks.0.ln1.scale', 'ln_f.shift')
    >>> hf_name_to_llmviz("h.0.attn.bias") is None  # the causal-mask buffer of old checkpoints
    True
    """
    name = name.removeprefix("transformer.")
    if name.endswith((".attn.bias", ".attn.masked_bias")):
        return None
    return renamed(name, _PREFIXES, _PARTS)


def hf_state_to_llmviz(hf_state: dict[str, torch.Tensor], config: GPTConfig) -> dict[str, torch.Tensor]:
    """Rename and transpose a Hugging Face GPT-2 state dict into llmviz's GPT state dict."""
    state = {}
    for name, tensor in hf_state.items():
        mapped = hf_name_to_llmviz(name)
        if mapped is None:
            continue
        if name.endswith(_CONV1D):
            tensor = tensor.t()  # Conv1D (in, out) → Linear (out, in)
        state[mapped] = tensor.to(torch.float32).contiguous()  # float16 checkpoints run in float32 here
    if config.tie_weights:
        state["lm_head.weight"] = state["tok_emb.weight"]  # one matrix, read once
    return state


def llmviz_state_to_hf(model: GPT) -> dict[str, torch.Tensor]:
    """The inverse of :func:`hf_state_to_llmviz`: llmviz's GPT weights under GPT2LMHeadModel's names
    (the tied head left out, as ``save_pretrained`` does)."""
    if not (model.config.qkv_bias and model.config.tie_weights and getattr(model.config, "mlp", True)):
        raise ConfigError("Only a GPT with query/key/value biases, MLPs and a tied head has GPT-2's layout.")
    inverse = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":
            continue
        hf = renamed(name, [(new, old) for old, new in _PREFIXES], [(new, old) for old, new in _PARTS])
        if hf.endswith(_CONV1D):
            tensor = tensor.t()  # Linear (out, in) → Conv1D (in, out)
        inverse["transformer." + hf] = tensor.detach().cpu().contiguous()
    return inverse


def save_hf_folder(model: GPT, folder: str | Path) -> Path:
    """Write ``model`` as a Hugging Face GPT-2 folder (``config.json`` + ``model.safetensors``) that
    ``GPT2LMHeadModel.from_pretrained`` and :func:`gpt_from_folder` both read."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    c = model.config
    hf_config = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": c.vocab_size,
        "n_positions": c.context_length,
        "n_embd": c.d_model,
        "n_head": c.n_heads,
        "n_layer": c.n_layers,
        "n_inner": None,
        "activation_function": "gelu_new" if c.gelu == "tanh" else "gelu",
        "layer_norm_epsilon": 1e-5,
        "resid_pdrop": c.dropout,
        "embd_pdrop": c.dropout,
        "attn_pdrop": c.dropout,
        "tie_word_embeddings": True,
        "bos_token_id": 50256,
        "eos_token_id": 50256,
    }
    (folder / CONFIG_FILE).write_text(json.dumps(hf_config, indent=1) + "\n", encoding="utf-8")
    save_file(llmviz_state_to_hf(model), str(folder / SAFETENSORS_FILE), metadata={"format": "pt"})
    return folder


def gpt_from_folder(folder: str | Path, device: str = "cpu", dropout: float | None = None) -> GPT:
    """llmviz's GPT with the weights of a Hugging Face GPT-2 folder (``config.json`` + weights)."""
    folder = Path(folder)
    config = config_from_hf(read_config(folder), dropout)
    return gpt_with_weights(config, hf_state_to_llmviz(read_hf_weights(folder), config), folder, device)


# ---------------------------------------------------------------------------- model + tokenizer


def gpt2_tokenizer():
    """GPT-2's byte-level BPE (50,257 tokens), from files shipped in a pip package (offline)."""
    from llmviz.tokenizers.bpe.reference import reference_tokenizer

    return reference_tokenizer("gpt2")


def load(
    source: str | Path = DEFAULT_MODEL, device: str = "cpu", allow_download: bool = False, dropout: float | None = None
):
    """``(model, tokenizer, meta)`` for a GPT-2 checkpoint: a Hub id (from the cache, or downloaded
    when ``allow_download``) or a local folder. The model is in eval mode.

    The tokenizer is GPT-2's own, so the checkpoint must use GPT-2's 50,257-token vocabulary.
    """
    folder = FILES.resolve(source, allow_download)
    model = gpt_from_folder(folder, device, dropout)
    tokenizer = gpt2_tokenizer()
    if model.config.vocab_size != tokenizer.vocab_size:
        raise CheckpointError(
            f"{source} has a vocabulary of {model.config.vocab_size:,} tokens, but GPT-2's "
            f"tokenizer has {tokenizer.vocab_size:,}: llmviz cannot tokenize text for it."
        )
    hub = by_repo_id(str(source))
    meta = {
        "source": str(source),
        "folder": str(folder),
        "title": hub.title if hub else f"GPT-2 ({source})",
        "family": "gpt2",
        "config": model.config.to_dict(),
        "parameters": model.num_parameters(),
    }
    return model, tokenizer, meta
