"""The registry's rows: students, their runs, each run's curve, samples, snapshot and resume-state files, and
uploads (SQLAlchemy Core tables, the same statements on SQLite and PostgreSQL). The schema is versioned with
Alembic (:mod:`llmviz.lab.migrations`): a change to these tables is a new revision there.

Only portable SQL: no ``INSERT … ON CONFLICT``. Weights never go in the database: :mod:`llmviz.lab.storage` keeps
them as files, and these rows list them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import sqlalchemy as sa

from llmviz.lab.holders import this_holder
from llmviz.lab.work import UnitOfWork

# states a run's row can be in; the first three are a job's own while it lives (llmviz.jobs.events.JobState)
LIVE_STATES = ("queued", "running", "paused")
STATES = (*LIVE_STATES, "finished", "stopped", "failed", "parked", "interrupted")
MAX_TEXT = 4000  # the longest sample or label kept
BY = ("student", "teacher", "server")  # who changed a run's state (RunRecord.state_by)

# what a run is (stored with it; a page lists and opens only the kinds it can use)
TRAINING, RACE, FINETUNE, LORA, AUTOENCODER, SFT, DPO, TASK = (
    "training",
    "race",
    "finetune",
    "lora",
    "autoencoder",
    "sft",
    "dpo",
    "task",
)
KINDS = (TRAINING, RACE, FINETUNE, LORA, AUTOENCODER, SFT, DPO, TASK)
MODEL_KINDS = (TRAINING, RACE, FINETUNE, LORA, SFT, DPO)  # runs whose snapshots are language models

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
    sa.Column("state_by", sa.String(16), nullable=True),  # who changed its state last: BY
    sa.Column("state_step", sa.Integer, nullable=True),  # at which step
    sa.Column("resumes", sa.JSON, nullable=False, default=list),  # the steps it was resumed at, in order
    sa.Column("wanted_by", sa.String(16), nullable=True),  # who asked for "wanted"
    sa.Index("lab_runs_student", "student"),
)

points = sa.Table(
    "lab_points",
    metadata,
    sa.Column("run", sa.String(32), sa.ForeignKey("lab_runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("loss", sa.Float, nullable=True),
    sa.Column("val_loss", sa.Float, nullable=True),
    sa.Column("extra", sa.JSON, nullable=True),  # a run kind's own measures at this step (DPO's margin, …)
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
    state_by: str | None = None
    state_step: int | None = None
    resumes: list = field(default_factory=list)
    wanted_by: str | None = None

    @property
    def resumable(self) -> bool:
        """Parked or interrupted: it ended before its last step, with its snapshots, curve and settings kept; it can
        go on from its last snapshot (:meth:`llmviz.jobs.manager.JobManager.resume_kept`)."""
        return self.state in ("parked", "interrupted")


_RUN_FIELDS = {f.name for f in fields(RunRecord)}


def _clip(text: str | None, limit: int = MAX_TEXT) -> str | None:
    return None if text is None else str(text)[:limit]


def _finite(value: float | None) -> float | None:
    return None if value is None or value != value or value in (float("inf"), float("-inf")) else float(value)


def _measures(given: dict | None) -> dict[str, float] | None:
    """The finite numbers of ``given`` (a step's measures), at most 16 of them; None when there are none.

    >>> _measures({"margin": 0.25, "accuracy": float("nan"), "note": "x"})
    {'margin': 0.25}
    """
    kept = {
        str(name)[:40]: float(value)
        for name, value in (given or {}).items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }
    return dict(list(kept.items())[:16]) or None


class Records:
    """The rows (``registry.records``, a part of :class:`llmviz.lab.registry.Registry`). Every method is one
    transaction of its own, or a part of its thread's unit of work (``work``:
    :meth:`llmviz.lab.work.UnitOfWork.transaction`).

    >>> from llmviz.lab.registry import make_engine
    >>> from llmviz.lab.migrations import schema
    >>> engine = make_engine("sqlite://")
    >>> _ = schema.upgrade(engine)
    >>> records = Records(UnitOfWork(engine))
    >>> records.ensure_student("s1")
    >>> records.add_run(RunRecord(id="r1", student="s1", kind="training", label="Run 1", total=30, state="queued"))
    >>> [run.id for run in records.runs("s1")], records.runs("s2")
    (['r1'], [])
    """

    def __init__(self, work: UnitOfWork):
        self.work = work

    # ------------------------------------------------------------------ students

    def ensure_student(
        self,
        student: str,
        name: str | None = None,
        teacher: bool | None = None,
        created: float | None = None,
        seen: float | None = None,
    ) -> None:
        """Make ``student``'s row if there is none; set its name or teacher flag when given; mark it seen (now, or at
        ``seen``; a new row made at ``created``: a rebuild restores both from the student's folder)."""
        now = time.time()
        values: dict[str, Any] = {"seen": seen or now}
        if name is not None:
            values["name"] = _clip(name, 80)
        if teacher is not None:
            values["teacher"] = bool(teacher)
        with self.work.begin() as db:
            changed = db.execute(sa.update(students).where(students.c.id == student).values(**values)).rowcount
            if not changed:
                try:
                    with db.begin_nested():
                        db.execute(
                            sa.insert(students).values(
                                id=student,
                                name=values.get("name", ""),
                                teacher=values.get("teacher", False),
                                created=created or now,
                                seen=values["seen"],
                            )
                        )
                except sa.exc.IntegrityError:  # another process made it meanwhile
                    db.execute(sa.update(students).where(students.c.id == student).values(**values))

    def student(self, student: str) -> dict | None:
        with self.work.connect() as db:
            row = db.execute(sa.select(students).where(students.c.id == student)).mappings().first()
        return dict(row) if row else None

    def students(self) -> list[dict]:
        with self.work.connect() as db:
            return [dict(row) for row in db.execute(sa.select(students).order_by(students.c.created)).mappings()]

    # ------------------------------------------------------------------ runs

    def add_run(self, record: RunRecord) -> None:
        self.add_runs([record])

    def add_runs(self, records: list[RunRecord]) -> None:
        """Add runs' rows in one transaction (a race's runs: all of them or none)."""
        with self.work.begin() as db:
            for record in records:
                db.execute(sa.insert(runs).values(**_row(record)))

    def update_run(self, run_id: str, **values: Any) -> None:
        unknown = set(values) - _RUN_FIELDS
        if unknown:
            raise KeyError(f"no such run fields: {sorted(unknown)}")
        if "state" in values and values["state"] not in STATES:
            raise ValueError(f"no such state: {values['state']}")
        if "error" in values:
            values["error"] = _clip(values["error"])
        with self.work.begin() as db:
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
        with self.work.connect() as db:
            rows = db.execute(sa.select(runs).where(where).order_by(runs.c.created, runs.c.id)).mappings()
            return [RunRecord(**dict(row)) for row in rows]

    def delete_run(self, student: str, run_id: str) -> bool:
        """Forget ``student``'s run ``run_id`` with its curve, samples and snapshot rows; False if not theirs."""
        with self.work.begin() as db:
            for table in (points, samples, snapshots, resumes):
                owned = sa.select(runs.c.id).where(runs.c.id == run_id, runs.c.student == student)
                db.execute(sa.delete(table).where(table.c.run.in_(owned)))
            return bool(db.execute(sa.delete(runs).where(runs.c.id == run_id, runs.c.student == student)).rowcount)

    # ------------------------------------------------------------------ curves, samples, snapshots

    def add_points(
        self,
        run_id: str,
        rows: Iterable[tuple[int, float | None, float | None]],
        step: int | None = None,
        measures: dict[int, dict[str, float]] | None = None,
    ) -> None:
        """Add ``(step, training loss, validation loss)`` rows (steps already there are left alone), each with the
        run kind's own ``measures`` at that step where given (DPO's ratios, margin and accuracy: :meth:`series`);
        keeps the run's best validation loss and last loss up to date, and its ``step`` when given (in the same
        transaction: the row never says a step behind its curve)."""
        rows = [(int(at), _finite(loss), _finite(val)) for at, loss, val in rows]
        if not rows:
            return
        measures = measures or {}
        with self.work.begin() as db:
            have = set(
                db.execute(
                    sa.select(points.c.step).where(points.c.run == run_id, points.c.step >= min(r[0] for r in rows))
                ).scalars()
            )
            new = [
                {"run": run_id, "step": s, "loss": loss, "val_loss": val, "extra": _measures(measures.get(s))}
                for s, loss, val in rows
                if s not in have
            ]
            if new:
                db.execute(sa.insert(points), new)
            vals = [val for _, _, val in rows if val is not None]
            best = db.execute(sa.select(runs.c.best_val_loss).where(runs.c.id == run_id)).scalar()
            values: dict[str, Any] = {"last_loss": rows[-1][1], "updated": time.time()}
            if step is not None:
                values["step"] = int(step)
            if vals and (best is None or min(vals) < best):
                values["best_val_loss"] = min(vals)
            db.execute(sa.update(runs).where(runs.c.id == run_id).values(**values))

    def series(self, run_id: str) -> dict[str, list[tuple[int, float]]]:
        """The run kind's own measures (:meth:`add_points`' ``measures``), ``name → [(step, value), …]`` by step."""
        out: dict[str, list[tuple[int, float]]] = {}
        with self.work.connect() as db:
            query = (
                sa.select(points.c.step, points.c.extra)
                .where(points.c.run == run_id, points.c.extra.is_not(None))
                .order_by(points.c.step)
            )
            for at, extra in db.execute(query):
                for name, value in (extra or {}).items():
                    out.setdefault(str(name), []).append((int(at), float(value)))
        return out

    def curve(self, run_id: str, since_step: int = 0) -> list[tuple[int, float | None, float | None]]:
        """``(step, loss, validation loss)`` of ``run_id`` from ``since_step`` on, by step."""
        with self.work.connect() as db:
            return [
                tuple(row)
                for row in db.execute(
                    sa.select(points.c.step, points.c.loss, points.c.val_loss)
                    .where(points.c.run == run_id, points.c.step >= since_step)
                    .order_by(points.c.step)
                )
            ]

    def mark_resumed(self, run_id: str, step: int, holder: str, by: str = "student") -> None:
        """``run_id`` goes on from ``step`` in the process ``holder``: queued again, its resume step recorded (one
        run, one history: the same id, label and curve), its curve's points after ``step`` dropped (they are
        trained again)."""
        now = time.time()
        with self.work.begin() as db:
            found = db.execute(sa.select(runs.c.resumes).where(runs.c.id == run_id)).scalar()
            steps = [*list(found or []), int(step)]
            db.execute(sa.delete(points).where(points.c.run == run_id, points.c.step > step))
            db.execute(sa.delete(samples).where(samples.c.run == run_id, samples.c.step > step))
            db.execute(
                sa.update(runs)
                .where(runs.c.id == run_id)
                .values(
                    state="queued",
                    state_by=by,
                    state_step=int(step),
                    step=int(step),
                    resumes=steps,
                    error=None,
                    holder=holder,
                    heartbeat=now,
                    updated=now,
                    wanted=None,
                    wanted_by=None,
                )
            )

    def curves(self, run_ids: list[str]) -> dict[str, list[tuple[int, float | None, float | None]]]:
        """Many runs' curves in one query (the class view)."""
        out: dict[str, list] = {run_id: [] for run_id in run_ids}
        if not run_ids:
            return out
        with self.work.connect() as db:
            query = (
                sa.select(points.c.run, points.c.step, points.c.loss, points.c.val_loss)
                .where(points.c.run.in_(run_ids))
                .order_by(points.c.run, points.c.step)
            )
            for run_id, step, loss, val in db.execute(query):
                out[run_id].append((step, loss, val))
        return out

    def add_sample(self, run_id: str, step: int, text: str) -> None:
        with self.work.begin() as db:
            db.execute(sa.delete(samples).where(samples.c.run == run_id, samples.c.step == step))
            db.execute(sa.insert(samples).values(run=run_id, step=step, text=_clip(text)))

    def samples(self, run_id: str) -> list[tuple[int, str]]:
        with self.work.connect() as db:
            query = sa.select(samples.c.step, samples.c.text).where(samples.c.run == run_id).order_by(samples.c.step)
            return [tuple(row) for row in db.execute(query)]

    def add_snapshot(self, run_id: str, step: int, path: str, nbytes: int) -> None:
        with self.work.begin() as db:
            db.execute(sa.delete(snapshots).where(snapshots.c.run == run_id, snapshots.c.step == step))
            db.execute(sa.insert(snapshots).values(run=run_id, step=step, path=path, nbytes=nbytes))

    def drop_snapshot(self, run_id: str, step: int) -> None:
        with self.work.begin() as db:
            db.execute(sa.delete(snapshots).where(snapshots.c.run == run_id, snapshots.c.step == step))

    def snapshots(self, run_id: str) -> list[tuple[int, str, int]]:
        """``(step, path, bytes)`` of a run's kept snapshots, by step."""
        with self.work.connect() as db:
            query = (
                sa.select(snapshots.c.step, snapshots.c.path, snapshots.c.nbytes)
                .where(snapshots.c.run == run_id)
                .order_by(snapshots.c.step)
            )
            return [tuple(row) for row in db.execute(query)]

    def set_resume(self, run_id: str, step: int, path: str, nbytes: int) -> str | None:
        """Keep ``run_id``'s resume state at ``step`` (one per run: it replaces the run's older one, whose path is
        returned for the caller to delete when it is another file)."""
        with self.work.begin() as db:
            old = db.execute(sa.select(resumes.c.path).where(resumes.c.run == run_id)).scalar()
            db.execute(sa.delete(resumes).where(resumes.c.run == run_id))
            db.execute(sa.insert(resumes).values(run=run_id, step=step, path=path, nbytes=nbytes))
        return old if old != path else None

    def resume_state(self, run_id: str) -> tuple[int, str, int] | None:
        """``(step, path, bytes)`` of ``run_id``'s kept resume state, or None (a run kept before resume states were,
        a finished run, or one whose state was thinned: it resumes with its weights only)."""
        with self.work.connect() as db:
            row = db.execute(sa.select(resumes.c.step, resumes.c.path, resumes.c.nbytes).where(resumes.c.run == run_id))
            found = row.first()
        return (int(found[0]), str(found[1]), int(found[2])) if found else None

    def drop_resume(self, run_id: str) -> str | None:
        """Forget ``run_id``'s resume state; returns its path (for the caller to delete the file)."""
        with self.work.begin() as db:
            old = db.execute(sa.select(resumes.c.path).where(resumes.c.run == run_id)).scalar()
            db.execute(sa.delete(resumes).where(resumes.c.run == run_id))
        return old

    def student_resumes(self, student: str) -> list[tuple[str, int, str, int]]:
        """``(run, step, path, bytes)`` of every resume state of ``student``, oldest run first."""
        with self.work.connect() as db:
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
        with self.work.connect() as db:
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
        with self.work.connect() as db:
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
        with self.work.begin() as db:
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
        with self.work.connect() as db:
            query = sa.select(uploads.c.sha256, uploads.c.name, uploads.c.nbytes).where(uploads.c.student == student)
            return [tuple(row) for row in db.execute(query.order_by(uploads.c.created))]

    def upload_names(self) -> dict[str, dict[str, str]]:
        """Every student's kept texts' names: student → sha256 → name (what each ``student.json`` keeps)."""
        out: dict[str, dict[str, str]] = {}
        with self.work.connect() as db:
            query = sa.select(uploads.c.student, uploads.c.sha256, uploads.c.name).order_by(uploads.c.created)
            for student, digest, name in db.execute(query):
                out.setdefault(str(student), {})[str(digest)] = str(name)
        return out

    def disk_bytes(self, student: str) -> int:
        """Bytes ``student``'s snapshots, resume states (the optimizer's moments: about twice the weights) and uploads
        take."""
        with self.work.connect() as db:
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


def _row(record: RunRecord) -> dict:
    """A run's row from its record (the kind "train" is kept as "training"; the holder is this process)."""
    now = time.time()
    values = {name: getattr(record, name) for name in _RUN_FIELDS}
    values.update(
        kind=TRAINING if record.kind == "train" else record.kind,  # the name kept before kinds were
        label=_clip(record.label, 200),
        created=record.created or now,
        updated=record.updated or now,  # a rebuilt run keeps when it was last touched (retention reads it)
        holder=record.holder or this_holder(),
        heartbeat=now,
        resumes=list(record.resumes or []),
    )
    return values


def config_json(config: Any) -> dict:
    """A run's config as plain JSON (a dataclass or a dict; anything else is said as text).

    >>> config_json({"steps": 300, "path": object})["steps"]
    300
    """
    from dataclasses import asdict, is_dataclass

    value = asdict(config) if is_dataclass(config) and not isinstance(config, type) else config
    return json.loads(json.dumps(value if isinstance(value, dict) else {"config": value}, default=str))
