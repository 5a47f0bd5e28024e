"""The lab's one fault model: what a fault of its database is, the one sentence a student reads for it, the one watch
of its database (every statement of every module, and the SQLite file itself), and the one log that says a fault
once when it begins and once more, with its count, when it clears.

========================  =======================================================================================
fault                     what happens
========================  =======================================================================================
locked past the timeout   the action is refused (:class:`LabUnavailable`); training goes on (the keeper writes
                          later, a slot claim answers "not now" and is tried again)
disk full                 the action is refused before anything is recorded; nothing half-written (transactions)
damaged database          refused; the app puts it aside and rebuilds it from the run folders (llmviz.lab.rebuild)
database file gone        refused; the app rebuilds it from the run folders (llmviz.lab.rebuild); a file replaced
                          (restored from a backup) is reopened
unreachable (PostgreSQL)  refused; for :data:`PAUSE_S` every statement is refused at once (no page waits on the
                          connect timeout again); the lab answers again as soon as the database is back
========================  =======================================================================================

:func:`classify` tells a fault by the error's type (the driver's: SQLAlchemy's, :mod:`sqlite3`'s, psycopg's; an
:class:`OSError`) and, within a database error, by its code (SQLite's result code, PostgreSQL's SQLSTATE) or
message; a constraint, a bad statement or any other error is no fault (None: a bug, logged with its traceback).

>>> import sqlite3
>>> classify(sqlite3.OperationalError("database is locked")), classify(OSError(errno.ENOSPC, "No space left"))
(<Fault.LOCKED: 'locked'>, <Fault.FULL: 'full'>)
>>> classify(sqlite3.IntegrityError("UNIQUE constraint failed")), classify(KeyError("x"))
(None, None)
>>> print(Fault.LOCKED.sentence[:33])
The lab's records are busy (anoth
"""

from __future__ import annotations

import enum
import errno
import logging
import os
import sqlite3
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable

import sqlalchemy as sa

from llmviz.errors import LlmvizError

log = logging.getLogger(__name__)

PAUSE_S = 5.0  # after a server did not answer, statements are refused at once for this long before it is tried again
CONNECT_TIMEOUT_S = 3  # PostgreSQL's connect timeout: a stopped or unreachable server is said within seconds


class Fault(enum.StrEnum):
    """A fault of the lab's database, in the one vocabulary every path uses."""

    LOCKED = "locked"  # another process holds it past the busy timeout (SQLite) or lock_timeout (PostgreSQL)
    FULL = "full"  # the disk is full (or the file may grow no more)
    GONE = "gone"  # the file was removed or replaced, or lost its tables
    DAMAGED = "damaged"  # not a database, or a malformed one
    UNREACHABLE = "unreachable"  # the server does not answer

    @property
    def sentence(self) -> str:
        """What a student or teacher reads while it lasts."""
        return SENTENCES[self]


SENTENCES = {
    Fault.LOCKED: (
        "The lab's records are busy (another process holds the database): nothing was changed; try again in a moment."
    ),
    Fault.FULL: "The server's disk is full: nothing new can be kept until space is freed; your kept runs are safe.",
    Fault.DAMAGED: (
        "The lab's database is damaged: the app is rebuilding it from the run folders; your runs are listed again "
        "in a moment."
    ),
    Fault.GONE: (
        "The lab's database file was removed: the app is rebuilding it from the run folders; your runs are listed "
        "again in a moment."
    ),
    Fault.UNREACHABLE: (
        "The lab's database cannot be reached: nothing was changed; your runs are kept and this works again once "
        "it is back."
    ),
}

#: What a page adds to a fault's sentence the first time it says it: the fault stops only what needs the lab.
GOES_ON = "What needs no kept run goes on; your runs are back as soon as the lab is."
#: What a control or a start refused for a fault says once the page has said the fault itself (said once a page).
NOTHING_DONE = "Nothing was done: the lab's database is out; try again once it is back."


class LabUnavailable(LlmvizError):
    """The lab's database cannot be used now: the message is the fault's one sentence (no server path), and
    :attr:`fault` which fault it is.

    >>> refused = LabUnavailable(Fault.FULL)
    >>> refused.fault, str(refused) == Fault.FULL.sentence
    (<Fault.FULL: 'full'>, True)
    """

    def __init__(self, fault: Fault | str = Fault.UNREACHABLE):
        if isinstance(fault, Fault):
            self.fault = fault
            super().__init__(fault.sentence)
            return
        self.fault = said(fault) or Fault.UNREACHABLE  # a sentence given as it is
        super().__init__(fault)


