"""The lab's database, watched: a fault is one sentence, said once, and never a wait on every page.

:class:`Watch` sits on the registry's engine (SQLAlchemy events, so every statement of every module goes through
it):

- an error that means the database is not usable now (SQLite locked past its busy timeout, a damaged or missing
  file, PostgreSQL stopped or unreachable) becomes :class:`LabUnavailable`, one sentence, logged once per outage;
- a server that does not answer (PostgreSQL stopped or unreachable: each try costs the connect timeout): for
  :data:`PAUSE_S` after, every new statement is refused at once with the same sentence, so a page run never waits on
  it again ("unavailable until T"); the first statement after that tries for real. The other faults fail fast by
  themselves and are tried every time (so the lab goes on the moment a lock is released or space is freed); the
  first success after any fault is logged once ("answers again");
- a SQLite file's identity (device and inode) is remembered, so :meth:`Watch.replaced` tells that the file was
  deleted or replaced while the app ran (the keeper then rebuilds it: :class:`llmviz.lab.rebuild.Guard`).

>>> import sqlalchemy as sa, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "lab.db")
>>> engine = sa.create_engine(f"sqlite:///{path}")
>>> watch = Watch.install(engine, f"sqlite:///{path}")
>>> with engine.connect() as db:
...     db.execute(sa.text("select 1")).scalar()
1
>>> watch.replaced()
False
>>> os.remove(path)
>>> watch.replaced()
True
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import urllib.parse

import sqlalchemy as sa

from llmviz.errors import LlmvizError

log = logging.getLogger(__name__)

PAUSE_S = 5.0  # after a server did not answer, statements are refused at once for this long before it is tried again
CONNECT_TIMEOUT_S = 3  # PostgreSQL's connect timeout: a stopped or unreachable server is said within seconds


class LabUnavailable(LlmvizError):
    """The lab's database cannot be used now (the message says why, in one sentence, with no server path)."""


REASONS = {
    "locked": "is busy (another program holds it locked)",
    "damaged": "is damaged",
    "missing": "is missing",
    "unreachable": "cannot be reached",
    "full": "cannot be written (the disk is full)",
}


_KINDS = {"missing": "gone"}  # llmviz.lab.faults' name of the same fault


def sentence(reason: str) -> str:
    """What a student or teacher reads while the lab's database is out.

    >>> print(sentence("damaged")[:30])
    The lab's database is damaged:
    """
    from llmviz.lab import faults  # the fault model's sentences, one wording for each fault

    found = faults.SENTENCES.get(_KINDS.get(reason, reason))
    if found:
        return found
    return (
        f"The lab's database {REASONS.get(reason, REASONS['unreachable'])}: kept runs cannot be listed or saved for "
        "now (the app tries again by itself, and everything else works)."
    )


def classify(error: BaseException) -> str | None:
    """Which outage ``error`` (a DB-API error) is, or None when it is not one (a constraint, a bad statement).

    >>> import sqlite3
    >>> classify(sqlite3.OperationalError("database is locked"))
    'locked'
    >>> classify(sqlite3.DatabaseError("file is not a database"))
    'damaged'
    >>> classify(sqlite3.OperationalError("no such table: lab_runs")), classify(sqlite3.IntegrityError("UNIQUE"))
    ('missing', None)
    >>> classify(OSError("canceling statement due to lock timeout"))  # PostgreSQL's lock_timeout
    'locked'
    """
    text = str(error).lower()
    name = type(error).__name__
    if _not_an_outage(name.lower(), text):
        return None
    for kind, marks in OUTAGE_MARKS:
        if any(mark in text for mark in marks):
            return kind
    if name in ("OperationalError", "InterfaceError") or "connect" in text or "server" in text:
        return "unreachable"
    return None


