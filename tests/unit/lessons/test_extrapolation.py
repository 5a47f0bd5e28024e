"""Longer than training (llmviz.lessons.architectures.extrapolation): an architecture race measured at a
context longer than it trained at ('RoPE vs learned positions on the student's text, with a context longer than
training to show extrapolation')."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.lessons import architectures
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer

TEXT = "the quick brown fox jumps over the lazy dog\n" * 40


def trained(positions: str, steps: int = 20) -> Trainer:
    config = TrainConfig(
        model="gpt-micro",
        tokenizer="char",
        context_length=16,
        model_context=64,
        batch_size=8,
        steps=steps,
        architecture={"positions": positions},
        eval_interval=steps,
        seed=0,
    )
    trainer = Trainer.from_text(TEXT, config)
    for _ in trainer.run():
        pass
    return trainer


def test_loss_by_position_is_the_mean_cross_entropy_of_each_position_over_the_windows():
    torch.manual_seed(0)
    model = trained("rope", steps=2).model.eval()
    ids = torch.randint(0, model.config.vocab_size, (300,))
    got = architectures.loss_by_position(model, ids, context=40, windows=5)
    starts = torch.linspace(0, 300 - 41, 5).long()  # windows spread evenly, from the first token to the last
    expected = torch.zeros(40)
    for start in starts.tolist():
        x, y = ids[start : start + 40], ids[start + 1 : start + 41]
        with torch.no_grad():
            logits, _ = model(x[None])
        expected += torch.stack([F.cross_entropy(logits[0, p], y[p]) for p in range(40)]) / len(starts)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


def test_learned_positions_beyond_the_training_context_are_rows_that_got_no_gradient():
    """What the page says: trained at 16 tokens, a learned table's rows 16–63 only shrink with AdamW's weight decay
    (the same factor for every number: no gradient reached them), while rows 0–15 learned."""
    config = TrainConfig(
        model="gpt-micro",
        tokenizer="char",
        context_length=16,
        model_context=64,
        batch_size=8,
        steps=20,
        architecture={"positions": "learned"},
        eval_interval=20,
        seed=0,
    )
    trainer = Trainer.from_text(TEXT, config)
    start = trainer.model.pos_emb.weight.detach().clone()  # (64, 64)
    for _ in trainer.run():
        pass
    ratio = trainer.model.pos_emb.weight.detach() / start
    beyond, within = ratio[16:], ratio[:16]
    torch.testing.assert_close(beyond, torch.full_like(beyond, float(beyond.mean())), atol=1e-5, rtol=0)
    assert 0.9 < float(beyond.mean()) <= 1.0
    assert float((within - within.mean()).abs().max()) > 0.1


def test_model_context_gives_the_gpt_more_positions_than_training_reads():
    trainer = trained("learned", steps=1)
    assert trainer.model.config.context_length == 64 and trainer.model.pos_emb.weight.shape == (64, 64)
    assert trainer.train_batches.context_length == 16
    with pytest.raises(ConfigError, match="model_context"):
        TrainConfig(model="gpt-micro", context_length=32, model_context=16)
    with pytest.raises(ConfigError, match="model_context"):
        TrainConfig(model="rnn", context_length=16, model_context=64)


def test_extrapolation_splits_at_the_training_context_and_refuses_what_cannot_be_measured():
    models = {"learned": trained("learned").model.eval(), "rope": trained("rope").model.eval()}
    ids = torch.tensor(trained("rope", steps=1).dataset.val_ids.tolist() * 4)
    result = architectures.extrapolation(models, ids, trained_context=16, context=64)
    for name, curve in result.by_position.items():
        assert curve.shape == (64,)
        assert result.within[name] == pytest.approx(float(curve[:16].mean()))
        assert result.beyond[name] == pytest.approx(float(curve[16:].mean()))
    with pytest.raises(ConfigError, match="context of 64"):
        architectures.loss_by_position(models["rope"], ids, context=65)
    with pytest.raises(ConfigError, match="longer than the 16"):
        architectures.extrapolation(models, ids, trained_context=16, context=16)
    with pytest.raises(ConfigError, match="needs at least"):
        architectures.loss_by_position(models["rope"], ids[:30], context=64)
