"""A small run for the job tests: a character-level model on a short text, quick to train in a worker; a task loop
whose steps the test takes; and the end of every run a test left behind."""

import sys
import threading

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


class Gate:
    """A task loop that takes one step each time the test opens the gate (steps are under test control)."""

    def __init__(self):
        self.go = threading.Semaphore(0)
        self.steps_taken = 0

    def loop(self, should_stop, steps=1000):
        for step in range(1, steps + 1):
            self.go.acquire()
            self.steps_taken += 1
            yield step, 1.0 / step


def end_every_session() -> int:
    """End the jobs of every owner the process's job manager holds, if it made one (``tests/conftest.py`` does after
    every test): how many owners had jobs."""
    jobs = sys.modules.get("llmviz.jobs.default")
    if jobs is None or jobs._default is None:
        return 0
    owners = [owner for owner in list(jobs._default.sessions.by_owner) if jobs._default.jobs(owner)]
    for owner in list(jobs._default.sessions.by_owner):
        jobs._default.sessions.end_session(owner)
    return len(owners)
