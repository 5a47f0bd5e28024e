"""Errors that a page shows to a student with ``st.error`` (never a traceback).

Every error llmviz raises on purpose is an :class:`LlmvizError`; its message is
written for the person at the keyboard: what went wrong and what to do. Anything else that
goes wrong is a bug: :func:`log_failure` puts its traceback in the server's log and gives the
page one line to show.
"""

import logging
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable

from cachetools import LRUCache

logger = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s llmviz %(levelname)s %(name)s: %(message)s"

#: the characters of a client's value (a widget id, an address, a key) that a log line shows
CLIENT_TEXT_CHARS = 200
#: the characters of any one log message (its traceback aside): what is longer is cut, with its length said
MESSAGE_CHARS = 4000
#: the characters of a message of a logger that may quote a client (Streamlit's, the refusals'), and of its traceback
CLIENT_MESSAGE_CHARS = 500
CLIENT_TRACEBACK_CHARS = 6000


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


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    r"""``text`` as one printable line of at most ``limit`` characters (control characters escaped as ``ascii``
    writes them), with the full length said when it was cut.

    >>> one_line("a\n2026-01-01 forged")
    'a\\n2026-01-01 forged'
    >>> one_line("x" * 9, limit=4)
    'xxxx … (9 characters)'
    """
    if len(text) > limit:
        text = f"{text[:limit]} … ({len(text):,} characters)"
    if not text.isprintable():
        text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return text


#: the lines of a Python traceback that start at the left margin (every other line of one is indented)
_TRACEBACK_MARGIN = re.compile(
    r"(Traceback \(most recent call last\):"
    r"|During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:"
    r"|[A-Za-z_][\w.]*(: .*)?)?"
)


def safe_traceback(exc_info, limit: int = CLIENT_TRACEBACK_CHARS) -> str:
    r"""A traceback for a log whose exception's message may hold what a client sent: at most ``limit`` characters
    (its end kept, where the error is), every line printable, and a line that Python would not write at the left
    margin (a client's newline inside the message) indented, so that no client text starts a line of the log.

    >>> try:
    ...     raise ValueError("bad page\n2026-01-01 00:00:00 INFO forged")
    ... except ValueError as error:
    ...     text = safe_traceback((ValueError, error, error.__traceback__))
    >>> text.splitlines()[0], text.splitlines()[-2:]
    ('Traceback (most recent call last):', ['ValueError: bad page', '    2026-01-01 00:00:00 INFO forged'])
    """
    text = "".join(traceback.format_exception(*exc_info)).rstrip("\n")
    if len(text) > limit:
        text = f"(a traceback of {len(text):,} characters, its end:)\n" + text[-limit:]
    lines = [one_line(line, limit) for line in text.split("\n")]
    return "\n".join(
        line if line[:1].isspace() or _TRACEBACK_MARGIN.fullmatch(line) else "    " + line for line in lines
    )


class SafeFormatter(logging.Formatter):
    r"""The log's format, with every message on one line (control characters escaped) and at most
    :data:`MESSAGE_CHARS` characters, whatever a caller put in it; tracebacks are kept as they are.

    >>> record = logging.LogRecord("llmviz", logging.ERROR, "", 0, "got %s", ("a\nllmviz ERROR forged",), None)
    >>> SafeFormatter("%(message)s").format(record)
    'got a\\nllmviz ERROR forged'
    """

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = one_line(record.getMessage(), MESSAGE_CHARS)
        return super().formatMessage(record)


