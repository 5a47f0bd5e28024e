"""A small run for the job tests: a character-level model on a short text, quick to train in a worker; and the end
of every run a test left behind."""

import sys

from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer

TEXT = "the quick brown fox jumps over the lazy dog\n" * 40


def small_trainer(steps=30, model="bigram-neural", seed=0, **changes) -> Trainer:
    """``steps`` steps of ``model`` on a sentence repeated 40 times, windows of 8 characters, batches of 4."""
    config = TrainConfig(
        model=model,
        tokenizer="char",
        context_length=8,
        batch_size=4,
        steps=steps,
        eval_interval=max(1, steps),
        seed=seed,
        warmup_steps=0,
        **changes,
    )
    return Trainer.from_text(TEXT, config)


def end_every_session() -> int:
    """End the jobs of every owner the process's job manager holds, if it made one (``tests/conftest.py`` does after
    every test): how many owners had jobs."""
    jobs = sys.modules.get("llmviz.jobs.manager")
    if jobs is None or jobs._default is None:
        return 0
    owners = [owner for owner in list(jobs._default._sessions) if jobs._default.jobs(owner)]
    for owner in list(jobs._default._sessions):
        jobs._default.end_session(owner)
    return len(owners)
