"""One record (issue 56): the lab's registry and run files are the only truth about a student's runs, read through
the one door (llmviz.lab.service.Lab), in real processes: a run trained by one process is read whole by another
after it has gone; an autoencoder run is kept as one and reopened; the teacher's park reaches the student as the
teacher's; Resume continues the same run; a database locked past its timeout by another process, or a full disk,
refuses a new run in one sentence with no ghost left in the queue, while other students' runs go on; the quota is a
limit."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest
import torch

import llmviz.lab.registry
from llmviz.jobs.manager import JobManager
from llmviz.lab.faults import SENTENCES
from llmviz.lab.live_status import JobRefused
from llmviz.lab.records import AUTOENCODER, TRAINING
from llmviz.lab.service import Lab, LabUnavailable
from tests.support.disks import fill
from tests.support.jobs import TEXT
from tests.support.lab_process import submit, wait_for
from tests.support.locks import locked_by_another_process, release

pytestmark = pytest.mark.slow  # real processes and workers: not the fast lane

LONG = 10_000_000


def _child(folder, url, *specs) -> tuple[subprocess.Popen, dict[str, str]]:
    import json

    errors = folder / "child.err"
    with errors.open("a") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.support.lab_process", str(folder), url, *specs],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    line = child.stdout.readline()
    if not line:
        child.kill()
        pytest.fail(f"the lab process ended early: {errors.read_text()[-2000:]}")
    return child, json.loads(line)


def _end(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.kill()
    child.wait(60)


def test_a_run_trained_by_a_process_that_has_gone_is_read_whole_through_the_door(tmp_path, database_url):
    child, ids = _child(tmp_path, database_url, "ann:40")
    assert child.wait(300) == 0  # it trained to its end and exited: nothing of it is in any memory now
    lab = Lab.at(tmp_path, url=database_url)
    [view] = lab.runs("ann")
    assert (view.id, view.kind, view.state, view.step, view.total) == (ids["ann"], TRAINING, "finished", 40, 40)
    curve = lab.curve("ann", view.id)
    assert curve.steps == list(range(1, 41)) and curve.resumes == ()  # every point, none missing
    assert lab.curve("ann", view.id, since_step=35).steps == [35, 36, 37, 38, 39, 40]
    assert lab.curve("bob", view.id).points == () and lab.run("bob", view.id) is None  # not bob's
    kept = lab.snapshots("ann", view.id)
    assert kept[0].step == 0 and kept[-1].step == 40
    state, meta = lab.open_snapshot("ann", view.id, 40)
    assert meta["step"] == 40 and state  # the weights of its last step
    usage = lab.disk("ann")
    assert usage.used >= sum(s.nbytes for s in kept) and usage.quota == lab.quota
    record = lab.storage.read_run_record("ann", view.id)["run"]  # the run folder says what its row says
    assert (record["id"], record["kind"], record["state"], record["step"]) == (view.id, TRAINING, "finished", 40)


def test_a_damaged_snapshot_refuses_in_one_sentence_without_its_path(tmp_path):
    child, ids = _child(tmp_path, f"sqlite:///{tmp_path / 'lab.db'}", "ann:20")
    assert child.wait(300) == 0
    lab = Lab.at(tmp_path)
    run_id = ids["ann"]
    path = dict((step, p) for step, p, _ in lab.registry.records.snapshots(run_id))[20]
    with open(path, "r+b") as damaged:
        damaged.write(b"\xff" * 64)
    with pytest.raises(Exception) as refused:
        lab.open_snapshot("ann", run_id, 20)
    message = str(refused.value)
    assert "damaged" in message and str(tmp_path) not in message and "\n" not in message
    assert lab.open_snapshot("ann", run_id, 0)[1]["step"] == 0  # its other steps still open


def _sae_trainer(steps: int = 12):
    from llmviz.interpret.sae import SaeConfig, SaeTrainer

    config = SaeConfig(d_sae=32, k=4, steps=steps, batch=16, tokens=256, eval_every=0)
    generator = torch.Generator().manual_seed(0)
    activations = torch.randn(256, 8, generator=generator)  # (N, D)
    return SaeTrainer(config, activations, None, torch.zeros(0, 8, dtype=torch.long))


def test_an_autoencoder_run_is_kept_as_one_and_reopened_after_a_restart(tmp_path):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    job = manager.submit_training("ann", _sae_trainer(), label="SAE run", checkpoint=False)
    assert job.wait(120) and job.status().state.value == "finished"
    manager.shutdown()
    lab = Lab.at(tmp_path)  # a new server
    assert lab.runs("ann", kinds=(TRAINING,)) == []  # the pages that open language models do not list it
    [view] = lab.runs("ann", kinds=(AUTOENCODER,))
    assert (view.id, view.kind, view.step, view.model) == (job.id, AUTOENCODER, 12, "sae")
    assert lab.curve("ann", view.id).steps == list(range(1, 13))
    state, meta = lab.open_snapshot("ann", view.id, 12)
    assert meta["model"]["kind"] == "sae" and state["W_enc"].shape == (8, 32)
    again = _sae_trainer()
    for _ in again.run():
        pass
    assert torch.allclose(state["W_enc"], again.model.state_dict()["W_enc"])  # the weights it trained, exactly


def test_the_teachers_park_reaches_the_student_as_the_teachers_and_resume_continues_the_same_run(
    tmp_path, database_url
):
    child, ids = _child(tmp_path, database_url, f"ann:{LONG}")
    run_id = ids["ann"]
    lab = Lab.at(tmp_path, url=database_url)  # the teacher's page, on another process
    try:
        said = lab.control("ann", run_id, "park", by="teacher")
        assert said.startswith("ann's run is asked to park")
        assert wait_for(lambda: lab.run("ann", run_id).state == "parked", 120)
        parked = lab.run("ann", run_id)
        assert parked.state_by == "teacher" and parked.state_line == f"parked by the teacher at step {parked.step}"
        assert parked.resumable
    finally:
        _end(child)
    here = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))  # the student's tab, on this process
    try:
        said = here.lab.control("ann", run_id, "resume")
        assert said.startswith("ann's run goes on from step")
        assert wait_for(
            lambda: (found := here.lab.run("ann", run_id)).step >= parked.step + 3 and found.state == "running", 120
        )
        [view] = here.lab.runs("ann")  # one run, one history
        assert (view.id, view.label, view.state) == (run_id, "ann's run", "running")
        resumed_at = lab.registry.records.resume_state(run_id)
        assert len(view.resumes) == 1 and view.resumes[0] <= parked.step
        steps = here.lab.curve("ann", run_id).steps
        assert steps == list(range(1, len(steps) + 1))  # one curve from its first step
        assert resumed_at is None or resumed_at[0] >= view.resumes[0]
        assert here.lab.control("ann", run_id, "pause").endswith("after its current step.")
        assert wait_for(lambda: here.lab.run("ann", run_id).state == "paused", 120)
        assert here.lab.run("ann", run_id).state_line.startswith("paused by you at step")
        assert here.lab.control("ann", run_id, "delete").endswith("is deleted, with its curve and snapshots.")
        left = sorted(p.name for p in (tmp_path / "lab" / "ann" / run_id).glob("*"))
        assert here.lab.runs("ann") == [] and not (tmp_path / "lab" / "ann" / run_id).exists(), left
    finally:
        here.shutdown()


def test_a_database_locked_past_its_timeout_refuses_in_one_sentence_leaves_no_ghost_and_never_freezes(
    tmp_path, monkeypatch, database_url
):
    """SQLite, and PostgreSQL (whose writes once waited for ever behind another process's lock: no lock_timeout)."""
    monkeypatch.setattr(llmviz.lab.registry, "BUSY_TIMEOUT_S", 1.0)  # past it in a second (the app waits 10 s)
    manager = JobManager(max_running=2, lab=Lab.at(tmp_path, url=database_url))
    try:
        cy = submit(manager, "cy", LONG)  # a run that trains through the lock
        assert wait_for(lambda: manager.lab.run("cy", cy.id) is not None and cy.status().step > 3, 120)
        locker = locked_by_another_process(database_url, tmp_path)
        try:
            before = cy.status().step
            with pytest.raises(JobRefused) as refused:
                submit(manager, "ann", 30)
            assert str(refused.value) == SENTENCES["locked"]
            assert manager.waiting_count == 0 and manager.share("ann") == (0, 0)  # no ghost in the queue
            assert manager.jobs("ann") == []
            assert wait_for(lambda: cy.status().step > before + 20, 120)  # the lock never froze training
            with pytest.raises(LabUnavailable, match="busy"):
                manager.lab.control("cy", cy.id, "delete")  # a write: refused, nothing half-done
        finally:
            release(locker)
        bob = submit(manager, "bob", 30)  # the fault cleared: the lab goes on by itself
        assert bob.wait(120) and bob.status().state.value == "finished"
        assert wait_for(lambda: manager.lab.run("bob", bob.id).state == "finished", 60)
        assert manager.lab.curve("bob", bob.id).steps == list(range(1, 31))
        assert wait_for(lambda: manager.lab.run("cy", cy.id).step >= cy.status().step - 50, 60)  # caught up
        assert manager.lab.runs("ann") == []  # the refused run was never recorded
        assert manager.lab.faults.current is None  # and the fault's log line said it cleared
    finally:
        manager.shutdown()


def test_a_full_disk_refuses_a_new_run_in_one_sentence_with_nothing_half_written(small_disk):
    manager = JobManager(max_running=1, lab=Lab.at(small_disk))
    try:
        first = submit(manager, "bob", 20)
        assert first.wait(120) and wait_for(lambda: manager.lab.run("bob", first.id).state == "finished", 60)
        filler = fill(small_disk)  # the disk fills up (another program's file)
        with pytest.raises(JobRefused) as refused:
            submit(manager, "ann", 20)
        assert str(refused.value) == SENTENCES["full"]
        assert manager.waiting_count == 0 and manager.jobs("ann") == []  # no ghost
        os.remove(filler)
        assert manager.lab.runs("ann") == [] and not (small_disk / "lab" / "ann").exists()  # nothing half-written
        again = submit(manager, "ann", 20)  # space again: it trains
        assert again.wait(120) and again.status().state.value == "finished"
    finally:
        manager.shutdown()


def test_the_quota_is_a_limit_runs_thin_their_snapshots_and_one_that_cannot_fit_is_refused(tmp_path):
    from llmviz.training.dataset import vocab_bound
    from llmviz.training.footprint import of_config
    from llmviz.training.trainer import build_trainer
    from tests.support.lab_process import config

    chosen = config(200)
    needs = of_config(chosen, vocab_bound(TEXT, chosen), text_bytes=len(TEXT))
    quota = 6 * needs.parameter_bytes + 2 * needs.optimizer_bytes + len(TEXT) + 64_000
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path, quota=quota))
    try:
        for _ in range(4):  # many runs with many snapshots each
            job = manager.submit_training(
                "ann",
                build=functools.partial(build_trainer, TEXT, chosen),
                footprint=needs,
                label="run",
                snapshot_every=5,
            )  # fmt: skip
            assert job.wait(180)
            # its last flush has ended (one unit of work: the thinned snapshots' files go once it is committed)
            assert wait_for(lambda job=job: not manager.keeper.holds(job.id), 60)
            assert manager.lab.run("ann", job.id).state == "finished"
            usage = manager.lab.disk("ann")
            assert usage.quota == quota and usage.used <= quota  # within it after every run
            # run.json and student.json: the lab's record, not counted; a .part: one of them being written atomically
            kept = [f for f in (tmp_path / "lab" / "ann").rglob("*") if f.suffix not in (".json", ".part")]
            assert sum(int(f.stat().st_size) for f in kept if f.is_file()) <= quota
        assert all(manager.lab.snapshots("ann", v.id)[-1].step == 200 for v in manager.lab.runs("ann"))  # last kept
    finally:
        manager.shutdown()
    tiny = JobManager(max_running=1, lab=Lab.at(tmp_path / "tiny", quota=1000))
    try:
        with pytest.raises(JobRefused, match="did not start: it needs .* more than your whole quota") as refused:
            submit(tiny, "bob", 20)
        assert "Delete" not in str(refused.value) and "is not kept" not in str(refused.value)  # bob keeps nothing
        assert tiny.lab.runs("bob") == [] and tiny.jobs("bob") == []  # refused before it wrote
    finally:
        tiny.shutdown()


