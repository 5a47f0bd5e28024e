import math

import pytest
import torch
import torch.nn.functional as F

from llmviz.losses import loss_breakdown, output_layer_gradient


def test_loss_breakdown_equals_cross_entropy():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 50)
    targets = torch.randint(0, 50, (2, 3))
    parts = loss_breakdown(logits, targets)
    expected = F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
    assert parts.loss == pytest.approx(expected, rel=1e-6)
    assert parts.cross_entropy == pytest.approx(expected, rel=1e-6)
    assert parts.perplexity == pytest.approx(math.exp(expected), rel=1e-6)
    assert parts.uniform_loss == pytest.approx(math.log(50))
    # one target probability recomputed by hand: e^{z_t} / Σ e^{z_j}
    z = logits[1, 2].double()
    assert float(parts.target_probabilities[1, 2]) == pytest.approx(float(z[targets[1, 2]].exp() / z.exp().sum()))


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
