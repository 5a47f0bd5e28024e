"""llmviz.training.losses: the loss taken apart, by hand and against F.cross_entropy; the output layer's gradient
p − y against autograd."""

import math

import pytest
import torch

from llmviz.training.losses import loss_breakdown, output_layer_gradient


def test_loss_breakdown_by_hand():
    # two positions, vocabulary 3; the loss derived by hand:
    #   position 0: logits (2, 1, 0), target 0: p = e²/(e² + e + 1), −log p = log(e² + e + 1) − 2
    #   position 1: logits (0, 0, 0), target 2: p = 1/3,             −log p = log 3
    logits = torch.tensor([[[2.0, 1.0, 0.0], [0.0, 0.0, 0.0]]])
    targets = torch.tensor([[0, 2]])
    first = math.log(math.e**2 + math.e + 1) - 2
    expected = (first + math.log(3)) / 2
    parts = loss_breakdown(logits, targets)
    assert parts.loss == pytest.approx(expected, rel=1e-12)
    assert parts.cross_entropy == pytest.approx(expected, rel=1e-12)
    assert parts.perplexity == pytest.approx(math.exp(expected), rel=1e-12)
    assert parts.uniform_loss == pytest.approx(math.log(3))
    assert float(parts.target_probabilities[0, 0]) == pytest.approx(math.e**2 / (math.e**2 + math.e + 1))
    assert parts.log_probabilities[0].tolist() == pytest.approx([-first, -math.log(3)])


def test_loss_breakdown_equals_cross_entropy_on_random_logits():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 50)
    targets = torch.randint(0, 50, (2, 3))
    parts = loss_breakdown(logits, targets)
    # −log softmax by hand: log Σ e^z − z_target, position by position
    by_hand = [
        math.log(sum(math.exp(v) for v in logits[b, t].tolist())) - float(logits[b, t, targets[b, t]])
        for b in range(2)
        for t in range(3)
    ]
    assert parts.loss == pytest.approx(sum(by_hand) / 6, rel=1e-6)
    assert parts.cross_entropy == pytest.approx(sum(by_hand) / 6, rel=1e-6)


def test_a_large_logit_gap_gives_a_finite_loss():
    # logits (0, 1000), target 0: −log p = log(e⁰ + e¹⁰⁰⁰) − 0 = 1000 + log(1 + e⁻¹⁰⁰⁰) = 1000
    parts = loss_breakdown(torch.tensor([[[0.0, 1000.0]]]), torch.tensor([[0]]))
    assert parts.loss == pytest.approx(1000.0) and parts.cross_entropy == pytest.approx(1000.0)
    assert math.isinf(parts.naive_loss)  # the log of a softmax that underflowed to 0
    assert parts.perplexity == math.inf  # e^1000 does not fit a float: shown as inf, not an error


def test_uniform_logits_give_ln_vocab():
    parts = loss_breakdown(torch.zeros(1, 4, 27), torch.randint(0, 27, (1, 4)))
    assert parts.loss == pytest.approx(math.log(27))


def test_output_gradient_p_minus_y_equals_autograd():
    torch.manual_seed(1)
    hidden = torch.randn(16)
    weight = torch.randn(30, 16)
    result = output_layer_gradient(hidden, weight, target=7)
    torch.testing.assert_close(result.dlogits_by_hand, result.dlogits_autograd)
    torch.testing.assert_close(result.dweight_by_hand, result.dweight_autograd)
    assert result.max_difference < 1e-12
    assert float(result.dlogits_by_hand.sum()) == pytest.approx(0.0, abs=1e-12)  # Σ(p − y) = 1 − 1
    assert float(result.dlogits_by_hand[7]) == pytest.approx(float(result.probabilities[7]) - 1)


def test_batch_loss_equals_the_models_own_loss_and_cross_entropy():
    from llmviz.models.gpt import GPT, GPTConfig
    from llmviz.training.losses import batch_loss, position_gradient

    torch.manual_seed(3)
    gpt = GPT(GPTConfig(vocab_size=19, context_length=8, d_model=16, n_heads=2, n_layers=2, dropout=0.0)).eval()
    sequences = [[1, 5, 7, 2, 9], [3, 3, 8, 0, 18]]
    batch = batch_loss(gpt, sequences)
    inputs = torch.tensor([s[:-1] for s in sequences])
    targets = torch.tensor([s[1:] for s in sequences])
    with torch.no_grad():
        logits, model_loss = gpt(inputs, targets)
    reference = torch.nn.functional.cross_entropy(logits.flatten(0, 1).double(), targets.flatten())
    assert batch.parts.loss == pytest.approx(float(reference), rel=1e-6)
    assert batch.parts.loss == pytest.approx(float(model_loss), rel=1e-5)
    # the hidden state that the head reads gives back the model's logits
    assert torch.allclose(gpt.lm_head(batch.final_hidden), logits, atol=1e-5)
    # the gradient at a position equals autograd on the model's own head
    head = gpt.lm_head.weight.detach().clone().requires_grad_(True)
    position_logits = batch.final_hidden[0, 2] @ head.T
    torch.nn.functional.cross_entropy(position_logits[None], targets[0, 2:3]).backward()
    grad = position_gradient(gpt, batch, 2)
    assert torch.allclose(grad.dweight_by_hand.float(), head.grad, atol=1e-6)


def test_batch_loss_rejects_ragged_or_too_short_sequences():
    from llmviz.models.gpt import GPT, GPTConfig
    from llmviz.training.losses import batch_loss

    gpt = GPT(GPTConfig(vocab_size=7, context_length=4, d_model=8, n_heads=2, n_layers=1))
    with pytest.raises(ValueError):
        batch_loss(gpt, [[1, 2, 3], [1, 2]])
    with pytest.raises(ValueError):
        batch_loss(gpt, [[1]])


def test_backprop_check_counts_both_gradients():
    """Before: "all 131,072 entries of ∂L/∂W and ∂L/∂z" counted ∂L/∂W alone (V·C); with ∂L/∂z (V) it is V·C + V."""
    import torch

    from llmviz.training.losses import output_layer_gradient

    vocab, width = 7, 4
    grad = output_layer_gradient(torch.randn(width), torch.randn(vocab, width), target=2)
    assert grad.entries_compared == vocab * width + vocab  # 28 + 7, counted by hand
