"""Instruction tuning: the loss only on the answer's tokens (the -100 mask), checked against a plain loop over
tokens with log_softmax; the end token of the shipped GPT; a run that learns to answer; the model it starts from
unchanged."""

import pickle
import string

import pytest
import torch
import torch.nn.functional as F

from llmviz.adapt import instructions, sft
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.tokenizers.char_word import CharTokenizer
from llmviz.training.checkpoint import load_checkpoint
from tests.support.paths import ROOT

CHARS = string.ascii_letters + string.digits + " .?|<>\n_`"


@pytest.fixture(scope="module")
def tiny():
    tokenizer = CharTokenizer.train(CHARS)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, context_length=48, d_model=32, n_heads=2, n_layers=2))
    return model.eval(), tokenizer


def hand_log_probs(model, example):
    """log p(answer | prompt) by a plain loop: one forward pass per answer token on the text before it."""
    total = 0.0
    for position in range(example.prompt_tokens, len(example.ids)):
        logits, _ = model(torch.tensor([example.ids[:position]]))
        total += float(F.log_softmax(logits[0, -1].double(), -1)[example.ids[position]])
    return total


def test_labels_mask_the_prompt_and_the_padding():
    inputs, labels = sft.batch_examples([sft.Encoded([1, 2, 3, 4, 5], 3), sft.Encoded([6, 7, 8], 1)], pad=0)
    assert inputs.tolist() == [[1, 2, 3, 4], [6, 7, 0, 0]]
    assert labels.tolist() == [[-100, -100, 4, 5], [7, 8, -100, -100]]


def test_no_loss_and_no_gradient_on_the_prompt(tiny):
    model, tokenizer = tiny
    examples = [sft.encode_example(tokenizer, "Say hi", "hi there", 48), sft.encode_example(tokenizer, "Q", "A", 48)]
    inputs, labels = sft.batch_examples(examples)
    logits = model(inputs)[0].detach().requires_grad_(True)  # (B, T, V)
    loss = sft.masked_loss(logits, labels)
    loss.backward()
    mask = labels != -100
    assert logits.grad[~mask].abs().max() == 0 and logits.grad[mask].abs().max() > 0
    by_hand = [
        -float(F.log_softmax(logits[b, t].detach().double(), -1)[labels[b, t]]) for b, t in mask.nonzero().tolist()
    ]  # the answers' tokens only, each once
    assert float(loss) == pytest.approx(sum(by_hand) / len(by_hand), abs=1e-6)
    # the prompt's own next tokens are never targets: the answer's first target is the token after the template
    first = examples[0].prompt_tokens - 1
    assert labels[0, first] == examples[0].ids[examples[0].prompt_tokens] and (labels[0, :first] == -100).all()


def test_summed_answer_log_probabilities_equal_a_plain_loop(tiny):
    model, tokenizer = tiny
    examples = [
        sft.encode_example(tokenizer, "What is a", "a letter.", 48),
        sft.encode_example(tokenizer, "b", "B", 48),
    ]
    inputs, labels = sft.batch_examples(examples)
    with torch.no_grad():
        summed = sft.response_log_probs(model, inputs, labels)
    assert summed.tolist() == pytest.approx([hand_log_probs(model, e) for e in examples], abs=1e-5)


def test_an_example_is_cut_to_the_context_keeping_an_answer_token(tiny):
    _, tokenizer = tiny
    example = sft.encode_example(tokenizer, "x" * 100, "y" * 100, 20)
    assert len(example.ids) == 21 and example.response_tokens >= 1
    short = sft.encode_example(tokenizer, "Q", "yes", 40)
    assert short.response_tokens == len("yes") + len(instructions.END)  # a character vocabulary spells the end


def test_the_shipped_gpt_ends_an_answer_with_one_special_token():
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    assert sft.end_ids(tokenizer) == [tokenizer.special_tokens["<|endoftext|>"]]
    example = sft.encode_example(tokenizer, "Q?", "A.", 128)
    assert tokenizer.decode(example.ids[: example.prompt_tokens]) == instructions.prompt_text("Q?")
    assert example.ids[-1] == 4095


def test_a_tiny_run_learns_the_answers_and_leaves_its_start_alone(tiny):
    model, tokenizer = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rows = [{"prompt": f"Say {w}", "response": w} for w in ("yes", "no", "maybe", "ok", "hi", "bye")]
    config = sft.SftConfig(steps=40, batch_size=6, lr=3e-3, eval_interval=20, seed=0)
    trainer = sft.SftRunner(config, tokenizer, model, rows, rows[:2])
    metrics = list(trainer.run())
    assert [m.step for m in metrics] == list(range(1, 41))
    assert metrics[-1].val_loss < trainer.val_loss_before / 2
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert pickle.loads(pickle.dumps(trainer)).step == 40  # a parked run is pickled


@pytest.mark.parametrize("bad", [{"steps": 0}, {"lr": -1.0}, {"batch_size": 0}, {"lr": float("nan")}])
def test_bad_settings_are_one_clear_error(bad):
    with pytest.raises(ConfigError, match="cannot work"):
        sft.SftConfig(**bad)


def test_answer_stops_at_the_end_token(tiny):
    model, tokenizer = tiny
    stop = sft.end_ids(tokenizer)
    result = sft.answer(model, tokenizer, "Q", max_new_tokens=5)
    assert len(result.ids) == len(result.probabilities) <= 5
    assert result.ended == (result.ids[-len(stop) :] == stop)
    assert all(0 < p <= 1 for p in result.probabilities)
