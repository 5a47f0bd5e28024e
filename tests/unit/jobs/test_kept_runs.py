"""A manager keeps its runs in the lab: rows, curves and snapshot files on a real SQLite file and on a real
PostgreSQL server (the ``database_url`` fixture), read back by another
manager (a restarted server) and by another real process; the machine's slots are shared through the registry."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from llmviz.jobs.manager import JobManager
from llmviz.lab.kept_run import KeptRun
from llmviz.lab.service import Lab
from llmviz.training.checkpoint import load_checkpoint
from tests.support.jobs import small_trainer

_NONE = SimpleNamespace(step=-1)  # a run not recorded yet


def _wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_finished_run_is_kept_with_its_curve_and_snapshots(tmp_path, database_url):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    trainer = small_trainer(steps=20)
    job = manager.submit_training("student-1", trainer, label="Run 1")
    assert job.wait(120)
    manager.shutdown()  # flushes what is left
    status = job.status()
    restarted = JobManager(
        max_running=1, lab=Lab.at(tmp_path, url=database_url)
    )  # a new server on the same runs folder
    [kept] = restarted.lab_side.kept_runs("student-1")
    assert (kept.id, kept.label, kept.state, kept.step, kept.total) == (job.id, "Run 1", "finished", 20, 20)
    assert kept.config["steps"] == 20 and kept.config["model"] == "bigram-neural" and kept.model == "char"
    assert restarted.lab_side.kept_runs("student-2") == [] and restarted.lab_side.kept_run("student-2", job.id) is None
    registry = restarted.keeper.lab.registry
    assert [(step, loss) for step, loss, _ in registry.records.curve(job.id)] == list(status.losses)
    assert kept.best_val_loss == min(m.val_loss for m in status.metrics if m.val_loss is not None)
    # drawn from the record after the restart (a race's or a section's run), the run ends on the validation loss its
    # worker last reported, as the run's line said while it was live
    lab = restarted.keeper.lab
    drawn = KeptRun(lab.run("student-1", job.id), lab.curve("student-1", job.id)).status()
    assert status.last_val_loss is not None and drawn.last_val_loss == pytest.approx(status.last_val_loss, rel=1e-6)
    assert drawn.val_losses == tuple((m.step, m.val_loss) for m in status.metrics if m.val_loss is not None)
    assert f"validation {status.last_val_loss:.3f}" in drawn.describe()
    steps = [step for step, *_ in registry.records.snapshots(job.id)]
    assert steps[0] == 0 and steps[-1] == 20 and set(steps) <= set(job.snapshots.steps()) | {0, 1, 2, 5, 10, 20}
    path = registry.records.snapshots(job.id)[-1][1]
    model, tokenizer, meta = load_checkpoint(path)  # the single-file checkpoint format, no pickle
    for name, tensor in job.snapshots.get(20).items():
        assert torch.equal(model.state_dict()[name], tensor)
    assert tokenizer.vocab_size == trainer.dataset.tokenizer.vocab_size and meta["step"] == 20
    restarted.remove("student-1", job.id)  # the student deletes it
    assert restarted.lab_side.kept_runs("student-1") == [] and not (tmp_path / "lab" / "student-1" / job.id).exists()
    restarted.shutdown()


def test_a_run_of_a_student_who_has_gone_is_parked_not_lost(tmp_path, database_url):
    manager = JobManager(
        max_running=1, lab=Lab.at(tmp_path, url=database_url), session_timeout=0.01, reap_interval=3600
    )
    job = manager.submit_training("student-1", small_trainer(steps=100_000), label="long")
    assert _wait_for(lambda: job.status().step >= 5)
    assert manager.sessions.reap() == ["student-1"]
    assert job.wait(60) and manager.jobs("student-1") == []
    manager.keeper.flush()
    [kept] = manager.lab_side.kept_runs("student-1")
    assert kept.state == "parked" and kept.resumable and kept.step == job.status().step
    assert manager.keeper.lab.registry.records.snapshots(job.id)[-1][0] == kept.step  # its last step is on disk
    manager.shutdown()


CHILD = """
import sys, time
from llmviz.jobs.manager import JobManager
from llmviz.lab.service import Lab
from tests.support.jobs import small_trainer
manager = JobManager(max_running=1, lab=Lab.at(sys.argv[1], url=sys.argv[3]))
job = manager.submit_training("student-1", small_trainer(steps=int(sys.argv[2])), label="from the other process")
while job.status().step < 3:
    time.sleep(0.05)
