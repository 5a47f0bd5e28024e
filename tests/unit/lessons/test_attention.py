"""llmviz.lessons.attention: the Attention page's numbers against references written here (PyTorch's own softmax and
scaled_dot_product_attention, the patterns the model records, the KV cache counted by hand)."""

import math

import pytest
import torch

from llmviz.lessons import attention, forward, quiz
from llmviz.models.attention import toy_input
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.tokenizers.char_word import CharTokenizer

TOKENIZER = CharTokenizer.train("abcdefghijklmnopqrstuvwxyz .")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=TOKENIZER.vocab_size, context_length=16, d_model=16, n_layers=2, n_heads=2)
    return GPT(config).eval()


def test_patterns_are_the_models_recorded_ones_and_rows_sum_to_one(model):
    found = attention.patterns_for(model, TOKENIZER, "the cat sat.")
    assert found.ids == TOKENIZER.encode("the cat sat.")
    with torch.no_grad():
        _, _, cache = model.run_with_cache(torch.tensor([found.ids]))
    for layer in range(2):
        torch.testing.assert_close(found.patterns[layer], cache[f"blocks.{layer}.attn.pattern"][0])
    torch.testing.assert_close(found.patterns.sum(-1), torch.ones(2, 2, len(found.ids)))


def test_the_quiz_reads_the_models_own_cache(model):
    """Before: the page rebuilt a cache dict from the stacked patterns; the questions are the same, read from the
    cache of one recorded pass, and layer and head beyond the model's are clamped to its last."""
    found = attention.patterns_for(model, TOKENIZER, "the cat sat.")
    rebuilt = {f"blocks.{layer}.attn.pattern": found.patterns[layer : layer + 1] for layer in range(found.n_layers)}
    labels = [TOKENIZER.printable(i) for i in found.ids]
    assert attention.quiz_questions(model, TOKENIZER, found, 1, 1) == quiz.attention_questions(rebuilt, labels, 1, 1)
    assert attention.quiz_questions(model, TOKENIZER, found, 9, 9) == quiz.attention_questions(rebuilt, labels, 1, 1)


def test_mask_variants_match_pytorchs_attention():
    variants = attention.mask_variants()
    x = toy_input()  # (3, 4): W_Q = W_K = W_V = the identity, so Q = K = V = X
    scores = x @ x.T / math.sqrt(4)
    torch.testing.assert_close(variants["none"][0], torch.softmax(scores, -1))
    causal = torch.softmax(scores.masked_fill(torch.ones(3, 3).triu(1).bool(), float("-inf")), -1)
    torch.testing.assert_close(variants["causal"][0], causal)
    weights, keys, queries = variants["padding (last is [PAD])"]
    assert keys[-1] == "[PAD]" and float(weights[:, -1].abs().max()) == 0.0
    weights, keys, queries = variants["cross-attention"]
    assert weights.shape == (3, 4) and keys == attention.ENCODER_TOKENS
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))


def test_kv_owner_and_the_kv_cache_counted_by_hand():
    config = GPTConfig(d_model=64 * 12, n_heads=12, n_kv_heads=4, n_layers=24, dropout=0.0)
    assert attention.kv_owner(config) == [h // 3 for h in range(12)]
    rows = attention.kv_cache_rows(config, 8192)
    assert [row["K/V heads"] for row in rows] == [12, 4, 1]
    assert rows[1]["attention"].endswith("(picked)")
    # 2 (K and V) × 24 layers × 4 heads × 64 × 2 bytes = 24,576 bytes a token; W_K + W_V: 2 × 768 × 4 × 64
    assert rows[1]["KV cache per token"] == "24.0 KiB"
    assert rows[1]["W_K + W_V per layer"] == f"{2 * 768 * 4 * 64:,}"


def test_the_head_split_example_is_a_view_and_a_transpose():
    shapes = attention.head_split_example()
    x = torch.arange(24, dtype=torch.float32).view(1, 3, 8)
    torch.testing.assert_close(shapes["transposed"], x.view(1, 3, 2, 4).transpose(1, 2))
    assert forward.MAX_ATTENTION_TOKENS > 0
