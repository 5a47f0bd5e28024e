"""llmviz.interpret.lens: the logit lens and the loss on every token against hand computations and
F.cross_entropy."""

import math

import pytest
import torch
import torch.nn.functional as F

from llmviz.interpret.lens import logit_lens, sequence_logit_lens, token_losses, token_losses_from_logits
from llmviz.models.gpt import GPT, GPTConfig, cache_names

TINY = GPTConfig(vocab_size=37, context_length=16, d_model=24, n_heads=3, n_layers=2, dropout=0.0)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = GPT(TINY).eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters, so the hand computation must use them
        model.ln_f.scale.uniform_(0.5, 1.5)
        model.ln_f.shift.uniform_(-0.3, 0.3)
    return model


def test_logit_lens_matches_a_hand_computation(tiny):
    ids = [3, 14, 15, 9, 26, 5, 35, 8]
    _, _, cache = tiny.run_with_cache(torch.tensor([ids]))
    lens = logit_lens(tiny, cache, ids, k=3)
    assert lens.layer_names == ["embedding", "block 0", "block 1"]
    assert lens.top_ids.shape == (3, len(ids), 3) and lens.true_probs.shape == (3, len(ids) - 1)
    streams = [
        cache["embed.tok"][0] + cache["embed.pos"],
        cache["blocks.0.resid_post"][0],
        cache["blocks.1.resid_post"][0],
    ]
    for row, x in enumerate(streams):
        # final LayerNorm written out: (x − mean) / sqrt(biased var + eps) · scale + shift, then x·W_Uᵀ
        mean = x.sum(-1, keepdim=True) / x.shape[-1]
        var = ((x - mean) ** 2).sum(-1, keepdim=True) / x.shape[-1]
        normed = (x - mean) / torch.sqrt(var + 1e-5) * tiny.ln_f.scale + tiny.ln_f.shift
        logits = normed @ tiny.lm_head.weight.T
        probs = torch.exp(logits - logits.max(-1, keepdim=True).values)
        probs = probs / probs.sum(-1, keepdim=True)
        for position in range(len(ids)):
            best = sorted(range(TINY.vocab_size), key=lambda v: -float(probs[position, v].detach()))[:3]
            assert lens.top_ids[row, position].tolist() == best
            assert lens.top_probs[row, position].tolist() == pytest.approx(probs[position, best].tolist(), abs=1e-5)
        for position in range(len(ids) - 1):
            assert float(lens.true_probs[row, position]) == pytest.approx(
                float(probs[position, ids[position + 1]].detach()), abs=1e-6
            )


def test_last_lens_row_is_the_models_prediction(tiny):
    ids = [1, 2, 3, 4, 5]
    logits, _, cache = tiny.run_with_cache(torch.tensor([ids]))
    lens = logit_lens(tiny, cache, ids, k=1)
    assert lens.top_ids[-1, :, 0].tolist() == logits[0].argmax(-1).tolist()


def test_sequence_logit_lens_runs_the_model_itself(tiny):
    ids = [4, 8, 15, 16, 23]
    _, _, cache = tiny.run_with_cache(torch.tensor([ids]))
    expected = logit_lens(tiny, cache, ids, k=2)
    lens = sequence_logit_lens(tiny, ids, k=2)
    assert torch.equal(lens.top_ids, expected.top_ids) and torch.allclose(lens.true_probs, expected.true_probs)


def test_token_losses_match_cross_entropy(tiny):
    ids = [5, 9, 2, 33, 7, 7, 1, 30, 12]
    result = token_losses(tiny, ids, k=5)
    logits, loss = tiny(torch.tensor([ids[:-1]]), torch.tensor([ids[1:]]))
    reference = F.cross_entropy(logits[0], torch.tensor(ids[1:]), reduction="none")
    assert result.losses.tolist() == pytest.approx(reference.tolist(), abs=1e-5)
    assert result.mean == pytest.approx(float(loss.detach()), abs=1e-5)
    assert result.true_probs.tolist() == pytest.approx(torch.exp(-reference).tolist(), abs=1e-6)
    probs = logits[0].softmax(-1)
    assert result.top_ids[:, 0].tolist() == probs.argmax(-1).tolist()
    assert result.top_probs.sum(-1).max() <= 1 + 1e-6


def test_token_losses_need_two_tokens(tiny):
    with pytest.raises(ValueError, match="at least two"):
        token_losses(tiny, [3])


def test_uniform_model_loss_is_log_vocab():
    logits = torch.zeros(4, 10)
    assert token_losses_from_logits(logits, [1, 2, 3, 4]).mean == pytest.approx(math.log(10))


def test_attention_only_gpt_has_no_mlp():
    config = TINY.replace(mlp=False)
    model = GPT(config).eval()
    assert not any(".mlp." in name or ".ln2." in name for name, _ in model.named_parameters())
    _, _, cache = model.run_with_cache(torch.tensor([[1, 2, 3]]))
    assert list(cache) == cache_names(config) + []
    assert torch.equal(cache["blocks.0.resid_post"], cache["blocks.0.resid_mid"])
