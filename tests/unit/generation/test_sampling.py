import math

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmviz.generation.sampling import (
    GREEDY_BELOW,
    SamplingError,
    apply_temperature,
    beam_search,
    encode_prompt,
    entropy,
    generate,
    generate_from_prompt,
    generate_text,
    next_token_distribution,
    next_token_view,
    shift_keep,
    softmax,
    top_k_filter,
    top_p_filter,
    visible_tokens,
)
from llmviz.models.charlevel import build_char_model
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.tokenizers.char_word import CharTokenizer

torch.manual_seed(0)
LOGITS = torch.randn(50) * 3


def model():
    torch.manual_seed(1)
    return GPT(GPTConfig(vocab_size=40, context_length=24, d_model=32, n_heads=4, n_layers=2, dropout=0.0)).eval()


def test_temperature_zero_is_greedy():
    dist = next_token_distribution(LOGITS, temperature=0.0)
    assert dist.final_probs.argmax() == LOGITS.argmax()
    assert dist.final_probs.max() == 1.0 and dist.kept == 1


def test_temperature_to_zero_approaches_greedy():
    probs = next_token_distribution(LOGITS, temperature=1e-3).final_probs
    assert probs[LOGITS.argmax()] > 0.999


def test_top_k_one_is_argmax():
    probs = softmax(top_k_filter(LOGITS, 1))
    assert probs.argmax() == LOGITS.argmax() and probs.max() == 1.0


def test_top_k_above_vocabulary_cuts_nothing():
    assert torch.equal(top_k_filter(LOGITS, 10_000), LOGITS)
    assert torch.equal(top_k_filter(LOGITS, 0), LOGITS)


def test_top_k_ties_at_the_boundary_are_kept():
    logits = torch.tensor([3.0, 1.0, 1.0, 0.0])
    assert (top_k_filter(logits, 2) > float("-inf")).tolist() == [True, True, True, False]


def test_top_p_tiny_keeps_only_the_most_likely():
    probs = softmax(top_p_filter(LOGITS, 1e-9))
    assert (probs > 0).sum() == 1 and probs.argmax() == LOGITS.argmax()


def test_top_p_hand_example():
    # probabilities 0.5, 0.3, 0.2: p = 0.7 needs the first two (0.5 < 0.7 ≤ 0.8)
    logits = torch.tensor([0.5, 0.3, 0.2]).log()
    kept = top_p_filter(logits, 0.7) > float("-inf")
    assert kept.tolist() == [True, True, False]


def test_lower_temperature_never_raises_entropy():
    temperatures = [5.0, 2.0, 1.5, 1.0, 0.7, 0.5, 0.2, 0.05, 0.0]
    entropies = [entropy(softmax(apply_temperature(LOGITS, t))) for t in temperatures]
    assert all(a >= b - 1e-9 for a, b in zip(entropies, entropies[1:]))


# ---------------------------------------------------------------------------- properties against transformers
# Hugging Face's own logits processors are the reference: TopKLogitsWarper and TopPLogitsWarper are what
# model.generate(top_k=..., top_p=...) applies.

VOCAB = st.integers(min_value=2, max_value=40)
SCALES = st.sampled_from([1.0, 1e-3, 1e4, 1e30])  # ordinary, nearly flat, sharp, enormous logits
TEMPERATURES = st.one_of(
    st.just(0.0),
    st.floats(min_value=0.0, max_value=GREEDY_BELOW, exclude_max=True),
    st.floats(min_value=GREEDY_BELOW, max_value=1e6),
)
TOP_PS = st.floats(min_value=1e-12, max_value=1.0)


@st.composite
def logit_vectors(draw, ties: bool = True, scales=SCALES):
    """Finite logits: small integers (many ties) or distinct ones, times a scale."""
    size = draw(VOCAB)
    values = st.integers(min_value=-8, max_value=8) if ties else st.integers(min_value=-2000, max_value=2000)
    numbers = draw(st.lists(values, min_size=size, max_size=size, unique=not ties))
    return torch.tensor(numbers, dtype=torch.float32) * draw(scales) / 64


def _hf_top_k(logits, k):
    from transformers.generation.logits_process import TopKLogitsWarper

    return TopKLogitsWarper(top_k=k)(None, logits[None].clone())[0]


