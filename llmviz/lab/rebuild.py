"""Each run folder carries its own record, so a lost, damaged or replaced database costs nothing.

- :func:`write_run_file`: ``<runs folder>/lab/<student>/<run>/run.json`` (written atomically: a temporary file, then a
  rename), beside the run's snapshots and resume state: the run's row (kind, label, model, settings, state, step,
  totals, when it was made and last touched), its curve points and samples, and the steps of its snapshot and resume
  files; ``<student>/student.json`` keeps every student's name and teacher flag, when they were first and last seen,
  and the names of their kept texts (a rebuild restores these times: retention counts from a run's own).
- :class:`Guard` (the keeper's thread calls :meth:`Guard.tick` every second): notices that the database file was
  deleted, replaced or damaged (:mod:`llmviz.lab.faults`), says so in one sentence, rebuilds it from the folders and
  lets the keeper write its live runs afresh; then mirrors every row that changed into its folder
  (:meth:`Guard.sync`). At start, a new database with run folders beside it is rebuilt the same way.
- :func:`rebuild`: merges every folder's record into the registry (``python -m llmviz lab rebuild``): runs and
  students missing are added, a curve's missing points and a run's missing snapshot rows too; what the database has
  already is left alone, so it can be run again, and by two processes at once, safely.

>>> import tempfile
>>> from llmviz.lab.records import RunRecord
>>> from llmviz.lab.service import Lab
>>> folder = tempfile.mkdtemp()
>>> lab = Lab.at(folder)
>>> records = lab.registry.records
>>> records.ensure_student("s1", name="Ada")
>>> records.add_run(RunRecord(id="r1", student="s1", kind="train", label="Run 1", total=60, state="finished"))
>>> records.add_points("r1", [(0, 4.2, 4.3), (10, 3.9, None)])
>>> Guard(lab).sync()
1
>>> fresh = Lab.at(folder, url="sqlite://")  # a new, empty database beside the same folders
>>> rebuild(fresh).runs
1
>>> [(r.id, r.state, r.label) for r in fresh.registry.records.runs("s1")], fresh.registry.records.curve("r1")
([('r1', 'finished', 'Run 1')], [(0, 4.2, 4.3), (10, 3.9, None)])
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import time
from dataclasses import dataclass, fields
from typing import Any

from llmviz.errors import CheckpointError
from llmviz.lab import faults
from llmviz.lab.holders import holder_alive
from llmviz.lab.records import LIVE_STATES, TRAINING, RunRecord, metadata
from llmviz.lab.storage import safe_name

log = logging.getLogger(__name__)

RUN_FILE = "run.json"
STUDENT_FILE = "student.json"
FORMAT = "llmviz-run"
MAX_RECORD_BYTES = 64 * 2**20  # no run.json read back is bigger (a planted file is refused)
_VOLATILE = {"training", "memory", "wanted", "heartbeat"}  # what a process holds now, never restored
_STEP_FILE = re.compile(r"^(step|resume)-(\d{1,12})\.safetensors$")


@dataclass
class Rebuilt:
    """What :func:`rebuild` added."""

    students: int = 0
    runs: int = 0
    points: int = 0
    snapshots: int = 0
    skipped: list[str] = dataclasses.field(default_factory=list)  # folders whose record could not be read
    lost: list[str] = dataclasses.field(default_factory=list)  # what a damaged record took with it, in words

    def line(self) -> str:
        """One line for the CLI and the log.

        >>> Rebuilt(2, 3, 120, 9).line()
        'rebuilt 3 run(s) of 2 student(s): 120 curve point(s), 9 snapshot(s)'
        """
        return (
            f"rebuilt {self.runs} run(s) of {self.students} student(s): {self.points} curve point(s), "
            f"{self.snapshots} snapshot(s)"
            + (f"; {len(self.skipped)} folder(s) unreadable" if self.skipped else "")
            + "".join(f"; {lost}" for lost in self.lost)
        )


# ---------------------------------------------------------------------------------------------------- writing


def run_record(lab, record: RunRecord) -> dict:
    """What ``run.json`` holds for ``record`` (read from the registry now)."""
    registry = lab.registry
    row = {name: value for name, value in dataclasses.asdict(record).items() if name not in _VOLATILE}
    resume = registry.records.resume_state(record.id)
    return {
        "format": FORMAT,
        "version": 1,
        "run": row,
        "points": [list(point) for point in registry.records.curve(record.id)],
        "series": {
            name: [list(point) for point in values] for name, values in registry.records.series(record.id).items()
        },
        "samples": [list(sample) for sample in registry.records.samples(record.id)],
        "snapshots": [int(step) for step, _, _ in registry.records.snapshots(record.id)],
        "resume": int(resume[0]) if resume else None,
        "written": time.time(),
    }


def write_run_file(lab, record: RunRecord) -> str:
    """Write ``record``'s ``run.json`` in its folder; returns its path. A run deleted meanwhile leaves none."""
    folder = lab.storage.run_folder(record.student, record.id)
    path = f"{folder}/{RUN_FILE}"
    data = json.dumps(run_record(lab, record), separators=(",", ":"), allow_nan=False, default=str).encode()
    lab.storage.write_atomic(path, data)
    if lab.registry.records.run(record.student, record.id) is None:  # deleted while it was written: no ghost
        lab.storage.delete_run(record.student, record.id)
    return path


