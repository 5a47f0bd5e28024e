"""llmviz.models.layers: LayerNorm's steps and the tanh and exact GELUs against torch."""

import math

import pytest
import torch
import torch.nn.functional as F

from llmviz.models.layers import GELU, LayerNorm, gelu_exact, gelu_tanh


def test_layernorm_steps_equal_torch():
    ln = LayerNorm(8)
    with torch.no_grad():
        ln.scale.uniform_(0.5, 1.5)
        ln.shift.uniform_(-1, 1)
    x = torch.randn(4, 8) * 3 + 2
    steps = ln.steps(x)
    torch.testing.assert_close(steps["output"], F.layer_norm(x, (8,), ln.scale, ln.shift, 1e-5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ln(x), steps["output"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steps["normalised"].mean(-1), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(steps["normalised"].var(-1, unbiased=False), torch.ones(4), atol=1e-3, rtol=0)


def test_gelu_tanh_matches_torch():
    x = torch.linspace(-6, 6, 1001)
    torch.testing.assert_close(gelu_tanh(x), F.gelu(x, approximate="tanh"), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(GELU()(x), GELU().explicit(x), atol=1e-6, rtol=1e-6)
    # a value derived by hand: x = 1 → 0.5·(1 + tanh(√(2/π)·1.044715))
    assert float(gelu_tanh(torch.tensor(1.0))) == pytest.approx(
        0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715))
    )


def test_exact_gelu_matches_torch_and_the_normal_cdf():
    x = torch.linspace(-6, 6, 1001)
    torch.testing.assert_close(gelu_exact(x), F.gelu(x), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(GELU("exact")(x), F.gelu(x), atol=0, rtol=0)  # the same kernel as nn.GELU()
    torch.testing.assert_close(GELU("exact")(x), GELU("exact").explicit(x), atol=1e-6, rtol=1e-6)
    # a value derived by hand: x = 1 → 1 · Φ(1) = 0.5·(1 + erf(1/√2))
    assert float(gelu_exact(torch.tensor(1.0))) == pytest.approx(0.5 * (1 + math.erf(1 / math.sqrt(2))))
    # the two forms are different functions, less than 0.001 apart
    assert 0 < float((GELU("exact")(x) - GELU()(x)).abs().max()) < 1e-3
