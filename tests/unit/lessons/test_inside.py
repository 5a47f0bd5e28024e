"""llmviz.lessons.inside: the numbers the Inside-the-model page shows, checked against hand derivations and torch's
own functions (the page's AppTest is tests/app/test_inside.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from llmviz.interpret import heads
from llmviz.lessons import inside
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.tokenizers.base import TokenizerError
from llmviz.tokenizers.char_word import CharTokenizer

TOKENIZER = CharTokenizer.train("abcdef ")


def test_tokens_of_keeps_the_context_and_says_what_it_cut():
    config = SimpleNamespace(context_length=4, vocab_size=TOKENIZER.vocab_size)
    ids, note = inside.tokens_of(TOKENIZER, config, "abcdef", limit=64)
    assert ids == TOKENIZER.encode("abcd") and note == "Only the first 4 of its 6 tokens are shown."
    assert inside.tokens_of(TOKENIZER, config, "ab", limit=64) == (TOKENIZER.encode("ab"), None)


def test_tokens_of_an_unreadable_text_is_a_repeated_random_sequence_with_a_note():
    config = SimpleNamespace(context_length=8, vocab_size=TOKENIZER.vocab_size)
    ids, note = inside.tokens_of(TOKENIZER, config, "xyz", limit=64)
    half = len(ids) // 2
    assert ids[:half] == ids[half:] and half == min(16, 8 // 2, TOKENIZER.vocab_size)
    assert "cannot read that text" in note


def test_exact_ids_refuse_what_the_model_cannot_read():
    config = SimpleNamespace(context_length=3)
    assert inside.exact_ids(TOKENIZER, config, "abc", "prompt") == TOKENIZER.encode("abc")
    with pytest.raises(TokenizerError, match="never saw"):
        inside.exact_ids(TOKENIZER, config, "abz", "prompt")
    with pytest.raises(TokenizerError, match="4 tokens long; this model reads 3"):
        inside.exact_ids(TOKENIZER, config, "abcd", "prompt")
    with pytest.raises(TokenizerError, match="must be one token"):
        inside.one_token(TOKENIZER, config, "ab", "answer")
    assert inside.one_token(TOKENIZER, config, "b", "answer") == TOKENIZER.encode("b")[0]


@pytest.mark.parametrize("kind", heads.DETECTORS)
def test_uniform_score_is_keys_in_the_mask_over_keys_seen(kind):
    tokens = [1, 2, 3, 1, 2, 3]
    mask = heads.detector_mask(kind, tokens)
    # a head attending evenly puts 1/(q+1) on each key it sees: its share on the mask is (mask keys) / (q + 1)
    shares = [float(mask[q].sum()) / (q + 1) for q in range(len(tokens)) if mask[q].sum() > 0]
    assert inside.uniform_score(kind, tokens) == pytest.approx(sum(shares) / len(shares))


def test_best_heads_are_torch_topk_of_the_grid():
    values = torch.rand(3, 4, generator=torch.Generator().manual_seed(0))
    top = torch.topk(values.flatten(), 3)
    expected = [(float(v), int(i) // 4, int(i) % 4) for v, i in zip(top.values, top.indices)]
    assert inside.best_heads(values) == expected


def test_clearest_detector_stands_furthest_above_chance():
    tokens = [1, 2, 3, 1, 2, 3]
    scores = {kind: torch.full((1, 1), inside.uniform_score(kind, tokens)) for kind in heads.DETECTORS}
    scores["induction"] = scores["induction"] + 0.5
    assert inside.clearest_detector(scores, tokens) == "induction"


def test_the_page_settings_reach_the_interpret_functions():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=7, context_length=16, d_model=8, n_layers=2, n_heads=2)).eval()
    ids = [1, 2, 3, 4, 1, 2]
    lens = inside.logit_lens(model, ids)
    assert lens.top_ids.shape[-1] == inside.TOP
    losses = inside.token_losses(model, ids)
    with torch.no_grad():
        logits, _ = model(torch.tensor([ids]))  # (1, T, V)
    expected = torch.nn.functional.cross_entropy(logits[0, :-1], torch.tensor(ids[1:]))  # the next tokens
    assert losses.mean == pytest.approx(float(expected), abs=1e-5)
    assert lens.true_probs[-1].tolist() == pytest.approx(
        torch.softmax(logits[0, :-1], -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].tolist(), abs=1e-5
    )  # the lens's last row is the model's own prediction
    tokens, scores = inside.head_scores(model)
    assert len(tokens) == 2 * min(inside.HALF_LENGTH, 16 // 2, 7) and set(scores) == set(heads.DETECTORS)


def test_prompt_lines_skip_blank_lines_and_keep_at_most_twenty():
    assert inside.prompt_lines("a\n \nb") == ["a", "b"]
    assert len(inside.prompt_lines("\n".join("x" * 30))) == inside.STEER_PROMPTS
