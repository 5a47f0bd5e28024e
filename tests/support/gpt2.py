"""Small random GPT-2 checkpoints written by Hugging Face transformers, for tests and page checks.

``save_pretrained`` writes the real format (``config.json`` + ``model.safetensors`` with
Conv1D weights and the tied head left out), so loading these exercises every step that
loading OpenAI's 124M checkpoint does, in a second.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch


def make_hf_gpt2(
    vocab_size: int = 1000, n_layer: int = 2, n_embd: int = 64, n_head: int = 4, n_positions: int = 128, seed: int = 0
):
    """A ``GPT2LMHeadModel`` with every weight random (biases and LayerNorm scales too), in eval mode."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab_size,
        n_layer=n_layer,
        n_embd=n_embd,
        n_head=n_head,
        n_positions=n_positions,
        bos_token_id=vocab_size - 1,
        eos_token_id=vocab_size - 1,
    )
    config._attn_implementation = "eager"  # output_attentions needs the explicit softmax
    model = GPT2LMHeadModel(config).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():  # the tied head is listed once
            noise = torch.randn(parameter.shape, generator=generator)
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                parameter.copy_(1.0 + 0.1 * noise)  # LayerNorm scales near 1, but not 1
            else:
                parameter.copy_(0.15 * noise)  # weights and biases all non-zero
    return model


def save_as_cached_repo(model, cache_root: str | Path, repo_id: str = "gpt2") -> Path:
    """Lay ``model`` out as huggingface_hub's cache does for a downloaded ``repo_id``
    (``models--<id>/refs/main`` → ``snapshots/<commit>/``); return the snapshot folder."""
    repo = Path(cache_root) / ("models--" + repo_id.replace("/", "--"))
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = repo / "snapshots" / commit
    model.save_pretrained(snapshot)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot
