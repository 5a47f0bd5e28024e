"""The loss of next-token prediction taken apart, and the output layer's gradient derived by hand.

Cross-entropy for next-token prediction, step by step:

    probabilities = softmax(logits)                       (B, T, V)
    p_target      = probabilities[b, t, target[b, t]]     (B, T)
    log p_target  = z_target − log Σ_j e^{z_j}            (B, T)   (log-softmax, never log of 0)
    mean log p    = average over all B·T positions
    loss          = − mean log p        (= F.cross_entropy(logits, targets))
    perplexity    = e^loss;   a uniform guess over V tokens has loss ln V
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class LossBreakdown:
    """Cross-entropy taken apart: probabilities, the log-probability of each target, the loss three ways, perplexity,
    and the uniform guess ln V."""

    probabilities: torch.Tensor  # (B, T, V)
    target_probabilities: torch.Tensor  # (B, T)
    log_probabilities: torch.Tensor  # (B, T)
    mean_log_probability: float
    loss: float  # − mean log p, with log p from log-softmax
    cross_entropy: float  # F.cross_entropy, for comparison
    naive_loss: float  # − mean log(softmax): inf as soon as one p underflows to 0 (why log-softmax exists)
    perplexity: float
    uniform_loss: float  # ln V


@torch.no_grad()
def loss_breakdown(logits: torch.Tensor, targets: torch.Tensor) -> LossBreakdown:
    """Every step from logits to the loss, next to PyTorch's ``F.cross_entropy``.

    log p comes from log-softmax (``z_target − logsumexp(z)``), so a large logit gap gives a
    large finite loss, as ``F.cross_entropy`` does, where the log of a softmax that underflowed
    to 0 gives inf (``naive_loss`` keeps that value, to show why).

    >>> parts = loss_breakdown(torch.tensor([[[0.0, 1000.0]]]), torch.tensor([[0]]))
    >>> parts.loss, parts.cross_entropy, parts.naive_loss
    (1000.0, 1000.0, inf)
    """
    logits = logits.detach().double()
    probabilities = torch.softmax(logits, dim=-1)  # (B, T, V)
    log_probabilities = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    target_probabilities = log_probabilities.exp()  # (B, T)
    mean_log = float(log_probabilities.mean())
    naive = float(-probabilities.gather(-1, targets.unsqueeze(-1)).log().mean())
    cross_entropy = float(F.cross_entropy(logits.flatten(0, 1), targets.flatten()))
    return LossBreakdown(
        probabilities=probabilities,
        target_probabilities=target_probabilities,
        log_probabilities=log_probabilities,
        mean_log_probability=mean_log,
        loss=-mean_log,
        cross_entropy=cross_entropy,
        naive_loss=naive,
        perplexity=math.exp(-mean_log) if -mean_log < 709 else math.inf,
        uniform_loss=math.log(logits.shape[-1]),
    )


@dataclass
class OutputGradient:
    """The output layer's gradient at one position, by hand (p − y) and by autograd, with their largest difference."""

    hidden: torch.Tensor  # h: the final hidden state at the position, (C,)
    probabilities: torch.Tensor  # p = softmax(h W), (V,)
    one_hot: torch.Tensor  # y, (V,)
    dlogits_by_hand: torch.Tensor  # p − y, (V,)
    dlogits_autograd: torch.Tensor  # (V,)
    dweight_by_hand: torch.Tensor  # h ⊗ (p − y) as the head's (V, C) weight gradient
    dweight_autograd: torch.Tensor  # (V, C)
    max_difference: float

    @property
    def entries_compared(self) -> int:
        """How many numbers ``max_difference`` is taken over: every entry of ∂L/∂W (V·C) and of ∂L/∂z (V).

        >>> grad = output_layer_gradient(torch.ones(3), torch.zeros(5, 3), target=1)
        >>> grad.entries_compared  # 5·3 + 5
        20
        """
        return self.dweight_by_hand.numel() + self.dlogits_by_hand.numel()


def output_layer_gradient(hidden: torch.Tensor, head_weight: torch.Tensor, target: int) -> OutputGradient:
    """For one position: logits = W h, loss = −log softmax(logits)[target].

    By hand: ∂loss/∂logits = p − y (y one-hot), and ∂loss/∂W = (p − y) hᵀ. Autograd computes
    the same from scratch; both are returned with their largest difference.
    """
    h = hidden.detach().double()  # (C,)
    weight = head_weight.detach().double().clone().requires_grad_(True)  # (V, C), as nn.Linear stores it
    logits = weight @ h  # (V,)
    logits.retain_grad()
    loss = F.cross_entropy(logits[None], torch.tensor([target]))
    loss.backward()
    assert logits.grad is not None and weight.grad is not None  # backward() just filled both
    probabilities = torch.softmax(logits.detach(), dim=-1)
    one_hot = torch.zeros_like(probabilities)
    one_hot[target] = 1.0
    dlogits = probabilities - one_hot  # (V,)
    dweight = torch.outer(dlogits, h)  # (V, C)
    difference = max(float((dlogits - logits.grad).abs().max()), float((dweight - weight.grad).abs().max()))
    return OutputGradient(
        hidden=h,
        probabilities=probabilities,
        one_hot=one_hot,
        dlogits_by_hand=dlogits,
        dlogits_autograd=logits.grad.detach(),
        dweight_by_hand=dweight,
        dweight_autograd=weight.grad.detach(),
        max_difference=difference,
    )


@dataclass
class BatchLoss:
    """A model's loss on a small batch of token sequences, ready to be drawn step by step.

    Row ``b`` of ``inputs`` is sequence ``b`` without its last token, and the same row of
    ``targets`` is it without its first token: each position predicts the token after it.
    """

    inputs: torch.Tensor  # (B, T)
    targets: torch.Tensor  # (B, T)
    parts: LossBreakdown
    final_hidden: torch.Tensor  # (B, T, C): the output of the final LayerNorm, what the head reads


@torch.no_grad()
def batch_loss(model, sequences: list[list[int]]) -> BatchLoss:
    """One forward pass of ``model`` (with its named cache) over equal-length ``sequences``.

    >>> from llmviz.models.gpt import GPT, GPTConfig
    >>> _ = torch.manual_seed(0)
    >>> gpt = GPT(GPTConfig(vocab_size=11, context_length=8, d_model=8, n_heads=2, n_layers=1)).eval()
    >>> batch = batch_loss(gpt, [[1, 2, 3], [4, 5, 6]])
    >>> batch.inputs.tolist(), batch.targets.tolist(), tuple(batch.final_hidden.shape)
    ([[1, 2], [4, 5]], [[2, 3], [5, 6]], (2, 2, 8))
    """
    if not sequences or len({len(ids) for ids in sequences}) != 1 or len(sequences[0]) < 2:
        raise ValueError("batch_loss needs sequences of one length, at least 2 tokens each")
    device = next(model.parameters()).device
    inputs = torch.tensor([ids[:-1] for ids in sequences])  # (B, T)
    targets = torch.tensor([ids[1:] for ids in sequences])  # (B, T)
    logits, _, cache = model.run_with_cache(inputs.to(device))  # (B, T, V)
    return BatchLoss(
        inputs=inputs, targets=targets, parts=loss_breakdown(logits.cpu(), targets), final_hidden=cache["ln_f"].cpu()
    )  # (B, T, C)


def position_gradient(model, batch: BatchLoss, position: int, sequence: int = 0) -> OutputGradient:
    """The output layer's gradient for one position of ``batch`` (see ``output_layer_gradient``)."""
    hidden = batch.final_hidden[sequence, position]  # (C,)
    return output_layer_gradient(hidden, model.lm_head.weight.cpu(), int(batch.targets[sequence, position]))
