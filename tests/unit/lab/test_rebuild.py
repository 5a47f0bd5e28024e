"""Each run folder carries its own record (run.json): a lost database is rebuilt from the folders, by the CLI and by
the app at start; ``lab backup`` copies a live SQLite database; the lab's watch turns an outage into one sentence,
said once, refused at once for a while, and notices a deleted file. Real SQLite files, a real JobManager training
the pages' way, the CLI in a real process."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from llmviz.errors import CheckpointError
from llmviz.jobs.manager import JobManager
from llmviz.lab import faults
from llmviz.lab.rebuild import RUN_FILE, Guard, rebuild
from llmviz.lab.records import TRAINING, RunRecord, metadata, runs, students
from llmviz.lab.service import Lab
from tests.support.lab_process import submit


def _cli(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llmviz", "lab", *arguments], capture_output=True, text=True, timeout=300
    )


def _trained(folder) -> tuple[str, list, list, tuple | None]:
    """A run trained the pages' way to its end and kept; its id, curve, snapshot steps and resume state."""
    manager = JobManager(max_running=1, lab=Lab.at(folder))
    manager.keeper.lab.registry.records.ensure_student("ada", name="Ada <b>")
    job = submit(manager, "ada", 30)
    assert job.wait(300)
    manager.shutdown()
    registry = Lab.at(folder).registry
    curve = registry.records.curve(job.id)
    steps = [step for step, *_ in registry.records.snapshots(job.id)]
    return job.id, curve, steps, registry.records.resume_state(job.id)


@pytest.mark.processes  # the lab commands run as python -m llmviz
def test_a_lost_database_is_rebuilt_from_the_run_folders_by_the_cli(tmp_path):
    run_id, curve, steps, _ = _trained(tmp_path)
    record = json.loads((tmp_path / "lab" / "ada" / run_id / RUN_FILE).read_text())
    assert record["run"]["state"] == "finished" and [tuple(p) for p in record["points"]] == curve
    assert [p[0] for p in curve] == list(range(1, 31)) and record["snapshots"] == steps
    os.remove(tmp_path / "lab.db")
    done = _cli("rebuild", "--runs-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rebuilt 1 run(s) of 1 student(s): 30 curve point(s)")
    registry = Lab.at(tmp_path).registry
    [kept] = registry.records.runs("ada")
    assert (kept.id, kept.state, kept.step, kept.kind) == (run_id, "finished", 30, TRAINING)
    assert registry.records.curve(run_id) == curve and [s for s, *_ in registry.records.snapshots(run_id)] == steps
    assert registry.records.student("ada")["name"] == "Ada <b>"
    assert registry.records.uploads("ada")  # the run's text, so it can be resumed
    again = _cli("rebuild", "--runs-dir", str(tmp_path))  # twice: nothing is added twice
    assert again.returncode == 0 and again.stdout.startswith("rebuilt 0 run(s) of 0 student(s): 0 curve point(s)")
    assert Lab.at(tmp_path).registry.records.curve(run_id) == curve


def test_the_app_rebuilds_a_new_database_at_start(tmp_path):
    run_id, curve, _, _ = _trained(tmp_path)
    os.remove(tmp_path / "lab.db")
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))  # the app's start, on a new database
    [kept] = manager.lab_side.kept_runs("ada")
    assert kept.id == run_id and manager.keeper.lab.registry.records.curve(run_id) == curve
    manager.shutdown()