def said(sentence: str) -> Fault | None:
    """Which fault ``sentence`` says (it begins with that fault's one sentence), or None: how a page that was handed
    a sentence tells a fault of the lab's database from any other refusal.

    >>> said(Fault.LOCKED.sentence), said("That run is not one of your kept runs.")
    (<Fault.LOCKED: 'locked'>, None)
    """
    return next((fault for fault, words in SENTENCES.items() if sentence.startswith(words)), None)


# ---------------------------------------------------------------------------------------------------- the classifier

FULL_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)

#: SQLite's primary result codes (``sqlite3.Error.sqlite_errorcode & 0xFF``) that are a fault.
SQLITE_CODES = {
    sqlite3.SQLITE_BUSY: Fault.LOCKED,
    sqlite3.SQLITE_LOCKED: Fault.LOCKED,
    sqlite3.SQLITE_FULL: Fault.FULL,
    sqlite3.SQLITE_CORRUPT: Fault.DAMAGED,
    sqlite3.SQLITE_NOTADB: Fault.DAMAGED,
    sqlite3.SQLITE_CANTOPEN: Fault.GONE,
    sqlite3.SQLITE_IOERR: Fault.GONE,
    sqlite3.SQLITE_READONLY: Fault.GONE,  # a file moved or replaced under an open connection
}

#: PostgreSQL's SQLSTATEs that are a fault (the connection's own, class 08, are :attr:`Fault.UNREACHABLE`).
SQLSTATES = {
    "55P03": Fault.LOCKED,  # lock_not_available: lock_timeout passed
    "40P01": Fault.LOCKED,  # deadlock_detected
    "53100": Fault.FULL,  # disk_full
    "XX001": Fault.DAMAGED,  # data_corrupted
    "XX002": Fault.DAMAGED,  # index_corrupted
    "42P01": Fault.GONE,  # undefined_table: the database lost its tables
}

#: What a fault's message says (in lower case), for an error that carries no code (one built by hand, a driver's
#: own), in the order they are looked for.
MARKS = (
    (Fault.LOCKED, ("locked", "busy", "lock timeout")),
    (Fault.DAMAGED, ("not a database", "malformed", "corrupt")),
    (Fault.GONE, ("no such table", "unable to open", "disk i/o", "readonly")),
    (Fault.FULL, ("full", "no space", "file too large")),
)


def _errors(*names: str) -> tuple[type[BaseException], ...]:
    """The DB-API error classes ``names`` of SQLite's driver and, where it is loaded, PostgreSQL's (psycopg, the hall's
    optional extra: an error of it exists only once something imported it, so it is never imported here)."""
    drivers = [sqlite3] + [module for module in (sys.modules.get("psycopg"),) if module is not None]
    return tuple(getattr(driver, name) for driver in drivers for name in names if hasattr(driver, name))


def _driver_errors() -> tuple[type[BaseException], ...]:
    return _errors("Error")


def _no_fault_errors() -> tuple[type[BaseException], ...]:
    """A constraint, a bad statement or a bad value: a bug or a race the caller handles, never a fault."""
    return _errors("IntegrityError", "ProgrammingError", "DataError", "NotSupportedError")


def _server_errors() -> tuple[type[BaseException], ...]:
    """A database error that says nothing more: the server (or the file's connection) did not answer."""
    return _errors("OperationalError", "InterfaceError")


def classify(error: BaseException) -> Fault | None:
    """Which fault ``error`` is, or None when it is none (a bug, a constraint, a bad statement).

    >>> import sqlite3
    >>> classify(sqlite3.DatabaseError("file is not a database")), classify(sqlite3.OperationalError("no such table"))
    (<Fault.DAMAGED: 'damaged'>, <Fault.GONE: 'gone'>)
    >>> classify(sa.exc.OperationalError("select 1", {}, sqlite3.OperationalError("database or disk is full")))
    <Fault.FULL: 'full'>
    >>> classify(sqlite3.OperationalError("connection to server failed")), classify(LabUnavailable(Fault.GONE))
    (<Fault.UNREACHABLE: 'unreachable'>, <Fault.GONE: 'gone'>)
    >>> classify(OSError(errno.EACCES, "Permission denied")), classify(RuntimeError("database is locked"))
    (None, None)
    """
    if isinstance(error, LabUnavailable):
        return error.fault
    if isinstance(error, sa.exc.DBAPIError) and error.orig is not None:
        error = error.orig
    if isinstance(error, OSError):
        if error.errno in FULL_ERRNOS:
            return Fault.FULL
        return Fault.UNREACHABLE if error.errno == errno.EIO else None
    if isinstance(error, sa.exc.DBAPIError):  # a driver's error SQLAlchemy wrapped without keeping it
        return _by_words(str(error).lower()) or Fault.UNREACHABLE
    if not isinstance(error, _driver_errors()):
        return None
    return _database_fault(error)


