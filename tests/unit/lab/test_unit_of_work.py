"""Recording a new run is one unit of work (issue 68 §4): its student, the room made for it (the student's older
snapshots thinned), its kept text and its rows are written together or not at all. A fault injected between the
parts (the disk fills up right after one of them) leaves nothing half-written, on SQLite and on PostgreSQL; without
the fault the same call records the run, thins and keeps the text (so the test's setup does reach every part)."""

from __future__ import annotations

import errno
import os
import time
from types import SimpleNamespace

import pytest
import torch

from llmviz.jobs.keeping import Keeper
from llmviz.lab.faults import Fault, LabUnavailable
from llmviz.lab.records import RunRecord
from llmviz.lab.service import Lab

TEXT = "the text the new run trains on\n" * 20


def _job(owner: str, run_id: str = "new-run") -> SimpleNamespace:
    """What the keeper reads of a job it records (a race's runner, a training run)."""
    return SimpleNamespace(
        id=run_id, owner=owner, label="Run 2", info=None, total=50, created=time.time(), kind="train", run_kind=None
    )


def _kept_run(lab: Lab, student: str) -> list[tuple[int, str, int]]:
    """A finished run of ``student`` with three snapshots on disk (steps 0, 10, 20); returns their rows."""
    lab.registry.records.ensure_student(student)
    lab.registry.records.add_run(RunRecord("r0", student, "training", "Run 1", "finished", total=20, step=20))
    for step in (0, 10, 20):
        path, nbytes = lab.storage.write_snapshot(student, "r0", step, {"w": torch.full((4096,), float(step))}, {})
        lab.registry.records.add_snapshot("r0", step, path, nbytes)
    return lab.registry.records.snapshots("r0")


def _files(folder) -> list:
    """The files under ``folder`` (none when it is not there)."""
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


def _fail_after(monkeypatch, owner, name: str) -> None:
    """``owner.name`` does its work, then the disk fills up (the next part never runs)."""
    original = getattr(owner, name)

    def then_full(*args, **kwargs):
        original(*args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(owner, name, then_full)


@pytest.mark.parametrize("part", ["ensure_student", "make_room", "keep_upload", "add_runs"])
def test_a_fault_between_the_parts_of_recording_a_run_leaves_nothing_half_written(
    tmp_path, database_url, monkeypatch, part
):
    lab = Lab.at(tmp_path, url=database_url, quota=0)
    before = _kept_run(lab, "ann")
    snapshot = before[0][2]
    lab.quota = lab.registry.records.disk_bytes("ann") + len(TEXT) + snapshot // 2  # a new snapshot needs one thinned
    keeper = Keeper(lab, interval=3600)
    try:
        owner = lab.registry.records if part in ("ensure_student", "add_runs") else lab
        with monkeypatch.context() as patch:
            _fail_after(patch, owner, part)
            with pytest.raises(LabUnavailable) as refused:
                keeper.enter([_job("ann")], [TEXT], [snapshot])
        assert refused.value.fault == Fault.FULL and str(refused.value) == Fault.FULL.sentence

        assert [run.id for run in lab.runs("ann")] == ["r0"]  # no row of the new run
        assert lab.registry.records.snapshots("r0") == before  # nothing thinned: every row, and every file it names
        assert all(os.path.exists(path) for _, path, _ in before)
        assert lab.registry.records.uploads("ann") == [] and _files(tmp_path / "lab" / "ann" / "uploads") == []
        assert not keeper.holds("new-run")

        keeper.enter([_job("ann")], [TEXT], [snapshot])  # the disk has room again: all the parts, together
        assert sorted(run.id for run in lab.runs("ann")) == ["new-run", "r0"]
        thinned = [row for row in before if row not in lab.registry.records.snapshots("r0")]
        assert [step for step, _, _ in thinned] == [10]  # the room was made: the row, then (committed) its file
        assert not os.path.exists(thinned[0][1])
        assert [name for _, name, _ in lab.registry.records.uploads("ann")] == ["the text of Run 2"]
    finally:
        keeper.close()


def test_a_new_students_row_is_not_left_behind_by_a_run_that_was_not_recorded(tmp_path, database_url, monkeypatch):
    lab = Lab.at(tmp_path, url=database_url)
    keeper = Keeper(lab, interval=3600)
    try:
        with monkeypatch.context() as patch:
            _fail_after(patch, lab.registry.records, "add_runs")
            with pytest.raises(LabUnavailable):
                keeper.enter([_job("bo")], [TEXT], [0])
        assert lab.student("bo") is None and lab.runs("bo") == []
        assert _files(tmp_path / "lab" / "bo") == []
    finally:
        keeper.close()


@pytest.mark.parametrize("part", ["add_snapshot", "add_points", "update_run"])
def test_a_fault_inside_a_flush_leaves_the_record_as_the_last_flush_left_it_and_the_next_writes_it_all(
    tmp_path, database_url, monkeypatch, part
):
    """One flush of a training run is one unit of work (``Keeper._flush_one``): its snapshot files, then their rows,
    its curve and its row's step in one transaction. The disk fills up right after one part: the rows are as the
    last flush left them and no file of that flush is left; once the disk has room the next flush writes it all,
    its snapshots never beyond its row's step (a SIGKILL between the parts once left them ahead: issue 68)."""
    from llmviz.jobs.manager import JobManager
    from llmviz.lab.live_status import JobState
    from tests.support.lab_process import submit, wait_for

    manager = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    lab, keeper = manager.lab, manager.keeper
    try:
        job = submit(manager, "ann", 1_000_000)
        assert wait_for(lambda: (row := lab.registry.records.run("ann", job.id)) is not None and row.step > 0, 120)
        with keeper._flushing:  # the keeper's thread waits: this test flushes
            first = lab.registry.records.run("ann", job.id).step
            later = min(m * 10**k for m in (1, 2, 5) for k in range(9) if m * 10**k > first)  # a log-spaced step
            assert wait_for(lambda: job.status().step > later, 120)  # its snapshot is one to write
            job.pause()
            assert wait_for(lambda: job.status().state == JobState.PAUSED, 120)
            records = lab.registry.records

            def written() -> tuple:  # what a flush writes (the slot's columns and the heartbeat are written elsewhere)
                row = records.run("ann", job.id)
                kept = (row.state, row.step, row.state_by, row.state_step, row.last_loss, row.best_val_loss)
                return kept, records.curve(job.id), records.snapshots(job.id), records.resume_state(job.id)

            before = written()
            files = sorted(_files(tmp_path / "lab" / "ann"))
            with monkeypatch.context() as patch:
                _fail_after(patch, records, part)
                keeper._flush_all()  # the fault is logged once; the run keeps training
            assert written() == before
            assert sorted(_files(tmp_path / "lab" / "ann")) == files  # no file that no row names

            keeper._flush_all()  # room again: the whole flush, together
            row, step = records.run("ann", job.id), job.status().step
            assert (row.state, row.step) == ("paused", step)
            assert [s for s, *_ in records.curve(job.id)] == list(range(1, step + 1))
            kept = records.snapshots(job.id)
            assert len(kept) > len(before[2]) and kept[-1][0] <= step
            # the resume state its pause made, which the failed flush had taken, is written by this one
            assert records.resume_state(job.id)[0] == step
            assert all(os.path.exists(path) for _, path, _ in kept)
    finally:
        manager.shutdown()
