"""Training pairs for next-token prediction: a token sequence cut into (input, target) windows."""

from __future__ import annotations

import torch

from llmviz.tokenizers.base import TokenizerError


def sliding_windows(
    ids: list[int] | torch.Tensor, context_length: int, stride: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Input–target pairs for next-token prediction: targets are the inputs shifted by one.

    >>> inputs, targets = sliding_windows([10, 11, 12, 13, 14], context_length=2, stride=2)
    >>> inputs.tolist(), targets.tolist()
    ([[10, 11], [12, 13]], [[11, 12], [13, 14]])
    """
    ids = torch.as_tensor(ids, dtype=torch.long)
    if context_length < 1 or stride < 1:
        raise TokenizerError("Context size and stride must both be at least 1.")
    if len(ids) < context_length + 1:
        raise TokenizerError(
            f"The text has {len(ids)} tokens, but one window needs context size + 1 = {context_length + 1} "
            "(inputs and the next token as target). Use more text or a smaller context."
        )
    starts = torch.arange(0, len(ids) - context_length, stride)  # (N,)
    offsets = torch.arange(context_length)  # (T,)
    inputs = ids[starts[:, None] + offsets]  # (N, T)
    targets = ids[starts[:, None] + offsets + 1]  # (N, T)
    return inputs, targets
