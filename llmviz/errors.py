"""Errors that a page shows to a student with ``st.error`` (never a traceback).

Every error llmviz raises on purpose is an :class:`LlmvizError`; its message is
written for the person at the keyboard: what went wrong and what to do. Anything else that
goes wrong is a bug: :func:`log_failure` puts its traceback in the server's log and gives the
page one line to show.
"""

import logging
import sys

logger = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s llmviz %(levelname)s %(name)s: %(message)s"


def configure_logging(level: int = logging.INFO) -> None:
    """One handler for everything llmviz and its app log (loggers ``llmviz.*`` and ``ui.*``), on stderr; the app and
    the CLI call this once at start. Calling it again changes nothing."""
    for name in ("llmviz", "ui"):
        root = logging.getLogger(name)
        if not any(getattr(handler, "_llmviz", False) for handler in root.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
            handler._llmviz = True  # type: ignore[attr-defined]
            root.addHandler(handler)
        root.setLevel(level)


class LlmvizError(Exception):
    """Base class: the message is meant to be shown as it is."""


class UploadError(LlmvizError):
    """An uploaded file cannot be used as a text corpus."""


class CorpusUnavailable(LlmvizError):
    """A corpus cannot be loaded (offline, checksum mismatch, unknown name)."""


class ConfigError(LlmvizError, ValueError):
    """A model or training configuration that cannot work."""


class CheckpointError(LlmvizError):
    """A checkpoint that is missing, truncated, mismatched or not safetensors."""


class TrainingDiverged(LlmvizError):
    """The loss became NaN or exploded; the message says what to change."""


def log_failure(where: str, error: BaseException) -> str:
    """Log a failure on the server and return the one line a page shows for it.

    ``where`` names what failed ("training job 3f2a…", "the Sampling page"). An :class:`LlmvizError` is an
    expected refusal whose message is written for the student: it is logged as a warning, without a
    traceback. Anything else is a bug: it is logged as an error with its full traceback (call this in the
    ``except`` block, or in the worker process where the error happened, while the traceback is attached).

    >>> log_failure("a doctest", LlmvizError("The text is empty."))
    'The text is empty.'
    >>> log_failure("a doctest", KeyError("x"))
    "KeyError: 'x'"
    """
    if isinstance(error, LlmvizError):
        logger.warning("%s failed: %s", where, error)
        return str(error)
    logger.error(
        "%s failed: %s: %s", where, type(error).__name__, error, exc_info=(type(error), error, error.__traceback__)
    )
    return f"{type(error).__name__}: {error}"


class EmbeddingError(LlmvizError, ValueError):
    """Vectors that cannot be compared or projected, or a text too small for word2vec."""