def _hf_top_p(logits, p):
    from transformers.generation.logits_process import TopPLogitsWarper

    return TopPLogitsWarper(top_p=p)(None, logits[None].clone())[0]


def _reference_distribution(logits, temperature, top_k, top_p):
    """temperature → top-k → top-p the way transformers does it; T = 0 (and below GREEDY_BELOW) is greedy."""
    if temperature < GREEDY_BELOW:
        scores = torch.full_like(logits, float("-inf"))
        scores[int(logits.argmax())] = 0.0  # argmax: the first of tied maxima
    else:
        scores = logits / temperature  # transformers' TemperatureLogitsWarper divides, nothing more
    if top_k > 0:
        scores = _hf_top_k(scores, top_k)
    scores = _hf_top_p(scores, top_p)
    return torch.softmax(scores.double(), dim=-1)


def _near_a_top_p_boundary(logits, p, margin=1e-5):
    """True when a token's probability mass ahead of it is within ``margin`` of p (float32 vs float64 may then
    round the cut differently), or when probabilities tie (the two sort orders may keep different tokens)."""
    probs = torch.softmax(logits.double(), dim=-1)
    ordered = torch.sort(probs, descending=True).values
    mass_before = torch.cumsum(ordered, 0) - ordered
    close = (ordered[:-1] - ordered[1:]).abs() < 1e-6 * ordered[0]
    ties = bool((close & (ordered[1:] > 1e-30)).any())  # tokens of no probability do not matter
    if p >= 1.0:
        return False  # top-p off: no cut to round
    return ties or bool(((mass_before[1:] - p).abs() < margin).any())  # the first token is always kept


def test_top_p_keeps_the_most_likely_token_even_when_float32_probabilities_tie():
    """At a high temperature the probabilities differ by less than float32 can tell apart: top-p once sorted
    those rounded values and could keep a less likely token instead of the most likely one (found by the
    property below)."""
    logits = torch.tensor([0.0] * 12 + [0.015625])
    dist = next_token_distribution(logits, temperature=168334.0, top_p=0.5)
    assert dist.final_probs[12] > 0  # the largest logit is among the kept
    assert dist.kept == 7 and (dist.final_probs[:6] > 0).all()  # then the tied ones in vocabulary order


@settings(max_examples=100, deadline=None)
@given(logits=logit_vectors(), k=st.integers(min_value=1, max_value=50))
def test_top_k_is_transformers_top_k(logits, k):
    """Exactly transformers' TopKLogitsWarper, ties at the boundary included (both keep every tied token)."""
    assert torch.equal(top_k_filter(logits, k), _hf_top_k(logits, k))


@settings(max_examples=100, deadline=None)
@given(logits=logit_vectors(ties=False, scales=st.sampled_from([0.25, 1.0])), p=TOP_PS)
def test_top_p_is_transformers_top_p(logits, p):
    assume(not _near_a_top_p_boundary(logits, p))
    possible = torch.softmax(logits, dim=-1) > 0  # transformers also drops tokens whose float32 probability is 0
    assert torch.equal((top_p_filter(logits, p) > float("-inf")) & possible, _hf_top_p(logits, p) > float("-inf"))


