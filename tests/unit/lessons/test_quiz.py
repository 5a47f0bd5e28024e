"""Predict, then reveal (llmviz/lessons/quiz.py): every question type on inputs whose answer is known by hand."""

import math

import pytest
import torch
from torch import nn

from llmviz.errors import LlmvizError
from llmviz.lessons import quiz
from llmviz.models import minilm
from llmviz.tokenizers.char_word import CharTokenizer, WordTokenizer
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import prepare_data
from llmviz.training.trainer import Trainer


def answer(question: quiz.Question) -> str:
    assert len(set(question.options)) == len(question.options) >= 2, question.options
    assert 0 <= question.answer < len(question.options)
    assert question.explanation
    return question.options[question.answer]


# ---------------------------------------------------------------- tokens
TEXT = "the cat sat on the extraordinarily long mat"
CHARS = CharTokenizer.train(TEXT)
WORDS = WordTokenizer.train(TEXT, max_vocab=50)


def test_token_count_of_a_character_tokenizer_is_the_length():
    assert answer(quiz.token_count(TEXT, CHARS, "characters")) == str(len(TEXT))  # one token per character
    assert answer(quiz.token_count(TEXT, WORDS, "words")) == "15"  # 8 words and the 7 spaces between them


def test_fewer_tokens_words_beat_characters():
    assert answer(quiz.fewer_tokens(TEXT, CHARS, "characters", WORDS, "words")) == "words"
    assert answer(quiz.fewer_tokens("at", CHARS, "A", CHARS, "B")) == "the same number"


def test_word_pieces_picks_the_longest_word():
    question = quiz.word_pieces(TEXT, CHARS, "characters")
    assert "extraordinarily" in question.prompt
    assert answer(question) == str(len(" extraordinarily"))


def test_word_pieces_with_gpt2():
    from llmviz.tokenizers.bpe.reference import reference_tokenizer

    gpt2 = reference_tokenizer("gpt2")
    question = quiz.word_pieces("I like the", gpt2, "GPT-2")
    assert "“ like”" in question.prompt
    assert answer(question) == "1"  # " like" is one of GPT-2's 50,257 tokens (id 588)
    assert gpt2.encode(" like") == [588]


def test_tokens_questions_need_text():
    with pytest.raises(LlmvizError):
        quiz.tokens_questions("   ", {"characters": CHARS})
    assert len(quiz.tokens_questions(TEXT, {"characters": CHARS, "words": WORDS})) >= 3


def test_same_inputs_same_question_and_key():
    a, b = quiz.token_count(TEXT, CHARS, "characters"), quiz.token_count(TEXT, CHARS, "characters")
    assert a == b and a.key == b.key
    assert a.key != quiz.token_count(TEXT + " a", CHARS, "characters").key


# ---------------------------------------------------------------- attention
LABELS = ["The", "cat", "sat", "down"]


def causal_cache() -> dict:
    """Layer 0 and 1, 2 heads; causal rows. Hand-set: in layer 1, head 0, 'down' attends most to 'cat'."""
    pattern = torch.zeros(1, 2, 4, 4)
    for head in range(2):
        for i in range(4):
            pattern[0, head, i, : i + 1] = 1.0 / (i + 1)  # uniform over the visible tokens
    layer1 = pattern.clone()
    layer1[0, 0, 3] = torch.tensor([0.1, 0.6, 0.2, 0.1])
    layer1[0, 1, 3] = torch.tensor([0.3, 0.3, 0.2, 0.2])
    return {"blocks.0.attn.pattern": pattern, "blocks.1.attn.pattern": layer1}


def test_most_attended_is_the_largest_weight():
    question = quiz.most_attended(causal_cache(), LABELS, layer=1, head=0, query=3)
    assert answer(question) == "cat (position 1)"
    assert "0.600" in question.explanation


def test_visible_keys_under_a_causal_mask_and_without():
    assert answer(quiz.visible_keys(causal_cache(), LABELS, query=2)) == "3"  # positions 0, 1, 2
    full = {"layers.0.attn.pattern": torch.full((1, 1, 4, 4), 0.25)}
    assert answer(quiz.visible_keys(full, LABELS, query=1, name=minilm.cache_name)) == "4"


