"""The machine's training slots and memory, shared by every app process through the registry: a run trains only
once it holds a slot (:meth:`Slots.claim`, one transaction with every other process).

A slot is claimed with a short lock wait (:data:`CLAIM_WAIT_S`): a database locked by another process makes the
claim answer "not now" within a fraction of a second, so the caller (a supervisor, under its manager's lock) tries
again later instead of freezing every page and every run of its process for the database's whole busy timeout.
"""

from __future__ import annotations

import contextlib
import logging

import sqlalchemy as sa

from llmviz.lab import faults
from llmviz.lab.records import LIVE_STATES, runs

log = logging.getLogger(__name__)
CLAIM_WAIT_S = 0.25  # the longest a slot claim waits for another process's write lock


@contextlib.contextmanager
def short_wait(db: sa.Connection, seconds: float = CLAIM_WAIT_S):
    """Within ``db``'s transaction, wait at most ``seconds`` for a lock another process holds (SQLite's busy
    timeout, PostgreSQL's ``lock_timeout``), then put SQLite's back."""
    if db.dialect.name == "postgresql":
        db.execute(sa.text(f"SET LOCAL lock_timeout = '{int(seconds * 1000)}ms'"))
        yield
        return
    raw = db.connection.dbapi_connection
    before = raw.execute("PRAGMA busy_timeout").fetchone()[0] if raw is not None else None
    if raw is not None:
        raw.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")
    try:
        yield
    finally:
        if raw is not None and before is not None:
            raw.execute(f"PRAGMA busy_timeout={int(before)}")


class Slots:
    """The cross-process slot scheduler (``registry.slots``, a part of :class:`llmviz.lab.registry.Registry`)."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine

    def claim(
        self, run_id: str, max_running: int, memory: int = 0, budget: int | None = None, per_student: int | None = None
    ) -> bool:
        """Take one of the machine's ``max_running`` training slots (and ``memory`` bytes of ``budget``) for
        ``run_id``, in one transaction with every other process: True when it got them. ``per_student``: the run's
        student may train at most that many runs at once, whichever process trains them (one share per student)."""
        try:
            return self._claim(run_id, max_running, memory, budget, per_student)
        except Exception as error:
            if faults.classify(error) != faults.Fault.LOCKED:
                raise  # unreachable or damaged: the caller says so
            log.debug("slot claim for %s found the database locked", run_id)  # another process writes: not now
            return False

    def _claim(self, run_id: str, max_running: int, memory: int, budget: int | None, per_student: int | None) -> bool:
        with self.engine.begin() as db, short_wait(db):
            if db.dialect.name == "postgresql":
                db.execute(sa.text("LOCK TABLE lab_runs IN SHARE ROW EXCLUSIVE MODE"))
            else:  # SQLite: an immediate write lock before reading (BEGIN IMMEDIATE's effect)
                db.execute(sa.update(runs).where(sa.false()).values(training=False))
            busy = db.execute(
                sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(runs.c.memory), 0)).where(
                    runs.c.training.is_(True), runs.c.id != run_id
                )
            ).one()
            if busy[0] >= max_running or (budget is not None and busy[1] + memory > budget):
                return False
            if per_student is not None:
                student = sa.select(runs.c.student).where(runs.c.id == run_id).scalar_subquery()
                theirs = db.execute(
                    sa.select(sa.func.count()).where(
                        runs.c.training.is_(True), runs.c.id != run_id, runs.c.student == student
                    )
                ).scalar_one()
                if theirs >= per_student:
                    return False
            db.execute(sa.update(runs).where(runs.c.id == run_id).values(training=True, memory=memory))
            return True

    def free(self, run_id: str, wait_s: float | None = None) -> None:
        """Give ``run_id``'s slot back; ``wait_s``: wait at most that long for another process's lock (else the
        database's busy timeout), then raise."""
        if wait_s is not None:
            with self.engine.begin() as db, short_wait(db, wait_s):
                db.execute(sa.update(runs).where(runs.c.id == run_id).values(training=False, memory=0))
            return
        with self.engine.begin() as db:
            db.execute(sa.update(runs).where(runs.c.id == run_id).values(training=False, memory=0))

    def student_training(self, student: str) -> int:
        """``student``'s runs holding a training slot now, in every process."""
        with self.engine.connect() as db:
            return db.execute(
                sa.select(sa.func.count()).where(runs.c.student == student, runs.c.training.is_(True))
            ).scalar_one()

    def live_elsewhere(self, student: str, holder: str) -> int:
        """``student``'s runs queued, training or paused in processes other than ``holder`` (their share's other
        half: a student's runs count once, whichever app process their tabs are served by)."""
        with self.engine.connect() as db:
            return db.execute(
                sa.select(sa.func.count()).where(
                    runs.c.student == student,
                    runs.c.state.in_(LIVE_STATES),
                    sa.or_(runs.c.holder.is_(None), runs.c.holder != holder),
                )
            ).scalar_one()

    def training_count(self) -> int:
        with self.engine.connect() as db:
            return db.execute(sa.select(sa.func.count()).where(runs.c.training.is_(True))).scalar_one()
