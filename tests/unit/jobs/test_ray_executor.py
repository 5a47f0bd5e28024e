"""The Ray backend (llmviz.jobs.ray_executor) on a real local Ray head (tests/support/ray_cluster.py): a run, a race
and a task train as Ray actors and hand back what the pages read; a killed actor fails its run with its snapshots kept
while the others go on; a run for the GPU on a CPU-only cluster is refused with the reason. (The supervisor's tests,
tests/unit/jobs/test_supervisor.py, run on both backends: pause, park, resume, stop and the heartbeat timeout.)"""

import functools
import os

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobRefused, JobState
from llmviz.training import footprint
from llmviz.training.config import TrainConfig
from tests.support.jobs import small_trainer as trainer
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # a Ray head and actors that import torch: not the fast lane


def counting_loop(should_stop, steps=5):
    """A picklable task: counts to ``steps`` and returns the total (the job's result)."""
    total = 0
    for step in range(1, steps + 1):
        total += step
        yield step, 1.0 / step
    return total


@pytest.fixture(scope="module")
def hall(ray_address):
    manager = JobManager(
        max_running=2, session_timeout=None, workers="ray", ray_address=ray_address, latest_snapshot_s=0.2
    )
    yield manager
    manager.shutdown()


def test_a_run_a_race_and_a_task_train_on_ray_and_hand_back_what_pages_read(hall):
    run = hall.submit_training("alice", trainer(steps=25), label="run", sample_every=25, sample_prompt="th")
    race = hall.submit_race("bob", [("a", trainer(steps=10, seed=1)), ("b", trainer(steps=10, seed=2))])
    assert run.wait(120) and run.status().state == JobState.FINISHED, run.status().error
    assert run.worker_pid != os.getpid()  # it trained in an actor's process
    status = run.status()
    assert status.step == 25 and [s for s, _ in status.losses] == list(range(1, 26))
    assert status.samples and status.samples[-1][0] == 25
    assert run.snapshots.steps()[0] == 0 and run.snapshots.steps()[-1] == 25
    twin = trainer(steps=25)  # the same run in this process ends on the same weights
    list(twin.run())
    for name, tensor in twin.model.state_dict().items():
        assert run.snapshots.get(25)[name].allclose(tensor, atol=1e-6), name
    assert run.checkpoint is not None
    for job in race:
        assert job.wait(120) and job.status().state == JobState.FINISHED and job.status().step == 10
    task = hall.submit_task("carol", functools.partial(counting_loop, steps=4), label="count", total=4)
    assert task.wait(120) and task.result == 10 and task.status().state == JobState.FINISHED


def test_a_killed_ray_actor_fails_its_run_with_snapshots_kept_and_the_others_go_on(hall):
    import ray

    doomed = hall.submit_training("dave", trainer(steps=1_000_000), label="doomed")
    other = hall.submit_training("erin", trainer(steps=1_000_000), label="goes on")
    wait_for(lambda: doomed.status().step >= 3 and doomed.snapshots.last_step and other.status().step >= 1)
    ray.kill(doomed._group.process.actor, no_restart=True)  # as a node that went away, or an operator's kill
    assert doomed.wait(60)
    status = doomed.status()
    assert status.state == JobState.FAILED and "stopped unexpectedly" in status.error
    assert f"Its snapshots up to step {doomed.snapshots.last_step} are kept." in status.error
    assert doomed.snapshots.steps()[0] == 0 and doomed.snapshots.get(doomed.snapshots.last_step)
    at = other.status().step
    wait_for(lambda: other.status().step > at + 2)  # the other run trains on
    assert other.status().state == JobState.RUNNING
    other.stop()
    assert other.wait(60) and other.status().state == JobState.STOPPED


def test_a_run_for_the_gpu_on_a_cpu_only_cluster_is_refused_with_the_reason(hall, ray_address):
    config = TrainConfig(model="gpt-nano", tokenizer="char", batch_size=4, context_length=16, device="cuda")
    needs = footprint.of_config(config, 64)
    assert needs.on_gpu
    with pytest.raises(JobRefused, match=f"asks for a GPU, but the Ray cluster at {ray_address} has none"):
        hall.submit_training("fay", build=functools.partial(print, "never"), footprint=needs, label="cuda")
    assert hall.share("fay") == (0, 0)  # nothing was entered


def leaving_state_behind(should_stop):
    """A picklable task: what its worker process offers when it starts (process id, torch threads, torch's seed and
    first draw, default dtype, grad mode, matmul precision, Python's first draw), then it changes all of it."""
    import random

    import torch

    seen = (
        os.getpid(),
        torch.get_num_threads(),
        torch.initial_seed(),
        torch.rand(3).tolist(),
        torch.get_default_dtype(),
        torch.is_grad_enabled(),
        torch.get_float32_matmul_precision(),
        random.random(),
    )
    torch.manual_seed(1234)
    torch.set_num_threads(3)
    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    torch.set_float32_matmul_precision("medium")
    random.seed(5)
    yield 1, 1.0
    return seen


FRESH_PROCESS = (
    "import torch; print(repr((str(torch.get_default_dtype()), torch.is_grad_enabled(), "
    "torch.get_float32_matmul_precision())))"
)


def test_a_warm_actor_carries_nothing_of_its_previous_job_into_the_next(ray_address, monkeypatch):
    import ast
    import random
    import subprocess
    import sys

    import torch

    from llmviz.jobs import ray_executor

    manager = JobManager(max_running=1, session_timeout=None, workers="ray", ray_address=ray_address, torch_threads=2)
    pool = ray_executor.WarmPool(1)  # one warm actor, and no new one: the second job gets the first one's back
    pool.fill()
    ray_executor.ray_module().get(pool.idle[0].ready, timeout=120)  # warm: started, torch imported
    monkeypatch.setattr(pool, "fill", lambda: None)
    monkeypatch.setattr(ray_executor, "_pool", pool)
    try:
        seen = []
        for owner in ("gus", "hal"):
            task = manager.submit_task(owner, leaving_state_behind, label="dirty", total=1)
            assert task.wait(120) and task.status().state == JobState.FINISHED, task.status().error
            seen.append(task.result)
    finally:
        manager.shutdown()
        pool.close()
    first, second = seen
    assert first[0] == second[0]  # the same warm actor's process served both jobs
    fresh = ast.literal_eval(
        subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, check=True).stdout
    )
    assert first[2] != second[2] and first[3] != second[3]  # torch's generator: a seed of its own per job
    for job in (first, second):  # each starts as a fresh Python process does, whatever the job before it did
        assert job[1] == 2  # the job's own torch threads, not the 3 its predecessor set
        assert (str(job[4]), job[5], job[6]) == fresh
        assert (
            job[2] != 1234 and job[3] != torch.rand(3, generator=torch.Generator().manual_seed(1234)).tolist()
        )  # reseeded
        assert job[7] != random.Random(5).random()  # Python's generator reseeded from the OS, not left at seed 5


def test_the_training_page_offers_the_cpu_only_cluster_s_devices_not_the_server_s(hall, ray_address):
    import ray

    assert hall.run_devices() == ["cpu"]  # the head has no GPU, whatever this machine has
    cpus = ray.cluster_resources()["CPU"]
    line = hall.where_runs_train()
    assert line.startswith(f"Runs train on the Ray cluster at {ray_address}: {cpus:g} CPUs and no GPU on 1 node")
    assert line.endswith("so a run on the GPU would be refused.")
