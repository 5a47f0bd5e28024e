"""The lab's registry: students, their runs, each run's curve and samples, in one database that every app process of
the machine (or of a hall) shares.

SQLAlchemy Core, so the same statements run on the default SQLite file (``sqlite:///<runs folder>/lab.db``, in WAL
mode so readers never wait for the one writer) and on PostgreSQL (``LLMVIZ_DATABASE_URL=postgresql+psycopg://…``).
No SQLite pragmas outside :func:`_sqlite_pragmas`. Its parts, each an object of its own module on the one engine
(each testable alone):

- ``registry.records`` (:mod:`llmviz.lab.records`): the rows (students, runs, curves, samples, snapshot and resume
  files, uploads);
- ``registry.slots`` (:mod:`llmviz.lab.slots`): the machine's training slots, shared by every process;
- ``registry.mailbox`` (:mod:`llmviz.lab.inbox`): the requests between processes (pause, resume, stop, park a run
  another process holds);
- ``registry.liveness`` (:mod:`llmviz.lab.liveness`): which process holds which run, and which have gone;
- ``registry.polls`` (:mod:`llmviz.lab.polls`): the class's polls, their answers, and the teacher's lead (the view
  the class follows);
- ``registry.work`` (:mod:`llmviz.lab.work`): one unit of work (``registry.work.transaction()``): what is recorded
  together is recorded together or not at all;
- ``registry.watch`` (:mod:`llmviz.lab.faults`): the database's one watch, which words a fault once;
- :mod:`llmviz.lab.migrations`: the schema's Alembic revisions, applied as the registry opens.

>>> from llmviz.lab.records import RunRecord
>>> registry = Registry("sqlite://")
>>> records = registry.records  # the rows; registry.slots, .mailbox, .liveness and .polls are the other parts
>>> records.ensure_student("s1", name="Ada")
>>> records.add_run(RunRecord(id="r1", student="s1", kind="training", label="Run 1", total=300, state="queued"))
>>> records.update_run("r1", state="running", step=40)
>>> records.add_points("r1", [(20, 3.1, None), (40, 2.9, 3.0)])
>>> [(run.id, run.state, run.step, run.best_val_loss) for run in records.runs("s1")]
[('r1', 'running', 40, 3.0)]
>>> records.runs("s2"), records.run("s2", "r1")  # another student sees nothing of it
([], None)
"""

from __future__ import annotations

import os

import sqlalchemy as sa

from llmviz.lab import faults
from llmviz.lab.inbox import Mailbox
from llmviz.lab.liveness import Liveness
from llmviz.lab.migrations import schema
from llmviz.lab.polls import PollRows
from llmviz.lab.records import Records
from llmviz.lab.slots import Slots
from llmviz.lab.work import UnitOfWork

BUSY_TIMEOUT_S = 10.0  # how long a write waits for another process's lock before it is refused


def default_url(runs_folder: str | os.PathLike) -> str:
    """``sqlite:///<runs folder>/lab.db``.

    >>> default_url("/srv/runs")
    'sqlite:////srv/runs/lab.db'
    """
    return f"sqlite:///{os.path.join(os.fspath(runs_folder), 'lab.db')}"


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url: str) -> sa.Engine:
    """An engine for ``url``; SQLite files in WAL mode with a busy timeout (many processes, one writer at a time)."""
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if path and path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            faults.drop_stale_journal(os.path.abspath(path))  # a deleted file's -wal is not the new file's
        engine = sa.create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # a stopped or unreachable server is said within seconds (llmviz.lab.faults), not after TCP's minutes; a lock
    # another process holds is waited for as long as SQLite's busy timeout, then refused (PostgreSQL's default is to
    # wait for ever: one long transaction elsewhere would freeze every write of this process, its runs' steps too)
    options = {"connect_timeout": faults.CONNECT_TIMEOUT_S, "options": f"-c lock_timeout={int(BUSY_TIMEOUT_S * 1000)}"}
    return sa.create_engine(url, pool_pre_ping=True, connect_args=options)


class Registry:
    """Students, runs, curves, samples, snapshots and uploads in one database (see the module's docstring): the
    database is upgraded to the newest schema revision as it opens (:func:`llmviz.lab.migrations.schema.upgrade`)."""

    def __init__(self, url: str, engine: sa.Engine | None = None):
        self.url = url
        self.engine = engine or make_engine(url)
        self.work = UnitOfWork(self.engine)  # what is recorded together: together or not at all (llmviz.lab.work)
        self.records = Records(self.work)  # students, runs, curves, samples, snapshots, uploads (llmviz.lab.records)
        self.slots = Slots(self.engine)  # the machine's training slots, every process's (llmviz.lab.slots)
        self.mailbox = Mailbox(self.engine)  # requests to the process that holds a run (llmviz.lab.inbox)
        self.liveness = Liveness(self.engine)  # who holds which run, and who has gone (llmviz.lab.liveness)
        self.polls = PollRows(self.work)  # the class's polls, answers and the teacher's lead (llmviz.lab.polls)
        # the database's one watch: a fault is one sentence, said once, never a wait on every page; its file's identity
        self.watch = faults.install(self.engine, url)
        try:
            self.watch.check_file()  # a damaged SQLite file is not opened, even where a stale -wal would hide it
            self.revision: str | None = schema.upgrade(self.engine)
        except faults.LabUnavailable:  # said once; the keeper's guard upgrades it once it answers (lab.rebuild)
            self.revision = None

    def dispose(self) -> None:
        self.engine.dispose()