@settings(max_examples=200, deadline=None)
@given(logits=logit_vectors(), temperature=TEMPERATURES, top_k=st.integers(min_value=0, max_value=50), top_p=TOP_PS)
def test_every_stage_is_a_distribution_and_the_last_is_transformers(logits, temperature, top_k, top_p):
    dist = next_token_distribution(logits, temperature, top_k, top_p)
    for probs in (dist.raw_probs, dist.temperature_probs, dist.top_k_probs, dist.final_probs):
        assert torch.isfinite(probs).all() and (probs >= 0).all()
        assert float(probs.sum()) == pytest.approx(1.0, abs=1e-5)
    kept = dist.final_probs > 0
    assert kept.any() and (kept <= (dist.top_k_probs > 0)).all()  # each filter only removes
    assert float(logits[kept].min()) >= max(logits[~kept].tolist(), default=float("-inf"))  # the kept are a top set
    if temperature < GREEDY_BELOW:
        assert dist.kept == 1 and int(dist.final_probs.argmax()) == int(logits.argmax())
    reference = _reference_distribution(logits, temperature, top_k, top_p)
    # compared as sorted values: with tied probabilities the two sort orders may keep different (equal) tokens
    ours, theirs = torch.sort(dist.final_probs.double()).values, torch.sort(reference).values
    if not _near_a_top_p_boundary(dist.top_k_logits, top_p):
        assert torch.allclose(ours, theirs, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_bad_temperatures_are_errors(bad):
    with pytest.raises(SamplingError, match="temperature"):
        next_token_distribution(LOGITS, temperature=bad)


def test_bad_top_k_and_top_p():
    with pytest.raises(SamplingError):
        top_k_filter(LOGITS, -1)
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(SamplingError):
            top_p_filter(LOGITS, bad)


def test_nan_logits_are_an_error():
    logits = LOGITS.clone()
    logits[3] = float("nan")
    with pytest.raises(SamplingError, match="NaN"):
        next_token_distribution(logits)


def test_entropy_by_hand():
    assert entropy(torch.tensor([0.5, 0.5])) == pytest.approx(math.log(2))
    assert entropy(torch.tensor([1.0, 0.0])) == 0.0


def test_kv_cache_generation_equals_no_cache():
    m = model()
    for temperature in (0.0, 1.0):
        a = [r.token for r in generate(m, [1, 2, 3], 40, temperature=temperature, top_k=5, seed=7, use_kv_cache=True)]
        b = [r.token for r in generate(m, [1, 2, 3], 40, temperature=temperature, top_k=5, seed=7, use_kv_cache=False)]
        assert a == b and len(a) == 40  # 43 tokens: past the context of 24, both crop the same way


def test_beam_width_one_equals_greedy():
    m = model()
    greedy_tokens = [r.token for r in generate(m, [5, 6], 8, temperature=0.0)]
    assert beam_search(m, [5, 6], width=1, max_new_tokens=8).tokens == greedy_tokens


def test_beam_search_tree_and_scores():
    m = model()
    result = beam_search(m, [5, 6], width=3, max_new_tokens=4)
    kept_by_depth = {}
    for node in result.nodes:
        if node.kept and node.depth:
            kept_by_depth.setdefault(node.depth, []).append(node)
    assert all(len(v) == 3 for v in kept_by_depth.values())
    # the best score is the sum of its tokens' log-probabilities, recomputed here
    logits, _ = m(torch.tensor([[5, 6] + result.tokens]))
    log_probs = torch.log_softmax(logits[0].detach().double(), dim=-1)
    total = sum(float(log_probs[1 + i, t]) for i, t in enumerate(result.tokens))
    assert result.score == pytest.approx(total, abs=1e-6)
    greedy_score = beam_search(m, [5, 6], width=1, max_new_tokens=4).score
    assert result.score >= greedy_score - 1e-9


def test_prompt_cropping_and_unknown_characters():
    tok = CharTokenizer.train("abc\n")
    m = build_char_model("mlp", tok.vocab_size)
    encoded = encode_prompt(tok, "abz" * 3, m)
    assert encoded.dropped == ["z"]
    gpt = GPT(GPTConfig(vocab_size=tok.vocab_size, context_length=4, d_model=8, n_heads=2, n_layers=1))
    encoded = encode_prompt(tok, "abcabcabc", gpt)
    assert encoded.cropped == 5 and len(encoded.ids) == 4
    assert encode_prompt(tok, "", gpt).start_token is not None


def test_forced_token_branches():
    m = model()
    records = list(generate(m, [1], 3, temperature=0.0, forced={1: 7}))
    assert records[1].token == 7


# ---------------------------------------------------------------------------- regressions (issue 13, 19)


class _WindowSpy(torch.nn.Module):
    """Wraps a model and records how many tokens each forward pass was given."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.lengths = []

    @property
    def context_length(self):
        return self.inner.context_length

    def forward(self, idx, targets=None):
        self.lengths.append(idx.shape[1])
        return self.inner(idx, targets)


@pytest.mark.parametrize("name", ["bigram-counts", "bigram-neural"])
def test_bigram_models_generate_past_their_context_of_one(name):
    tok = CharTokenizer.train("emma\nolivia\nava\n")
    spy = _WindowSpy(build_char_model(name, tok.vocab_size))
    new = [r.token for r in generate(spy, tok.encode("em"), 12, temperature=1.0, seed=3)]
    assert len(new) == 12
    assert spy.lengths == [1] * 12  # a bigram sees exactly the current character, every step


@pytest.mark.parametrize("name, window", [("mlp", 3), ("wavenet", 8)])
def test_fixed_window_models_always_get_their_whole_window(name, window):
    tok = CharTokenizer.train("emma\nolivia\nava\nisabella\n")
    spy = _WindowSpy(build_char_model(name, tok.vocab_size))
    list(generate(spy, tok.encode("isabella"), 20, temperature=1.0, seed=3))
    assert spy.lengths == [window] * 20  # never 1, 2, 3, 1, 2, 3, …


def test_prompts_and_generation_crop_to_the_same_length():
    tok = CharTokenizer.train("ab\n")
    rnn = build_char_model("rnn", tok.vocab_size)  # no fixed context: both are capped at 512
    encoded = encode_prompt(tok, "ab" * 300, rnn)
    assert visible_tokens(rnn) == 512
    assert encoded.cropped == 600 - 512 and len(encoded.ids) == 512
    spy = _WindowSpy(rnn)
    list(generate(spy, encoded.ids, 3, temperature=0.0))
    assert spy.lengths == [512, 512, 512]


def test_context_shift_keeps_half_for_models_with_a_kv_cache():
    m = model()  # context 24
    assert shift_keep(m) == 12
    lengths = []
    original = m.forward
    m.forward = lambda idx, targets=None: (lengths.append(idx.shape[1]), original(idx, targets))[1]
    list(generate(m, list(range(20)), 10, temperature=0.0, use_kv_cache=False))
    assert lengths == [20, 21, 22, 23, 24, 12, 13, 14, 15, 16]


@pytest.mark.parametrize("tiny", [1e-45, 1e-10, 5e-4])
def test_temperatures_below_the_floor_are_greedy(tiny):
    assert tiny < GREEDY_BELOW
    dist = next_token_distribution(LOGITS * 1e3, temperature=tiny)
    assert torch.isfinite(dist.final_probs).all() and dist.final_probs[LOGITS.argmax()] == 1.0
    m = model()
    tok = CharTokenizer.train("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLM\n")
    assert generate_text(m, tok, "abc", 15, temperature=tiny, seed=1) == generate_text(
        m, tok, "abc", 15, temperature=0.0
    )


def test_dropped_prompt_characters_are_never_echoed_and_always_reported():
    tok = CharTokenizer.train("abc\n")
    m = build_char_model("mlp", tok.vocab_size)
    mixed = generate_from_prompt(m, tok, "axb", 5, seed=0)
    assert mixed.prompt.dropped == ["x"] and mixed.text.startswith("ab") and "x" not in mixed.text
    assert any("'x'" in note for note in mixed.notes())
    only_unknown = generate_from_prompt(m, tok, "xyz", 5, seed=0)
    assert only_unknown.prompt.dropped == ["x", "y", "z"] and only_unknown.text == only_unknown.new_text
    assert any("'x', 'y', 'z'" in note for note in only_unknown.notes())
    assert generate_text(m, tok, "xyz", 5, seed=0) == only_unknown.text


def test_kv_cache_with_several_new_tokens_at_once_matches_the_full_forward():
    m = model()
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3]])
    full, _ = m(ids)  # (1, 10, V)
    _, past = m.forward_with_kv_cache(ids[:, :4])  # 4 tokens in the cache
    several, past = m.forward_with_kv_cache(ids[:, 4:9], past)  # 5 new tokens at once: needs the causal offset
    one, _ = m.forward_with_kv_cache(ids[:, 9:], past)
    torch.testing.assert_close(several, full[:, 4:9], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(one, full[:, 9:], atol=1e-5, rtol=1e-5)


def test_next_token_view_is_the_models_distribution_after_the_prompt():
    m = model()
    tok = CharTokenizer.train("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLM\n")
    view = next_token_view(m, tok, "a" * 30 + "bc", temperature=0.7, top_k=5, top_p=0.9)
    assert view.prompt.cropped == 8 and len(view.prompt.ids) == 24
    with torch.no_grad():
        logits, _ = m(torch.tensor([tok.encode("a" * 30 + "bc")[-24:]]))
    expected = torch.softmax(logits[0, -1].double(), dim=-1)
    torch.testing.assert_close(view.distribution.raw_probs.double(), expected, atol=1e-6, rtol=1e-5)
    assert view.shown == torch.topk(expected, 15).indices.tolist()
    assert view.distribution.kept <= 5


@pytest.mark.parametrize("top_p", [1e-300, 1e-50, 1e-46, 1e-12, 0.05, 0.3, 0.5, 0.8, 0.95, 0.999])
def test_top_p_keeps_what_transformers_keeps_and_never_nothing(top_p):
    from transformers.generation.logits_process import TopPLogitsWarper

    generator = torch.Generator().manual_seed(7)
    for scale in (0.5, 3.0, 30.0):
        logits = torch.randn(4, 200, generator=generator, dtype=torch.float64) * scale
        reference = TopPLogitsWarper(top_p, min_tokens_to_keep=1)(None, logits.clone())  # HF: never empty
        for row in range(logits.shape[0]):
            ours = top_p_filter(logits[row], top_p)
            assert torch.equal(ours > float("-inf"), reference[row] > float("-inf"))
            dist = next_token_distribution(logits[row].float(), top_p=top_p)
            assert torch.isfinite(dist.final_probs).all() and dist.kept >= 1
            assert float(dist.final_probs.sum()) == pytest.approx(1.0)


def test_sampling_with_a_vanishing_top_p_writes_the_greedy_text():
    m, tok = model(), CharTokenizer.train("abcdefghijklmnopqrstuvwxyz .,;:!?ABCDE")
    assert generate_text(m, tok, "ab", 8, temperature=1.0, top_p=1e-300, seed=3) == generate_text(
        m, tok, "ab", 8, temperature=0.0
    )


def test_beam_width_is_bounded_with_a_clear_error():
    from llmviz.generation.sampling import MAX_BEAM_WIDTH

    for bad in (0, MAX_BEAM_WIDTH + 1, 10**6, True):
        with pytest.raises(SamplingError, match="beam width"):
            beam_search(model(), [5, 6], width=bad, max_new_tokens=2)
    assert beam_search(model(), [5, 6], width=MAX_BEAM_WIDTH, max_new_tokens=1).tokens


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_each_token_records_the_models_own_probability_and_real_runner_ups(temperature):
    """Greedy generation coloured every token at p = 1.000 (the one-hot distribution it picked from) and listed
    control bytes at 0.00 as "top alternatives": a token's p is the model's softmax of its logits (T = 1), recomputed
    here from a plain forward pass of the whole text, and its runner-ups are the model's next most likely tokens."""
    from llmviz.generation.sampling import TOP_FLOOR, generate
    from llmviz.training.checkpoint import load_checkpoint
    from tests.support.paths import ROOT

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    prompt = tokenizer.encode("The for statement")
    records = list(generate(model, prompt, max_new_tokens=8, temperature=temperature, seed=0))
    tokens = prompt + [r.token for r in records]
    with torch.no_grad():
        logits, _ = model(torch.tensor([tokens]))
    for index, record in enumerate(records):
        expected = torch.softmax(logits[0, len(prompt) - 1 + index].double(), dim=-1)  # (V,)
        assert record.probability == pytest.approx(float(expected[record.token]), abs=1e-5)
        ranked = [t for t in expected.argsort(descending=True).tolist()[:10] if expected[t] >= TOP_FLOOR]
        assert [t for t, _ in record.top] == ranked[: len(record.top)] and len(record.top) >= len(ranked) - 1
        for token, p in record.top:
            assert p == pytest.approx(float(expected[token]), abs=1e-5) and p >= TOP_FLOOR
        assert record.token not in {t for t, _ in record.runner_ups}
        if temperature == 0.0:
            assert record.drawn_probability == 1.0 and record.token == int(expected.argmax())
    assert any(record.probability < 0.999 for record in records)  # not 1.000 everywhere
