"""Every page of the app with a picked model of each combination of architecture switches (issue 29, item 1: 'every
existing page works with every combination'): a checkpoint of each is trained for two steps and picked in the
sidebar; each page that draws the picked model runs without an exception or an error box.

tests/unit/lessons/test_every_preset.py checks the numbers these pages show (llmviz's functions); this runs
the pages."""

from __future__ import annotations

import pytest

from llmviz.training.checkpoint import save_checkpoint
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer
from tests.support.pages import assert_clean, run_page

TEXT = "for x in range(10): print(x)\nThe cat sat on the mat. " * 40
COMBINATIONS = {
    "llama": ("llama-style", {}),
    "qwen": ("qwen-style", {}),
    "moe": ("moe-tiny", {}),
    # the switches no preset has: sinusoidal positions, multi-query attention, LayerNorm without its shift, GELU
    "sinusoidal-mqa": ("gpt-micro", {"positions": "sinusoidal", "n_kv_heads": 1, "bias": False}),
    # no positions at all, RMSNorm, SwiGLU, an untied head, a mixture of 2 experts routed to 1
    "nope-moe": (
        "gpt-micro",
        {
            "positions": "none",
            "norm": "rmsnorm",
            "mlp_kind": "swiglu",
            "n_experts": 2,
            "experts_top_k": 1,
            "tie_weights": False,
        },
    ),
}
PAGES = [
    "stages/embeddings.py",
    "stages/attention.py",
    "stages/model.py",
    "stages/inside.py",
    "stages/sampling.py",
    "stages/adapting.py",
    "stages/serving.py",
]


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    for name, (model, switches) in COMBINATIONS.items():
        config = TrainConfig(
            model=model,
            tokenizer="char",
            context_length=32,
            batch_size=2,
            steps=2,
            eval_interval=2,
            architecture=switches or None,
            d_model=64 if model != "gpt-micro" else None,
            n_layers=2,
        )
        trainer = Trainer.from_text(TEXT, config)
        for _ in trainer.run():
            pass
        save_checkpoint(folder / name, trainer, trainer_state=False)
    return folder


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("name", list(COMBINATIONS))
def test_every_page_with_every_combination(runs_dir, monkeypatch, name, path):
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs_dir))
    at = run_page(path, _picker_selected=f"dir:{name}")
    assert_clean(at)
    shown = " ".join(str(element.value) for kind in ("caption", "markdown", "info") for element in getattr(at, kind))
    assert f"Checkpoint {name}" in shown.replace("\\", ""), f"the page did not draw the picked model {name}"
