"""Small random pretrained models as the Hugging Face Hub holds them (``save_pretrained``'s folder), for tests that
download, cache or load them: GPT-2 with GPT-2's vocabulary (tests/support/gpt2.py builds it), and a Llama-family
model with its own tokenizer.json, under SmolLM2-135M's id."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.support.gpt2 import make_hf_gpt2


def gpt2_folder(folder: Path, n_embd: int = 32, seed: int = 5):
    """A random GPT-2 (GPT-2's 50,257 tokens, 2 layers) written to ``folder``; returns the transformers model."""
    model = make_hf_gpt2(vocab_size=50257, n_layer=2, n_embd=n_embd, n_head=2, n_positions=64, seed=seed)
    model.save_pretrained(folder)
    return model


def llama_folder(folder: Path, vocab_size: int = 300, seed: int = 4):
    """A random Llama with SmolLM2's choices (tied head, grouped-query attention) and a byte-level BPE of
    ``vocab_size`` tokens as its tokenizer.json, written to ``folder``; returns the transformers model."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(folder)
    tokenizer = ByteLevelBPETokenizer()
    text = 'The "for" statement is used to iterate over the elements of a sequence. Every effort moves you forward.'
    tokenizer.train_from_iterator([text] * 20, vocab_size=vocab_size, min_frequency=1, show_progress=False)
    tokenizer.save(str(Path(folder) / "tokenizer.json"))
    return model