print(job.id, flush=True)
job.wait(600)
manager.shutdown()
"""


@pytest.mark.processes
def test_two_processes_share_one_lab_and_one_slot(tmp_path, database_url):
    """The machine trains max_running=1 run at once, however many processes: a run of this process waits while
    the other process's run trains, and lists the other process's run for the same student (on a SQLite file and
    on PostgreSQL)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), "400", database_url], stdout=subprocess.PIPE, text=True, cwd="."
    )
    try:
        other_id = child.stdout.readline().strip()
        manager = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
        job = manager.submit_training("student-2", small_trainer(steps=10), label="mine")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:  # never both at once: ours read first, then theirs (the row's state
            ours = job.status().state.value  # is written once a second, its slot at once: the slot is the truth)
            assert not (ours == "running" and manager.keeper.lab.registry.records.run("student-1", other_id).training)
            time.sleep(0.05)
        assert job.wait(300)
        assert child.wait(300) == 0
        assert job.status().step == 10
        [theirs] = manager.lab_side.kept_runs("student-1")
        assert (theirs.id, theirs.state, theirs.step) == (other_id, "finished", 400)
        assert manager.queue.admitted == [job.id]
        manager.shutdown()
    finally:
        child.kill()


@pytest.mark.processes
def test_a_run_training_when_its_server_died_is_interrupted(tmp_path, database_url):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), "1000000", database_url],
        stdout=subprocess.PIPE,
        text=True,
        cwd=".",
    )
    run_id = child.stdout.readline().strip()
    watcher = Lab.at(tmp_path, url=database_url)  # a flush or two: a few steps written (no fixed sleep)
    assert _wait_for(lambda: (watcher.registry.records.run("student-1", run_id) or _NONE).step >= 3, 300)
    watcher.registry.dispose()
    child.kill()  # the server stops with no goodbye
    child.wait()
    restarted = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    assert run_id in restarted.keeper.interrupted
    [kept] = restarted.lab_side.kept_runs("student-1")
    assert kept.state == "interrupted" and kept.step >= 3 and kept.resumable
    assert restarted.keeper.lab.registry.slots.training_count() == 0  # its slot is the machine's again
    assert restarted.keeper.lab.registry.records.snapshots(run_id)[0][0] == 0
    restarted.shutdown()


def test_a_parked_run_resumes_from_its_last_snapshot(tmp_path, database_url):
    import functools

    from llmviz.jobs.resuming import resumed_trainer
    from llmviz.training import footprint
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import vocab_bound
    from llmviz.training.trainer import build_trainer
    from tests.support.jobs import TEXT

    config = TrainConfig(
        model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=5000, eval_interval=50
    )
    needs = footprint.of_config(config, vocab_bound(TEXT, config), text_bytes=len(TEXT))
    manager = JobManager(
        max_running=1, lab=Lab.at(tmp_path, url=database_url), session_timeout=0.01, reap_interval=3600
    )
    job = manager.submit_training("student-1", build=functools.partial(build_trainer, TEXT, config), footprint=needs)
    assert _wait_for(lambda: job.status().step >= 5)
    manager.sessions.reap()  # the student has gone: parked
    assert job.wait(60)
    manager.keeper.flush()
    [kept] = manager.lab_side.kept_runs("student-1")
    assert kept.state == "parked" and kept.config["text_sha256"]
    [(digest, _, size)] = manager.keeper.lab.registry.records.uploads(manager.lab_side.student("student-1"))
    assert digest == kept.config["text_sha256"] and size == len(TEXT)  # the text, kept once by content
    parked_at = kept.step
    # the parked snapshot, read before the resume (once the resumed run is stopped, the keeper's next flush adds the
    # stop's snapshot after it and may thin this one: under load the test read the stop's as "the last")
    [path] = [path for step, path, *_ in manager.keeper.lab.registry.records.snapshots(kept.id) if step == parked_at]
    kept_state, _ = manager.keeper.lab.storage.read_snapshot(path)
    again = resumed_trainer(TEXT, path)  # what the resumed run's worker builds: the parked weights, exactly
    assert again.step == parked_at
    for name, tensor in again.model.state_dict().items():
        assert torch.equal(tensor, kept_state[name])
    resumed = manager.lab_side.resume_kept("student-1", kept.id)
    assert _wait_for(lambda: resumed.status().step >= parked_at + 3)
    resumed.stop()
    assert resumed.wait(60)
    status = resumed.status()
    assert status.losses[0][0] == parked_at + 1  # it goes on from the parked step
    assert (resumed.id, resumed.label) == (kept.id, kept.label)  # the same run goes on: one history
    manager.shutdown()


def test_an_upload_kept_at_upload_time_is_the_text_its_runs_name(tmp_path, database_url):
    from tests.support.jobs import TEXT
    from tests.support.lab_process import submit

    manager = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    digest = manager.keep_upload("student-1", "notes.txt", TEXT.encode())  # the sidebar's uploader, at once
    registry = manager.keeper.lab.registry
    assert registry.records.uploads("student-1") == [(digest, "notes.txt", len(TEXT))]
    job = submit(manager, "student-1", 5)  # a run on that text: kept once, under the name it was uploaded as
    assert job.wait(120)
    manager.shutdown()
    [kept] = Lab.at(tmp_path, url=database_url).registry.records.runs("student-1")
    assert kept.config["text_sha256"] == digest and registry.records.uploads("student-1") == [
        (digest, "notes.txt", len(TEXT))
    ]
    assert JobManager(max_running=1).keep_upload("student-1", "x", b"y") is None  # no lab: nothing kept
