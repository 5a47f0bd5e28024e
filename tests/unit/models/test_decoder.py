"""llmviz.models.decoder: the small encoder–decoder's parameter count, shifted labels and cross-attention."""

import torch

from llmviz.models.decoder import Decoder, DecoderConfig, toy_task
from llmviz.training.toy_decoder import train_toy


def test_decoder_parameter_count_from_the_seed_configuration():
    config = DecoderConfig()
    d, heads, dq, dff, vocab, layers = 32, 8, 4, 128, 12, 6
    attention = 4 * (dq * heads) * d  # W_Q, W_K, W_V, W_O without bias
    ffn = d * dff + dff + dff * d + d
    norms = 3 * 2 * d
    expected = vocab * d + layers * (2 * attention + ffn + norms) + d * vocab + vocab
    model = Decoder(config)
    assert sum(p.numel() for p in model.parameters()) == expected == sum(model.parameter_breakdown().values())


def test_decoder_trains_on_shifted_labels():
    inputs, targets, _ = toy_task()
    assert torch.equal(inputs[:, 1:], targets[:, :-1]) and (inputs[:, 0] == 0).all()
    losses = [loss for _, loss in train_toy(steps=60)]
    assert losses[-1] < 0.3 * losses[0]


def test_decoder_cache_and_cross_attention_shapes():
    model = Decoder().eval()
    inputs, targets, enc = toy_task(batch_size=2)
    _, loss, cache = model.run_with_cache(inputs, enc, targets)
    assert cache["layers.0.self_attn.pattern"].shape == (2, 8, 7, 7)
    assert cache["layers.0.cross_attn.pattern"].shape == (2, 8, 7, 8)
    assert torch.all(cache["layers.0.self_attn.pattern"].triu(diagonal=1) == 0)