def write_student_file(lab, student: dict, uploads: dict[str, str] | None = None) -> None:
    """Write ``student``'s ``student.json`` (their row: name, teacher flag, when first and last seen; and the names of
    their kept texts, ``uploads``: sha256 → name, read from the registry when not given)."""
    if uploads is None:
        uploads = {digest: name for digest, name, _ in lab.registry.records.uploads(student["id"])}
    data = {
        "id": student["id"],
        "name": student["name"],
        "teacher": bool(student["teacher"]),
        "created": float(student["created"]),
        "seen": float(student["seen"]),
        "uploads": uploads,
    }
    folder = f"{lab.storage.base.rstrip('/')}/{safe_name(student['id'])}"
    lab.storage.write_atomic(f"{folder}/{STUDENT_FILE}", json.dumps(data).encode())


# ---------------------------------------------------------------------------------------------------- reading


def _read_json(fs, path: str) -> dict | None:
    try:
        if fs.size(path) > MAX_RECORD_BYTES:
            return None
        with fs.open(path, "rb") as source:
            found = json.loads(source.read())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _files(fs, folder: str) -> dict[str, dict[int, tuple[str, int]]]:
    """The snapshot and resume files of a run folder: kind → step → (path, bytes)."""
    out: dict[str, dict[int, tuple[str, int]]] = {"step": {}, "resume": {}}
    for info in fs.ls(folder, detail=True):
        name = info["name"].rsplit("/", 1)[-1]
        matched = _STEP_FILE.match(name)
        if matched and info.get("type") == "file" and info.get("size", 0) > 0:
            out[matched.group(1)][int(matched.group(2))] = (info["name"], int(info["size"]))
    return out


def _record_of(data: dict, student: str, run_id: str) -> RunRecord | None:
    """The RunRecord in a run file, if it is one and names its own folder's student and run."""
    row = data.get("run")
    if data.get("format") != FORMAT or not isinstance(row, dict):
        return None
    if row.get("id") != run_id or row.get("student") != student:
        return None  # a file copied or planted into another student's folder opens nothing
    known = {f.name for f in fields(RunRecord)} - _VOLATILE
    values = {name: value for name, value in row.items() if name in known}
    try:
        record = RunRecord(**values)
    except TypeError:
        return None
    if record.state in LIVE_STATES and holder_alive(record.holder) is not True:
        record = dataclasses.replace(record, state="interrupted")  # its process has gone: it resumes, it is not lost
    return record