def test_an_interrupted_run_is_rebuilt_resumable_with_its_resume_state(tmp_path):
    lab = Lab.at(tmp_path)
    lab.registry.records.ensure_student("bo")
    lab.registry.records.add_run(
        RunRecord(id="r1", student="bo", kind="train", label="x", state="running", holder="elsewhere:1:1")
    )
    path, nbytes = lab.storage.write_snapshot("bo", "r1", 4, {}, {})
    lab.registry.records.add_snapshot("r1", 4, path, nbytes)
    resume, size = lab.storage.write_resume("bo", "r1", 4, {}, {})
    lab.registry.records.set_resume("r1", 4, resume, size)
    lab.registry.records.add_points("r1", [(s, 1.0, None) for s in range(5)])
    Guard(lab).sync()
    fresh = Lab.at(tmp_path, url=f"sqlite:///{tmp_path / 'new.db'}")
    assert rebuild(fresh).runs == 1
    [kept] = fresh.registry.records.runs("bo")
    assert kept.state == "interrupted" and kept.resumable  # its process has gone
    assert fresh.registry.records.resume_state("r1") == (4, resume, size)


def test_a_deleted_run_leaves_no_run_file_and_a_planted_one_opens_nothing(tmp_path):
    lab = Lab.at(tmp_path)
    lab.registry.records.ensure_student("bo")
    lab.registry.records.add_run(RunRecord(id="r1", student="bo", kind="train", label="x", state="finished"))
    guard = Guard(lab)
    guard.sync()
    assert lab.delete_run("bo", "r1")
    guard.sync()
    assert not (tmp_path / "lab" / "bo" / "r1").exists()
    planted = tmp_path / "lab" / "eve" / "r2"
    planted.mkdir(parents=True)  # bo's run file, copied into eve's folder
    record = {"format": "llmviz-run", "run": {"id": "r2", "student": "bo", "kind": "train", "label": "x"}}
    (planted / RUN_FILE).write_text(json.dumps({**record, "run": {**record["run"], "state": "finished"}}))
    done = rebuild(Lab.at(tmp_path, url="sqlite://"))
    assert done.runs == 0 and done.skipped == ["eve/r2"]


@pytest.mark.processes  # the lab commands run as python -m llmviz
def test_lab_commands_refuse_bad_arguments_in_one_line(tmp_path):
    for arguments in (
        ["rebuild", "--runs-dir", str(tmp_path / "nowhere")],
        ["backup", str(tmp_path / "copy.db"), "--database", "postgresql+psycopg://x@127.0.0.1:1/db"],
        ["backup", str(tmp_path / "copy.db"), "--runs-dir", str(tmp_path / "nowhere")],
        ["backup"],
        ["nonsense"],
    ):
        done = _cli(*arguments)
        assert done.returncode != 0 and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.processes  # the lab commands run as python -m llmviz
def test_lab_backup_copies_a_database_while_it_is_written(tmp_path):
    lab = Lab.at(tmp_path)
    lab.registry.records.ensure_student("bo")
    lab.registry.records.add_run(RunRecord(id="r1", student="bo", kind="train", label="x", state="running"))
    writer = sqlite3.connect(tmp_path / "lab.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process is writing, its transaction not yet committed
    writer.execute("update lab_runs set step = 99")
    done = _cli("backup", str(tmp_path / "copy.db"), "--runs-dir", str(tmp_path))
    writer.execute("COMMIT")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"saved {tmp_path / 'copy.db'}")
    copy = sqlite3.connect(tmp_path / "copy.db")
    assert copy.execute("select id, step from lab_runs").fetchall() == [("r1", 0)]  # whole, as it was committed
    refused = _cli("backup", str(tmp_path / "copy.db"), "--runs-dir", str(tmp_path))
    assert refused.returncode != 0 and "exists already" in refused.stderr


