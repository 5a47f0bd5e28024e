"""The output head of a GPU training step, its rows padded to a multiple of 64: the same logits, in matrix shapes
the GPU's fast kernels take (:func:`padded_head`, used by ``GPT.head``; its memory in
:mod:`llmviz.training.footprint`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

PADDED_HEAD_FROM = 8192  # a GPU training step pads a head of at least this many rows (GPT.head, padded_head)
HEAD_MULTIPLE = 64  # … to a multiple of this


def padded_head(
    x: torch.Tensor, weight: torch.Tensor, multiple: int = HEAD_MULTIPLE
) -> tuple[torch.Tensor, torch.Tensor]:
    """``F.linear(x, weight)`` computed with the weight's rows padded to a multiple of ``multiple``: the logits
    (…, rows), and the padded logits (…, rows + pad) whose extra columns are −inf, for the loss. The same numbers, in
    matrix shapes the GPU's fast kernels take: for GPT-2's 50,257 outputs cuBLAS falls back to old kernels that made
    the output head 45 % of a bf16 step on an H200 (nanoGPT pads its vocabulary to 50,304 for the same reason). The
    model keeps its shapes (the padding is a copy of the weight), and a softmax over the padded logits is the
    softmax over the logits (e^−∞ = 0), so the loss reads them whole, with no copy of the cut.

    >>> x, w = torch.randn(2, 3, 4), torch.randn(5, 4)
    >>> logits, padded = padded_head(x, w, multiple=8)
    >>> torch.allclose(logits, F.linear(x, w)), logits.shape, padded.shape, padded[0, 0, 5:].tolist()
    (True, torch.Size([2, 3, 5]), torch.Size([2, 3, 8]), [-inf, -inf, -inf])
    """
    rows = weight.size(0)
    pad = -rows % multiple
    if pad == 0:
        logits = F.linear(x, weight)  # (…, rows)
        return logits, logits
    bias = torch.cat([weight.new_zeros(rows), weight.new_full((pad,), float("-inf"))])  # (rows + pad,)
    padded = F.linear(x, F.pad(weight, (0, 0, 0, pad)), bias)  # (…, rows + pad)
    return padded[..., :rows], padded  # (…, rows), (…, rows + pad)
