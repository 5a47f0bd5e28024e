"""A link's ``model=`` is checked for what it names: a checkpoint or the pretrained MiniLM that the page shows gives no
notice (a valid link said "a run trained in another session" while showing the model), a run that is not the
student's says that a run opens only for the student who trained it, and a model this server lacks says that
instead."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.pages import TIMEOUT, assert_clean
from ui.stages import ROOT


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
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
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


@pytest.mark.usefixtures("fresh_session_jobs")
def test_a_link_to_a_damaged_snapshot_of_her_own_run_says_only_that_it_is_damaged(caplog):
    """Issue 72 §4: a link to a damaged snapshot of the student's own run showed the right sentence and beside it a
    false "it is not one of your runs"; the server's log named the file's path (the docs say it does not)."""
    from llmviz.lab.identity import student_key
    from llmviz.lab.service import default_lab
    from tests.support.jobs import end_every_session
    from tests.support.pages import session_jobs, train_on_names
    from tests.support.waiting import wait_for
    from ui import state

    trained = train_on_names()
    [job] = session_jobs(trained)
    student = trained.session_state[state.STUDENT_ID.name]
    lab = default_lab()
    wait_for(lambda: [s.step for s in lab.snapshots(student_key(student), job.id)][-1:] == [20], timeout=120)
    [(step, path, _)] = [row for row in lab.registry.records.snapshots(job.id) if row[0] == 20]
    end_every_session()  # a new server's memory: the run is read from the lab's files
    with open(path, "r+b") as file:  # damaged on the disk (a cut write, a bad sector)
        file.write(b"\xff" * 64)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state[state.STUDENT_ID.name] = student  # the same student, a new tab
    at.query_params["model"] = f"run:{job.id}@{step}"
    with caplog.at_level("WARNING", logger="llmviz.lab.service"):
        at.run()
    assert not at.exception
    [logged] = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert f"run {job.id}: its snapshot at step 20 cannot be read" in logged and ".safetensors" not in logged, logged
    said = " ".join(box.value for box in [*at.info, *at.warning]).replace("\\", "")
    assert "damaged" in said, said
    assert "not one of your runs" not in said and "another student" not in said, said