def _points(data: dict) -> list[tuple[int, float | None, float | None]]:
    out = []
    for point in data.get("points") or []:
        if isinstance(point, list) and len(point) == 3 and isinstance(point[0], int):
            out.append((point[0], point[1], point[2]))
    return out


def _measures(data: dict) -> dict[int, dict[str, float]]:
    """The run kind's measures by step from a run file's ``series`` (``name → [[step, value], …]``).

    >>> _measures({"series": {"margin": [[1, 0.5], [2, 0.75]], "bad": "x"}})
    {1: {'margin': 0.5}, 2: {'margin': 0.75}}
    """
    out: dict[int, dict[str, float]] = {}
    series = data.get("series")
    for name, values in (series if isinstance(series, dict) else {}).items():
        for point in values if isinstance(values, list) else []:
            if isinstance(point, list) and len(point) == 2 and isinstance(point[0], int):
                if isinstance(point[1], int | float):
                    out.setdefault(point[0], {})[str(name)] = float(point[1])
    return out


def _merge_run(lab, student: str, run_id: str, folder: str, data: dict, done: Rebuilt) -> None:
    """Merge one run folder's record (``data``, its ``run.json``) into the registry: its row, curve, samples,
    snapshots and resume state, where missing (``done`` counts what was added; a file that is no record, skipped)."""
    record = _record_of(data, student, run_id)
    if record is None:
        done.skipped.append(f"{student}/{run_id}")
        return
    _merge_row(lab.registry, record, done)
    _merge_curve(lab.registry, run_id, data, done)
    _merge_files(lab, run_id, folder, data, done)


def _merge_row(registry, record: RunRecord, done: Rebuilt) -> None:
    """Add the run's row where it is missing; a row behind the file's step (and not live) takes its state and step."""
    have = registry.records.run(record.student, record.id)
    if have is None:
        registry.records.add_run(record)
        done.runs += 1
    elif have.step < record.step and have.state not in LIVE_STATES:
        registry.records.update_run(record.id, state=record.state, step=record.step, error=record.error)


def _merge_curve(registry, run_id: str, data: dict, done: Rebuilt) -> None:
    """Add the file's curve points and samples the registry does not have."""
    points = _points(data)
    before = len(registry.records.curve(run_id)) if points else 0
    registry.records.add_points(run_id, points, measures=_measures(data))
    done.points += len(registry.records.curve(run_id)) - before if points else 0
    have_samples = {step for step, _ in registry.records.samples(run_id)}
    for sample in data.get("samples") or []:
        if isinstance(sample, list) and len(sample) == 2 and sample[0] not in have_samples:
            registry.records.add_sample(run_id, int(sample[0]), str(sample[1]))


def _merge_files(lab, run_id: str, folder: str, data: dict, done: Rebuilt) -> None:
    """Add rows for the snapshot files in the run's folder that have none, and its resume state where it has none."""
    registry = lab.registry
    files = _files(lab.storage.fs, folder)
    kept = {step for step, _, _ in registry.records.snapshots(run_id)}
    for step, (path, nbytes) in sorted(files["step"].items()):
        if step not in kept:
            registry.records.add_snapshot(run_id, step, path, nbytes)
            done.snapshots += 1
    if registry.records.resume_state(run_id) is None:
        chosen = resume_step(files, data.get("resume"))
        if chosen is not None:
            path, nbytes = files["resume"][chosen]
            registry.records.set_resume(run_id, chosen, path, nbytes)


def resume_step(files: dict[str, dict[int, tuple[str, int]]], wanted: Any) -> int | None:
    """The step whose resume state a rebuilt run keeps: the one its record names (``wanted``) where its file and its
    snapshot's are both there, else the newest such step; None when there is none.

    >>> files = {"step": {10: ("s10", 1), 20: ("s20", 1)}, "resume": {10: ("r10", 1), 20: ("r20", 1), 30: ("r30", 1)}}
    >>> resume_step(files, 10), resume_step(files, 30), resume_step(files, None)
    (10, 20, 20)
    >>> resume_step({"step": {}, "resume": {30: ("r30", 1)}}, 30) is None
    True
    """
    usable = [step for step in files["resume"] if step in files["step"]]
    return wanted if wanted in usable else max(usable, default=None)


