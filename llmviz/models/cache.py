"""The intermediate-tensor cache shared by every llmviz model (TransformerLens's idea).

A model's ``forward`` takes ``cache=None``; when a dict is passed, each step writes its
tensor under a name that reads as the pipeline (``blocks.0.attn.pattern``), detached and on
the CPU, in forward order. With ``cache=None`` nothing is recorded and nothing is slowed.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn as nn

Cache = dict[str, torch.Tensor]


def record(cache: Cache | None, name: str, tensor: torch.Tensor) -> None:
    """Store ``tensor`` under ``name`` when recording; a no-op when ``cache`` is None."""
    if cache is not None:
        cache[name] = tensor.detach().to("cpu")


class RecordsIntermediates:
    """Mixin: ``run_with_cache`` for any model whose forward accepts ``cache=``."""

    @torch.no_grad()
    def run_with_cache(self, idx: torch.Tensor, targets: torch.Tensor | None = None, **kwargs):
        """``(logits, loss, cache)`` for one forward pass, without gradients."""
        cache: Cache = {}
        logits, loss = cast(nn.Module, self)(idx, targets, cache=cache, **kwargs)  # mixed into nn.Module classes
        return logits, loss, cache
