"""llmviz.tokenizers.bpe.reference: GPT-2's and cl100k's offline encodings against tiktoken and Hugging Face,
and their merges in BPETokenizer."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmviz.data import corpus
from llmviz.tokenizers.base import ENDOFTEXT, TokenizerError
from llmviz.tokenizers.bpe.reference import encoding, reference_tokenizer
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_gpt2_and_cl100k_round_trip(text):
    for name in ("gpt2", "cl100k"):
        tok = reference_tokenizer(name)
        assert tok.decode(tok.encode(text)) == text


def test_gpt2_offline_equals_tiktoken_reference_ranks():
    """Our offline GPT-2 has tiktoken's exact ranks and pattern (r50k_base has the same merges)."""
    from tiktoken_ext import openai_public

    enc = encoding("gpt2")
    assert enc.n_vocab == 50257 and enc.eot_token == 50256
    assert enc._pat_str == openai_public.r50k_pat_str
    text = "Hello world, it's 2026! Ünïcödé 🙂  tabs\tand\nnewlines"
    ids = enc.encode(text)
    assert enc.decode(ids) == text
    # Known GPT-2 ids, derived from encoder.json itself: "Hello" and " world"
    import json

    from llmviz.tokenizers.bpe.reference import _gpt2_files

    encoder = json.loads(_gpt2_files()[1].read_text())
    assert enc.encode("Hello world") == [encoder["Hello"], encoder["Ġworld"]]


def test_gpt2_hashes_are_tiktoken_s_own():
    import inspect

    from tiktoken_ext import openai_public

    from llmviz.tokenizers.bpe.reference import GPT2_ENCODER_JSON_SHA256, GPT2_VOCAB_BPE_SHA256

    source = inspect.getsource(openai_public.gpt2)
    assert GPT2_VOCAB_BPE_SHA256 in source and GPT2_ENCODER_JSON_SHA256 in source


def test_cl100k_offline():
    enc = encoding("cl100k")
    assert enc.n_vocab == 100277
    assert enc.decode(enc.encode("tiktoken is great!")) == "tiktoken is great!"


def test_encoding_unknown_name():
    with pytest.raises(TokenizerError):
        encoding("nope")


def test_gpt2_offline_ids_equal_hugging_face_gpt2_tokenizer(tmp_path):
    """An independent implementation (transformers' GPT2Tokenizer) on the same two files."""
    import shutil

    from transformers import GPT2Tokenizer

    from llmviz.tokenizers.bpe.reference import _gpt2_files

    vocab_bpe, encoder_json = _gpt2_files()
    shutil.copy(encoder_json, tmp_path / "vocab.json")
    shutil.copy(vocab_bpe, tmp_path / "merges.txt")
    hf = GPT2Tokenizer.from_pretrained(str(tmp_path))
    enc = encoding("gpt2")
    for text in [
        "Hello, world!",
        "It's 3.14159 — naïve café 🙂",
        "def f(x):\n    return x  ",
        corpus.load("python-docs")[:3000],
    ]:
        assert enc.encode(text) == hf.encode(text)


@pytest.mark.parametrize("name", ["gpt2", "cl100k"])
def test_bpe_tokenizer_with_gpt2_and_cl100k_merges_matches_tiktoken(name):
    # issue #13: llmviz's own pure-Python BPE, given the real merges, must produce tiktoken's ids
    from pydoc_data.topics import topics

    from llmviz.tokenizers.bpe.reference import merges_from_ranks

    reference = encoding(name)
    merges, byte_ids = merges_from_ranks(reference._mergeable_ranks)
    assert len(merges) == len(reference._mergeable_ranks) - 256
    ours = BPETokenizer(
        merges=merges,
        split_pattern=reference._pat_str,
        special_tokens={t: reference.encode_single_token(t) for t in reference.special_tokens_set},
    )
    to_tiktoken = lambda ids: [byte_ids[i] if i < 256 else i for i in ids]  # noqa: E731 (bytes are renumbered)
    texts = [topics[key][:3000] for key in ("for", "with", "lambda", "formatstrings", "numbers", "strings")]
    texts.append("naïve café — 東京 🙂 \x00\t  trailing   \n\n" + ENDOFTEXT)
    for text in texts:
        assert to_tiktoken(ours.encode(text)) == reference.encode_ordinary(text)
        assert to_tiktoken(ours.encode(text, allowed_special="all")) == reference.encode(text, allowed_special="all")
