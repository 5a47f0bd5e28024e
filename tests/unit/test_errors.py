"""Failures are logged on the server (with a traceback when they are bugs) and shown as one friendly line."""

import logging

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


def test_the_repeat_filter_remembers_at_most_its_keys_the_least_recent_forgotten_first():
    from llmviz.errors import RepeatFilter

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("llmviz", logging.WARNING, __file__, 1, message, (), None)

    repeats = RepeatFilter(window_s=60.0, clock=lambda: 0.0, keys=2)
    assert [repeats.filter(record(m)) for m in ("a", "b", "a", "c")] == [True, True, False, True]
    assert repeats.filter(record("a")) is False  # "a" was seen after "b": "b" was forgotten when "c" came
    assert repeats.filter(record("b")) is True and len(repeats._seen) == 2
