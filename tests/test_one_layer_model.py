"""A picked model with one layer and one head: the layer and head sliders have nothing to slide, and no page fails."""

import pytest

from llmviz.train import TrainConfig, Trainer, save_checkpoint
from tests.test_app_pages import assert_clean, run_page


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    config = TrainConfig(model="gpt-nano", tokenizer="char", context_size=16, batch_size=4, steps=2,
                         n_layers=1, n_heads=1)
    trainer = Trainer.from_text("The cat sat on the mat. " * 40, config)
    for _ in trainer.run():
        pass
    save_checkpoint(folder / "one", trainer, trainer_state=False)
    return folder


@pytest.mark.parametrize("path", ["pages/attention.py", "pages/model.py", "pages/inside.py"])
def test_one_layer_one_head_model(runs_dir, monkeypatch, path):
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs_dir))
    at = run_page(path, _picker_selected="dir:one")
    assert_clean(at)
    assert any("the only one" in caption.value for caption in at.caption) or path.endswith("inside.py")
