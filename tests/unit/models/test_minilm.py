"""llmviz's MiniLM against the reference stack (transformers, sentence-transformers)."""

import os

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"

from llmviz.models.minilm import MAX_TOKENS, load, model_folder  # noqa: E402

SENTENCES = [
    "I love programming",
    "I enjoy coding",
    "I dislike programming",
    "The cat sat on the mat, and then it slept for a very long time in the warm afternoon sun.",
    "Attention is all you need.",
]


@pytest.fixture(scope="module")
def ours():
    return load()


@pytest.fixture(scope="module")
def reference_bert():
    from transformers import BertModel

    return BertModel.from_pretrained(str(model_folder()), attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def reference_st():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_folder()), device="cpu")


def test_every_layer_and_pattern_matches_transformers_with_padding(ours, reference_bert):
    batch, cache = ours.run_with_cache(SENTENCES)  # different lengths: the short ones are padded
    assert not batch.mask.all()
    with torch.no_grad():
        out = reference_bert(
            input_ids=batch.ids, attention_mask=batch.mask.long(), output_hidden_states=True, output_attentions=True
        )
    mask = batch.mask[:, :, None]
    torch.testing.assert_close(cache["embed.out"] * mask, out.hidden_states[0] * mask, atol=1e-4, rtol=0)
    for layer in range(6):
        torch.testing.assert_close(
            cache[f"layers.{layer}.hidden"] * mask, out.hidden_states[layer + 1] * mask, atol=1e-4, rtol=0
        )
        ours_pattern = cache[f"layers.{layer}.attn.pattern"]  # (B, 12, T, T)
        query_mask = batch.mask[:, None, :, None]
        torch.testing.assert_close(ours_pattern * query_mask, out.attentions[layer] * query_mask, atol=1e-4, rtol=0)
        assert ours_pattern.shape[1] == 12


def test_fast_path_equals_recorded_path(ours):
    batch = ours.tokenize(SENTENCES)
    fast = ours.hidden_states(batch)
    cache = {}
    slow = ours.hidden_states(batch, cache)
    torch.testing.assert_close(fast * batch.mask[:, :, None], slow * batch.mask[:, :, None], atol=1e-5, rtol=0)


def test_sentence_embeddings_match_sentence_transformers(ours, reference_st):
    expected = torch.as_tensor(reference_st.encode(SENTENCES, convert_to_numpy=True, normalize_embeddings=False))
    got = ours.encode(SENTENCES)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(got.norm(dim=-1), torch.ones(len(SENTENCES)), atol=1e-6, rtol=0)


def test_cosine_similarity_of_the_seed_sentences(ours, reference_st):
    """The seed claims 'I love programming' and 'I dislike programming' are dissimilar; the model disagrees."""
    love, enjoy, dislike = ours.encode(SENTENCES[:3])
    love_enjoy = float(love @ enjoy)
    love_dislike = float(love @ dislike)
    ref = torch.as_tensor(reference_st.encode(SENTENCES[:3], convert_to_numpy=True))
    assert love_enjoy == pytest.approx(float(ref[0] @ ref[1]), abs=1e-5)
    assert love_dislike == pytest.approx(float(ref[0] @ ref[2]), abs=1e-5)
    print(f"\ncos(love, enjoy) = {love_enjoy:.4f}; cos(love, dislike) = {love_dislike:.4f}")
    # the real model finds the sentences that share topic and words similar, whatever the sentiment
    assert love_dislike > 0.5


def test_long_text_is_truncated_and_reported(ours, reference_st):
    long = "word " * 400
    batch = ours.tokenize([long, "short"])
    assert batch.truncated == [402 - MAX_TOKENS, 0]
    assert batch.ids.shape[1] == MAX_TOKENS and batch.tokens[0][-1] == "[SEP]"
    expected = torch.as_tensor(reference_st.encode([long], convert_to_numpy=True))
    torch.testing.assert_close(ours.encode([long]), expected, atol=1e-5, rtol=0)


def test_empty_and_unknown(ours):
    batch = ours.tokenize(["", "🙂🙂 ☃"])
    assert batch.tokens[0] == ["[CLS]", "[SEP]"]
    assert batch.unknown[1] >= 1 and "[UNK]" in batch.tokens[1]
    embeddings = ours.encode(["", "🙂"])
    assert torch.isfinite(embeddings).all()
