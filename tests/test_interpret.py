"""Logit lens, head detectors and per-token loss against hand computations and PyTorch built-ins."""

import math

import pytest
import torch
import torch.nn.functional as F

from llmviz.interpret import heads
from llmviz.interpret import lens as lenses
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
    lens = lenses.logit_lens(tiny, cache, ids, k=3)
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
    lens = lenses.logit_lens(tiny, cache, ids, k=1)
    assert lens.top_ids[-1, :, 0].tolist() == logits[0].argmax(-1).tolist()


def test_sequence_logit_lens_runs_the_model_itself(tiny):
    ids = [4, 8, 15, 16, 23]
    _, _, cache = tiny.run_with_cache(torch.tensor([ids]))
    expected = lenses.logit_lens(tiny, cache, ids, k=2)
    lens = lenses.sequence_logit_lens(tiny, ids, k=2)
    assert torch.equal(lens.top_ids, expected.top_ids) and torch.allclose(lens.true_probs, expected.true_probs)


def test_diagnostic_tokens_are_a_random_half_repeated():
    tokens = heads.diagnostic_tokens(1000, 25, seed=3)
    assert len(tokens) == 50 and tokens[:25] == tokens[25:] and len(set(tokens[:25])) == 25
    assert tokens == heads.diagnostic_tokens(1000, 25, seed=3)


def _causal_uniform(size):
    return torch.tril(torch.ones(size, size)) / torch.arange(1, size + 1)[:, None]


def test_detectors_on_constructed_patterns():
    tokens = [11, 12, 13, 14, 11, 12, 13, 14]  # A B C D A B C D
    size = len(tokens)
    previous = torch.zeros(size, size)
    previous[0, 0] = 1.0
    previous[torch.arange(1, size), torch.arange(0, size - 1)] = 1.0
    sink = torch.zeros(size, size)
    sink[:, 0] = 1.0
    induction = _causal_uniform(size)  # first half: uniform; second half: all on the token after the copy
    duplicate = _causal_uniform(size)
    for query in range(4, size):
        induction[query] = 0.0
        induction[query, query - 3] = 1.0
        duplicate[query] = 0.0
        duplicate[query, query - 4] = 1.0
    patterns = torch.stack([previous, sink, induction, duplicate])[None]  # (1 layer, 4 heads, T, T)
    scores = heads.head_scores(patterns, tokens)
    first_half = (1 / 2 + 1 / 3 + 1 / 4) / 7  # queries 1-3 of a uniform head, over the 7 queries 1-7
    assert scores["previous token"][0].tolist() == pytest.approx([1.0, 1 / 7, first_half, first_half])
    assert scores["first token"][0].tolist() == pytest.approx([1 / 7, 1.0, first_half, first_half + 1 / 7])
    assert scores["induction"][0].tolist() == pytest.approx([0.0, 0.0, 1.0, 0.0])
    # query 4 (the second A) has the first A (key 0) as its duplicate; the sink head puts its all there
    assert scores["duplicate token"][0].tolist() == pytest.approx([0.0, 0.25, 0.0, 1.0])


def test_uniform_head_scores_by_hand():
    tokens = heads.diagnostic_tokens(100, 5, seed=0)  # 10 tokens, a repeat at distance 5
    scores = heads.head_scores(_causal_uniform(10)[None, None], tokens)
    # query q sees q + 1 keys with weight 1/(q + 1); previous-token and first-token queries are 1..9
    by_hand = sum(1 / (q + 1) for q in range(1, 10)) / 9
    assert float(scores["previous token"][0, 0]) == pytest.approx(by_hand)
    assert float(scores["first token"][0, 0]) == pytest.approx(by_hand)
    # duplicate and induction queries are 5..9, each with exactly one target key
    assert float(scores["induction"][0, 0]) == pytest.approx(sum(1 / (q + 1) for q in range(5, 10)) / 5)
    assert float(scores["duplicate token"][0, 0]) == pytest.approx(sum(1 / (q + 1) for q in range(5, 10)) / 5)


def test_unknown_detector_is_refused():
    with pytest.raises(ValueError, match="unknown detector"):
        heads.detector_mask("copy", [1, 2])


def test_model_head_scores_shapes_and_range(tiny):
    tokens, scores = heads.model_head_scores(tiny, half_length=50)
    assert len(tokens) == 16  # capped by the context of 16
    for values in scores.values():
        assert values.shape == (2, 3) and bool((values >= 0).all() and (values <= 1 + 1e-6).all())


def test_token_losses_match_cross_entropy(tiny):
    ids = [5, 9, 2, 33, 7, 7, 1, 30, 12]
    result = lenses.token_losses(tiny, ids, k=5)
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
        lenses.token_losses(tiny, [3])


def test_uniform_model_loss_is_log_vocab():
    logits = torch.zeros(4, 10)
    assert lenses.token_losses_from_logits(logits, [1, 2, 3, 4]).mean == pytest.approx(math.log(10))


def test_attention_only_gpt_has_no_mlp():
    config = TINY.replace(mlp=False)
    model = GPT(config).eval()
    assert not any(".mlp." in name or ".ln2." in name for name, _ in model.named_parameters())
    _, _, cache = model.run_with_cache(torch.tensor([[1, 2, 3]]))
    assert list(cache) == cache_names(config) + []
    assert torch.equal(cache["blocks.0.resid_post"], cache["blocks.0.resid_mid"])
