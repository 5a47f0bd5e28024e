"""Every field of checkpoint.json is checked before anything uses it: a crafted description is refused with one line
(a :class:`CheckpointError` naming the field), never a ``ValueError: Unknown format code 'f'`` in a page that
formats ``final.val_loss``, nor ``'str' object has no attribute 'get'`` where it reads ``final`` as a dict."""

from __future__ import annotations

import pytest

from llmviz.errors import CheckpointError
from llmviz.training.checkpoint import list_checkpoints, load_checkpoint, save_checkpoint
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer, resume
from tests.support.checkpoints import crafted, setting

TEXT = "hello world, hello attention\n" * 40


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    config = TrainConfig(model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=2)
    trainer = Trainer.from_text(TEXT, config)
    for _ in trainer.run():
        pass
    return save_checkpoint(tmp_path_factory.mktemp("good") / "run", trainer)


def dropping(name):
    return lambda meta: meta.pop(name)


# name → (how checkpoint.json is corrupted, the words the one-line message must hold)
CORRUPTED = {
    "final-a-string": (setting("final", "done"), 'final is "done", not a JSON object'),
    "val-loss-a-string": (setting("final", "val_loss", "low"), 'final.val_loss is "low", not a number'),
    "train-loss-a-list": (setting("final", "train_loss", [1]), "final.train_loss is [1], not a number"),
    "step-a-string": (setting("step", "7"), 'step is "7", not a whole number'),
    "step-negative": (setting("step", -1), "step is -1"),
    "step-a-fraction": (setting("step", 1.5), "step is 1.5"),
    "step-a-boolean": (setting("step", True), "step is true"),
    "step-absurd": (setting("step", 10**13), "step is 10000000000000"),
    "metrics-a-string": (setting("metrics", "x"), "metrics is not a list"),
    "metrics-row-a-number": (setting("metrics", [1]), "metrics row 0 is 1"),
    "metrics-row-without-step": (setting("metrics", [{"train_loss": 1.0}]), "metrics row 0"),
    "metrics-value-a-string": (setting("metrics", 0, "train_loss", "x"), 'metrics row 0: "train_loss" is "x"'),
    "groups-a-string": (setting("optimizer_param_groups", "x"), "optimizer_param_groups is not a list"),
    "groups-of-numbers": (setting("optimizer_param_groups", [3]), "optimizer_param_groups is not a list"),
    "train-config-a-list": (setting("train_config", []), "train_config is [], not a JSON object"),
    "corpus-a-number": (setting("corpus", 5), "corpus is 5, not text"),
    "task-a-string": (setting("task", "x"), 'task is "x", not a JSON object'),
    "lora-a-number": (setting("lora", 3), "lora is 3, not a JSON object"),
    "format-foreign": (setting("format", "other"), 'format "other"'),
    "version-2": (setting("version", 2), "version 2"),
    "model-a-string": (setting("model", "gpt"), 'model is "gpt", not the description'),
    "model-kind-missing": (lambda meta: meta["model"].pop("kind"), "not the description of a GPT"),
    "tokenizer-a-string": (setting("tokenizer", "char"), "the tokenizer is not described"),
    "tokenizer-missing": (dropping("tokenizer"), "the tokenizer is not described"),
}


@pytest.mark.parametrize("name", list(CORRUPTED))
def test_each_corrupted_field_is_one_line_naming_it(good, tmp_path, name):
    change, words = CORRUPTED[name]
    folder = crafted(good, tmp_path / name, change)
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(folder)
    message = str(refused.value)
    assert words in message and "\n" not in message and str(tmp_path) not in message
    assert message.startswith(f"checkpoint.json in {name} is damaged: ")
    (listed,) = list_checkpoints(tmp_path)  # the runs folder lists it as unreadable, with the same reason
    assert not listed.readable and words in listed.problem


def test_optional_fields_may_be_left_out_and_unknown_ones_are_ignored(good, tmp_path):
    def change(meta):
        for name in ("format", "version", "step", "final", "metrics", "optimizer_param_groups", "corpus"):
            meta.pop(name, None)
        meta["notes"] = {"anything": ["at", "all"]}

    _, _, meta = load_checkpoint(crafted(good, tmp_path / "sparse", change))
    assert "step" not in meta and meta["notes"]


def test_a_run_without_its_training_config_is_refused_when_resumed(good, tmp_path):
    folder = crafted(good, tmp_path / "no-config", dropping("train_config"))
    load_checkpoint(folder)  # it can still be shown
    with pytest.raises(CheckpointError, match="cannot be resumed: its training config or metrics are incomplete"):
        resume(folder, TEXT)


def test_a_metrics_row_with_unknown_fields_is_refused_when_resumed(good, tmp_path):
    folder = crafted(good, tmp_path / "odd-metrics", setting("metrics", 0, "accuracy", 0.5))
    with pytest.raises(CheckpointError, match="cannot be resumed"):
        resume(folder, TEXT)


def test_the_good_checkpoint_resumes(good):
    assert resume(good, TEXT, steps=3).step == 2


def test_every_shipped_checkpoint_passes_the_checks():
    from llmviz.training.checkpoint import description_problem, parse_description
    from tests.support.paths import ROOT

    shipped = sorted((ROOT / "data").glob("*/checkpoint.json"))
    assert shipped
    for path in shipped:
        assert description_problem(parse_description(path.read_text(encoding="utf-8"))) is None, path.parent.name
