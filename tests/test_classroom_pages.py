"""The classroom server under AppTest: a student who asks for more than a fair share is told why, and the
work a page starts besides model runs (BPE, the learning-rate question's two runs) goes through the jobs."""

import pytest

from tests.test_app_pages import assert_clean, run_page
from tests.test_page_interactions import by_label, texts

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")  # tests/conftest.py


def session_jobs(at):
    from llmviz.jobs.manager import default_manager

    return default_manager().jobs(at.session_state["_llmviz_session_id"])


def test_a_third_run_is_refused_with_the_reason():
    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value("mlp")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Steps").set_value(2000)
    for _ in range(2):
        at.button(key="train").click().run()
        assert_clean(at)
    assert len(session_jobs(at)) == 2  # one training, one waiting
    at.button(key="train").click().run()
    assert_clean(at)  # a refusal is a warning, not an error box
    assert "each browser session trains 1 run at a time" in texts(at.warning)
    assert len(session_jobs(at)) == 2
    assert any("Yours: " in caption.value for caption in at.caption)
    for job in session_jobs(at):
        job.stop()
        assert job.wait(60)


def test_the_learning_rate_question_trains_as_a_job_then_asks():
    at = run_page("stages/training.py", corpus="names")
    at.button(key="quiz_ask_training").click().run()
    assert_clean(at)
    [job] = [job for job in session_jobs(at) if job.kind == "task"]
    assert job.label == "quiz: two short runs" and job.worker_pid is not None  # a worker process, as any run
    assert job.wait(180) and job.status().state == "finished", job.status().describe()
    at.run()
    assert_clean(at)
    prompts = texts(at.markdown)
    assert "(×10) instead, would the loss" in prompts, "the question is asked once its runs are done"


def test_bpe_training_is_a_job_of_the_session():
    at = run_page("stages/tokens.py")
    by_label(at.slider, "Vocabulary size").set_value(300)
    at.button(key="train_bpe").click().run()
    assert_clean(at)
    [job] = session_jobs(at)
    assert job.kind == "task" and job.total == 300 - 257
    assert job.wait(120) and job.status().state == "finished"
    at.run()
    assert_clean(at)
    assert "Learned 43 merges: a vocabulary of 300." in texts(at.success)
