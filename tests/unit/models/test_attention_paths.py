"""The GPT's two attention paths: PyTorch's fused ``scaled_dot_product_attention`` (training, generation) and the
softmax(q·kᵀ/√d)·v written out (recording intermediates, the attention lesson) compute the same thing."""

import pytest
import torch

from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS


@pytest.mark.parametrize("preset", ["gpt-micro", "llama-style", "attn-only-2l"])
def test_fused_and_written_out_attention_agree_without_dropout(preset):
    """Forward and backward: the logits and every gradient of the fused path equal the recorded path's (≤ 1e-6),
    for multi-head attention with learned positions, grouped-query attention with RoPE, and attention only."""
    config = PRESETS[preset].replace(vocab_size=50, context_length=24, dropout=0.0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT(config).train()  # training mode: the path a training step takes
        idx = torch.randint(0, 50, (3, 24))
    fused_logits, fused_loss = model(idx, idx)
    fused_grads = torch.autograd.grad(fused_loss, list(model.parameters()))
    cache: dict = {}
    explicit_logits, explicit_loss = model(idx, idx, cache=cache)  # recording: the written-out path
    explicit_grads = torch.autograd.grad(explicit_loss, list(model.parameters()))
    assert "blocks.0.attn.pattern" in cache  # it did take the written-out path
    torch.testing.assert_close(fused_logits, explicit_logits, atol=1e-6, rtol=0)
    for fused, explicit in zip(fused_grads, explicit_grads):
        torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=0)
