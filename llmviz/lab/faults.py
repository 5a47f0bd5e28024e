"""The lab's fault model: what each database fault is, the one sentence a student reads for it, and a log that
says each fault once (with a count when it clears), not every second.

========================  =======================================================================================
fault                     what happens
========================  =======================================================================================
locked past the timeout   the action is refused (:class:`~llmviz.lab.service.LabUnavailable`); training goes on
                          (the keeper writes later, a slot claim waits a fraction of a second and tries again)
disk full                 the action is refused before anything is recorded; nothing half-written (transactions)
damaged database          refused; the app puts it aside and rebuilds it from the run folders (llmviz.lab.rebuild)
database file removed     refused; the app rebuilds it from the run folders (llmviz.lab.rebuild)
unreachable (PostgreSQL)  refused; the lab answers again as soon as the database is back
========================  =======================================================================================

>>> import sqlite3
>>> sentence(sqlite3.OperationalError("database is locked"))[:33]
"The lab's records are busy (anoth"
>>> kind_of(sqlite3.OperationalError("database or disk is full")), kind_of(OSError(28, "No space left on device"))
('full', 'full')
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
import time

import sqlalchemy as sa

log = logging.getLogger(__name__)

SENTENCES = {
    "locked": (
        "The lab's records are busy (another process holds the database): nothing was changed; try again in a moment."
    ),
    "full": "The server's disk is full: nothing new can be kept until space is freed; your kept runs are safe.",
    "damaged": (
        "The lab's database is damaged: the app is rebuilding it from the run folders; your runs are listed again "
        "in a moment."
    ),
    "gone": (
        "The lab's database file was removed: the app is rebuilding it from the run folders; your runs are listed "
        "again in a moment."
    ),
    "unreachable": (
        "The lab's database cannot be reached: nothing was changed; your runs are kept and this works again once "
        "it is back."
    ),
}


#: What a full disk's messages say (SQLite's, PostgreSQL's, the system's), in lower case.
FULL_MARKS = ("disk is full", "no space left", "file too large", "disk i/o")
#: What a damaged database's messages say, in lower case.
DAMAGED_MARKS = ("not a database", "malformed", "corrupt", "no such table")


def kind_of(error: BaseException, url: str | None = None) -> str:
    """Which fault ``error`` is: ``locked``, ``full``, ``damaged``, ``gone`` or ``unreachable``.

    >>> kind_of(OSError(errno.ENOSPC, "No space left on device"))
    'full'
    >>> kind_of(RuntimeError("database is locked"))
    'locked'
    >>> kind_of(RuntimeError("file is not a database"))
    'damaged'
    >>> kind_of(RuntimeError("connection refused"))
    'unreachable'
    """
    original = getattr(error, "orig", None) or error
    text = str(original).lower()
    if _is_full(original, text):
        return "full"
    if "locked" in text or getattr(original, "sqlstate", None) == "55P03":
        return "locked"
    if url and url.startswith("sqlite:///") and not _sqlite_file_exists(url):
        return "gone"
    if says_any(text, DAMAGED_MARKS):
        return "damaged"
    return "unreachable"


def _is_full(original: BaseException, text: str) -> bool:
    """Does ``original`` (whose message is ``text``, in lower case) say the disk is full?"""
    if isinstance(original, OSError) and original.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return True
    return says_any(text, FULL_MARKS)


def says_any(text: str, marks: tuple[str, ...]) -> bool:
    """Does ``text`` contain any of ``marks``?

    >>> says_any("database disk image is malformed", DAMAGED_MARKS)
    True
    >>> says_any("connection refused", DAMAGED_MARKS)
    False
    """
    return any(mark in text for mark in marks)


def _sqlite_file_exists(url: str) -> bool:
    path = sa.engine.make_url(url).database
    return not path or path == ":memory:" or os.path.exists(path)


def file_identity(url: str) -> tuple[int, int] | None:
    """``(device, inode)`` of a SQLite URL's database file (None: not there, or not a file database): a file removed
    or replaced under a running app is noticed by a change of it (:meth:`llmviz.lab.service.Lab.check_database`)."""
    path = sa.engine.make_url(url).database if url.startswith("sqlite") else None
    if not path or path == ":memory:":
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def sentence(error: BaseException, url: str | None = None) -> str:
    """The one sentence a student reads for ``error``."""
    return SENTENCES[kind_of(error, url)]


def is_database_fault(error: BaseException) -> bool:
    """Is ``error`` the database's (or the disk's) fault, not a bug?"""
    return (
        type(error).__name__ == "LabUnavailable"  # the engine's watch refused it (llmviz.lab.health: not imported)
        or isinstance(error, sa.exc.OperationalError | sa.exc.DatabaseError | sa.exc.InterfaceError | sqlite3.Error)
        or (isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO))
    )


class FaultLog:
    """Logs a fault once when it starts (a warning with its one sentence), counts what failed while it lasts, and
    logs once more when a later call succeeds ("cleared after N failures").

    >>> faults = FaultLog("sqlite://")
    >>> for _ in range(3):
    ...     faults.fail("list runs", sqlite3.OperationalError("database is locked"))
    >>> faults.current, faults.count
    ('locked', 3)
    >>> faults.cleared(); faults.current
    """

    def __init__(self, url: str):
        self.url = url
        self.current: str | None = None
        self._watched = False  # the current fault is the engine watch's (it logs its start and end itself)
        self.count = 0
        self.since = 0.0
        self._lock = threading.Lock()

    def fail(self, what: str, error: BaseException) -> None:
        """``what`` failed with ``error``: a database fault is logged when it starts (then counted); anything else
        is a bug, logged with its traceback every time (call this in the ``except`` block)."""
        if not is_database_fault(error):
            log.exception("the lab could not %s", what)
            return
        kind = kind_of(error, self.url)
        with self._lock:
            first = kind != self.current
            if first:
                self.current, self.count, self.since = kind, 0, time.monotonic()
                # the engine's watch (llmviz.lab.health) said it already, and says when it answers again
                self._watched = type(error).__name__ == "LabUnavailable"
            self.count += 1
        if first and not self._watched:
            log.warning("the lab's database fault (%s) began as it tried to %s: %s", kind, what, error)

    def cleared(self, wrote: bool = True) -> None:
        """A call succeeded (``wrote``: a write): the fault has cleared (a lock only once a write succeeds)."""
        if self.current is None or (self.current == "locked" and not wrote):
            return
        with self._lock:
            kind, count, since = self.current, self.count, self.since
            self.current, self.count = None, 0
        if kind is not None and not self._watched:
            log.warning(
                "the lab's database fault (%s) cleared after %d failed calls in %.0f s",
                kind,
                count,
                time.monotonic() - since,
            )