def test_focused_head():
    assert answer(quiz.focused_head(causal_cache(), LABELS, layer=1, query=3)) == "head 0"  # 0.6 > 0.3


def test_attention_questions_on_the_shipped_gpt():
    from tests.support.paths import DATA

    SHIPPED_GPT = "gpt-python-docs"  # ui.picker.SHIPPED_GPT
    if not (DATA / SHIPPED_GPT).exists():
        pytest.skip("the shipped GPT is missing")
    from llmviz.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint(DATA / SHIPPED_GPT)
    ids = tokenizer.encode("The return statement leaves the function")
    with torch.no_grad():
        _, _, cache = model.run_with_cache(torch.tensor([ids]))
    labels = [tokenizer.printable(i) for i in ids]
    questions = quiz.attention_questions(cache, labels, layer=1, head=0)
    row = cache["blocks.1.attn.pattern"][0, 0, -1]
    j = int(torch.argmax(row))
    assert answer(questions[0]) == f"{labels[j]} (position {j})"
    assert answer(questions[1]) == str(len(ids) // 2 + 1)  # GPT is causal: itself and the tokens before it


# ---------------------------------------------------------------- training
def test_learning_rate_question_follows_the_computation():
    assert answer(quiz.learning_rate_times_ten(lambda lr: 1.0 / lr, 0.1, "x")) == "lower"
    assert answer(quiz.learning_rate_times_ten(lambda lr: math.inf if lr > 1 else 1.0, 0.5, "x")) == "higher"
    assert answer(quiz.learning_rate_times_ten(lambda lr: 2.0, 0.5, "x")) == "about the same (within 1%)"


NAMES_TEXT = "\n".join(["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper"] * 40)


def tiny_trainer(optimizer: str, clip):
    def make(lr: float) -> Trainer:
        config = TrainConfig(
            model="gpt-nano",
            tokenizer="char",
            context_length=8,
            batch_size=8,
            steps=15,
            optimizer=optimizer,
            lr=lr,
            grad_clip=clip,
            warmup_steps=0,
            schedule="constant",
            eval_interval=100,
            seed=3,
        )
        return Trainer(config, prepare_data(NAMES_TEXT, config))

    return make


def test_learning_rate_question_with_real_training_runs():
    small = quiz.learning_rate_times_ten(quiz.final_loss_after(tiny_trainer("sgd", None), 15), 1e-3, "SGD")
    assert answer(small) == "lower"  # tiny SGD steps: ten times the step, ten times the progress
    huge = quiz.learning_rate_times_ten(quiz.final_loss_after(tiny_trainer("sgd", None), 15), 50.0, "SGD")
    assert answer(huge) == "higher"  # SGD at 500 without clipping overshoots (or diverges)


def test_uniform_loss_is_ln_v():
    assert answer(quiz.uniform_loss(50257)) == f"{math.log(50257):.3f}"  # 10.825


class FixedLogits(nn.Module):
    """A 'model' that gives every position the same logits: the answer is known by hand."""

    def __init__(self, logits):
        super().__init__()
        self.logits = torch.tensor(logits)

    def forward(self, idx, targets=None):
        return self.logits.expand(idx.shape[0], idx.shape[1], -1), None


def test_position_loss_with_a_known_model():
    tokenizer = CharTokenizer.train("abcd")
    model = FixedLogits([0.0, 0.0, 0.0, 0.0])  # uniform: every target has p = 1/4
    questions = quiz.training_questions(model, tokenizer, "abcd", lambda lr: 1.0, 0.1, "x")
    assert answer(questions[1]) == f"{math.log(4):.3f}"
    assert answer(questions[2]) == f"{math.log(4):.3f}"  # −ln(1/4) = 1.386
    assert "0.2500" in questions[2].prompt


# ---------------------------------------------------------------- sampling
def test_greedy_next_token_is_the_argmax():
    question = quiz.greedy_next_token(torch.tensor([0.5, 3.0, 2.9, -1.0, 0.0, 1.0]), list("abcdef"))
    assert answer(question) == "b"
    assert set(question.options) == {"a", "b", "c", "f"}  # the four largest logits


def test_tokens_kept_by_top_k_and_top_p():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    assert answer(quiz.tokens_kept(logits, 1.0, 2, 1.0)) == "2"
    assert answer(quiz.tokens_kept(logits, 1.0, 0, 0.6)) == "2"  # 0.5 < 0.6 ≤ 0.5 + 0.3
    assert answer(quiz.tokens_kept(logits, 1.0, 0, 1.0)) == "4"


def test_temperature_entropy():
    assert answer(quiz.temperature_entropy(torch.tensor([2.0, 1.0, 0.0]), 0.7)) == "up"
    assert answer(quiz.temperature_entropy(torch.zeros(5), 1.0)) == "it stays the same"
    assert "0.5" in quiz.temperature_entropy(torch.tensor([2.0, 1.0]), 0.0).prompt  # T = 0: asks about 0.5 → 1


def test_sampling_questions():
    assert len(quiz.sampling_questions(torch.randn(50), [str(i) for i in range(50)], 0.8, 10, 0.9)) == 3


# ---------------------------------------------------------------- every reveal is filled in
UNFILLED = __import__("re").compile(r"(?<!\\)\{[A-Za-z_][A-Za-z_0-9.\[\]]*(?<!\\)\}")  # "{query}", not "\{x\}"


def every_question() -> list[quiz.Question]:
    """One question of every kind, on inputs that reach each branch of its explanation."""
    tokenizer = CharTokenizer.train("abcd")
    causal = causal_cache()
    full = {"layers.0.attn.pattern": torch.full((1, 1, 4, 4), 0.25)}
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    return [
        *quiz.tokens_questions(TEXT, {"characters": CHARS, "words": WORDS}),
        quiz.fewer_tokens("at", CHARS, "A", CHARS, "B"),
        *quiz.attention_questions(causal, LABELS, layer=1, head=0),
        quiz.visible_keys(causal, LABELS, query=1),  # the causal-mask branch
        quiz.visible_keys(causal, LABELS, query=3),  # the last token sees everything
        quiz.visible_keys(full, LABELS, query=1, name=minilm.cache_name),  # the bidirectional branch
        *quiz.training_questions(FixedLogits([0.0, 0.0, 0.0, 0.0]), tokenizer, "abcd", lambda lr: 1.0, 0.1, "x"),
        quiz.learning_rate_times_ten(lambda lr: math.inf if lr > 1 else 1.0, 0.5, "x"),
        *quiz.sampling_questions(logits, list("abcd"), 0.8, 2, 0.9),
        quiz.tokens_kept(logits, 1.0, 0, 1.0),
        quiz.temperature_entropy(torch.tensor([2.0, 1.0]), 0.0),
    ]


def test_no_reveal_shows_a_raw_placeholder():
    questions = every_question()
    assert {q.kind for q in questions} >= {
        "token-count",
        "fewer-tokens",
        "word-pieces",
        "most-attended",
        "visible-keys",
        "focused-head",
        "lr-times-ten",
        "uniform-loss",
        "position-loss",
        "greedy-next",
        "tokens-kept",
        "temperature-entropy",
    }
    for question in questions:
        for text in (question.prompt, question.explanation, *question.options):
            assert not UNFILLED.search(text), (question.kind, text)
    reveal = quiz.visible_keys(causal_cache(), LABELS, query=1).explanation
    assert "positions 0 to 1, itself included" in reveal


def test_no_reveal_of_the_architecture_and_adapt_questions_shows_a_raw_placeholder():
    """The predict-then-reveal questions of the architectures (Attention's KV cache, Embeddings' RoPE, now in
    llmviz.lessons.quiz) and those built outside it (Adapt & serve's) are checked for unfilled braces too."""
    from llmviz.lessons import adapting
    from llmviz.training.checkpoint import load_checkpoint
    from tests.support.paths import ROOT

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    questions = [
        quiz.kv_cache_question(8, 2, 4096),
        quiz.kv_cache_question(4, 4, 10),
        quiz.rope_question(),
        *adapting.adapt_questions(model, tokenizer, "The while statement"),
    ]
    assert {q.kind for q in questions} >= {"kv-cache", "rope-distance", "lora-count", "kv-bytes", "int4-top"}
    for question in questions:
        for text in (question.prompt, question.explanation, *question.options):
            assert not UNFILLED.search(text), (question.kind, text)
