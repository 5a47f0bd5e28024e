"""A link's ``model=`` is checked for what it names: a checkpoint or the pretrained MiniLM that the page shows gives no
notice (a valid link said "a run trained in another session" while showing the model), a run that is not the
student's says that a run opens only for the student who trained it, and a model this server lacks says that
instead."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import ui
from tests.support.pages import TIMEOUT, assert_clean


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    from llmviz.training.checkpoint import save_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    trainer = Trainer.from_text(
        "hello world, hello attention\n" * 40,
        TrainConfig(model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=1),
    )
    save_checkpoint(tmp_path / "runs" / "lora-names", trainer, trainer_state=False)
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


def open_link(model: str) -> AppTest:
    at = AppTest.from_file(str(ui.ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["model"] = model
    at.run()
    assert_clean(at)
    return at


def link_notices(at: AppTest) -> str:
    return " ".join(box.value for box in at.warning if "This link's settings" in box.value)


def picked(at: AppTest) -> str:
    return next(box for box in at.selectbox if box.label == "Model shown on every page").value


@pytest.mark.parametrize("model", ["dir:lora-names", "dir:lora-names@1"])
def test_a_checkpoint_link_shows_it_without_a_notice(runs, model):
    at = open_link(model)
    assert picked(at) == "dir:lora-names"
    assert link_notices(at) == ""
    assert not any("another" in box.value for box in at.info)


def test_a_minilm_link_shows_it_without_a_notice():
    from llmviz.models.minilm import PretrainedUnavailable, model_folder

    try:
        model_folder()
    except PretrainedUnavailable:
        pytest.skip("the pretrained MiniLM is not installed here")
    at = open_link("pretrained:minilm")
    assert picked(at) == "pretrained:minilm"
    assert link_notices(at) == ""


def test_a_run_link_says_a_run_opens_only_for_its_student():
    at = open_link("run:0123456789ab@40")
    assert picked(at) == "shipped:gpt-python-docs"
    assert "is not available here: a training run opens only for the student who trained it" in link_notices(
        at
    ).replace("\\", "")
    assert "another browser session" not in link_notices(at)  # runs belong to the student, not the tab


def test_a_model_this_server_lacks_says_so_and_not_another_session(runs):
    at = open_link("dir:gone")
    assert picked(at) == "shipped:gpt-python-docs"
    notices = link_notices(at).replace("\\", "")
    assert "is not available on this server" in notices and "session" not in notices
    assert not any("session" in box.value for box in at.info)
