"""A corrupted checkpoint in the runs folder never reaches a page: the picker lists it as unreadable with the one-line
reason, and a link or an old pick of it shows the shipped model, while a good checkpoint next to it is drawn (the
Model page formats its final validation loss, which a crafted ``"final": {"val_loss": "low"}`` turned into
``ValueError: Unknown format code 'f'``, and ``"final": "done"`` into ``'str' object has no attribute 'get'``)."""

from __future__ import annotations

import pytest

from tests.support.checkpoints import crafted, setting
from tests.support.pages import assert_clean, run_page, texts

BAD = {"final-done": setting("final", "done"), "val-loss-low": setting("final", "val_loss", "low")}


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    from llmviz.training.checkpoint import save_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    trainer = Trainer.from_text(
        "hello world, hello attention\n" * 40,
        TrainConfig(model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=1),
    )
    for _ in trainer.run():
        pass
    good = save_checkpoint(tmp_path / "good", trainer)
    folder = tmp_path / "runs"
    folder.mkdir()
    crafted(good, folder / "fine", lambda meta: None)
    for name, change in BAD.items():
        crafted(good, folder / name, change)
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(folder))
    return folder


@pytest.mark.parametrize("name", list(BAD))
def test_a_corrupted_checkpoint_is_listed_unreadable_and_never_drawn(runs, name):
    at = run_page("stages/model.py", _picker_selected=f"dir:{name}")
    assert_clean(at)
    picker = next(box for box in at.selectbox if box.label == "Model shown on every page")
    assert any(option.startswith(f"Checkpoint {name}") for option in picker.options), picker.options
    assert picker.value == "shipped:gpt-python-docs"
    picker.set_value(f"dir:{name}").run()  # picking it says why not, in one line
    assert_clean(at)
    said = texts(at.sidebar.info)
    assert f"Checkpoint {name} is not available here: unreadable: checkpoint.json in {name} is damaged: final" in said


def test_the_good_checkpoint_beside_them_is_drawn(runs):
    at = run_page("stages/model.py", _picker_selected="dir:fine", model_tab="Inside a trained GPT")
    assert_clean(at)
    assert any("final validation loss" in caption.value for caption in at.caption)
