"""A kept run resumed after its student left (parked through the worker and the lab, then resumed by a new manager on
the same runs folder: a restarted server) goes on exactly as the same run trained without a stop: every loss after
the resumed step is equal, bit for bit (both runs take the same CPU arithmetic in a worker process of one torch
thread, so this holds on any x86 CPU). The old resume (weights only: the optimizer's moments, step counts and the
random streams started afresh) does not: a run kept without its resume state still resumes, and says so."""

from __future__ import annotations

import functools

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lab.service import Lab
from llmviz.training import footprint
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import vocab_bound
from llmviz.training.trainer import build_trainer
from tests.support.jobs import TEXT
from tests.support.lab_process import wait_for

pytestmark = pytest.mark.slow  # worker processes training three runs of 150 steps: about 10 CPU-s

STEPS = 150
# a GPT with dropout, AdamW (decayed and undecayed groups), warmup then cosine decay, evaluation every 10 steps:
# everything that resuming must carry on
CONFIG = TrainConfig(
    model="gpt-nano",
    tokenizer="char",
    context_length=8,
    batch_size=4,
    steps=STEPS,
    lr=1e-2,
    warmup_steps=5,
    dropout=0.1,
    eval_interval=10,
    eval_batches=1,
    seed=7,
)


def manager(folder, **options) -> JobManager:
    return JobManager(max_running=1, workers="process", torch_threads=1, lab=Lab.at(folder), **options)


def submit(jobs: JobManager, student: str):
    needs = footprint.of_config(CONFIG, vocab_bound(TEXT, CONFIG), text_bytes=len(TEXT))
    return jobs.submit_training(
        student, build=functools.partial(build_trainer, TEXT, CONFIG), footprint=needs, label="Run 1", total=STEPS
    )


def curve(job) -> dict[int, tuple]:
    """step → (training loss, validation loss, gradient norm, learning rate)."""
    return {m.step: (m.train_loss, m.val_loss, m.grad_norm, m.lr) for m in job.status().metrics}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[int, tuple]:
    jobs = manager(tmp_path_factory.mktemp("uninterrupted"))
    try:
        job = submit(jobs, "ann")
        assert job.wait(300) and job.status().state.value == "finished"
        return curve(job)
    finally:
        jobs.shutdown()


@pytest.fixture
def parked(tmp_path_factory):  # one per test: resuming it continues that very run (one run, one history)
    """The same run, paused after a few steps, its student gone (parked: its worker and memory freed), its server
    shut down; returns the runs folder, the run's id and the step it was parked at."""
    folder = tmp_path_factory.mktemp("parked")
    jobs = manager(folder, session_timeout=0.01, reap_interval=3600)
    try:
        job = submit(jobs, "ann")
        assert wait_for(lambda: job.status().step >= 3, 120)
        job.pause()
        assert wait_for(lambda: job.status().state.value == "paused", 60)
        assert jobs.sessions.reap() == ["ann"] and job.wait(60)  # the student has gone: parked
        jobs.keeper.flush()
        [kept] = jobs.lab_side.kept_runs("ann")
        assert kept.state == "parked" and 3 <= kept.step < STEPS
        return folder, kept.id, kept.step
    finally:
        jobs.shutdown()


def resume(folder, run_id: str, drop_state: bool = False):
    restarted = manager(folder)
    try:
        registry = restarted.keeper.lab.registry
        if drop_state:  # as a run kept before resume states were: its snapshots only
            restarted.keeper.lab.drop_resume(run_id)
        line = restarted.resume_line("ann", run_id)
        job = restarted.lab_side.resume_kept("ann", run_id)
        assert job.wait(300) and job.status().state.value == "finished", job.status().error
        return job, line, registry.records.resume_state(job.id)
    finally:
        restarted.shutdown()


def test_a_parked_run_resumed_by_a_new_server_goes_on_exactly_as_if_never_stopped(uninterrupted, parked):
    folder, run_id, step = parked
    registry = Lab.at(folder).registry
    resume_step, path, nbytes = registry.records.resume_state(run_id)
    assert resume_step == step and path.endswith(f"resume-{step:09d}.safetensors")
    weights = registry.records.snapshots(run_id)[-1][2]
    assert 2 * weights < nbytes < 3 * weights + 100_000  # Adam's two moments per weight (and the metrics so far)
    assert registry.records.disk_bytes("ann") >= nbytes + weights  # in the student's quota
    job, line, _ = resume(folder, run_id)
    assert line.startswith(f"Resume trains it on from step {step} with its optimizer's state")
    assert (job.id, job.label) == (run_id, "Run 1")  # the same run goes on
    resumed = curve(job)
    assert sorted(resumed) == list(range(step + 1, STEPS + 1))  # on from the parked step, to the end
    assert resumed == {s: uninterrupted[s] for s in resumed}  # every loss, norm and rate equal
    assert registry.records.resume_state(job.id) is None  # finished: its optimizer state left the quota


def test_a_run_kept_without_its_optimizer_state_resumes_with_its_weights_and_says_so(uninterrupted, parked):
    """The old resume (the optimizer and random streams started afresh) fails the equality above."""
    folder, run_id, step = parked
    job, line, _ = resume(folder, run_id, drop_state=True)
    assert f"from step {step} with its weights only" in line and "the optimizer starts afresh" in line
    assert (job.id, job.label) == (run_id, "Run 1")
    resumed = curve(job)
    assert sorted(resumed) == list(range(step + 1, STEPS + 1))
    differ = [s for s in resumed if resumed[s][0] != uninterrupted[s][0]]
    assert len(differ) > len(resumed) // 2  # not the uninterrupted run's losses