@pytest.mark.processes  # the lab command runs as python -m llmviz
def test_lab_backup_makes_the_folder_docs_classroom_names_on_a_fresh_install(tmp_path):
    """docs/classroom.md's line ``lab backup runs-backup/lab-$(date +%F).db`` failed where runs-backup/ did not exist
    yet (issue 72); a folder that cannot be made (under a file) is refused in one line."""
    lab = Lab.at(tmp_path)
    lab.registry.records.ensure_student("bo")
    lab.registry.records.add_run(RunRecord(id="r1", student="bo", kind="train", label="x", state="finished"))
    out = tmp_path / "runs-backup" / "nested" / "lab-2026-01-31.db"
    done = _cli("backup", str(out), "--runs-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert sqlite3.connect(out).execute("select id from lab_runs").fetchall() == [("r1",)]
    (tmp_path / "a-file").write_text("")
    refused = _cli("backup", str(tmp_path / "a-file" / "lab.db"), "--runs-dir", str(tmp_path))
    assert refused.returncode != 0 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()] and "cannot be made" in refused.stderr


def test_an_outage_is_one_sentence_said_once(tmp_path, caplog):
    now = [0.0]
    registry = Lab.at(tmp_path).registry
    watch = faults.watch_of(registry.engine)
    watch.clock = lambda: now[0]
    registry.engine.dispose()
    with caplog.at_level("WARNING", logger="llmviz.lab.faults"):
        (tmp_path / "lab.db").write_bytes(b"not a database" * 100)  # damaged under the app
        for _ in range(3):
            with pytest.raises(faults.LabUnavailable, match="^The lab's database is damaged: "):
                registry.records.runs("bo")
    assert [r.message for r in caplog.records].count(faults.Fault.DAMAGED.sentence) == 1
    assert watch.reason == "damaged" and watch.replaced() is False  # written in place: the same file


def test_the_watch_notices_a_deleted_database_and_the_guard_rebuilds_it(tmp_path, caplog):
    lab = Lab.at(tmp_path)
    lab.registry.records.ensure_student("bo")
    lab.registry.records.add_run(RunRecord(id="r1", student="bo", kind="train", label="x", state="finished"))
    lab.registry.records.add_points("r1", [(0, 2.0, None), (1, 1.5, None)])
    guard = Guard(lab)
    guard.sync()
    os.remove(tmp_path / "lab.db")
    assert guard.watch.replaced()
    with caplog.at_level("WARNING", logger="llmviz.lab.rebuild"):
        assert guard.tick()
    assert [r.message for r in caplog.records if "deleted or replaced" in r.message] == [
        "The lab's database was deleted or replaced while the app ran: it was rebuilt from the run folders "
        "(rebuilt 1 run(s) of 1 student(s): 2 curve point(s), 0 snapshot(s))."
    ]
    assert [r.id for r in lab.registry.records.runs("bo")] == ["r1"] and len(lab.registry.records.curve("r1")) == 2
    assert not guard.watch.replaced() and guard.tick()


def test_a_damaged_resume_file_falls_back_to_the_intact_weights(tmp_path, caplog):
    import torch

    from llmviz.jobs.resuming import resumed_trainer
    from llmviz.lab.records import config_json
    from llmviz.training.checkpoint import model_description
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import prepare_data
    from llmviz.training.trainer import Trainer
    from tests.support.jobs import TEXT

    config = TrainConfig(model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=20)
    trainer = Trainer(config, prepare_data(TEXT, config))
    for _ in range(3):
        trainer.train_step()
    trainer.step = 3
    lab = Lab.at(tmp_path)
    meta = {"format": "llmviz-checkpoint", "version": 1, "model": model_description(trainer.model)}
    meta |= {"tokenizer": trainer.dataset.tokenizer.to_dict(), "train_config": config_json(config)}
    path, _ = lab.storage.write_snapshot("bo", "r1", trainer.step, trainer.model.state_dict(), meta)
    tensors, scalars = trainer.training_state()
    resume, _ = lab.storage.write_resume("bo", "r1", trainer.step, tensors, scalars)
    with open(resume, "r+b") as damaged:
        damaged.write(b"\xff" * 64)
    with caplog.at_level("WARNING", logger="llmviz.jobs.keeping"):
        again = resumed_trainer(TEXT, path, resume)
    assert again.step == 3
    for name, tensor in again.model.state_dict().items():
        assert torch.equal(tensor, trainer.model.state_dict()[name])
    [said] = [r.getMessage() for r in caplog.records if "resume" in r.getMessage()]  # said once, in the server's log
    assert said.startswith("run r1: its resume state at step 3 cannot be read"), said  # its run and kind (issue 72 §4)
    assert str(tmp_path) not in said and ".safetensors" not in said, said  # and no server path, as the docs say
    with open(path, "r+b") as damaged:  # its snapshot damaged too: it cannot be resumed, and the log names no path
        damaged.write(b"\xff" * 64)
    caplog.clear()
    with caplog.at_level("WARNING", logger="llmviz.jobs.keeping"), pytest.raises(CheckpointError, match="damaged"):
        resumed_trainer(TEXT, path, resume)
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith("run r1: its snapshot at step 3 cannot be read") and str(tmp_path) not in said, said


