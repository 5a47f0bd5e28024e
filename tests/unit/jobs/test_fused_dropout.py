"""A worker process owns its runs: their dropout runs in the fused kernels, from each run's own stream."""

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobState
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer

TEXT = "the quick brown fox jumps over the lazy dog\n" * 40


def with_dropout(seed: int = 5) -> Trainer:
    config = TrainConfig(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=8,
        lr=1e-2,
        dropout=0.2,
        eval_interval=8,
        eval_batches=1,
        seed=seed,
    )
    return Trainer.from_text(TEXT, config)


@pytest.mark.processes
def test_a_run_with_dropout_repeats_in_worker_processes_and_racers_never_take_each_others_draws():
    """Two runners of one race share a worker process and are stepped in turn, each drawing its dropout masks from
    the process's generator: with the same seed they train exactly as a run alone in another worker process."""
    manager = JobManager(max_running=2, session_timeout=None, workers="process")
    try:
        race = manager.submit_race("ana", [("first", with_dropout()), ("second", with_dropout())])
        alone = manager.submit_training("ana", with_dropout(), label="alone")
        for job in [*race, alone]:
            assert job.wait(120) and job.status().state == JobState.FINISHED, job.status().error
        curves = [[loss for _, loss in job.status().losses] for job in [*race, alone]]
        assert race[0].worker_pid == race[1].worker_pid != alone.worker_pid
    finally:
        manager.shutdown()
    assert len(curves[0]) == 8 and curves[0] == curves[1] == curves[2]
    here = with_dropout()
    here.claim_process()  # what the worker did: the same run in this process (another torch thread count)
    for a, b in zip([m.train_loss for m in here.run()], curves[2]):
        assert abs(a - b) <= 1e-5