def _merge_student(lab, student: str, folder: str, done: Rebuilt) -> None:
    """Merge one student's folder into the registry: the student (named as ``student.json`` says, when new), their
    kept texts, and each run folder that has a ``run.json``."""
    fs = lab.storage.fs
    about = _read_json(fs, f"{folder}/{STUDENT_FILE}")
    if about is None and fs.exists(f"{folder}/{STUDENT_FILE}"):
        done.lost.append(
            f"{student}'s {STUDENT_FILE} is damaged: their name, teacher flag, times and kept texts' names are not "
            "restored"
        )
    about = about or {}
    runs = _run_folders(fs, folder)
    if not runs and not about:
        return
    _merge_about(lab.registry, student, about, done)
    _merge_uploads(lab, student, folder, about)
    for run_folder in sorted(runs):
        run_id = run_folder.rsplit("/", 1)[-1]
        try:
            safe_name(run_id)
        except ValueError:
            continue
        data = _read_json(fs, f"{run_folder}/{RUN_FILE}")
        if data is None:
            _merge_damaged_run(lab, student, run_id, run_folder, done)
            continue
        _merge_run(lab, student, run_id, run_folder, data, done)


def _merge_damaged_run(lab, student: str, run_id: str, folder: str, done: Rebuilt) -> None:
    """A run folder whose ``run.json`` is damaged: its row rebuilt from what its newest snapshot file says (its step,
    settings and model; stopped), its snapshot rows from its files, and what was lost said (``done.lost``)."""
    files = _files(lab.storage.fs, folder)
    if not files["step"]:
        done.skipped.append(f"{student}/{run_id}")
        return
    step = max(files["step"])
    try:
        _, meta = lab.storage.read_snapshot(files["step"][step][0])
    except (OSError, ValueError, CheckpointError):
        meta = {}
    config = meta.get("train_config") if isinstance(meta.get("train_config"), dict) else {}
    model = meta.get("model") if isinstance(meta.get("model"), dict) else {}
    steps = config.get("steps")
    record = RunRecord(
        id=run_id,
        student=student,
        kind=TRAINING,
        label=f"Run {run_id} (rebuilt from its snapshots)",
        state="stopped",
        total=steps if isinstance(steps, int) and steps >= step else step,
        step=step,
        model=str(model.get("kind", "")),
        config=config,
    )
    _merge_row(lab.registry, record, done)
    _merge_files(lab, run_id, folder, {}, done)
    done.lost.append(
        f"{student}/{run_id}'s {RUN_FILE} is damaged: rebuilt from its {len(files['step'])} snapshot file(s) up to "
        f"step {step}; its curve, samples, label and state are lost"
    )


def _run_folders(fs, folder: str) -> list[str]:
    """The folders in a student's ``folder`` that hold a ``run.json``."""
    return [
        info["name"]
        for info in fs.ls(folder, detail=True)
        if info.get("type") == "directory" and fs.exists(f"{info['name']}/{RUN_FILE}")
    ]


def student_fields(about: dict) -> dict:
    """What a student's ``student.json`` (``about``) gives, where it is of the right type: their name, teacher flag,
    and when they were first and last seen (``created``, ``seen``).

    >>> student_fields({"name": "Ada", "teacher": True, "created": 1.5e9, "seen": 1.6e9})
    {'name': 'Ada', 'teacher': True, 'created': 1500000000.0, 'seen': 1600000000.0}
    >>> student_fields({"name": 3, "teacher": "yes", "created": "x", "seen": True})
    {'name': None, 'teacher': None, 'created': None, 'seen': None}
    """
    name = about.get("name") if isinstance(about.get("name"), str) else None
    teacher = True if about.get("teacher") is True else None
    good: dict[str, float | None] = {}
    for key in ("created", "seen"):
        value = about.get(key)
        good[key] = float(value) if isinstance(value, int | float) and _a_time(value) else None
    return {"name": name, "teacher": teacher, **good}


