"""The runner interface (llmviz/jobs/runners.py): the sparse autoencoder's trainer runs through it without importing
the jobs layer (issue 60 §3: arrows only downward), and the facts a page reads of it are its own."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

from llmviz.interpret.sae import SaeConfig, SaeTrainer
from llmviz.jobs.runners import Runner, facts, kind_of
from llmviz.training.snapshots import state_bytes, state_of


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_no_interpret_module_imports_the_jobs_layer():
    folder = Path(__file__).resolve().parents[3] / "llmviz" / "interpret"
    assert (folder / "sae.py").exists()
    reaching = {
        path.name: sorted(i for i in _imports(path) if i.startswith("llmviz.jobs")) for path in folder.glob("*.py")
    }
    assert {name: found for name, found in reaching.items() if found} == {}


def test_the_autoencoder_trainer_is_a_runner_and_describes_itself():
    config = SaeConfig(d_sae=16, k=2, steps=3, batch=8, tokens=64, eval_every=0)
    trainer = SaeTrainer(config, torch.randn(64, 6), None, torch.zeros(0, 4, dtype=torch.long))
    assert isinstance(trainer, Runner) and kind_of(trainer) == "autoencoder"
    assert not hasattr(trainer, "dataset")  # no faked dataset object
    info = facts(trainer)
    assert info.description["kind"] == "sae" and info.description["d_in"] == 6
    assert info.parameters == 6 * 16 + 16 + 16 * 6 + 6  # W_enc, b_enc, W_dec, b_dec
    assert info.train_tokens == 64 and info.snapshot_bytes == state_bytes(state_of(trainer.model))
    assert [metrics.step for metrics in trainer.run()] == [1, 2, 3]