def test_a_runs_own_measures_are_kept_with_its_curve_and_rebuilt_from_its_folder(tmp_path):
    """A DPO run's ratios, margin and accuracy are the lab's too (the Tuning page draws them after a restart): kept
    with each curve point (finite numbers only), in its run.json, and rebuilt from the folder into a new database."""
    from llmviz.lab.rebuild import write_run_file
    from llmviz.lab.records import DPO

    lab = Lab.at(tmp_path)
    lab.registry.records.ensure_student("cy")
    lab.registry.records.add_run(
        RunRecord(id="d1", student="cy", kind=DPO, label="DPO", state="finished", step=2, total=2)
    )
    measures = {1: {"margin": 0.0, "accuracy": 0.5}, 2: {"margin": 0.25, "accuracy": float("nan"), "note": "x"}}
    lab.registry.records.add_points("d1", [(1, 0.69, None), (2, 0.6, 0.65)], measures=measures)
    assert lab.registry.records.series("d1") == {"margin": [(1, 0.0), (2, 0.25)], "accuracy": [(1, 0.5)]}
    assert lab.curve("cy", "d1").series == {"margin": ((1, 0.0), (2, 0.25)), "accuracy": ((1, 0.5),)}
    assert lab.curve("cy", "d1", since_step=2).series == {"margin": ((2, 0.25),), "accuracy": ()}
    write_run_file(lab, lab.registry.records.run("cy", "d1"))
    fresh = Lab.at(tmp_path, url=f"sqlite:///{tmp_path / 'new.db'}")
    assert rebuild(fresh).runs == 1
    assert fresh.registry.records.series("d1") == lab.registry.records.series("d1")
    assert fresh.registry.records.curve("d1") == [(1, 0.69, None), (2, 0.6, 0.65)]


def test_a_damaged_database_hidden_by_a_stale_journal_is_put_aside_with_it_and_rebuilt(tmp_path, caplog):
    """A process that ended without closing its connections leaves the whole database in ``lab.db-wal``; SQLite
    reads page 1 from there, so a damaged ``lab.db`` beside it opened as if whole and was never said nor rebuilt
    (the damaged-database durability test's silent third)."""
    gone, folder = tmp_path / "gone", tmp_path / "app"
    lab = Lab.at(gone)
    lab.registry.records.ensure_student("bo")
    lab.registry.records.add_run(RunRecord(id="r1", student="bo", kind="train", label="x", state="finished"))
    lab.registry.records.add_points("r1", [(1, 2.0, None), (2, 1.5, None)])
    Guard(lab).sync()
    shutil.copytree(gone, folder)  # as that process left it: its connections still open, its journal beside it
    assert (folder / "lab.db-wal").stat().st_size > 0
    (folder / "lab.db").write_bytes(b"\x00damaged" * 4096)
    with caplog.at_level("WARNING"):
        manager = JobManager(max_running=1, lab=Lab.at(folder))  # the app's start
    try:
        registry = manager.keeper.lab.registry
        assert [r.id for r in registry.records.runs("bo")] == ["r1"] and len(registry.records.curve("r1")) == 2
    finally:
        manager.shutdown()
    said = [r.message for r in caplog.records]
    assert sum("was damaged (kept aside as lab.db.damaged-" in line for line in said) == 1, said
    [aside] = [p for p in folder.glob("lab.db.damaged-*") if not p.name.endswith("-wal")]
    with contextlib.closing(sqlite3.connect(aside)) as kept:  # kept with its journal: what it held is readable
        assert kept.execute("select id from lab_runs").fetchall() == [("r1",)]


