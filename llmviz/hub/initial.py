"""The model a fine-tuning run starts from: an llmviz checkpoint, or a Hugging Face GPT-2 (a folder, or a Hub id that
is downloaded once when not cached). The trainer itself never reaches the Hub: its callers (the CLI) load the weights
here and hand them to :meth:`llmviz.training.trainer.Trainer.from_text`."""

from __future__ import annotations

import torch.nn as nn

from llmviz.hub import gpt2
from llmviz.tokenizers.base import Tokenizer
from llmviz.training.checkpoint import is_checkpoint, load_checkpoint


def load_initial(init: str, device: str = "cpu") -> tuple[nn.Module, Tokenizer]:
    """The model and tokenizer to fine-tune: an llmviz checkpoint folder, else a Hugging Face GPT-2
    (a folder, or a Hub id that is downloaded once when not cached)."""
    if is_checkpoint(init):
        model, tokenizer, _ = load_checkpoint(init, device)
        return model, tokenizer
    model, tokenizer, _ = gpt2.load(init, device=device, allow_download=True)
    return model, tokenizer
