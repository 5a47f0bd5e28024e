"""The Training page's lesson content (llmviz/lessons/training.py): labels derived from the presets, the races'
line-ups, and a run's final line."""

import math

import pytest

from llmviz.lessons import training
from llmviz.models.charlevel import CHAR_MODEL_TITLES
from llmviz.models.presets import PRESETS
from llmviz.training.config import OPTIMIZER_TITLES


@pytest.mark.parametrize("name", list(training.GPT_TITLES))
def test_every_gpt_label_states_its_presets_size(name):
    """Each label is derived from the preset: its layers and width are the preset's own (a preset that changes
    changes its label)."""
    config = PRESETS[name]
    label = training.GPT_SIZES[name]
    assert label.startswith(training.GPT_TITLES[name])
    assert f"{config.n_layers} layers, d {config.d_model}" in label
    assert ("RoPE" in label or "like Llama" in label) == (config.positions == "rope" and not config.n_experts)
    assert (f"{config.n_experts} experts" in label) == bool(config.n_experts)


def test_the_trainable_models_are_the_gpt_presets_and_every_character_model():
    assert set(training.MODEL_LABELS) == set(training.GPT_TITLES) | set(CHAR_MODEL_TITLES)
    assert set(training.GPT_TITLES) <= set(PRESETS)


def test_the_races_line_ups():
    names = training.names_race()
    assert [r.model for r in names] == list(CHAR_MODEL_TITLES) and {r.optimizer for r in names} == {"adam"}
    race = training.optimizer_race("rnn")
    assert [r.optimizer for r in race] == ["sgd", "momentum", "rmsprop", "adam"]
    assert all(r.model == "rnn" and r.title.startswith(OPTIMIZER_TITLES[r.optimizer]) for r in race)
    assert all(lr in training.LEARNING_RATES for lr in (0.3, 0.03, 3e-3))


def test_a_runs_final_line_has_its_steps_losses_and_measure():
    losses = [4.0, 3.0, 2.0, 1.0]
    final = training.final_train_loss(losses, last=3)
    assert final == pytest.approx((3.0 + 2.0 + 1.0) / 3)
    line = training.RunResult(4, 4, "finished", final, math.log(7.5), training.perplexity_measure(math.log(7.5)))
    assert line.line("run") == "run · finished after 4 steps · training loss 2.000 · validation loss 2.015 · " + (
        "validation perplexity 7.50"
    )
    stopped = training.RunResult(2, 10, "stopped", 3.5, None).line("run")
    assert stopped == "run · stopped at step 2 of 10 · training loss 3.500"
    assert training.final_train_loss([float("nan"), 2.0]) == 2.0  # a step without a loss is left out