def _a_time(value: Any) -> bool:
    """Is ``value`` a time a student file may hold (seconds since 1970, a number, not a flag)?"""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e11


def _merge_about(registry, student: str, about: dict, done: Rebuilt) -> None:
    """Add the student where missing, named (and a teacher, first and last seen) as ``about`` says; a student there
    already is left alone."""
    fresh = registry.records.student(student) is None
    if fresh:
        registry.records.ensure_student(student, **student_fields(about))
    done.students += fresh


def _merge_uploads(lab, student: str, folder: str, about: dict) -> None:
    """Add a row for each kept text in the student's ``uploads`` folder, named as ``about`` says (or "a kept text")."""
    fs, registry = lab.storage.fs, lab.registry
    names: dict = about["uploads"] if isinstance(about.get("uploads"), dict) else {}
    if not fs.exists(f"{folder}/uploads"):
        return
    for info in fs.ls(f"{folder}/uploads", detail=True):
        digest = info["name"].rsplit("/", 1)[-1]
        if re.fullmatch(r"[0-9a-f]{64}", digest):
            registry.records.add_upload(student, digest, str(names.get(digest, "a kept text")), int(info["size"]))


def rebuild(lab) -> Rebuilt:
    """Merge every run folder's record into ``lab``'s registry (see the module's docstring); what it added."""
    done = Rebuilt()
    fs, base = lab.storage.fs, lab.storage.base.rstrip("/")
    if not fs.exists(base):
        return done
    for info in sorted(fs.ls(base, detail=True), key=lambda info: info["name"]):
        student = info["name"].rsplit("/", 1)[-1]
        if info.get("type") != "directory":
            continue
        try:
            safe_name(student)
        except ValueError:
            continue
        _merge_student(lab, student, info["name"], done)
    return done


def has_run_files(lab) -> bool:
    """Is there at least one ``run.json`` under the lab's folder?"""
    fs, base = lab.storage.fs, lab.storage.base.rstrip("/")
    return bool(fs.exists(base) and fs.glob(f"{base}/*/*/{RUN_FILE}"))


# ---------------------------------------------------------------------------------------------------- the guard