def test_a_run_stopped_on_this_process_resumes_as_the_same_run_through_the_door(tmp_path):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    try:
        job = submit(manager, "ann", 400)
        assert wait_for(lambda: job.status().step >= 5, 120)
        assert manager.lab.control("ann", job.id, "stop") == "ann's run stops after its current step."
        assert job.wait(120)
        assert wait_for(lambda: not manager.keeper.holds(job.id), 60)  # its last steps are in the registry
        stopped = manager.lab.run("ann", job.id)
        assert stopped.state_line == f"stopped by you at step {stopped.step}" and stopped.resumable
        said = manager.lab.control("ann", job.id, "resume")
        assert said == f"ann's run goes on from step {stopped.step}: the same run, its curve and snapshots kept."
        [again] = manager.jobs("ann")
        assert again.id == job.id and again is not job
        assert again.wait(180) and wait_for(lambda: manager.lab.run("ann", job.id).state == "finished", 60)
        [view] = manager.lab.runs("ann")
        assert (view.id, view.step, view.resumes) == (job.id, 400, (stopped.step,))
        assert manager.lab.curve("ann", job.id).steps == list(range(1, 401))  # one curve, every step once
    finally:
        manager.shutdown()


def test_a_database_file_removed_under_the_app_refuses_and_a_restored_one_is_reopened_with_nothing_lost(tmp_path):
    import sqlite3

    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    try:
        job = submit(manager, "ann", LONG)
        assert wait_for(lambda: (manager.lab.run("ann", job.id) or job).step > 5, 120)  # recorded, training
        database = tmp_path / "lab.db"
        backup = tmp_path / "backup.db"
        with sqlite3.connect(database) as source, sqlite3.connect(backup) as copy:
            source.backup(copy)  # the teacher's backup (SQLite's online backup)
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / f"lab.db{suffix}").unlink(missing_ok=True)  # the database removed while the app runs
        with pytest.raises(LabUnavailable) as refused:
            manager.lab.runs("ann")
        assert str(refused.value) == SENTENCES["gone"]
        before = job.status().step
        assert wait_for(lambda: job.status().step > before + 20, 120)  # training goes on meanwhile
        backup.rename(database)  # restored
        assert wait_for(lambda: manager.lab.run("ann", job.id).step > before + 20, 120)  # reopened: written again
        job.stop()
        assert job.wait(120) and wait_for(lambda: not manager.keeper.holds(job.id), 60)
        [view] = manager.lab.runs("ann")
        assert view.state == "stopped" and view.step == job.status().step
        assert manager.lab.curve("ann", job.id).steps == list(range(1, view.step + 1))  # every point
    finally:
        manager.shutdown()


