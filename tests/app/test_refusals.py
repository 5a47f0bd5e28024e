"""A run the server refuses (its memory, the student's share) is refused before anything is built, and the reason is
shown beside the button that asked, also after the page has rerun (the Adapt page reruns at once after its Start
buttons: the reason used to be lost). Under AppTest, with the server's manager given a small memory budget."""

import re

import pytest
from cachetools import LRUCache

import llmviz.jobs.default
from llmviz.jobs.manager import JobManager
from tests.support.pages import assert_clean, by_label, run_page, texts
from ui.panels import task_jobs


@pytest.fixture
def small_server(monkeypatch):
    """The server's manager with 2 GB to train in, and a share of ``share_mb`` per student (500 MB unless changed)."""
    made: list[JobManager] = []

    def make(share_mb: float = 500) -> JobManager:
        made.append(
            JobManager(
                max_running=2, session_timeout=None, workers="process", memory_mb=2048, client_memory_mb=share_mb
            )
        )
        monkeypatch.setattr(llmviz.jobs.default, "_default", made[-1])
        return made[-1]

    yield make
    for manager in made:
        manager.shutdown()


def unescaped(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)  # Markdown source: punctuation is escaped


def test_the_training_page_refuses_a_run_that_does_not_fit_and_keeps_saying_why(small_server):
    server = small_server()
    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value("gpt-mini")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Batch size").set_value(64)
    by_label(at.slider, "Context (tokens)").set_value(128)
    at.button(key="train").click().run()
    assert_clean(at)
    said = unescaped(texts(at.warning))
    assert re.search(
        r"Training GPT mini \([\d.,]+ (M )?parameters\) needs about \d+ MB; your share has 500 MB left", said
    )
    assert "lower the batch to" in said, said
    assert server.jobs(at.session_state["_llmviz_session_id"]) == []  # nothing was started
    at.run()  # any rerun (a live section's refresh, another widget): the reason stays beside the button
    assert "your share has 500 MB left" in unescaped(texts(at.warning))
    by_label(at.slider, "Batch size").set_value(2)
    by_label(at.slider, "Context (tokens)").set_value(16)
    at.button(key="train").click().run()  # pressed again, with what fits: the old reason goes
    assert_clean(at)
    assert "your share has" not in unescaped(texts(at.warning))
    [job] = server.jobs(at.session_state["_llmviz_session_id"])
    job.stop()
    assert job.wait(120)


def test_the_adapt_pages_refusal_reaches_the_page_after_its_rerun(small_server):
    """The Start button reruns the whole page at once: the refusal is kept in the session and shown after it."""
    server = small_server(share_mb=100)  # less than a worker's own memory: any run is refused
    at = run_page("stages/adapting.py")
    at.button(key="lora_start").click().run()
    assert_clean(at)
    said = unescaped(texts(at.warning))
    assert re.search(r"A race of 2 runs on the picked model \([\d.]+ M parameters\) needs about ", said), said
    assert said.endswith("your share has 100 MB left: stop one of your runs, or wait until one ends.")
    assert "your share has 100 MB left" in said
    assert server.jobs(at.session_state["_llmviz_session_id"]) == []


def test_a_computation_on_the_adapting_page_is_admitted_by_its_memory_too(small_server, monkeypatch):
    """The LoRA demo (and every computation the Adapting and Serving pages start in a worker) says what it needs
    before it starts: a share too small for it refuses it, with the reason, and starts nothing."""
    server = small_server(share_mb=40)
    # not computed yet by an earlier test of this process
    monkeypatch.setattr(task_jobs, "_RESULTS", LRUCache(maxsize=task_jobs.MAX_RESULTS))
    at = run_page("stages/adapting.py")
    by_label(at.button, "Train the adapters for 20 steps").click().run()
    assert_clean(at)
    said = unescaped(texts(at.warning))
    assert re.search(r"This task \(the LoRA demo\) needs about \d+ MB; your share has 40 MB left", said), said
    assert server.jobs(at.session_state["_llmviz_session_id"]) == []