#: Each outage :func:`classify` tells by its message (in lower case), in the order it looks for them.
OUTAGE_MARKS = (
    ("locked", ("locked", "busy", "lock timeout")),  # SQLite's, PostgreSQL's lock_timeout
    ("damaged", ("not a database", "malformed", "corrupt")),
    ("missing", ("no such table", "unable to open", "disk i/o", "readonly")),
    ("full", ("full", "no space")),
)


def _not_an_outage(name: str, text: str) -> bool:
    """Is an error of type ``name`` (in lower case) saying ``text`` a constraint or a bad statement, not an outage?
    A statement on a table that is not there is one: the database lost its tables.

    >>> _not_an_outage("integrityerror", "unique constraint failed"), _not_an_outage("programmingerror", "syntax")
    (True, True)
    >>> _not_an_outage("programmingerror", "no such table: lab_runs")
    False
    """
    return "integrity" in name or ("programming" in name and "no such table" not in text)


def file_identity(path: str | None) -> tuple[int, int] | None:
    """``(device, inode)`` of a file, or None when it is not there."""
    if not path:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL (None for another database or an in-memory one).

    >>> sqlite_path("sqlite:////srv/runs/lab.db"), sqlite_path("sqlite://"), sqlite_path("postgresql://h/db")
    ('/srv/runs/lab.db', None, None)
    """
    if not url.startswith("sqlite"):
        return None
    database = sa.engine.make_url(url).database
    return os.path.abspath(database) if database and database != ":memory:" else None


def damaged_file(path: str | None) -> bool:
    """Is the file at ``path`` there, not empty, and no SQLite database (its header is not SQLite's)? Read from the
    file itself: SQLite takes a file's first page from a ``-wal`` left beside it (a process that ended without
    closing its connections), so a damaged file with such a journal opens as if it were whole until a page that only
    the file holds is read, and its next checkpoint writes into the damage.

    The file is read through SQLite, never with a plain ``open()``: a read-only ``immutable`` connection reads the
    file's own header (no ``-wal``, no lock). Closing any descriptor of a file drops every POSIX lock the process
    holds on it, SQLite's included (SQLite itself closes its descriptors only once its locks are gone): after a
    plain read, another process's last connection took the file for unused and deleted its ``-wal`` while this
    process still wrote into it, so this process's writes (a live run's steps) no longer reached anyone else.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "lab.db")
    >>> damaged_file(path), damaged_file(None)  # not there (a new database): not damaged
    (False, False)
    >>> _ = open(path, "wb").write(b"damaged!" * 512)
    >>> damaged_file(path)
    True
    >>> os.remove(path)
    >>> import sqlite3
    >>> sqlite3.connect(path).execute("create table t (x)").connection.close()
    >>> damaged_file(path)
    False
    """
    if not path:
        return False
    try:
        if os.path.getsize(path) == 0:
            return False  # a new file nobody has written yet
    except OSError:  # not there, or not readable: the statements say what it is
        return False
    try:
        reader = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return False
    try:
        reader.execute("PRAGMA schema_version").fetchone()  # reads the header (page 1) of the file alone
    except sqlite3.OperationalError:  # not readable now (gone meanwhile, no permission): not a damage
        return False
    except sqlite3.DatabaseError:  # "file is not a database"
        return True
    finally:
        reader.close()
    return False


def drop_stale_journal(path: str) -> None:
    """A SQLite file that is gone leaves its ``-wal`` and ``-shm`` behind while connections to it live: a new file
    of that name must not read them as its own (it would be damaged or "missing" tables)."""
    if os.path.exists(path):
        return
    for extra in ("-wal", "-shm"):
        try:
            os.remove(path + extra)
        except FileNotFoundError:
            pass


class Watch:
    """The outage state of one engine (see the module's docstring)."""

    def __init__(self, url: str, clock=time.monotonic):
        self.url = url
        self.path = sqlite_path(url)
        self.identity = file_identity(self.path)
        self.clock = clock
        self.until = 0.0
        self.reason: str | None = None  # the outage now, None while the database answers
        self._lock = threading.Lock()

    @classmethod
    def install(cls, engine: sa.Engine, url: str) -> Watch:
        watch = cls(url)
        sa.event.listen(engine, "engine_connect", watch._gate)
        sa.event.listen(engine, "handle_error", watch._failed)
        sa.event.listen(engine, "after_cursor_execute", watch._answered)
        return watch

    @property
    def down(self) -> bool:
        return self.reason is not None

    def remember_file(self) -> None:
        """The SQLite file as it is now is the lab's (after a start or a rebuild)."""
        self.identity = file_identity(self.path)

    def replaced(self) -> bool:
        """Was the SQLite file deleted or replaced since :meth:`remember_file`? (False for PostgreSQL.)"""
        if self.path is None:
            return False
        return file_identity(self.path) != self.identity

    def damaged(self) -> bool:
        """Is the SQLite file damaged: its header is not SQLite's (:func:`damaged_file`, even where a stale journal
        hides that from SQLite), or a statement said so and it is still the file the lab opened?"""
        return damaged_file(self.path) or (self.reason == "damaged" and not self.replaced())

    def check_file(self) -> None:
        """Before the file is opened: a damaged one is said (once) and refused (:class:`LabUnavailable`), never
        read through a journal that hides the damage (the keeper's guard then puts it aside and rebuilds it)."""
        if damaged_file(self.path):
            self.trip("damaged")
            raise LabUnavailable(sentence("damaged"))

    def trip(self, reason: str) -> None:
        """The database is out for ``reason``: refuse at once for a while; log it once per outage."""
        with self._lock:
            first = self.reason is None
            self.reason = reason
            if reason == "unreachable":  # only a server that does not answer costs a wait per call: refused at once
                self.until = self.clock() + PAUSE_S
        if first:
            log.warning("%s", sentence(reason))

    def clear(self) -> None:
        with self._lock:
            was, self.reason, self.until = self.reason, None, 0.0
        if was is not None:
            log.warning("The lab's database answers again.")

    def refusal(self) -> LabUnavailable | None:
        """The refusal to raise now, or None when the database may be tried."""
        if self.reason is not None and self.clock() < self.until:
            return LabUnavailable(sentence(self.reason))
        return None

    # ------------------------------------------------------------------ the engine's events

    def _gate(self, connection) -> None:
        refused = self.refusal()
        if refused is not None:
            connection.close()
            raise refused

    def _failed(self, context) -> None:
        if getattr(context, "is_pre_ping", False):
            return
        reason = classify(context.original_exception)
        if reason is None:
            return
        self.trip(reason)
        raise LabUnavailable(sentence(reason)) from context.original_exception

    def _answered(self, _connection, _cursor, statement: str, *_args) -> None:
        if self.identity is None and self.path is not None:  # the file made by the first statement is the lab's
            self.identity = file_identity(self.path)
        if self.reason == "full" and not _writes(statement):
            return  # a full disk still answers reads: it answers again once a write goes through
        if self.reason is not None:
            self.clear()


def _writes(statement: str) -> bool:
    """Does ``statement`` write?

    >>> _writes("INSERT INTO lab_points VALUES (1)"), _writes("  update lab_runs set step=2"), _writes("SELECT 1")
    (True, True, False)
    """
    return statement.lstrip()[:7].upper().startswith(("INSERT", "UPDATE", "DELETE"))


def watch_of(engine: sa.Engine) -> Watch | None:
    """The :class:`Watch` installed on ``engine`` (see :func:`install`), or None."""
    return getattr(engine, "_llmviz_watch", None)


def install(engine: sa.Engine, url: str) -> Watch:
    """Put a :class:`Watch` on ``engine`` (once)."""
    found = watch_of(engine)
    if found is None:
        found = Watch.install(engine, url)
        engine._llmviz_watch = found  # type: ignore[attr-defined]
    return found
