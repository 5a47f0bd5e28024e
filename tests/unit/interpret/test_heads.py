"""llmviz.interpret.heads: the head detectors on constructed patterns with known answers, and by hand."""

import pytest
import torch

from llmviz.interpret import heads
from llmviz.models.gpt import GPT, GPTConfig

TINY = GPTConfig(vocab_size=37, context_length=16, d_model=24, n_heads=3, n_layers=2, dropout=0.0)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = GPT(TINY).eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters, so the hand computation must use them
        model.ln_f.scale.uniform_(0.5, 1.5)
        model.ln_f.shift.uniform_(-0.3, 0.3)
    return model


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
