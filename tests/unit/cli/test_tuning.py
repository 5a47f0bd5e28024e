"""python -m llmviz sft and dpo: a checkpoint the picker loads, bad arguments one line on stderr."""

import json
import subprocess
import sys

import pytest

from llmviz.adapt import instructions
from llmviz.training.checkpoint import load_checkpoint
from tests.support.paths import ROOT

pytestmark = pytest.mark.processes  # each test starts `python -m llmviz` (tests/support/processes.py)


def run(*args):
    return subprocess.run([sys.executable, "-m", "llmviz", *args], capture_output=True, text=True, cwd=ROOT)


def _bar_reached(stderr: str, steps: int) -> bool:
    """Did tqdm's bar of ``steps`` steps (``llmviz.cli.train.step_bar``) reach its end, with the loss beside it?"""
    frames = stderr.replace("\r", "\n").splitlines()
    return any(f"| {steps}/{steps} [" in frame and "step" in frame and "loss=" in frame for frame in frames)


def test_sft_then_dpo_write_checkpoints_that_load(tmp_path):
    sft_out, dpo_out = tmp_path / "sft", tmp_path / "dpo"
    done = run("sft", "--steps", "2", "--batch", "2", "--eval-interval", "1", "--out", str(sft_out))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["kind"] == "sft" and report["train_examples"] == len(instructions.load_set("sft", "train"))
    assert _bar_reached(done.stderr, 2)  # a progress bar as train's, on stderr (issue 72: minutes of silence)
    done = run("dpo", "--init", str(sft_out), "--steps", "1", "--batch", "2", "--half", "--out", str(dpo_out))
    assert done.returncode == 0, done.stderr
    assert _bar_reached(done.stderr, 1)
    model, _, meta = load_checkpoint(dpo_out)
    assert meta["tuning"]["kind"] == "dpo" and meta["tuning"]["beta"] == 0.1 and meta["step"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sft", "--steps", "0", "--out", "x"], "--steps"),
        (["dpo", "--beta", "-1", "--out", "x"], "--beta"),
        (["sft", "--data", "/nonexistent.jsonl", "--out", "{out}"], "is not a file"),
    ],
)
def test_bad_arguments_are_one_line_and_a_failure(args, message, tmp_path):
    done = run(*[a.replace("{out}", str(tmp_path / "o")) for a in args])
    assert done.returncode != 0 and message in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1
