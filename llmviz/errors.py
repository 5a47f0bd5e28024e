"""Errors that a page shows to a student with ``st.error`` (never a traceback).

Every error llmviz raises on purpose is an :class:`LlmvizError`; its message is
written for the person at the keyboard: what went wrong and what to do. Anything else that
goes wrong is a bug: :func:`log_failure` puts its traceback in the server's log and gives the
page one line to show.
"""

import logging
import sys
import threading
import time
from collections.abc import Callable

from cachetools import LRUCache

logger = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s llmviz %(levelname)s %(name)s: %(message)s"

#: the characters of a client's value (a widget id, an address, a key) that a log line shows
CLIENT_TEXT_CHARS = 200
#: the characters of any one log message (its traceback aside): what is longer is cut, with its length said
MESSAGE_CHARS = 4000


def client_text(value: object, limit: int = CLIENT_TEXT_CHARS) -> str:
    r"""What a client sent, safe to put in a log line: at most ``limit`` characters, escaped as Python's ``ascii``
    writes a string (a newline cannot start a forged line, a control character cannot reach the terminal), with the
    full length said when it was cut.

    >>> client_text("$$ID-abc-seed")
    "'$$ID-abc-seed'"
    >>> client_text("x\n2026-01-01 llmviz ERROR forged")
    "'x\\n2026-01-01 llmviz ERROR forged'"
    >>> client_text("a" * 10_000_000, limit=5)
    "'aaaaa' … (10,000,000 characters)"
    """
    text = value if isinstance(value, str) else repr(value)
    shown = ascii(text[:limit])
    return shown if len(text) <= limit else f"{shown} … ({len(text):,} characters)"


class SafeFormatter(logging.Formatter):
    r"""The log's format, with every message on one line (control characters escaped) and at most
    :data:`MESSAGE_CHARS` characters, whatever a caller put in it; tracebacks are kept as they are.

    >>> record = logging.LogRecord("llmviz", logging.ERROR, "", 0, "got %s", ("a\nllmviz ERROR forged",), None)
    >>> SafeFormatter("%(message)s").format(record)
    'got a\\nllmviz ERROR forged'
    """

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        message = record.getMessage()
        if len(message) > MESSAGE_CHARS:
            message = f"{message[:MESSAGE_CHARS]} … ({len(message):,} characters)"
        if not message.isprintable():
            message = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in message)
        record.message = message
        return super().formatMessage(record)


class RepeatFilter(logging.Filter):
    """Log a repeated failure once, then its count: a record whose logger, level, message and error type were
    logged less than ``window_s`` ago is held back and counted; the first one after the window is logged (without
    its traceback, which was) with how many were held back. The keeper's and the pages' fault logging go through
    it (:func:`configure_logging` puts it on llmviz's handler): a full disk writes one traceback a minute, not one
    a second.

    >>> now = [0.0]
    >>> repeats = RepeatFilter(window_s=60, clock=lambda: now[0])
    >>> def passes(message):
    ...     record = logging.LogRecord("llmviz.x", logging.ERROR, "", 0, message, (), None)
    ...     return repeats.filter(record), record.getMessage()
    >>> passes("disk full"), passes("disk full"), passes("disk full"), passes("another")
    ((True, 'disk full'), (False, 'disk full'), (False, 'disk full'), (True, 'another'))
    >>> now[0] = 61.0
    >>> passes("disk full")
    (True, 'disk full (and 2 more times in the last 61 s, not logged)')
    """

    def __init__(self, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic, keys: int = 1024):
        super().__init__()
        self.window_s = window_s
        self.clock = clock
        self.keys = keys
        self._seen: LRUCache[tuple, list[float]] = LRUCache(keys)  # key → [when logged, count held back]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        key = (record.name, record.levelno, record.getMessage()[:MESSAGE_CHARS], error)
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.window_s:
                seen[1] += 1
                return False
            self._seen[key] = [now, 0]  # the least recently logged key goes past ``keys``
        if seen is not None and seen[1]:
            record.msg = (
                f"{record.getMessage()} (and {int(seen[1])} more times in the last {now - seen[0]:.0f} s, not logged)"
            )
            record.args = ()
            record.exc_info, record.exc_text = None, None
        return True


def configure_logging(level: int = logging.INFO) -> None:
    """One handler for everything llmviz and its app log (loggers ``llmviz.*`` and ``ui.*``), on stderr, with one
    line per message (:class:`SafeFormatter`) and repeats counted (:class:`RepeatFilter`); the app and the CLI call
    this once at start. Calling it again changes nothing."""
    repeats = RepeatFilter()
    for name in ("llmviz", "ui"):
        root = logging.getLogger(name)
        if not any(getattr(handler, "_llmviz", False) for handler in root.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(SafeFormatter(LOG_FORMAT))
            handler.addFilter(repeats)
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