def test_an_orderly_close_leaves_the_sqlite_file_whole_with_no_journal(tmp_path):
    """After the keeper closes (SIGTERM, the end of a CLI run), ``lab.db`` holds everything by itself: a file damaged
    later is not hidden by a journal, and a copy of the file alone is complete."""
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    manager.keeper.lab.registry.records.ensure_student("ada", name="Ada")
    manager.shutdown()
    assert not (tmp_path / "lab.db-wal").exists()
    shutil.copy(tmp_path / "lab.db", tmp_path / "copy.db")
    with contextlib.closing(sqlite3.connect(tmp_path / "copy.db")) as copy:
        assert copy.execute("select name from lab_students where id = 'ada'").fetchall() == [("Ada",)]


def _emptied(registry) -> None:
    """Every row gone (the database lost, its schema kept): what a rebuild starts from."""
    with registry.engine.begin() as db:
        for table in reversed(metadata.sorted_tables):
            db.execute(table.delete())


def test_a_rebuild_restores_times_kept_text_names_and_the_teacher_flag_exactly(database_url, tmp_path):
    """Issue 72 §12: a rebuild restarted every run's 30-day clock (``updated``, which retention reads), every
    student's ``created`` and ``seen``, and lost the kept texts' names of a student with no display name."""
    lab = Lab.at(tmp_path / "runs", url=database_url)
    registry = lab.registry
    registry.records.ensure_student("ada", name="Ada <b>")
    registry.records.ensure_student("teacher-1", teacher=True)
    lab.keep_upload("anon", "my notes.txt", b"a kept text, by a student with no name\n" * 40)
    for number, student in enumerate(("ada", "anon", "teacher-1")):
        registry.records.add_run(
            RunRecord(f"r{number}", student, TRAINING, f"Run {number}", "finished", total=9, step=9)
        )
    now = time.time()
    with registry.engine.begin() as db:  # 40, 21 and 2 days old, each its own time (not one a rebuild could make up)
        for number, student in enumerate(("ada", "anon", "teacher-1")):
            at = now - 86_400.125 * (40 - 19 * number)
            db.execute(students.update().where(students.c.id == student).values(created=at, seen=at + 3_600.5))
            db.execute(runs.update().where(runs.c.id == f"r{number}").values(created=at + 60.25, updated=at + 7.5))
    before_students = registry.records.students()
    before_runs = [(r.id, r.student, r.created, r.updated, r.state, r.step) for r in registry.records.all_runs()]
    before_uploads = {student: registry.records.uploads(student) for student in ("ada", "anon", "teacher-1")}
    assert before_uploads["anon"][0][1] == "my notes.txt"

    assert Guard(lab).sync() == 3
    _emptied(registry)
    assert registry.records.students() == [] and registry.records.all_runs() == []
    done = rebuild(lab)

    assert (done.students, done.runs, done.skipped) == (3, 3, [])
    assert registry.records.students() == before_students  # name, teacher flag, created and seen, exactly
    assert [
        (r.id, r.student, r.created, r.updated, r.state, r.step) for r in registry.records.all_runs()
    ] == before_runs
    assert {student: registry.records.uploads(student) for student in before_uploads} == before_uploads
    assert (
        registry.records.student("teacher-1")["teacher"] is True
        and registry.records.student("ada")["name"] == "Ada <b>"
    )
    assert lab.expire() == ["r0"]  # retention reads the runs' own times (r0's 30 days are over), not the rebuild's


