"""Every architecture race of the Training page trains both of its runners, which differ in that one switch."""

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lessons.architectures import SWITCH_RACE_TITLES, SWITCH_RACES
from llmviz.models.presets import PRESETS
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer

TEXT = "the quick brown fox jumps over the lazy dog\n" * 30


@pytest.mark.parametrize("switch", list(SWITCH_RACES))
def test_both_runners_train_and_differ_in_that_switch(switch):
    runners = []
    for title, switches in SWITCH_RACES[switch]:
        config = TrainConfig(
            model="gpt-micro",
            tokenizer="char",
            context_length=16,
            batch_size=4,
            steps=3,
            architecture=switches or None,
            eval_interval=3,
            seed=0,
        )
        runners.append((title, Trainer.from_text(TEXT, config)))
    configs = [trainer.model.config for _, trainer in runners]
    changed = {
        field
        for field in PRESETS["gpt-micro"].__dataclass_fields__
        if getattr(configs[0], field) != getattr(configs[1], field)
    }
    assert changed and changed <= {
        "positions",
        "norm",
        "mlp_kind",
        "n_kv_heads",
        "n_experts",
        "experts_top_k",
        "bias",
        "tie_weights",
    }, changed
    assert set(SWITCH_RACE_TITLES) == set(SWITCH_RACES)
    manager = JobManager(max_running=1, session_timeout=None)
    try:
        jobs = manager.submit_race("student", runners)
        for job in jobs:
            assert job.wait(60) and job.status().state == "finished", job.status().error
            assert job.status().step == 3
    finally:
        manager.shutdown()
