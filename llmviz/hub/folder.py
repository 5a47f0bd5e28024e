"""A Hugging Face checkpoint folder (``save_pretrained``'s output, or a snapshot in huggingface_hub's cache) read into
llmviz's own GPT: its ``config.json``, its weights, and the model holding them. Shared by every family
(:mod:`llmviz.hub.gpt2`, :mod:`llmviz.hub.llama`), which only map the config and rename the tensors.

Weights are read from ``model.safetensors`` (one file, or the shards a ``model.safetensors.index.json`` lists); a folder
with only ``pytorch_model.bin`` is read with ``torch.load(weights_only=True)``, which refuses pickled code.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from llmviz.errors import CheckpointError
from llmviz.hub.download import CONFIG_FILE, PYTORCH_FILE, SAFETENSORS_FILE, SAFETENSORS_INDEX, shard_names
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.training.safetensors_file import read_safetensors


def read_config(folder: Path) -> dict:
    """The folder's ``config.json`` as a dict; a missing or damaged one is a :class:`CheckpointError`."""
    if not (folder / CONFIG_FILE).exists():
        raise CheckpointError(f"{folder} is not a Hugging Face checkpoint (no {CONFIG_FILE}).")
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except ValueError as error:
        raise CheckpointError(f"{CONFIG_FILE} in {folder} is damaged: {error}") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{CONFIG_FILE} in {folder} is not a JSON object.")
    return config


def read_hf_weights(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a checkpoint folder: safetensors (one file or shards), else a weights-only torch file."""
    if (folder / SAFETENSORS_FILE).exists():
        return read_safetensors(folder / SAFETENSORS_FILE)
    if (folder / SAFETENSORS_INDEX).exists():
        state = {}
        for shard in sorted(shard_names(folder / SAFETENSORS_INDEX)):
            state.update(read_safetensors(folder / shard))
        return state
    if (folder / PYTORCH_FILE).exists():
        try:  # weights_only refuses anything but tensors: no code runs while reading
            return torch.load(folder / PYTORCH_FILE, map_location="cpu", weights_only=True)
        except Exception as error:  # noqa: BLE001 - any failure here means "not a plain weights file"
            raise CheckpointError(f"{PYTORCH_FILE} in {folder} is not a plain weights file: {error}") from None
    raise CheckpointError(f"{folder} has no {SAFETENSORS_FILE} (nor {PYTORCH_FILE}).")


def renamed(name: str, prefixes: list[tuple[str, str]], parts: list[tuple[str, str]]) -> str:
    """A Hugging Face tensor's name in llmviz's words: its first matching prefix replaced, then every part.

    >>> renamed("model.layers.3.mlp.up_proj.weight", [("model.layers.", "blocks.")], [(".up_proj.", ".fc.")])
    'blocks.3.mlp.fc.weight'
    """
    for old, new in prefixes:
        if name.startswith(old):
            name = new + name[len(old) :]
    for old, new in parts:
        name = name.replace(old, new)
    return name


def gpt_with_weights(config: GPTConfig, state: dict[str, torch.Tensor], folder: Path, device: str = "cpu") -> GPT:
    """llmviz's GPT of ``config`` holding ``state`` (already renamed to llmviz's names), in eval mode; a mismatch is a
    :class:`CheckpointError` naming ``folder``."""
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
