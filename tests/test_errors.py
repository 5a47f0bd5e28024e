"""Failures are logged on the server (with a traceback when they are bugs) and shown as one friendly line."""

import logging

from streamlit.testing.v1 import AppTest

from llmviz.errors import LlmvizError, TrainingDiverged, log_failure


def _raise_bug():
    return {}["missing key"]


def test_an_unexpected_error_is_logged_with_its_traceback(caplog):
    try:
        _raise_bug()
    except Exception as error:  # noqa: BLE001
        with caplog.at_level(logging.INFO, logger="llmviz"):
            line = log_failure("training job run-7", error)
    assert line == "KeyError: 'missing key'"
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.name == "llmviz.errors"
    assert "training job run-7" in record.getMessage()
    assert "Traceback (most recent call last)" in caplog.text and "_raise_bug" in caplog.text  # the frame that failed


def test_an_llmviz_error_is_logged_as_a_warning_without_traceback(caplog):
    try:
        raise TrainingDiverged("The loss became NaN at step 12: lower the learning rate.")
    except LlmvizError as error:
        with caplog.at_level(logging.INFO, logger="llmviz"):
            line = log_failure("training job run-8", error)
    assert line == "The loss became NaN at step 12: lower the learning rate."
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "run-8" in record.getMessage() and "Traceback" not in caplog.text


def test_the_log_survives_an_error_whose_traceback_is_gone(caplog):
    """An error carried back from a worker process may have lost its traceback: still one line, still logged."""
    with caplog.at_level(logging.INFO, logger="llmviz"):
        assert log_failure("training job run-9", RuntimeError("worker died")) == "RuntimeError: worker died"
    assert caplog.records[0].levelno == logging.ERROR


def _page_that_fails():
    import streamlit as st

    import ui

    with ui.friendly_errors("the demo step"):
        st.write("before")
        {}["missing key"]  # noqa: B018 - a bug in a page's section


def test_a_page_error_is_one_friendly_line_and_a_logged_traceback(caplog):
    with caplog.at_level(logging.INFO, logger="llmviz"):
        at = AppTest.from_function(_page_that_fails, default_timeout=30).run()
    assert not at.exception
    from ui.text import literal_markdown  # the page escapes Markdown in messages

    assert [e.value for e in at.error] == [
        f"Something went wrong in the demo step: {literal_markdown(line)}" for line in ["KeyError: 'missing key'"]
    ]
    page_text = " ".join(str(element.value) for element in at.main if hasattr(element, "value"))
    assert "Traceback" not in page_text
    assert "Traceback (most recent call last)" in caplog.text and "the demo step failed" in caplog.text


def test_a_bug_in_the_sidebars_step_slider_is_a_message_not_a_traceback(monkeypatch, caplog):
    """The step slider is a section of its own that reruns by itself while a run trains: an exception there was
    shown as Streamlit's raw traceback in the sidebar."""
    import re

    import ui.picker
    from tests.test_page_interactions import session_jobs, train_on_names

    at = train_on_names()
    [job] = session_jobs(at)
    assert job.wait(120)

    def broken(*_args):
        raise RuntimeError("a bug in the slider")

    monkeypatch.setattr(ui.picker, "_step_slider", broken)
    at.run()
    assert not at.exception
    shown = [re.sub(r"\\(.)", r"\1", e.value) for e in at.sidebar.error]  # Markdown source: punctuation is escaped
    assert shown == ["Something went wrong in the step slider: RuntimeError: a bug in the slider"]
    assert "a bug in the slider" in caplog.text  # the traceback is in the server's log
