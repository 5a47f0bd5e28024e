"""Serving: KV bytes from the real cache tensors, block tables by hand, batching schedules by hand and real tokens."""

import math

import pytest
import torch

from llmviz.errors import ConfigError
from llmviz.generation import serving
from llmviz.generation.sampling import generate
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return GPT(PRESETS["gpt-nano"]).eval()


def test_kv_cache_grows_by_the_formula_per_token(model):
    growth = serving.kv_growth(model, [1, 2, 3], 6)
    assert growth.tokens == [3, 4, 5, 6, 7, 8, 9]
    per_token = 2 * 2 * 32 * 4  # key and value · layers · d_model · float32
    assert serving.kv_bytes_per_token(model) == per_token
    assert growth.cache_bytes == [per_token * n for n in growth.tokens]
    greedy = [r.token for r in generate(model, [1, 2, 3], 6, temperature=0.0)]
    assert growth.generated == greedy
    assert serving.kv_bytes_per_token(model, bytes_per_value=2) == per_token // 2


def test_block_tables_by_hand():
    cache = serving.paged_tables({"a": 5, "b": 2, "c": 9}, block_size=4)
    # round-robin growth: step 0 gives a→0, b→1, c→2; a's 5th token (step 4) → 3, c's 5th → 4, c's 9th → 5
    assert cache.tables == {"a": [0, 3], "b": [1], "c": [2, 4, 5]}
    assert cache.wasted_slots() == (8 - 5) + (4 - 2) + (12 - 9)
    for name, length in {"a": 5, "b": 2, "c": 9}.items():
        assert len(cache.tables[name]) == math.ceil(length / 4)
    cache.release("b")
    assert cache.free == [1]
    cache.append("d")
    assert cache.tables["d"] == [1]  # a freed block is reused
    with pytest.raises(ConfigError):
        cache.append("d") or [cache.append("e") for _ in range(8)]


def test_static_and_continuous_schedules_by_hand(model):
    prompts = {"r0": [1, 2], "r1": [3], "r2": [4, 5, 6], "r3": [7]}
    lengths = {"r0": 3, "r1": 1, "r2": 2, "r3": 1}
    static = serving.serve(model, prompts, lengths, slots=2, policy="static")
    continuous = serving.serve(model, prompts, lengths, slots=2, policy="continuous")
    # static: [r0, r1] for 3 steps (r1's slot padded for 2), then [r2, r3] for 2 steps
    assert static.steps == 5
    assert [r.wait_steps for r in static.requests] == [0, 0, 3, 3]
    assert [r.finish_step for r in static.requests] == [3, 1, 5, 4]
    # continuous: r2 takes r1's slot at step 1, r3 takes r0's slot at step 3
    assert continuous.steps == 4
    assert [r.wait_steps for r in continuous.requests] == [0, 0, 1, 3]
    assert [r.finish_step for r in continuous.requests] == [3, 1, 3, 4]
    assert static.useful_tokens == continuous.useful_tokens == 7
    assert continuous.utilisation > static.utilisation
    for result in static.requests + continuous.requests:  # both write what plain greedy decoding writes
        expected = [r.token for r in generate(model, prompts[result.name], lengths[result.name], temperature=0.0)]
        assert result.tokens == expected


def test_kv_bytes_per_token_counts_the_shared_key_value_heads_of_grouped_query_attention():
    torch.manual_seed(0)
    model = GPT(PRESETS["llama-style"]).eval()  # 4 layers, 4 query heads sharing 2 key/value heads of 32
    per_token = 2 * 4 * (2 * 32) * 4  # key and value · layers · kv_heads · head_dim · float32
    assert serving.kv_bytes_per_token(model) == per_token
    growth = serving.kv_growth(model, [1, 2, 3], 4)
    assert growth.cache_bytes == [per_token * n for n in growth.tokens]  # the cache's real tensors