def test_a_full_database_says_it_answers_again_only_once_a_write_goes_through(tmp_path, caplog):
    """Issue 72 §4: with the disk still full, a read that went through logged "answers again". A real SQLITE_FULL
    (``max_page_count`` on every connection: the database may grow no more, as on a full disk)."""
    import sqlalchemy as sa

    lab = Lab.at(tmp_path)
    engine = lab.registry.engine
    watch = faults.install(engine, lab.registry.url)
    lab.registry.records.ensure_student("ada")
    limit = {"pages": 1_000_000}
    sa.event.listen(engine, "connect", lambda dbapi, _: dbapi.execute(f"PRAGMA max_page_count = {limit['pages']}"))
    with engine.connect() as db:
        limit["pages"] = db.exec_driver_sql("PRAGMA page_count").scalar()
    engine.dispose()  # every new connection may grow the file no more

    with caplog.at_level("WARNING", logger="llmviz.lab.faults"):
        with pytest.raises(faults.LabUnavailable, match="disk is full"):
            for number in range(10_000):
                lab.registry.records.add_upload("ada", f"{number:064x}", "x" * 200, 1)
        assert watch.reason == "full"
        assert lab.registry.records.student("ada") is not None  # reads still go through
        assert "answers again" not in caplog.text and watch.reason == "full"  # the disk is still full
        limit["pages"] = 1_000_000  # space freed
        engine.dispose()
        lab.registry.records.ensure_student("ada", name="Ada")  # a write goes through
        assert watch.reason is None and caplog.text.count("The lab's database answers again.") == 1


def test_damaged_run_and_student_files_rebuild_what_the_snapshots_say_and_say_what_was_lost(tmp_path):
    """Issue 72 §4: a damaged ``run.json`` lost its run from the rebuild though its snapshots were on disk, and a
    damaged ``student.json`` dropped the teacher flag silently."""
    from llmviz.lab.records import config_json
    from llmviz.training.checkpoint import model_description
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import prepare_data
    from llmviz.training.trainer import Trainer
    from tests.support.jobs import TEXT

    lab = Lab.at(tmp_path)
    config = TrainConfig(model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=20)
    trainer = Trainer(config, prepare_data(TEXT, config))
    meta = {"format": "llmviz-checkpoint", "version": 1, "model": model_description(trainer.model)}
    meta |= {"tokenizer": trainer.dataset.tokenizer.to_dict(), "train_config": config_json(config)}
    lab.registry.records.ensure_student("bo", teacher=True)
    lab.registry.records.add_run(RunRecord("r1", "bo", TRAINING, "Run 1", "finished", total=20, step=12))
    for step in (4, 12):
        path, nbytes = lab.storage.write_snapshot("bo", "r1", step, trainer.model.state_dict(), meta)
        lab.registry.records.add_snapshot("r1", step, path, nbytes)
    assert Guard(lab).sync() == 1
    for damaged in (tmp_path / "lab" / "bo" / "r1" / RUN_FILE, tmp_path / "lab" / "bo" / "student.json"):
        damaged.write_bytes(b"\x00{not json")
    fresh = Lab.at(tmp_path, url="sqlite://")
    done = rebuild(fresh)
    [kept] = fresh.registry.records.runs("bo")
    assert (kept.id, kept.step, kept.total, kept.state) == ("r1", 12, 20, "stopped")  # from its newest snapshot
    assert [step for step, *_ in fresh.registry.records.snapshots("r1")] == [4, 12]
    assert fresh.registry.records.student("bo")["teacher"] is False  # not restored, and said:
    line = done.line()
    assert "bo's student.json is damaged: their name, teacher flag" in line, line
    assert "bo/r1's run.json is damaged: rebuilt from its 2 snapshot file(s) up to step 12; its curve" in line, line
