"""The lab's registry: students, their runs, each run's curve and samples, in one database that every app process of
the machine (or of a hall) shares.

SQLAlchemy Core, so the same statements run on the default SQLite file (``sqlite:///<runs folder>/lab.db``, in WAL
mode so readers never wait for the one writer) and on PostgreSQL (``LLMVIZ_DATABASE_URL=postgresql+psycopg://…``).
Only portable SQL: no ``INSERT … ON CONFLICT``, no SQLite pragmas outside :func:`_sqlite_pragmas`. Weights never
go in the database: :mod:`llmviz.lab.storage` keeps them as files, and the registry lists them.

A run's row says which process holds it (``holder``: host, process id, start time) and when that process last said
so (``heartbeat``): a run whose holder has gone while it trained is *interrupted*, not lost.

>>> registry = Registry("sqlite://")
>>> registry.ensure_student("s1", name="Ada")
>>> registry.add_run(RunRecord(id="r1", student="s1", kind="train", label="Run 1", total=300, state="queued"))
>>> registry.update_run("r1", state="running", step=40)
>>> registry.add_points("r1", [(20, 3.1, None), (40, 2.9, 3.0)])
>>> [(run.id, run.state, run.step, run.best_val_loss) for run in registry.runs("s1")]
[('r1', 'running', 40, 3.0)]
>>> registry.runs("s2"), registry.run("s2", "r1")  # another student sees nothing of it
([], None)
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import psutil
import sqlalchemy as sa

from llmviz.lab import health

# states a run's row can be in; the first four are a job's own (llmviz.jobs.events.JobState)
LIVE_STATES = ("queued", "running", "paused")
STATES = (*LIVE_STATES, "finished", "stopped", "failed", "parked", "interrupted")
MAX_TEXT = 4000  # the longest sample or label kept
REQUESTS = ("pause", "resume", "stop", "park")  # what any process may ask of a run's holder (Registry.request)

metadata = sa.MetaData()

students = sa.Table(
    "lab_students",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(80), nullable=False, default=""),
    sa.Column("teacher", sa.Boolean, nullable=False, default=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("seen", sa.Float, nullable=False),
)

runs = sa.Table(
    "lab_runs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("label", sa.String(200), nullable=False),
    sa.Column("model", sa.String(120), nullable=False, default=""),
    sa.Column("config", sa.JSON, nullable=False, default=dict),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("step", sa.Integer, nullable=False, default=0),
    sa.Column("total", sa.Integer, nullable=False, default=0),
    sa.Column("best_val_loss", sa.Float, nullable=True),
    sa.Column("last_loss", sa.Float, nullable=True),
    sa.Column("error", sa.String(MAX_TEXT), nullable=True),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("updated", sa.Float, nullable=False),
    sa.Column("holder", sa.String(120), nullable=True),  # "host:pid:started" of the process that holds it
    sa.Column("heartbeat", sa.Float, nullable=True),
    sa.Column("training", sa.Boolean, nullable=False, default=False),  # holds one of the machine's slots
    sa.Column("memory", sa.BigInteger, nullable=False, default=0),  # bytes it counts in the memory budget
    sa.Column("wanted", sa.String(8), nullable=True),  # "stop" or "park": asked by the teacher, done by its holder
    sa.Index("lab_runs_student", "student"),
)

points = sa.Table(
    "lab_points",
    metadata,
    sa.Column("run", sa.String(32), sa.ForeignKey("lab_runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("loss", sa.Float, nullable=True),
    sa.Column("val_loss", sa.Float, nullable=True),
)

samples = sa.Table(
    "lab_samples",
    metadata,
    sa.Column("run", sa.String(32), sa.ForeignKey("lab_runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("text", sa.String(MAX_TEXT), nullable=False),
)

snapshots = sa.Table(
    "lab_snapshots",
    metadata,
    sa.Column("run", sa.String(32), sa.ForeignKey("lab_runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("path", sa.String(500), nullable=False),
    sa.Column("nbytes", sa.BigInteger, nullable=False),
)

# a run's resume state (its optimizer's moments, random streams and metrics so far: Trainer.training_state), one per
# run, beside the snapshot of the same step; a table of its own, so that a registry made before it gains it as it opens
resumes = sa.Table(
    "lab_resumes",
    metadata,
    sa.Column("run", sa.String(32), sa.ForeignKey("lab_runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("path", sa.String(500), nullable=False),
    sa.Column("nbytes", sa.BigInteger, nullable=False),
)

uploads = sa.Table(
    "lab_uploads",
    metadata,
    sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("nbytes", sa.BigInteger, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)


@dataclass(frozen=True)
class RunRecord:
    """One run's row: what any process can say about it without its worker."""

    id: str
    student: str
    kind: str
    label: str
    state: str
    total: int = 0
    step: int = 0
    model: str = ""
    config: dict = field(default_factory=dict)
    best_val_loss: float | None = None
    last_loss: float | None = None
    error: str | None = None
    created: float = 0.0
    updated: float = 0.0
    holder: str | None = None
    heartbeat: float | None = None
    training: bool = False
    memory: int = 0
    wanted: str | None = None

    @property
    def resumable(self) -> bool:
        """Parked or interrupted: it ended before its last step, with its snapshots, curve and settings kept; it can
        go on from its last snapshot (:meth:`llmviz.jobs.manager.JobManager.resume_kept`)."""
        return self.state in ("parked", "interrupted")


