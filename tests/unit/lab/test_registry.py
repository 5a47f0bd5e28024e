"""The lab's registry and storage on both databases it runs on (a real SQLite file and a real PostgreSQL server:
the ``database_url`` fixture, tests/support/postgres.py), with real processes."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys

import pytest
import torch

from llmviz.errors import CheckpointError
from llmviz.lab.holders import holder_alive
from llmviz.lab.records import RunRecord
from llmviz.lab.registry import Registry
from llmviz.lab.service import Lab
from llmviz.lab.storage import Storage


def _run(run_id: str, student: str = "s1", state: str = "queued", **values) -> RunRecord:
    return RunRecord(id=run_id, student=student, kind="train", label=f"Run {run_id}", state=state, total=100, **values)


def test_rows_outlive_the_registry_object(database_url):
    url = database_url
    first = Registry(url)
    first.records.ensure_student("s1", name="Ada")
    first.records.add_run(_run("r1", config={"steps": 100}))
    first.records.update_run("r1", state="running", step=30)
    first.records.add_points("r1", [(10, 3.0, None), (20, 2.5, 2.8), (30, 2.2, 2.6)])
    first.records.add_sample("r1", 20, "hello")
    first.dispose()
    second = Registry(url)  # a new process (or a restarted server) opening the same file
    [record] = second.records.runs("s1")
    assert (record.state, record.step, record.config, record.best_val_loss, record.last_loss) == (
        "running",
        30,
        {"steps": 100},
        2.6,
        2.2,
    )
    assert second.records.curve("r1") == [(10, 3.0, None), (20, 2.5, 2.8), (30, 2.2, 2.6)]
    assert second.records.samples("r1") == [(20, "hello")]
    assert second.records.student("s1")["name"] == "Ada"
    assert second.engine.dialect.name == ("postgresql" if url.startswith("postgresql") else "sqlite")
    second.dispose()


def test_a_run_id_alone_opens_nothing_of_another_student(database_url):
    registry = Registry(database_url)
    registry.records.ensure_student("s1")
    registry.records.ensure_student("s2")
    registry.records.add_run(_run("r1"))
    assert registry.records.run("s2", "r1") is None
    assert registry.records.delete_run("s2", "r1") is False
    assert [r.id for r in registry.records.runs("s1")] == ["r1"]
    assert registry.records.delete_run("s1", "r1") is True
    assert registry.records.runs("s1") == []


def _child_adds_running_run(url: str) -> None:
    registry = Registry(url)
    registry.records.ensure_student("s1")
    registry.records.add_run(_run("orphan"))
    registry.records.update_run("orphan", state="running", step=7)


@pytest.mark.processes
def test_a_run_whose_process_has_gone_is_interrupted(database_url):
    url = database_url
    child = multiprocessing.get_context("spawn").Process(target=_child_adds_running_run, args=(url,))
    child.start()
    child.join(60)
    registry = Registry(url)
    registry.records.add_run(_run("mine"))  # held by this process: alive
    record = registry.records.run("s1", "orphan")
    assert holder_alive(record.holder) is False
    assert registry.liveness.interrupt_orphans() == ["orphan"]
    states = {r.id: (r.state, r.step) for r in registry.records.runs("s1")}
    assert states == {"orphan": ("interrupted", 7), "mine": ("queued", 0)}


CLAIM = """
import sys
from llmviz.lab.registry import Registry
registry = Registry(sys.argv[1])
got = [run for run in sys.argv[2:] if registry.slots.claim(run, max_running=3)]
print(len(got))
"""


@pytest.mark.processes
def test_slots_are_counted_once_for_every_process(database_url):
    url = database_url
    registry = Registry(url)
    registry.records.ensure_student("s1")
    ids = [f"r{i}" for i in range(8)]
    for run_id in ids:
        registry.records.add_run(_run(run_id))
    children = [
        subprocess.Popen([sys.executable, "-c", CLAIM, url, *ids[i::2]], stdout=subprocess.PIPE, text=True)
        for i in range(2)
    ]
    got = [int(child.communicate(timeout=120)[0]) for child in children]
    assert sum(got) == 3 == registry.slots.training_count()
    registry.slots.free(next(r.id for r in registry.records.runs("s1") if r.training))
    assert registry.slots.claim("r7", max_running=3) or registry.records.run("s1", "r7").training


def test_memory_budget_is_one_for_the_machine(database_url):
    registry = Registry(database_url)
    registry.records.ensure_student("s1")
    for run_id in ("a", "b"):
        registry.records.add_run(_run(run_id))
    assert registry.slots.claim("a", 4, memory=600, budget=1000)
    assert not registry.slots.claim("b", 4, memory=600, budget=1000)
    registry.slots.free("a")
    assert registry.slots.claim("b", 4, memory=600, budget=1000)


def test_snapshots_round_trip_without_pickle_and_tied_weights_stay_tied(tmp_path):
    storage = Storage(tmp_path / "lab")
    shared = torch.randn(5, 3)
    path, nbytes = storage.write_snapshot("s1", "r1", 20, {"emb": shared, "head": shared, "b": torch.zeros(3)}, {})
    state, meta = storage.read_snapshot(path)
    assert torch.equal(state["emb"], shared) and state["head"] is state["emb"]
    assert meta == {"step": 20, "tied": {"head": "emb"}}
    assert nbytes < 2 * shared.numel() * 4 + 1024  # the tied matrix is written once
    assert not list((tmp_path / "lab" / "s1" / "r1").glob(".*.part"))  # nothing half-written left
    planted = tmp_path / "lab" / "s1" / "r1" / "step-000000030.safetensors"
    planted.write_bytes(b"\x80\x04\x95pickle")
    with pytest.raises(CheckpointError):
        storage.read_snapshot(str(planted))
    with pytest.raises(ValueError):
        storage.run_folder("../s2", "r1")


def test_quota_thins_the_oldest_snapshots_first_and_keeps_each_last_step(tmp_path, database_url):
    lab = Lab.at(tmp_path, url=database_url, quota=10_000)
    lab.registry.records.ensure_student("s1")
    weights = {"w": torch.zeros(500)}  # about 2 kB a file
    for run_id, created in (("old", 1.0), ("new", 2.0)):
        lab.registry.records.add_run(_run(run_id, created=created))
        for step in (0, 10, 20, 50):
            path, nbytes = lab.storage.write_snapshot("s1", run_id, step, weights, {})
            lab.registry.records.add_snapshot(run_id, step, path, nbytes)
    dropped = lab.thin("s1")
    assert dropped[:2] == [("old", 10), ("old", 20)]
    assert lab.registry.records.disk_bytes("s1") <= 10_000
    assert lab.storage.usage("s1") == lab.registry.records.disk_bytes("s1")
    kept = {(run, step) for run, step, *_ in lab.registry.records.student_snapshots("s1")}
    assert {("old", 50), ("new", 50)} <= kept


def test_delete_run_removes_its_files_and_uploads_are_kept_once(tmp_path, database_url):
    lab = Lab.at(tmp_path, url=database_url)
    lab.registry.records.ensure_student("s1")
    lab.registry.records.add_run(_run("r1"))
    path, nbytes = lab.storage.write_snapshot("s1", "r1", 0, {"w": torch.ones(3)}, {})
    lab.registry.records.add_snapshot("r1", 0, path, nbytes)
    assert not lab.delete_run("s2", "r1")
    assert lab.delete_run("s1", "r1")
    assert not (tmp_path / "lab" / "s1" / "r1").exists() and lab.registry.records.snapshots("r1") == []
    digest, _ = lab.storage.write_upload("s1", b"some text")
    assert lab.registry.records.add_upload("s1", digest, "a.txt", 9)
    assert not lab.registry.records.add_upload("s1", digest, "copy.txt", 9)
    assert lab.storage.read_upload("s1", digest) == b"some text"
    assert lab.registry.records.disk_bytes("s1") == 9


def test_retention_deletes_runs_nobody_touched(tmp_path, database_url):
    lab = Lab.at(tmp_path, url=database_url, keep_s=60)
    lab.registry.records.ensure_student("s1")
    lab.registry.records.add_run(_run("old", state="finished"))
    lab.registry.records.add_run(_run("live", state="running"))
    with lab.registry.engine.begin() as db:
        from llmviz.lab.records import runs

        db.execute(runs.update().values(updated=0.0))
    assert lab.expire() == ["old"]


def test_an_upload_is_kept_when_uploaded_once_per_content_within_the_quota(tmp_path, database_url):
    from llmviz.errors import UploadError
    from llmviz.lab.storage import content_hash

    lab = Lab.at(tmp_path, url=database_url, quota=10_000)
    text = b"a student's own text\n" * 100  # 2,100 bytes
    digest = lab.keep_upload("s1", "mine.txt", text)
    assert digest == content_hash(text) and lab.storage.read_upload("s1", digest) == text
    assert lab.keep_upload("s1", "same, renamed.txt", text) == digest  # once per content
    assert (
        lab.registry.records.uploads("s1") == [(digest, "mine.txt", len(text))]
        and lab.registry.records.disk_bytes("s1") == 2100
    )
    lab.registry.records.add_run(_run("r1"))
    for step in (0, 10, 20, 50):  # about 2 kB each: 8.1 kB with the upload, under the quota
        path, nbytes = lab.storage.write_snapshot("s1", "r1", step, {"w": torch.zeros(500)}, {})
        lab.registry.records.add_snapshot("r1", step, path, nbytes)
    second = b"another text\n" * 300  # 3,900 bytes: fits once the oldest snapshots are thinned
    lab.keep_upload("s1", "second.txt", second)
    assert [step for step, *_ in lab.registry.records.snapshots("r1")][-1] == 50  # the run's last step stays
    assert lab.registry.records.disk_bytes("s1") <= 10_000 == lab.quota
    with pytest.raises(UploadError, match="big.txt .* is not kept"):
        lab.keep_upload("s1", "big.txt", b"x" * 9_000)  # cannot fit beside the uploads and the last step
    assert len(lab.registry.records.uploads("s1")) == 2 and lab.storage.usage("s1") == lab.registry.records.disk_bytes(
        "s1"
    )
    assert (
        lab.keep_upload("s2", "mine.txt", text) == digest and lab.registry.records.disk_bytes("s2") == 2100
    )  # s2's own


def test_resume_states_count_in_the_quota_and_are_thinned_after_every_snapshot_that_may_go(tmp_path, database_url):
    """One resume state per run (a newer one replaces the older, file included), counted in the student's disk;
    over the quota the snapshots go first (never the one a resume state goes with), then the oldest run's state."""
    lab = Lab.at(tmp_path, url=database_url, quota=14_000)
    lab.registry.records.ensure_student("s1")
    weights, moments = {"w": torch.zeros(500)}, {"m": torch.zeros(1000)}  # about 2 and 4 kB a file
    for run_id, created in (("old", 1.0), ("new", 2.0)):
        lab.registry.records.add_run(_run(run_id, created=created))
        for step in (0, 10, 20):
            path, nbytes = lab.storage.write_snapshot("s1", run_id, step, weights, {})
            lab.registry.records.add_snapshot(run_id, step, path, nbytes)
        for step in (10, 20) if run_id == "new" else (10,):
            path, nbytes = lab.storage.write_resume("s1", run_id, step, moments, {"format": "x"})
            older = lab.registry.records.set_resume(run_id, step, path, nbytes)
            if older:
                lab.storage.delete_file(older)
    assert lab.registry.records.resume_state("new")[0] == 20 and lab.storage.usage(
        "s1"
    ) == lab.registry.records.disk_bytes("s1")
    tensors, scalars = lab.storage.read_resume(lab.registry.records.resume_state("new")[1])
    assert torch.equal(tensors["m"], moments["m"]) and scalars == {"format": "x", "step": 20}
    dropped = lab.thin("s1")
    # old's state is at step 10: that snapshot stays, as each run's last step does
    assert dropped == [("new", 10), ("old", 0), ("new", 0)]
    assert lab.registry.records.resume_state("old") is None and lab.registry.records.resume_state("new") is not None
    assert lab.registry.records.disk_bytes("s1") <= 14_000 and lab.storage.usage(
        "s1"
    ) == lab.registry.records.disk_bytes("s1")
    assert lab.delete_run("s1", "new") and lab.registry.records.resume_state("new") is None


def test_a_registry_made_before_resume_states_gains_their_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    first = Registry(url)
    first.records.ensure_student("s1")
    first.records.add_run(_run("r1"))
    with Registry(url).engine.begin() as db:  # as the registry was before resume states (and schema revisions)
        db.exec_driver_sql("DROP TABLE lab_resumes")
        db.exec_driver_sql("DROP TABLE lab_alembic_version")
    again = Registry(url)
    assert [run.id for run in again.records.runs("s1")] == ["r1"] and again.records.resume_state("r1") is None
