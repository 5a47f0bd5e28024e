"""llmviz.tokenizers.char_word: character and word tokenizers round-trip and name what they lack."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmviz.tokenizers.base import TokenizerError
from llmviz.tokenizers.char_word import CharTokenizer, WordTokenizer


@pytest.mark.slow  # hypothesis: 200 texts
@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1))
def test_char_round_trip(text):
    tok = CharTokenizer.train(text)
    assert tok.decode(tok.encode(text)) == text


@pytest.mark.slow  # hypothesis: 200 texts
@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1).filter(lambda s: s.strip()))
def test_word_round_trip(text):
    tok = WordTokenizer.train(text)
    assert tok.decode(tok.encode(text)) == text


def test_word_tokenizer_unknown_words():
    tok = WordTokenizer.train("the cat sat on the mat")
    ids = tok.encode("the dog sat")
    assert ids[2] == 0 and tok.words[0] == "[UNK]"


def test_char_tokenizer_unknown_characters_are_named():
    tok = CharTokenizer.train("abc")
    with pytest.raises(TokenizerError, match="'z'"):
        tok.encode("abz")
    assert tok.encode("abz", errors="skip") == [0, 1]