_RUN_FIELDS = {f.name for f in fields(RunRecord)}


def this_holder() -> str:
    """``"host:pid:started"`` for this process: names it uniquely even after its process id is reused.

    >>> this_holder().split(":")[1] == str(os.getpid())
    True
    """
    started = int(psutil.Process().create_time())
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{started}"


def holder_alive(holder: str | None) -> bool | None:
    """Is the process ``holder`` names still running? None where it cannot be told (another host).

    >>> holder_alive(this_holder()), holder_alive(None)
    (True, False)
    """
    if not holder:
        return False
    host, _, rest = holder.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname()[:60]:
        return None
    try:
        process = psutil.Process(int(pid))
        return int(process.create_time()) == int(started)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def default_url(runs_folder: str | os.PathLike) -> str:
    """``sqlite:///<runs folder>/lab.db``.

    >>> default_url("/srv/runs")
    'sqlite:////srv/runs/lab.db'
    """
    return f"sqlite:///{os.path.join(os.fspath(runs_folder), 'lab.db')}"


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url: str) -> sa.Engine:
    """An engine for ``url``; SQLite files in WAL mode with a busy timeout (many processes, one writer at a time)."""
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if path and path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            health.drop_stale_journal(os.path.abspath(path))  # a deleted file's -wal is not the new file's
        engine = sa.create_engine(url, connect_args={"timeout": 10, "check_same_thread": False})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # a stopped or unreachable server is said within seconds (llmviz.lab.health), not after TCP's minutes
    return sa.create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": health.CONNECT_TIMEOUT_S})


def _clip(text: str | None, limit: int = MAX_TEXT) -> str | None:
    return None if text is None else str(text)[:limit]


def _finite(value: float | None) -> float | None:
    return None if value is None or value != value or value in (float("inf"), float("-inf")) else float(value)


