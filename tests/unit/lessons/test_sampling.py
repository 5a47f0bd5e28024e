"""llmviz.lessons.sampling: the numbers the Sampling page shows, checked against torch's own softmax, top-k and argmax
and a hand count of the beam-search tree (the page's AppTest is tests/app/test_sampling.py)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from llmviz.generation.sampling import generate, next_token_distribution
from llmviz.lessons import sampling
from llmviz.models.gpt import GPT, GPTConfig


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=13, context_length=16, d_model=16, n_layers=2, n_heads=2)).eval()


def test_the_four_panels_are_the_transforms_in_order():
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])
    dist = next_token_distribution(logits, temperature=0.5, top_k=3, top_p=0.9)
    panels = sampling.transforms(dist, 0.5, 3, 0.9)
    assert [title for title, _ in panels] == ["raw softmax", "temperature 0.5", "top-k 3", "top-p 0.9"]
    torch.testing.assert_close(panels[0][1], torch.softmax(logits, -1))
    torch.testing.assert_close(panels[1][1], torch.softmax(logits / 0.5, -1))
    assert sampling.transforms(dist, 0.5, 0, 0.9)[2][0] == "top-k off"


def test_greedy_generation_is_the_argmax_of_each_forward_pass(gpt):
    ids = [1, 2, 3]
    records = list(generate(gpt, ids, 5, sampling.method_temperature("greedy", 0.8), 0, 1.0, seed=0))
    sequence = list(ids)
    with torch.no_grad():
        for _ in range(5):
            logits, _ = gpt(torch.tensor([sequence]))  # (1, T, V)
            sequence.append(int(logits[0, -1].argmax()))
    assert [r.token for r in records] == sequence[len(ids) :]


def test_step_mode_candidates_are_the_raw_top_ten_with_their_final_probabilities(gpt):
    record = sampling.next_step(gpt, [1, 2, 3], 1.0, 3, 1.0, seed=0)
    found = sampling.top_candidates(record)
    with torch.no_grad():
        logits, _ = gpt(torch.tensor([[1, 2, 3]]))
    top = torch.topk(torch.softmax(logits[0, -1], -1), sampling.CANDIDATES)
    assert [t for t, _, _, _ in found] == top.indices.tolist()
    assert [p for _, p, _, _ in found] == pytest.approx(top.values.tolist(), abs=1e-6)
    assert [ok for _, _, _, ok in found] == [True] * 3 + [False] * 7  # top-k 3 keeps three
    assert [final for _, _, final, _ in found][3:] == [0.0] * 7


def test_the_beam_tree_draws_every_node_once(gpt):
    result = sampling.beam(gpt, [1, 2], width=2, new_tokens=40)
    assert max(node.depth for node in result.nodes) == sampling.BEAM_TOKENS  # cut to the tree the page can draw
    tree = sampling.beam_tree(result)
    drawn = [child for edges in tree.edges.values() for _, child in edges] + tree.winners[1:]
    assert sorted(drawn) == sorted(node.node_id for node in result.nodes[1:])
    assert tree.widest == max(Counter(node.depth for node in result.nodes[1:]).values())
    assert set(tree.layout) == {node.node_id for node in result.nodes}


def test_the_window_note_only_when_the_text_outgrows_the_context(gpt):
    assert sampling.window_note(gpt, 4, 12) is None
    assert "sees at most 16 tokens" in sampling.window_note(gpt, 4, 13)


def test_three_temperatures_share_one_seed(gpt):
    from llmviz.tokenizers.char_word import CharTokenizer

    tokenizer = CharTokenizer.train("abcdefghijklm")  # as many as the model's 13 tokens
    outputs = sampling.at_temperatures(gpt, tokenizer, "abc", [0.0, 1.0], 0, 1.0, seed=3)
    assert outputs == sampling.at_temperatures(gpt, tokenizer, "abc", [0.0, 1.0], 0, 1.0, seed=3)
    assert list(outputs) == [0.0, 1.0]


def test_first_difference():
    assert sampling.first_difference([1, 2, 3], [1, 2, 4]) == 2
    assert sampling.first_difference([1, 2], [1, 2]) is None
