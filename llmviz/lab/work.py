"""One unit of work on the lab's database: what is recorded together is recorded together or not at all.

A :class:`UnitOfWork` belongs to a registry (``registry.work``); every statement of the registry's rows goes through
it (:meth:`UnitOfWork.begin` to write, :meth:`UnitOfWork.connect` to read). Outside :meth:`UnitOfWork.transaction`
each call is a transaction of its own; inside it every call this thread makes runs on one connection, in one
transaction, and reads see what the unit wrote. Files cannot take part in a transaction, so the unit holds them
back: a file it deletes (:meth:`UnitOfWork.after_commit`: a thinned snapshot) goes only once it is committed (a row
never names a missing file), and a file it wrote (:meth:`UnitOfWork.on_rollback`: a kept text) is removed again when
it is rolled back.

>>> import sqlalchemy as sa
>>> engine = sa.create_engine("sqlite://")
>>> with engine.begin() as db:
...     _ = db.execute(sa.text("create table t (x integer)"))
>>> work = UnitOfWork(engine)
>>> deleted = []
>>> try:
...     with work.transaction():
...         with work.begin() as db:
...             _ = db.execute(sa.text("insert into t values (1)"))
...         work.after_commit(lambda: deleted.append("a thinned snapshot's file"))
...         raise OSError("the disk filled up here")
... except OSError:
...     pass
>>> with work.connect() as db:
...     db.execute(sa.text("select count(*) from t")).scalar(), deleted
(0, [])
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

import sqlalchemy as sa

log = logging.getLogger(__name__)


class UnitOfWork:
    """The units of work on one engine, one per thread at a time (see the module's docstring)."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        self._local = threading.local()  # this thread's open unit: its connection, its files to delete or undo

    @property
    def _db(self) -> sa.Connection | None:
        return getattr(self._local, "db", None)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """One unit of work: committed when it ends, rolled back whole when anything in it raises (a nested one is a
        part of the outer one); then the files it deleted go, or the files it wrote are removed."""
        if self._db is not None:
            yield self._db
            return
        local = self._local
        local.after, local.undo = [], []
        try:
            with self.engine.begin() as db:
                local.db = db
                yield db
        except BaseException:
            local.db = None
            for undo in reversed(local.undo):
                with contextlib.suppress(OSError):
                    undo()
            raise
        finally:
            local.db = None
        for action in local.after:  # committed: a file that cannot go now is left over, never a unit half undone
            try:
                action()
            except OSError:
                log.warning("a file its unit of work deleted could not be removed", exc_info=True)

    def after_commit(self, action: Callable[[], None]) -> None:
        """Do ``action`` (a file's deletion) once this thread's unit is committed; at once outside one."""
        if self._db is not None:
            self._local.after.append(action)
        else:
            action()

    def on_rollback(self, action: Callable[[], None]) -> None:
        """Undo a file written inside this thread's unit (``action``) if it is rolled back; nothing outside one."""
        if self._db is not None:
            self._local.undo.append(action)

    @contextlib.contextmanager
    def begin(self) -> Iterator[sa.Connection]:
        """A connection in a transaction: this thread's unit's, else one of its own, committed at the end."""
        if self._db is not None:
            yield self._db
            return
        with self.engine.begin() as db:
            yield db

    @contextlib.contextmanager
    def connect(self) -> Iterator[sa.Connection]:
        """A connection to read on: this thread's unit's (it sees what the unit wrote), else one of its own."""
        if self._db is not None:
            yield self._db
            return
        with self.engine.connect() as db:
            yield db
