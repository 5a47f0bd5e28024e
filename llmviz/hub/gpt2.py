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
``GPTConfig(qkv_bias=True, tie_weights=True)`` builds; a checkpoint that differs is refused
with the reason rather than loaded wrong.

Weights come from a local folder (``save_pretrained``'s output) or a Hub id such as
``"gpt2"``, fetched once with ``huggingface_hub`` (which caches, resumes and verifies
downloads). Only ``model.safetensors`` is read; a folder with only ``pytorch_model.bin`` is
read with ``torch.load(weights_only=True)``, which refuses pickled code.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from llmviz.errors import CheckpointError, ConfigError, LlmvizError
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.training.safetensors_file import read_safetensors

DEFAULT_MODEL = "gpt2"
CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"


@dataclass(frozen=True)
class HubModel:
    """A GPT-2 checkpoint on the Hugging Face Hub: its id, a name for people and its download size."""

    repo_id: str
    title: str
    download: str  # the size of model.safetensors, as a person reads it


HUB_MODELS: dict[str, HubModel] = {
    "gpt2": HubModel("gpt2", "GPT-2 small (124M)", "548 MB"),
    "gpt2-medium": HubModel("gpt2-medium", "GPT-2 medium (355M)", "1.5 GB"),
    "gpt2-large": HubModel("gpt2-large", "GPT-2 large (774M)", "3.2 GB"),
    "gpt2-xl": HubModel("gpt2-xl", "GPT-2 XL (1.5B)", "6.4 GB"),
    "distilgpt2": HubModel("distilgpt2", "DistilGPT-2 (82M)", "353 MB"),
}


class GPT2Unavailable(LlmvizError):
    """GPT-2's files are neither on disk nor downloadable now (offline, or the Hub cannot be reached)."""


def offline_note(repo_id: str = DEFAULT_MODEL) -> str:
    """What to do when ``HF_HUB_OFFLINE`` stops a download."""
    return (
        f"{repo_id} is not in the cache and HF_HUB_OFFLINE is set, which forbids every download: unset it "
        f"(`unset HF_HUB_OFFLINE`, or run `HF_HUB_OFFLINE=0 python -m llmviz gpt2 download {repo_id}`) while "
        "online; once the weights are cached, they load with it set."
    )


def how_to_get(repo_id: str = DEFAULT_MODEL) -> str:
    """What a person does to get the weights (said wherever they are missing)."""
    hub = HUB_MODELS.get(repo_id)
    size = f" ({hub.download})" if hub else ""
    return (
        f"To get it, connect to the internet once and run `python -m llmviz gpt2 download {repo_id}`{size}: "
        f"huggingface_hub keeps it in its cache ({cache_dir()}), and from then on it loads offline."
    )


# ---------------------------------------------------------------------------- config


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
    if hf.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        problems.append(f"its activation is {hf['activation_function']!r}; llmviz's GPT uses the tanh GELU")
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
    for old, new in _PREFIXES:
        if name.startswith(old):
            name = new + name[len(old) :]
    for old, new in _PARTS:
        name = name.replace(old, new)
    return name


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
        hf = name
        for old, new in _PARTS:
            hf = hf.replace(new, old)
        for old, new in _PREFIXES:
            if hf.startswith(new):
                hf = old + hf[len(new) :]
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
        "activation_function": "gelu_new",
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


def read_hf_weights(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a checkpoint folder: safetensors (one file or shards), else a weights-only torch file."""
    if (folder / SAFETENSORS_FILE).exists():
        return read_safetensors(folder / SAFETENSORS_FILE)
    if (folder / SAFETENSORS_INDEX).exists():
        index = json.loads((folder / SAFETENSORS_INDEX).read_text(encoding="utf-8"))
        state = {}
        for shard in sorted(set(index["weight_map"].values())):
            state.update(read_safetensors(folder / shard))
        return state
    if (folder / PYTORCH_FILE).exists():
        try:  # weights_only refuses anything but tensors: no code runs while reading
            return torch.load(folder / PYTORCH_FILE, map_location="cpu", weights_only=True)
        except Exception as error:  # noqa: BLE001 - any failure here means "not a plain weights file"
            raise CheckpointError(f"{PYTORCH_FILE} in {folder} is not a plain weights file: {error}") from None
    raise CheckpointError(f"{folder} has no {SAFETENSORS_FILE} (nor {PYTORCH_FILE}).")


def gpt_from_folder(folder: str | Path, device: str = "cpu", dropout: float | None = None) -> GPT:
    """llmviz's GPT with the weights of a Hugging Face GPT-2 folder (``config.json`` + weights)."""
    folder = Path(folder)
    if not (folder / CONFIG_FILE).exists():
        raise CheckpointError(f"{folder} is not a Hugging Face checkpoint (no {CONFIG_FILE}).")
    try:
        hf_config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except ValueError as error:
        raise CheckpointError(f"{CONFIG_FILE} in {folder} is damaged: {error}") from None
    config = config_from_hf(hf_config, dropout)
    return gpt_with_weights(config, hf_state_to_llmviz(read_hf_weights(folder), config), folder, device)


def gpt_with_weights(config: GPTConfig, state: dict[str, torch.Tensor], folder: Path, device: str = "cpu") -> GPT:
    """llmviz's GPT of ``config`` holding ``state`` (already renamed to llmviz's names), in eval mode; a mismatch is a
    :class:`CheckpointError` naming ``folder``. Shared by every Hugging Face loader (GPT-2 here, Llama & co. in
    :mod:`llmviz.hub.llama`)."""
    with torch.device("meta"):  # no time spent on a random initialisation that is overwritten next
        model = GPT(config, initialise=False)
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as error:
        first = " ".join(str(error).splitlines()[:3])
        raise CheckpointError(f"The weights in {folder} do not match its {CONFIG_FILE}: {first}") from None
    if config.tie_weights:
        model.lm_head.weight = model.tok_emb.weight  # assign=True replaced the Parameter: tie it again
    return model.to(device).eval()


# ---------------------------------------------------------------------------- the Hub cache


def cache_dir() -> str:
    """Where huggingface_hub keeps downloads (``HF_HUB_CACHE``, by default ~/.cache/huggingface/hub)."""
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set: nothing will be downloaded, only the cache is read."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE")
    if value is not None:
        return value.strip().upper() in {"1", "ON", "YES", "TRUE"}
    return bool(constants.HF_HUB_OFFLINE)


_REACHABLE: dict[str, tuple[float, bool]] = {}  # endpoint → (when checked, answer)


def hub_reachable(timeout: float = 2.0, max_age_s: float = 300.0) -> bool:
    """Can this machine open a connection to the Hugging Face Hub? (remembered for ``max_age_s``)

    A quick TCP connection, so that an offline server says "offline" at once instead of
    letting huggingface_hub retry for half a minute. Behind an HTTP proxy the answer is
    left to the download itself (True).
    """
    import socket
    import time
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if hub_offline():
        return False
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    endpoint = urlparse(constants.ENDPOINT)
    host, port = endpoint.hostname or "huggingface.co", endpoint.port or (443 if endpoint.scheme == "https" else 80)
    checked = _REACHABLE.get(f"{host}:{port}")
    if checked is not None and time.monotonic() - checked[0] < max_age_s:
        return checked[1]
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        answer = True
    except OSError:
        answer = False
    _REACHABLE[f"{host}:{port}"] = (time.monotonic(), answer)
    return answer


def _weight_files() -> tuple[str, ...]:
    return SAFETENSORS_FILE, SAFETENSORS_INDEX, PYTORCH_FILE


def _check_repo_id(repo_id: str) -> None:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise GPT2Unavailable(
            f"{repo_id!r} is neither a folder on this computer nor a Hugging Face Hub id "
            "(such as gpt2 or openai-community/gpt2-medium)."
        ) from None


def cached_folder(repo_id: str = DEFAULT_MODEL) -> Path | None:
    """The cache's snapshot folder holding ``config.json`` and the weights of ``repo_id``, or None.

    Only the cache is read (``try_to_load_from_cache``): no network, so it is cheap to ask
    on every page run.
    """
    from huggingface_hub import try_to_load_from_cache

    _check_repo_id(repo_id)
    config = try_to_load_from_cache(repo_id, CONFIG_FILE)
    if not isinstance(config, str):
        return None
    for name in _weight_files():
        weights = try_to_load_from_cache(repo_id, name)
        if isinstance(weights, str):
            if name == SAFETENSORS_INDEX:
                folder = Path(weights).parent
                index = json.loads(Path(weights).read_text(encoding="utf-8"))
                if not all((folder / shard).exists() for shard in set(index["weight_map"].values())):
                    continue
            return Path(config).parent
    return None


def is_cached(repo_id: str = DEFAULT_MODEL) -> bool:
    return cached_folder(repo_id) is not None


def download(repo_id: str = DEFAULT_MODEL) -> Path:
    """Fetch ``config.json`` and the weights of ``repo_id`` into the cache (once), return the folder.

    Prefers ``model.safetensors``; falls back to ``pytorch_model.bin`` only when the repository
    has no safetensors file.
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, OfflineModeIsEnabled

    folder = cached_folder(repo_id)
    if folder is not None:
        return folder
    if hub_offline():
        raise GPT2Unavailable(offline_note(repo_id))
    if not hub_reachable():
        raise GPT2Unavailable(
            f"{repo_id} is not in the cache and the Hugging Face Hub cannot be reached from here "
            f"(offline?). {how_to_get(repo_id)}"
        )
    try:
        config = Path(hf_hub_download(repo_id, CONFIG_FILE))
        for name in (SAFETENSORS_FILE, PYTORCH_FILE):
            try:
                hf_hub_download(repo_id, name)
            except EntryNotFoundError:
                continue
            return config.parent
    except OfflineModeIsEnabled:
        raise GPT2Unavailable(offline_note(repo_id)) from None
    except (HfHubHTTPError, OSError, ValueError) as error:
        raise GPT2Unavailable(
            f"Could not download {repo_id} from the Hugging Face Hub ({type(error).__name__}: "
            f"{error}). {how_to_get(repo_id)}"
        ) from None
    raise GPT2Unavailable(f"{repo_id} on the Hub has neither {SAFETENSORS_FILE} nor {PYTORCH_FILE}.")


def resolve(source: str | Path = DEFAULT_MODEL, allow_download: bool = False) -> Path:
    """The folder to load: ``source`` itself when it is a local folder, else the Hub cache's copy."""
    path = Path(source)
    if path.is_dir():
        return path
    folder = cached_folder(str(source))
    if folder is not None:
        return folder
    if not allow_download:
        raise GPT2Unavailable(f"{source} is not downloaded yet. {how_to_get(str(source))}")
    return download(str(source))


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
    folder = resolve(source, allow_download)
    model = gpt_from_folder(folder, device, dropout)
    tokenizer = gpt2_tokenizer()
    if model.config.vocab_size != tokenizer.vocab_size:
        raise CheckpointError(
            f"{source} has a vocabulary of {model.config.vocab_size:,} tokens, but GPT-2's "
            f"tokenizer has {tokenizer.vocab_size:,}: llmviz cannot tokenize text for it."
        )
    hub = HUB_MODELS.get(str(source))
    meta = {
        "source": str(source),
        "folder": str(folder),
        "title": hub.title if hub else f"GPT-2 ({source})",
        "family": "gpt2",
        "config": model.config.to_dict(),
        "parameters": model.num_parameters(),
    }
    return model, tokenizer, meta