@contextlib.contextmanager
def _rebuild_lock(path: str | None):
    """One process at a time rebuilds a SQLite file (an advisory lock on a file beside it)."""
    if path is None:
        yield
        return
    import fcntl

    with open(f"{path}.rebuild-lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_schema(registry) -> None:
    """Make the registry's tables where they are missing (a new or rebuilt file)."""
    try:
        from llmviz.lab.migrations import schema
    except ImportError:  # a registry before schema revisions
        metadata.create_all(registry.engine)
    else:
        registry.revision = schema.upgrade(registry.engine)


class Guard:
    """Keeps ``lab``'s database and its run folders in step (see the module's docstring)."""

    def __init__(self, lab, on_rebuilt=None):
        self.lab = lab
        self.watch = lab.registry.watch
        self.on_rebuilt = on_rebuilt  # called after a rebuild (the keeper writes its live runs afresh)
        self._mirrored: dict[str, float] = {}
        self._students: dict[str, tuple] = {}
        # a file the keeper could not write (a full disk, a folder it may not write): said once, counted, and once
        # more when the writes go through again
        self.files = faults.FaultLog(again="The lab writes its runs' files again.")
        self._schema = not self.watch.down  # the tables made (a database out at start gets them once it answers)
        self._generation = self.watch.generation  # the file the rows were last rebuilt into (Watch.generation)

    def start(self) -> Rebuilt | None:
        """At the app's start: a damaged SQLite file is put aside, and a database with no students beside run folders
        is rebuilt from them."""
        if self.watch.path is not None and self.watch.damaged():
            try:
                return self.recover()
            except Exception:  # noqa: BLE001
                log.warning("The lab's database could not be rebuilt yet; it tries again.", exc_info=True)
                return None
        try:
            if self.lab.registry.records.students() or not has_run_files(self.lab):
                return None
            done = rebuild(self.lab)
        except faults.LabUnavailable:
            self._schema = False  # tried again (tables, then this) once the database answers
            return None
        except Exception:  # noqa: BLE001 - the tick tries again; the fault was said once
            log.warning("The lab could not be rebuilt from its run folders at start; it tries again.", exc_info=True)
            return None
        log.warning("The lab's database was new: %s from the run folders.", done.line())
        return done

    def tick(self) -> bool:
        """Once a second: recover a deleted, replaced or damaged database; True when the database may be written."""
        watch = self.watch
        changed = watch.replaced() or watch.generation != self._generation  # here, or taken by the lab's door first
        if watch.path is not None and (changed or watch.damaged()):
            try:
                self.recover()
            except Exception:  # noqa: BLE001
                log.warning("The lab's database could not be rebuilt yet; it tries again.", exc_info=True)
                return False
        if watch.refusal() is not None:
            return False
        if not self._schema:
            try:
                ensure_schema(self.lab.registry)
                self._schema = True
                self.start()
            except faults.LabUnavailable:
                return False
        return True

    def recover(self) -> Rebuilt:
        """The SQLite file was deleted, replaced or is damaged: (move a damaged one aside,) rebuild from the folders."""
        watch, registry = self.watch, self.lab.registry
        with _rebuild_lock(watch.path):
            registry.engine.dispose()  # connections to the old file go
            assert watch.path is not None
            damaged = watch.damaged()  # its header, read from the file: a stale -wal can hide the damage from SQLite
            if damaged:
                aside = f"{watch.path}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"
                os.replace(watch.path, aside)
                with contextlib.suppress(FileNotFoundError):  # its journal goes with it: SQLite reads it as aside's
                    os.replace(f"{watch.path}-wal", f"{aside}-wal")
                what = f"was damaged (kept aside as {os.path.basename(aside)})"
            else:
                what = "was deleted or replaced while the app ran"
            faults.drop_stale_journal(watch.path)  # the old file's journal must not be read as the new file's
            watch.clear()
            ensure_schema(registry)
            done = rebuild(self.lab)
            watch.remember_file()
            self._generation = watch.generation
        self._mirrored.clear()
        log.warning("The lab's database %s: it was rebuilt from the run folders (%s).", what, done.line())
        if self.on_rebuilt is not None:
            self.on_rebuilt()
        return done

    def sync(self) -> int:
        """Write ``run.json`` for every run whose row changed since it was last written (and ``student.json`` for
        every student whose row or kept texts changed); returns how many run files were written."""
        registry, written = self.lab.registry, 0
        try:
            for record in registry.records.all_runs():
                if self._mirrored.get(record.id) == record.updated:
                    continue
                write_run_file(self.lab, record)
                self._mirrored[record.id] = record.updated
                written += 1
            names = registry.records.upload_names()
            for student in registry.records.students():
                uploads = names.get(student["id"], {})
                key = (student["name"], bool(student["teacher"]), student["created"], student["seen"], str(uploads))
                if self._students.get(student["id"]) != key:  # every student: their times and kept texts' names
                    write_student_file(self.lab, student, uploads)
                    self._students[student["id"]] = key
        except faults.LabUnavailable:
            pass  # said once by the watch; written when the database answers again
        except OSError as error:  # a full disk, a folder it may not write: said once; written when there is room
            line = f"The lab cannot write a run's files ({error.strerror or error}): it tries again every second."
            self.files.say(str(error.errno), line)
        except Exception:  # noqa: BLE001 - the keeper's thread goes on whatever happens here
            log.exception("could not write the lab's run files")
        else:
            self.files.cleared()  # said once, if they could not be written before
        return written