def _database_fault(error: BaseException) -> Fault | None:
    """The fault a DB-API error of SQLite or PostgreSQL is: by its code, else by its message, else by its type."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and (code & 0xFF) in SQLITE_CODES:
        return SQLITE_CODES[code & 0xFF]
    state = getattr(error, "sqlstate", None)
    if state in SQLSTATES:
        return SQLSTATES[state]
    if state and state.startswith(("08", "57P")):  # connection exceptions, the server shutting down
        return Fault.UNREACHABLE
    text = str(error).lower()
    if isinstance(error, _no_fault_errors()) and "no such table" not in text:
        return None
    found = _by_words(text)
    if found is not None:
        return found
    return Fault.UNREACHABLE if isinstance(error, _server_errors()) else None


def _by_words(text: str) -> Fault | None:
    """The fault a message (in lower case) names, if it names one.

    >>> _by_words("database disk image is malformed"), _by_words("syntax error")
    (<Fault.DAMAGED: 'damaged'>, None)
    """
    for fault, marks in MARKS:
        if any(mark in text for mark in marks):
            return fault
    return None


# ---------------------------------------------------------------------------------------------------- the log


class FaultLog:
    """One log of a fault: said once when it begins (a warning with its sentence), counted while it lasts, said
    once more when a later call succeeds ("… again, after N failed calls in T s"); every path that touches the lab
    says its faults through its database's one log (:attr:`Watch.log`). A full disk or a lock clears only once a
    write goes through (reads go on under either).

    >>> faults = FaultLog()
    >>> for _ in range(3):
    ...     faults.fail("list runs", sqlite3.OperationalError("database is locked"))
    <Fault.LOCKED: 'locked'>
    <Fault.LOCKED: 'locked'>
    <Fault.LOCKED: 'locked'>
    >>> faults.current, faults.count
    (<Fault.LOCKED: 'locked'>, 3)
    >>> faults.cleared(wrote=False); faults.current  # a read under another process's lock
    <Fault.LOCKED: 'locked'>
    >>> faults.cleared(); faults.current
    """

    def __init__(self, again: str = "The lab's database answers again.", clock: Callable[[], float] = time.monotonic):
        self.again = again
        self.clock = clock
        self.current: str | None = None
        self.count = 0
        self.since = 0.0
        self._lock = threading.Lock()

    def fail(self, what: str | None, error: BaseException) -> Fault | None:
        """``what`` failed with ``error``: a fault is said when it begins, then counted, and returned; anything else
        is a bug, logged with its traceback every time (call this in the ``except`` block), and None."""
        fault = classify(error)
        if fault is None:
            log.exception("the lab could not %s", what or "answer")
            return None
        self.say(fault, fault.sentence if what is None else f"{fault.sentence} (it tried to {what}: {error})")
        return fault

    def say(self, key: str, line: str) -> bool:
        """Fault ``key`` happened: ``line`` is logged if it begins now (True), else it is counted."""
        with self._lock:
            first = key != self.current
            if first:
                self.current, self.count, self.since = key, 0, self.clock()
            self.count += 1
        if first:
            log.warning("%s", line)
        return first

    def cleared(self, wrote: bool = True) -> None:
        """A call succeeded (``wrote``: a write): the fault has cleared (a lock or a full disk once a write has)."""
        if self.current is None or (self.current in (Fault.LOCKED, Fault.FULL) and not wrote):
            return
        with self._lock:
            key, count, since = self.current, self.count, self.since
            self.current, self.count = None, 0
        if key is not None:
            log.warning("%s (after %d failed calls in %.0f s)", self.again, count, self.clock() - since)


# ---------------------------------------------------------------------------------------------------- the file


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL (None for another database or an in-memory one).

    >>> sqlite_path("sqlite:////srv/runs/lab.db"), sqlite_path("sqlite://"), sqlite_path("postgresql://h/db")
    ('/srv/runs/lab.db', None, None)
    """
    if not url.startswith("sqlite"):
        return None
    database = sa.engine.make_url(url).database
    return os.path.abspath(database) if database and database != ":memory:" else None


def file_identity(path: str | None) -> tuple[int, int] | None:
    """``(device, inode)`` of a file, or None when it is not there."""
    if not path:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


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

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "lab.db")
    >>> damaged_file(path), damaged_file(None)  # not there (a new database): not damaged
    (False, False)
    >>> _ = open(path, "wb").write(b"damaged!" * 512)
    >>> damaged_file(path)
    True
    >>> os.remove(path)
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


# ---------------------------------------------------------------------------------------------------- the watch