class Registry:
    """Students, runs, curves, samples, snapshots and uploads in one database (see the module's docstring)."""

    def __init__(self, url: str, engine: sa.Engine | None = None):
        self.url = url
        self.engine = engine or make_engine(url)
        health.install(self.engine, url)  # an outage is one sentence, said once, never a wait on every page
        try:
            metadata.create_all(self.engine)
        except health.LabUnavailable:
            pass  # said once; the keeper's guard makes the tables once the database answers (llmviz.lab.rebuild)

    def dispose(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ students

    def ensure_student(self, student: str, name: str | None = None, teacher: bool | None = None) -> None:
        """Make ``student``'s row if there is none; set its name or teacher flag when given; mark it seen."""
        now = time.time()
        values: dict[str, Any] = {"seen": now}
        if name is not None:
            values["name"] = _clip(name, 80)
        if teacher is not None:
            values["teacher"] = bool(teacher)
        with self.engine.begin() as db:
            changed = db.execute(sa.update(students).where(students.c.id == student).values(**values)).rowcount
            if not changed:
                try:
                    with db.begin_nested():
                        db.execute(
                            sa.insert(students).values(
                                id=student,
                                name=values.get("name", ""),
                                teacher=values.get("teacher", False),
                                created=now,
                                seen=now,
                            )
                        )
                except sa.exc.IntegrityError:  # another process made it meanwhile
                    db.execute(sa.update(students).where(students.c.id == student).values(**values))

    def student(self, student: str) -> dict | None:
        with self.engine.connect() as db:
            row = db.execute(sa.select(students).where(students.c.id == student)).mappings().first()
        return dict(row) if row else None

    def students(self) -> list[dict]:
        with self.engine.connect() as db:
            return [dict(row) for row in db.execute(sa.select(students).order_by(students.c.created)).mappings()]

    # ------------------------------------------------------------------ runs

    def add_run(self, record: RunRecord) -> None:
        now = time.time()
        values = {name: getattr(record, name) for name in _RUN_FIELDS}
        values.update(
            label=_clip(record.label, 200),
            created=record.created or now,
            updated=now,
            holder=record.holder or this_holder(),
            heartbeat=now,
        )
        with self.engine.begin() as db:
            db.execute(sa.insert(runs).values(**values))

    def update_run(self, run_id: str, **values: Any) -> None:
        unknown = set(values) - _RUN_FIELDS
        if unknown:
            raise KeyError(f"no such run fields: {sorted(unknown)}")
        if "state" in values and values["state"] not in STATES:
            raise ValueError(f"no such state: {values['state']}")
        if "error" in values:
            values["error"] = _clip(values["error"])
        with self.engine.begin() as db:
            db.execute(sa.update(runs).where(runs.c.id == run_id).values(updated=time.time(), **values))

    def runs(self, student: str) -> list[RunRecord]:
        """``student``'s runs, oldest first (never anyone else's)."""
        return self._runs(runs.c.student == student)

    def all_runs(self) -> list[RunRecord]:
        """Every student's runs (the teacher's class view), oldest first."""
        return self._runs(sa.true())

    def run(self, student: str, run_id: str) -> RunRecord | None:
        """The run ``run_id`` if it is ``student``'s (None otherwise: a run id alone opens nothing)."""
        found = self._runs(sa.and_(runs.c.student == student, runs.c.id == run_id))
        return found[0] if found else None

    def _runs(self, where) -> list[RunRecord]:
        with self.engine.connect() as db:
            rows = db.execute(sa.select(runs).where(where).order_by(runs.c.created, runs.c.id)).mappings()
            return [RunRecord(**dict(row)) for row in rows]

    def delete_run(self, student: str, run_id: str) -> bool:
        """Forget ``student``'s run ``run_id`` with its curve, samples and snapshot rows; False if not theirs."""
        with self.engine.begin() as db:
            for table in (points, samples, snapshots, resumes):
                owned = sa.select(runs.c.id).where(runs.c.id == run_id, runs.c.student == student)
                db.execute(sa.delete(table).where(table.c.run.in_(owned)))
            return bool(db.execute(sa.delete(runs).where(runs.c.id == run_id, runs.c.student == student)).rowcount)

    def beat(self, holder: str) -> None:
        """The process ``holder`` is alive: every run it holds says so."""
        with self.engine.begin() as db:
            db.execute(sa.update(runs).where(runs.c.holder == holder).values(heartbeat=time.time()))

    def interrupt_orphans(self, stale_s: float = 60.0, student: str | None = None) -> list[str]:
        """Runs that were queued, training or paused in a process that has gone (or has not said it is alive for
        ``stale_s`` seconds, where it runs on another host) become *interrupted*; returns their ids. ``student``:
        only theirs (a page listing a student's runs checks them, so a killed app process's runs show as
        interrupted at once on the other)."""
        now = time.time()
        where: list[sa.ColumnElement[bool]] = [runs.c.state.in_(LIVE_STATES)]
        if student is not None:
            where.append(runs.c.student == student)
        with self.engine.connect() as db:
            rows = db.execute(sa.select(runs.c.id, runs.c.holder, runs.c.heartbeat).where(*where)).all()
        gone = []
        for run_id, holder, heartbeat in rows:
            alive = holder_alive(holder)
            if alive is False or (alive is None and now - (heartbeat or 0) > stale_s):
                gone.append(run_id)
        if gone:
            with self.engine.begin() as db:
                db.execute(
                    sa.update(runs)
                    .where(runs.c.id.in_(gone), runs.c.state.in_(LIVE_STATES))
                    .values(state="interrupted", training=False, memory=0, updated=now)
                )
        return gone

    def request(self, run_id: str, action: str, student: str | None = None) -> bool:
        """Ask the process that holds ``run_id`` to ``"pause"``, ``"resume"``, ``"stop"`` or ``"park"`` it: any app
        process may ask (the student's tab on another process, the teacher's class view), the holder acts within a
        second (:meth:`llmviz.jobs.keeping.Keeper.act_on_requests`). ``student``: only if the run is theirs. False
        when the run is not live (or not theirs); a later request replaces one not yet taken."""
        if action not in REQUESTS:
            raise ValueError(f"a run can be asked to {', '.join(REQUESTS)}")
        where: list[sa.ColumnElement[bool]] = [runs.c.id == run_id, runs.c.state.in_(LIVE_STATES)]
        if student is not None:
            where.append(runs.c.student == student)
        with self.engine.begin() as db:
            changed = db.execute(sa.update(runs).where(*where).values(wanted=action)).rowcount
        return bool(changed)

    def take_requests(self, holder: str) -> list[tuple[str, str]]:
        """The ``(run id, action)`` asked of the runs ``holder`` holds, cleared as they are taken."""
        with self.engine.begin() as db:
            found = [
                (run_id, action)
                for run_id, action in db.execute(
                    sa.select(runs.c.id, runs.c.wanted).where(runs.c.holder == holder, runs.c.wanted.is_not(None))
                )
            ]
            if found:
                db.execute(sa.update(runs).where(runs.c.id.in_([run_id for run_id, _ in found])).values(wanted=None))
        return found

    # ------------------------------------------------------------------ the machine's slots and memory

    def claim_slot(
        self, run_id: str, max_running: int, memory: int = 0, budget: int | None = None, per_student: int | None = None
    ) -> bool:
        """Take one of the machine's ``max_running`` training slots (and ``memory`` bytes of ``budget``) for
        ``run_id``, in one transaction with every other process: True when it got them. ``per_student``: the run's
        student may train at most that many runs at once, whichever process trains them (one share per student)."""
        with self.engine.begin() as db:
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

    def free_slot(self, run_id: str) -> None:
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

    # ------------------------------------------------------------------ curves, samples, snapshots

    def add_points(self, run_id: str, rows: Iterable[tuple[int, float | None, float | None]]) -> None:
        """Add ``(step, training loss, validation loss)`` rows (steps already there are left alone); keeps the
        run's best validation loss and last loss up to date."""
        rows = [(int(step), _finite(loss), _finite(val)) for step, loss, val in rows]
        if not rows:
            return
        with self.engine.begin() as db:
            have = set(
                db.execute(
                    sa.select(points.c.step).where(points.c.run == run_id, points.c.step >= min(r[0] for r in rows))
                ).scalars()
            )
            new = [{"run": run_id, "step": s, "loss": loss, "val_loss": val} for s, loss, val in rows if s not in have]
            if new:
                db.execute(sa.insert(points), new)
            vals = [val for _, _, val in rows if val is not None]
            best = db.execute(sa.select(runs.c.best_val_loss).where(runs.c.id == run_id)).scalar()
            values: dict[str, Any] = {"last_loss": rows[-1][1], "updated": time.time()}
            if vals and (best is None or min(vals) < best):
                values["best_val_loss"] = min(vals)
            db.execute(sa.update(runs).where(runs.c.id == run_id).values(**values))

    def curve(self, run_id: str) -> list[tuple[int, float | None, float | None]]:
        with self.engine.connect() as db:
            return [
                tuple(row)
                for row in db.execute(
                    sa.select(points.c.step, points.c.loss, points.c.val_loss)
                    .where(points.c.run == run_id)
                    .order_by(points.c.step)
                )
            ]

    def curves(self, run_ids: list[str]) -> dict[str, list[tuple[int, float | None, float | None]]]:
        """Many runs' curves in one query (the class view)."""
        out: dict[str, list] = {run_id: [] for run_id in run_ids}
        if not run_ids:
            return out
        with self.engine.connect() as db:
            query = (
                sa.select(points.c.run, points.c.step, points.c.loss, points.c.val_loss)
                .where(points.c.run.in_(run_ids))
                .order_by(points.c.run, points.c.step)
            )
            for run_id, step, loss, val in db.execute(query):
                out[run_id].append((step, loss, val))
        return out

    def add_sample(self, run_id: str, step: int, text: str) -> None:
        with self.engine.begin() as db:
            db.execute(sa.delete(samples).where(samples.c.run == run_id, samples.c.step == step))
            db.execute(sa.insert(samples).values(run=run_id, step=step, text=_clip(text)))

    def samples(self, run_id: str) -> list[tuple[int, str]]:
        with self.engine.connect() as db:
            query = sa.select(samples.c.step, samples.c.text).where(samples.c.run == run_id).order_by(samples.c.step)
            return [tuple(row) for row in db.execute(query)]

    def add_snapshot(self, run_id: str, step: int, path: str, nbytes: int) -> None:
        with self.engine.begin() as db:
            db.execute(sa.delete(snapshots).where(snapshots.c.run == run_id, snapshots.c.step == step))
            db.execute(sa.insert(snapshots).values(run=run_id, step=step, path=path, nbytes=nbytes))

    def drop_snapshot(self, run_id: str, step: int) -> None:
        with self.engine.begin() as db:
            db.execute(sa.delete(snapshots).where(snapshots.c.run == run_id, snapshots.c.step == step))

    def snapshots(self, run_id: str) -> list[tuple[int, str, int]]:
        """``(step, path, bytes)`` of a run's kept snapshots, by step."""
        with self.engine.connect() as db:
            query = (
                sa.select(snapshots.c.step, snapshots.c.path, snapshots.c.nbytes)
                .where(snapshots.c.run == run_id)
                .order_by(snapshots.c.step)
            )
            return [tuple(row) for row in db.execute(query)]

    def set_resume(self, run_id: str, step: int, path: str, nbytes: int) -> str | None:
        """Keep ``run_id``'s resume state at ``step`` (one per run: it replaces the run's older one, whose path is
        returned for the caller to delete when it is another file)."""
        with self.engine.begin() as db:
            old = db.execute(sa.select(resumes.c.path).where(resumes.c.run == run_id)).scalar()
            db.execute(sa.delete(resumes).where(resumes.c.run == run_id))
            db.execute(sa.insert(resumes).values(run=run_id, step=step, path=path, nbytes=nbytes))
        return old if old != path else None

    def resume_state(self, run_id: str) -> tuple[int, str, int] | None:
        """``(step, path, bytes)`` of ``run_id``'s kept resume state, or None (a run kept before resume states were,
        a finished run, or one whose state was thinned: it resumes with its weights only)."""
        with self.engine.connect() as db:
            row = db.execute(sa.select(resumes.c.step, resumes.c.path, resumes.c.nbytes).where(resumes.c.run == run_id))
            found = row.first()
        return (int(found[0]), str(found[1]), int(found[2])) if found else None

    def drop_resume(self, run_id: str) -> str | None:
        """Forget ``run_id``'s resume state; returns its path (for the caller to delete the file)."""
        with self.engine.begin() as db:
            old = db.execute(sa.select(resumes.c.path).where(resumes.c.run == run_id)).scalar()
            db.execute(sa.delete(resumes).where(resumes.c.run == run_id))
        return old

    def student_resumes(self, student: str) -> list[tuple[str, int, str, int]]:
        """``(run, step, path, bytes)`` of every resume state of ``student``, oldest run first."""
        with self.engine.connect() as db:
            query = (
                sa.select(resumes.c.run, resumes.c.step, resumes.c.path, resumes.c.nbytes)
                .join(runs, runs.c.id == resumes.c.run)
                .where(runs.c.student == student)
                .order_by(runs.c.created, resumes.c.run)
            )
            return [(str(run), int(step), str(path), int(nbytes)) for run, step, path, nbytes in db.execute(query)]

    def steps_by_run(self, student: str) -> dict[str, list[int]]:
        """The kept snapshot steps of each of ``student``'s runs, in one query (the picker lists them)."""
        out: dict[str, list[int]] = {}
        with self.engine.connect() as db:
            query = (
                sa.select(snapshots.c.run, snapshots.c.step)
                .join(runs, runs.c.id == snapshots.c.run)
                .where(runs.c.student == student)
                .order_by(snapshots.c.run, snapshots.c.step)
            )
            for run_id, step in db.execute(query):
                out.setdefault(run_id, []).append(step)
        return out

    def student_snapshots(self, student: str) -> list[tuple[str, int, str, int, float]]:
        """``(run, step, path, bytes, run created)`` of every snapshot of ``student``, oldest run first."""
        with self.engine.connect() as db:
            query = (
                sa.select(snapshots.c.run, snapshots.c.step, snapshots.c.path, snapshots.c.nbytes, runs.c.created)
                .join(runs, runs.c.id == snapshots.c.run)
                .where(runs.c.student == student)
                .order_by(runs.c.created, snapshots.c.run, snapshots.c.step)
            )
            return [tuple(row) for row in db.execute(query)]

    # ------------------------------------------------------------------ uploads

    def add_upload(self, student: str, sha256: str, name: str, nbytes: int) -> bool:
        """Record an upload by its content hash; False when the student had it already (kept once)."""
        with self.engine.begin() as db:
            have = db.execute(
                sa.select(uploads.c.sha256).where(uploads.c.student == student, uploads.c.sha256 == sha256)
            ).first()
            if have:
                return False
            db.execute(
                sa.insert(uploads).values(
                    student=student, sha256=sha256, name=_clip(name, 200), nbytes=nbytes, created=time.time()
                )
            )
            return True

    def uploads(self, student: str) -> list[tuple[str, str, int]]:
        with self.engine.connect() as db:
            query = sa.select(uploads.c.sha256, uploads.c.name, uploads.c.nbytes).where(uploads.c.student == student)
            return [tuple(row) for row in db.execute(query.order_by(uploads.c.created))]

    def disk_bytes(self, student: str) -> int:
        """Bytes ``student``'s snapshots, resume states (the optimizer's moments: about twice the weights) and uploads
        take."""
        with self.engine.connect() as db:
            kept = db.execute(
                sa.select(sa.func.coalesce(sa.func.sum(snapshots.c.nbytes), 0))
                .join(runs, runs.c.id == snapshots.c.run)
                .where(runs.c.student == student)
            ).scalar_one()
            kept += db.execute(
                sa.select(sa.func.coalesce(sa.func.sum(resumes.c.nbytes), 0))
                .join(runs, runs.c.id == resumes.c.run)
                .where(runs.c.student == student)
            ).scalar_one()
            uploaded = db.execute(
                sa.select(sa.func.coalesce(sa.func.sum(uploads.c.nbytes), 0)).where(uploads.c.student == student)
            ).scalar_one()
        return int(kept) + int(uploaded)

    def stale_runs(self, older_than_s: float) -> list[RunRecord]:
        """Ended or parked runs nobody has touched for ``older_than_s`` seconds (retention)."""
        cutoff = time.time() - older_than_s
        return self._runs(sa.and_(runs.c.updated < cutoff, runs.c.state.not_in(LIVE_STATES)))


def config_json(config: Any) -> dict:
    """A run's config as plain JSON (a dataclass or a dict; anything else is said as text).

    >>> config_json({"steps": 300, "path": object})["steps"]
    300
    """
    from dataclasses import asdict, is_dataclass

    value = asdict(config) if is_dataclass(config) and not isinstance(config, type) else config
    return json.loads(json.dumps(value if isinstance(value, dict) else {"config": value}, default=str))