class RepeatFilter(logging.Filter):
    """Log a repeated failure once, then its count: a record whose logger, level, message and error type were
    logged less than ``window_s`` ago is held back and counted; the first one after the window is logged (without
    its traceback, which was) with how many were held back. The keeper's and the pages' fault logging go through
    it (:func:`configure_logging` puts it on llmviz's handler): a full disk writes one traceback a minute, not one
    a second. With ``by_template``, records are alike when their messages before the arguments are put in are
    (the arguments are what a client sent: a thousand forged ids are one message), and ``burst`` of them pass in a
    window before the rest are counted.

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

    def __init__(
        self,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        keys: int = 1024,
        by_template: bool = False,
        burst: int = 1,
    ):
        super().__init__()
        self.window_s = window_s
        self.clock = clock
        self.keys = keys
        self.by_template = by_template
        self.burst = burst
        self._seen: LRUCache[tuple, list[float]] = LRUCache(keys)  # key → [window began, passed, held back]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        said = str(record.msg) if self.by_template else record.getMessage()
        key = (record.name, record.levelno, said[:MESSAGE_CHARS], error)
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.window_s:
                if seen[1] < self.burst:
                    seen[1] += 1
                    return True
                seen[2] += 1
                return False
            self._seen[key] = [now, 1, 0]  # the least recently logged key goes past ``keys``
        if seen is not None and seen[2]:
            more = "more like it" if self.by_template else "more times"
            record.msg = (
                f"{record.getMessage()} (and {int(seen[2])} {more} in the last {now - seen[0]:.0f} s, not logged)"
            )
            record.args = ()
            record.exc_info, record.exc_text = None, None
        return True


#: messages alike (the same before a client's text is put in) that a client-quoting logger writes in a minute
CLIENT_BURST = 10


def _cut(value: object) -> object:
    """A text longer than :data:`CLIENT_TEXT_CHARS` cut, with its length said; anything else as it is."""
    if isinstance(value, str) and len(value) > CLIENT_TEXT_CHARS:
        return f"{value[:CLIENT_TEXT_CHARS]} … ({len(value):,} characters)"
    return value


class ClientLogFilter(logging.Filter):
    r"""For a logger whose messages may quote what a client sent (Streamlit's: a forged fragment id, an Origin
    header; llmviz's refusals of forged values): the same message is logged once a minute and then counted, and
    of messages alike (the same before the client's text is put in: a thousand forged ids) :data:`CLIENT_BURST` a
    minute are logged, the rest counted (:class:`RepeatFilter`); every message is one printable line of at most
    :data:`CLIENT_MESSAGE_CHARS` characters, and a traceback is bounded with no client text at its left margin
    (:func:`safe_traceback`). Put on the logger (``addFilter``), it works whatever handler and format the logger
    has.

    >>> flt = ClientLogFilter(clock=lambda: 0.0, burst=2)
    >>> def logged(fragment):
    ...     record = logging.LogRecord("streamlit", logging.INFO, "", 0, "fragment %s is gone", (fragment,), None)
    ...     return record.getMessage() if flt.filter(record) else None
    >>> logged("ab\n2026-01-01 forged"), logged("ab\n2026-01-01 forged"), logged("x" * 600)[-30:], logged("y")
    ('fragment ab\\n2026-01-01 forged is gone', None, 'xxx … (600 characters) is gone', None)
    """

    def __init__(self, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic, burst: int = CLIENT_BURST):
        super().__init__()
        self.repeats = RepeatFilter(window_s, clock)
        self.alike = RepeatFilter(window_s, clock, by_template=True, burst=burst)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            if not (self.repeats.filter(record) and self.alike.filter(record)):
                return False
            if isinstance(record.args, tuple):  # each text cut first: the message's own words stay
                record.args = tuple(_cut(arg) for arg in record.args)
            record.msg, record.args = one_line(record.getMessage(), CLIENT_MESSAGE_CHARS), ()
            if record.exc_info and record.exc_info[0] is not None:
                record.exc_text = safe_traceback(record.exc_info)
        except (TypeError, ValueError, KeyError):  # a message that cannot be formatted: said without its arguments
            record.msg, record.args = one_line(str(record.msg), CLIENT_MESSAGE_CHARS), ()
        return True


def filter_client_logs(*loggers: logging.Logger, shared: ClientLogFilter | None = None) -> ClientLogFilter:
    """Put one :class:`ClientLogFilter` on each of ``loggers`` (once: a logger that has one keeps it); returns it."""
    flt = shared or ClientLogFilter()
    for found in loggers:
        if not any(isinstance(existing, ClientLogFilter) for existing in found.filters):
            found.addFilter(flt)
    return flt


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