def test_a_kept_text_is_read_back_by_its_student_only_and_a_damaged_one_refuses_in_one_sentence(tmp_path):
    """A text a student uploaded is offered back after a reload (issue 56: nothing a student made is lost): the lab
    lists their kept texts newest first and reads one back; another student's digest opens nothing; a file whose
    bytes no longer hash to its digest (or that is gone) is one sentence without its path."""
    from llmviz.errors import UploadError
    from llmviz.lab.storage import content_hash

    lab = Lab.at(tmp_path)
    first, second = "roses and tulips\n" * 20, "def f():\n    return 1\n" * 30
    lab.keep_upload("ann", "garden.txt", first.encode())
    lab.keep_upload("ann", "code.py", second.encode())
    assert [name for _, name, _ in lab.kept_texts("ann")] == ["code.py", "garden.txt"]
    assert lab.kept_text("ann", content_hash(first.encode())) == first
    assert lab.kept_texts("bo") == []
    with pytest.raises(UploadError, match="not one of your kept texts"):
        lab.kept_text("bo", content_hash(first.encode()))
    digest = content_hash(second.encode())
    path = tmp_path / "lab" / "ann" / "uploads" / digest
    path.write_bytes(b"something else")
    with pytest.raises(UploadError) as refused:
        lab.kept_text("ann", digest)
    assert "missing or damaged" in str(refused.value) and str(tmp_path) not in str(refused.value)
    path.unlink()
    with pytest.raises(UploadError, match="missing or damaged"):
        lab.kept_text("ann", digest)
    binary = bytes(range(128, 256))  # kept by a client that did not check it: refused the same way, not a traceback
    lab.keep_upload("ann", "noise.bin", binary)
    with pytest.raises(UploadError, match="missing or damaged"):
        lab.kept_text("ann", content_hash(binary))
