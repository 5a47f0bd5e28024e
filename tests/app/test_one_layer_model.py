"""A picked model with one layer and one head: the layer and head sliders have nothing to slide, and no page fails."""

import pytest

from llmviz.training.checkpoint import save_checkpoint
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer
from tests.support.pages import assert_clean, run_page


def trained_run(folder, name: str, n_layers: int, n_heads: int):
    """A GPT nano trained for two steps on a short text, saved under ``folder / name``; its vocabulary size."""
    config = TrainConfig(
        model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=2, n_layers=n_layers, n_heads=n_heads
    )
    trainer = Trainer.from_text("The cat sat on the mat. " * 40, config)
    for _ in trainer.run():
        pass
    save_checkpoint(folder / name, trainer, trainer_state=False)
    return trainer.dataset.vocab_size


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    trained_run(folder, "one", n_layers=1, n_heads=1)
    return folder


@pytest.mark.parametrize(
    ("path", "opened", "only"),
    [
        ("stages/attention.py", {}, {"Layer: 0 (the only one)", "Head: 0 (the only one)"}),
        ("stages/model.py", {"model_tab": "Inside a trained GPT"}, {"Block: 0 (the only one)"}),  # under the flow
        (  # the layer steered, on texts of the model's own characters
            "stages/inside.py",
            {"look": "Steer", "steer_prompt": "The cat", "steer_positive": "the cat", "steer_negative": "the mat"},
            {"Layer: 0 (the only one)"},
        ),
    ],
)
def test_one_layer_one_head_model(runs_dir, monkeypatch, path, opened, only):
    """A model of one layer and one head: each page's layer, block or head choice says it is the only one (Streamlit
    refuses a slider from 0 to 0) and the page draws the rest."""
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs_dir))
    at = run_page(path, _picker_selected="dir:one", **opened)
    assert_clean(at)
    assert only <= {caption.value for caption in at.caption}, [c.value for c in at.caption]


@pytest.fixture(scope="module")
def small_runs_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small_runs")
    return folder, trained_run(folder, "small", n_layers=2, n_heads=2)


def test_values_kept_from_a_larger_model_move_into_the_smaller_models_range(small_runs_dir, monkeypatch):
    """A student looked at layer 3, head 3 and top-k 512 of a bigger model, then picked a run with 2 layers,
    2 heads and a dozen characters: Streamlit refused the kept values (StreamlitValueAboveMaxError) and the
    attention and next-token sections broke. They move to the nearest end of the new range."""
    folder, vocab_size = small_runs_dir
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(folder))
    attention = run_page("stages/attention.py", _picker_selected="dir:small", layer=3, head=3)
    assert attention.session_state["layer"] == 1 and attention.session_state["head"] == 1
    assert [s.value for s in attention.slider if s.label in ("Layer", "Head")][:2] == [1, 1]
    sampling = run_page("stages/sampling.py", _picker_selected="dir:small", top_k=512)
    assert vocab_size < 512
    assert sampling.session_state["top_k"] == vocab_size
    assert not sampling.warning or all("default value" not in w.value for w in sampling.warning)
