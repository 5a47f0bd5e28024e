"""The trainer's string settings are Literal types, still checked at run time; a run saved with the gpt2-124m preset of
earlier versions (no bias in W_Q, W_K, W_V, an untied head) loads and resumes with its own switches."""

from __future__ import annotations

import json
import typing

import pytest

from llmviz.errors import ConfigError
from llmviz.models.charlevel import CHAR_MODELS
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS
from llmviz.training.checkpoint import load_checkpoint, save_checkpoint
from llmviz.training.config import OPTIMIZERS, TrainConfig
from llmviz.training.trainer import Trainer, resume

TEXT = "the cat sat on the mat. the dog sat on the log. " * 40


def test_train_config_switches_are_literal_types():
    hints = typing.get_type_hints(TrainConfig)
    names = {name for part in typing.get_args(hints["model"]) for name in typing.get_args(part)}  # presets | char
    assert names == set(PRESETS) | set(CHAR_MODELS)
    assert list(typing.get_args(hints["optimizer"])) == OPTIMIZERS
    assert set(typing.get_args(hints["tokenizer"])) == {"char", "bpe"}
    assert set(typing.get_args(hints["schedule"])) == {"cosine", "constant"}


@pytest.mark.parametrize(
    "field, value, message",
    [("model", "gpt2-124", "model must be one of"), ("optimizer", "adam-w", "optimizer must be one of")],
)
def test_a_bad_value_from_json_is_a_readable_error(field, value, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig.from_dict(json.loads(json.dumps({field: value})))


def test_a_run_saved_with_the_old_gpt2_preset_loads_and_resumes(tmp_path):
    old_switches = {"qkv_bias": False, "tie_weights": False}  # what gpt2-124m built before it was GPT-2 as published
    config = TrainConfig(
        model="gpt2-124m",
        tokenizer="char",
        context_length=16,
        batch_size=4,
        steps=4,
        d_model=32,
        n_layers=1,
        n_heads=2,
        eval_interval=2,
        architecture=old_switches,
    )
    trainer = Trainer.from_text(TEXT, config)
    list(trainer.run(2))
    save_checkpoint(tmp_path, trainer)
    meta_file = tmp_path / "checkpoint.json"
    meta = json.loads(meta_file.read_text())
    meta["train_config"]["architecture"] = None  # as the old preset wrote it: no switches named
    meta_file.write_text(json.dumps(meta))

    model, _, _ = load_checkpoint(tmp_path)
    assert isinstance(model, GPT) and not model.config.qkv_bias and not model.config.tie_weights
    resumed = resume(tmp_path, TEXT)
    assert resumed.step == 2 and not resumed.model.config.qkv_bias and not resumed.model.config.tie_weights
    list(resumed.run())
    assert resumed.step == 4
