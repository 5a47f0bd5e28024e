"""A worker's life as its supervisor runs it (llmviz.jobs.supervisor), in real worker processes and in Ray actors
of a real Ray head (the ``backend`` fixture: every test runs on both): a paused run gives its
process back and resumes exactly; a worker that stops answering is killed and its run failed with the reason; Stop and
a closed tab end a hung worker; a run out of GPU memory fails clearly and its process exits."""

import functools
import os
import signal

import pytest
import torch

from llmviz.jobs import supervisor
from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobState
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer
from tests.support.waiting import wait_for

TEXT = "the quick brown fox jumps over the lazy dog, said the cat to the hen\n" * 60


def trainer(steps=200, **changes):
    config = TrainConfig(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=steps,
        eval_interval=25,
        seed=3,
        warmup_steps=5,
        dropout=0.1,  # dropout draws from the run's own stream: resuming must put it back too
        **changes,
    )
    return Trainer.from_text(TEXT, config)


def alive(pid: int) -> bool:
    """Is process ``pid`` still there (a zombie that has exited counts as gone)?"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def manager(backend):
    made = JobManager(max_running=2, session_timeout=None, latest_snapshot_s=0.2, **backend)
    yield made
    made.shutdown()


@pytest.mark.slow
def test_a_paused_run_gives_its_process_back_and_resumes_with_identical_losses(manager):
    reference = manager.submit_training("ann", trainer(), label="never paused")
    paused = manager.submit_training("bob", trainer(), label="paused twice")
    for _ in range(2):
        wait_for(lambda: paused.status().step >= 5 and paused.worker_pid is not None, timeout=120)
        pid = paused.worker_pid
        paused.pause()
        wait_for(lambda: paused.status().state == JobState.PAUSED, timeout=60)
        wait_for(lambda pid=pid: not alive(pid), timeout=60)  # the worker process has exited: its memory is free
        wait_for(lambda: paused.worker_pid is None and manager.running_count <= 1)  # and its slot is free
        at = paused.status().step
        assert paused.snapshots.steps()[-1] == at  # the step slider shows where it paused
        paused.resume()
        wait_for(lambda at=at: paused.status().step > at, timeout=120)
        assert paused.worker_pid not in (None, pid)  # a new worker, from the parked state
    assert reference.wait(300) and paused.wait(300)
    assert reference.status().state == paused.status().state == JobState.FINISHED, paused.status().error
    assert [loss for _, loss in paused.status().losses] == [loss for _, loss in reference.status().losses]
    assert [m.val_loss for m in paused.status().metrics] == [m.val_loss for m in reference.status().metrics]
    elapsed = [m.elapsed_s for m in paused.status().metrics]
    assert elapsed == sorted(elapsed)  # its clock goes on from where it paused
    for name, tensor in reference.snapshots.get(200).items():
        assert torch.equal(paused.snapshots.get(200)[name], tensor), name
    assert paused.checkpoint is not None


@pytest.mark.processes
def test_stopping_a_paused_run_keeps_its_end_without_another_step(manager):
    job = manager.submit_training("cy", trainer(steps=100_000), label="stopped while paused")
    wait_for(lambda: job.status().step >= 3, timeout=120)
    job.pause()
    wait_for(lambda: job.status().state == JobState.PAUSED and job.worker_pid is None, timeout=60)
    at = job.status().step
    job.stop()
    assert job.wait(60) and job.status().state == JobState.STOPPED
    assert job.status().step == at and job.snapshots.steps()[-1] == at  # no step after the pause
    assert job.checkpoint is not None  # the download of the stopped run


@pytest.mark.processes
def test_a_closed_tab_drops_a_paused_run_without_starting_a_worker(manager):
    job = manager.submit_training("dee", trainer(steps=100_000), label="paused")
    wait_for(lambda: job.status().step >= 2, timeout=120)
    job.pause()
    wait_for(lambda: job.status().state == JobState.PAUSED and job.worker_pid is None, timeout=60)
    manager.sessions.end_session("dee")
    assert job.wait(30) and job.status().state == JobState.STOPPED
    assert job.worker_pid is None and job.checkpoint is None  # nobody is left to download it
    assert manager.jobs("dee") == []


@pytest.mark.slow
def test_a_worker_that_stops_answering_is_killed_and_its_run_failed_with_the_reason(backend):
    manager = JobManager(max_running=1, session_timeout=None, worker_timeout=3, **backend)
    try:
        job = manager.submit_training("eve", trainer(steps=1_000_000), label="hangs")
        wait_for(lambda: job.status().step >= 2 and job.snapshots.last_step, timeout=120)
        pid = job.worker_pid
        os.kill(pid, signal.SIGSTOP)  # alive, but answering nothing (not even its heartbeat)
        assert job.wait(60)
        status = job.status()
        assert status.state == JobState.FAILED
        assert status.error.startswith("The process training this run stopped answering for 3 s and was stopped.")
        assert f"Its snapshots up to step {job.snapshots.last_step} are kept." in status.error
        wait_for(lambda: not alive(pid), timeout=30)
        again = manager.submit_training("eve", trainer(steps=3), label="after")  # its slot is free again
        assert again.wait(120) and again.status().state == JobState.FINISHED, again.status().error
    finally:
        manager.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stop", "closed tab"])
def test_stop_or_a_closed_tab_ends_a_hung_worker(how, backend, monkeypatch):
    """The timeout is far off (120 s): Stop (or the end of the tab's session) kills a worker that has gone silent
    within the stop grace (10 s; 2 s here, so that the test does not sit through it), and the run ends stopped, as
    asked."""
    monkeypatch.setattr(supervisor, "STOP_GRACE_S", 2.0)
    manager = JobManager(max_running=1, session_timeout=None, worker_timeout=120, **backend)
    try:
        job = manager.submit_training("fay", trainer(steps=1_000_000), label="hung")
        wait_for(lambda: job.status().step >= 2, timeout=120)
        pid = job.worker_pid
        os.kill(pid, signal.SIGSTOP)
        if how == "stop":
            job.stop()
        else:
            manager.sessions.end_session("fay")
        assert job.wait(60) and job.status().state == JobState.STOPPED
        wait_for(lambda: not alive(pid), timeout=30)
        wait_for(lambda: manager.running_count == 0)  # its slot is free
    finally:
        manager.shutdown()


def out_of_gpu_memory(should_stop):
    """A task that fails as a CUDA step does when the GPU is full."""
    yield 1, 1.0
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.77 GiB total capacity)")


@pytest.mark.processes
def test_a_run_out_of_gpu_memory_fails_clearly_and_its_process_exits(manager):
    job = manager.submit_task("gus", functools.partial(out_of_gpu_memory), label="oom", total=3)
    assert job.wait(60)
    status = job.status()
    assert status.state == JobState.FAILED
    assert status.error.startswith("The GPU ran out of memory at step 1 (CUDA out of memory. Tried to allocate")
    assert "its memory is free for the others" in status.error and "\n" not in status.error
    pid = job.worker_pid
    wait_for(lambda: pid is None or not alive(pid), timeout=30)
