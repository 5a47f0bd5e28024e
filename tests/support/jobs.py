"""A small run for the job tests: a character-level model on a short text, quick to train in a worker."""

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