class Watch:
    """The one watch of a lab's database, on its engine (SQLAlchemy events, so every statement of every module goes
    through it), and of its SQLite file:

    - an error that is a fault (:func:`classify`) becomes :class:`LabUnavailable`, said once per fault (:attr:`log`);
    - a server that does not answer (each try costs the connect timeout): for :data:`PAUSE_S` after, every new
      statement is refused at once with the same sentence, so a page run never waits on it again; the other faults
      fail fast by themselves and are tried every time (the lab goes on the moment a lock is released or space is
      freed);
    - the SQLite file's identity (device and inode) is remembered: :meth:`replaced` tells that it was deleted or
      replaced while the app ran, and :attr:`generation` counts the files the lab has had (the keeper records its
      live runs again in a new one; its guard rebuilds it from the run folders: :class:`llmviz.lab.rebuild.Guard`).

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "lab.db")
    >>> engine = sa.create_engine(f"sqlite:///{path}")
    >>> watch = install(engine, f"sqlite:///{path}")
    >>> with engine.connect() as db:
    ...     db.execute(sa.text("select 1")).scalar()
    1
    >>> watch.replaced(), watch.gone()
    (False, False)
    >>> os.remove(path)
    >>> watch.replaced(), watch.gone()
    (True, True)
    """

    def __init__(self, url: str, clock: Callable[[], float] = time.monotonic):
        self.url = url
        self.path = sqlite_path(url)
        self.identity = file_identity(self.path)
        self.generation = 0  # how many times the file was replaced under the lab (and taken as its own again)
        self.clock = clock
        self.until = 0.0
        self.reason: Fault | None = None  # the fault now, None while the database answers
        self.log = FaultLog(clock=lambda: self.clock())
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return self.reason is not None

    # ------------------------------------------------------------------ the file

    def gone(self) -> bool:
        """Is the SQLite file not there? (False for PostgreSQL.)"""
        return self.path is not None and not os.path.exists(self.path)

    def replaced(self) -> bool:
        """Was the SQLite file deleted or replaced since it was last taken as the lab's? (False for PostgreSQL.)"""
        return self.path is not None and file_identity(self.path) != self.identity

    def remember_file(self) -> bool:
        """The SQLite file as it is now is the lab's (after a start, a rebuild, a restored file reopened); True (and
        :attr:`generation` counted) when it is another file than before."""
        with self._lock:
            now = file_identity(self.path)
            if now == self.identity:
                return False
            self.identity, self.generation = now, self.generation + 1
            return True

    def damaged(self) -> bool:
        """Is the SQLite file damaged: its header is not SQLite's (:func:`damaged_file`, even where a stale journal
        hides that from SQLite), or a statement said so and it is still the file the lab opened?"""
        return damaged_file(self.path) or (self.reason == Fault.DAMAGED and not self.replaced())

    def check_file(self) -> None:
        """Before the file is opened: a damaged one is said (once) and refused (:class:`LabUnavailable`), never
        read through a journal that hides the damage (the keeper's guard then puts it aside and rebuilds it)."""
        if damaged_file(self.path):
            self.trip(Fault.DAMAGED)
            raise LabUnavailable(Fault.DAMAGED)

    # ------------------------------------------------------------------ the faults

    def trip(self, fault: Fault, error: BaseException | None = None) -> None:
        """The database is out with ``fault``: said once (:attr:`log`); a server that does not answer is refused at
        once for a while."""
        with self._lock:
            self.reason = fault
            if fault == Fault.UNREACHABLE:  # only a server that does not answer costs a wait per call
                self.until = self.clock() + PAUSE_S
        self.log.say(fault, fault.sentence)

    def clear(self, wrote: bool = True) -> None:
        """A statement went through (``wrote``: a write): a fault that it clears is over (said once)."""
        if self.reason in (Fault.LOCKED, Fault.FULL) and not wrote:
            return  # reads go on under a lock and on a full disk: it answers again once a write goes through
        with self._lock:
            self.reason, self.until = None, 0.0
        self.log.cleared(wrote)

    def refusal(self) -> LabUnavailable | None:
        """The refusal to raise now, or None when the database may be tried."""
        if self.reason is not None and self.clock() < self.until:
            return LabUnavailable(self.reason)
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
        fault = classify(context.original_exception)
        if fault is None:
            return
        if self.gone():
            fault = Fault.GONE  # whatever the driver says of a file that is not there
        self.trip(fault)
        raise LabUnavailable(fault) from context.original_exception

    def _answered(self, _connection, _cursor, statement: str, *_args) -> None:
        if self.identity is None and self.path is not None:  # the file made by the first statement is the lab's
            self.identity = file_identity(self.path)
        if self.reason is not None:
            self.clear(_writes(statement))


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
    """Put a :class:`Watch` on ``engine`` (once); returns it."""
    found = watch_of(engine)
    if found is None:
        found = Watch(url)
        sa.event.listen(engine, "engine_connect", found._gate)
        sa.event.listen(engine, "handle_error", found._failed)
        sa.event.listen(engine, "after_cursor_execute", found._answered)
        engine._llmviz_watch = found  # type: ignore[attr-defined]
    return found
