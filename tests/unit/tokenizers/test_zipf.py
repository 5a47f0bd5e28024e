"""Zipf statistics against scipy: the fitted line is scipy.stats.linregress on (ln rank, ln count)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.tokenizers.zipf import rank_frequency, zipf_fit


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**6), min_size=3, max_size=60))
def test_zipf_fit_is_scipy_linregress(counts):
    from scipy.stats import linregress

    counts = sorted(counts, reverse=True)
    fit = zipf_fit(counts)
    xs = [math.log(rank) for rank in range(1, len(counts) + 1)]
    ys = [math.log(count) for count in counts]
    if len(set(ys)) == 1:  # a flat line: scipy's R² is undefined (nan), llmviz calls it a perfect fit
        assert fit.slope == pytest.approx(0.0, abs=1e-12) and fit.r_squared == 1.0
        return
    reference = linregress(xs, ys)
    assert fit.slope == pytest.approx(reference.slope, rel=1e-9, abs=1e-12)
    assert fit.intercept == pytest.approx(reference.intercept, rel=1e-9, abs=1e-12)
    assert fit.r_squared == pytest.approx(reference.rvalue**2, rel=1e-9, abs=1e-12)


def test_rank_frequency_of_real_tokens_is_a_counter():
    from collections import Counter

    text = "the cat sat on the mat, and the cat saw the hat. " * 4
    ids = BPETokenizer.train(text, vocab_size=270).encode(text)
    assert rank_frequency(ids) == sorted(Counter(ids).values(), reverse=True)
