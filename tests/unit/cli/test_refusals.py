"""Every bad input the command line can be given is refused before anything is allocated or trained: a non-zero exit
and one line on stderr, never a traceback, never a machine run out of memory, never a run lost after its training.

Most cases call ``llmviz.cli.main.main([...])`` in this process (capsys reads stderr); two go through
``python -m llmviz`` to show the whole program says one line too.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llmviz.cli import main
from tests.support.paths import ROOT

SHIPPED = str(ROOT / "data" / "gpt-python-docs")
TINY = ["--corpus", "names", "--model", "gpt-nano", "--steps", "1", "--vocab-size", "300", "--eval-interval", "1"]


def refused(capsys, *argv, alone: bool = True) -> tuple[int, str]:
    """``main(argv)``'s exit status and its one error line; no traceback. ``alone``: stderr holds nothing else (a
    refusal after the run was set up follows its progress lines, which go to stderr too)."""
    try:
        code = main.main(list(argv))
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("warning:")]
    errors = [line for line in lines if line.startswith("error: ") or ": error: " in line]
    assert code not in (0, None), err
    assert len(errors) == 1 and (not alone or len(lines) == 1), err
    assert "Traceback" not in err
    return code, errors[0]


@pytest.mark.parametrize("command", ["train", "sample", "lora"])
@pytest.mark.parametrize("seed", [str(2**70), "-1", "2**70"])
def test_a_seed_beyond_what_torch_takes_is_a_usage_error(capsys, tmp_path, command, seed):
    source = {"train": [], "sample": ["--checkpoint", SHIPPED], "lora": ["--init", SHIPPED]}[command]
    out = [] if command == "sample" else ["--out", str(tmp_path / "out")]
    code, line = refused(capsys, command, *source, *out, "--seed", seed)
    assert code == 2 and "argument --seed" in line and "from 0 to 9,223,372,036,854,775,807" in line


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--d-model", "1000000"], "d_model must be a whole number from 1 to 16,384"),
        (["--layers", "1000000"], "n_layers must be a whole number from 1 to 256"),
        (["--arch", "n_experts=100000"], "n_experts = 100,000 is more than llmviz builds"),
        (["--d-model", "0"], "d_model must be a whole number from 1 to 16,384, or unset (got 0)"),
        (["--heads", "0"], "n_heads must be a whole number from 1 to 256, or unset (got 0)"),
        (["--layers", "-2"], "n_layers must be a whole number from 1 to 256"),
        (["--warmup", "-5"], "warmup_steps must be 0 or more (got -5)"),
        (["--d-model", "1e6"], "argument --d-model: invalid int value: '1e6'"),
    ],
)
def test_sizes_and_warmups_that_cannot_work_are_refused_before_training(capsys, tmp_path, flags, words):
    code, line = refused(capsys, "train", *TINY, *flags, "--out", str(tmp_path / "out"))
    assert code == 2 and words in line
    assert not (tmp_path / "out").exists()


def test_a_model_above_the_parameter_cap_is_refused_with_its_size(capsys, tmp_path, monkeypatch):
    # gpt-nano at d_model 2048 and 24 layers: 24·(4·2048² + 2·2048·8192) + 2·300·2048 + 64·2048 ≈ 1.21 billion
    monkeypatch.setenv("LLMVIZ_MAX_PARAMETERS", "1000000000")
    flags = ["--d-model", "2048", "--layers", "24", "--heads", "16", "--context", "64"]
    code, line = refused(capsys, "train", *TINY, *flags, "--out", str(tmp_path / "out"))
    expected = 24 * (4 * 2048 * 2048 + 2 * 2048 * 4 * 2048) + 2 * 300 * 2048 + 64 * 2048
    assert code == 2 and f"about {expected:,} parameters" in line and "LLMVIZ_MAX_PARAMETERS = 1,000,000,000" in line


def test_a_model_whose_weights_alone_exceed_the_memory_is_refused(capsys, tmp_path, monkeypatch):
    from llmviz.models import gpt

    monkeypatch.setattr(gpt, "machine_memory_bytes", lambda: 2**30)  # a 1 GB machine
    flags = ["--d-model", "1024", "--layers", "24", "--heads", "16"]  # about 302 million parameters: 1.1 GB of weights
    code, line = refused(capsys, "train", *TINY, *flags, "--out", str(tmp_path / "out"))
    assert code == 2 and "whose weights alone take 1.1 GB: more than this machine's 1.0 GB of memory" in line


def test_a_model_that_fits_but_cannot_train_in_the_memory_is_refused(capsys, tmp_path, monkeypatch):
    from llmviz.models import gpt
    from llmviz.training import config

    for module in (gpt, config):
        monkeypatch.setattr(module, "machine_memory_bytes", lambda: 2**30)
    # 6·(4·1024² + 2·1024·4096) + 2·300·1024 + 64·1024 = 76,177,408 parameters: 0.28 GB of weights fit in 1 GB,
    # but AdamW keeps a gradient and two moments beside each: 16 bytes a parameter, 1.14 GB
    flags = ["--d-model", "1024", "--layers", "6", "--heads", "16"]
    code, line = refused(capsys, "train", *TINY, *flags, "--out", str(tmp_path / "out"))
    assert code == 2 and "about 76,177,408 parameters; training it takes at least 1.1 GB" in line
    assert "more than this machine's 1.0 GB of memory" in line


def test_a_lora_rank_beyond_the_matrices_is_refused_before_any_adapter(capsys, tmp_path):
    code, line = refused(capsys, "lora", "--init", SHIPPED, "--out", str(tmp_path / "out"), "--rank", "1000000000")
    assert code == 2 and "A LoRA rank of 1,000,000,000" in line and "from 1 to 128" in line  # d_model 128, q and v


@pytest.mark.parametrize("out", ["/dev/null", "existing-file"])
@pytest.mark.parametrize("command", ["train", "lora", "finetune", "quantize"])
def test_an_output_that_is_not_a_folder_is_refused_before_training(capsys, tmp_path, out, command):
    if out == "existing-file":
        out = str(tmp_path / "notes.txt")
        Path(out).write_text("mine")
    argv = [*TINY] if command == "train" else ["--init", SHIPPED]
    code, line = refused(capsys, command, *argv, "--out", out)
    assert code == 2 and f"--out: {out} exists and is not a folder" in line and "Nothing was trained" in line
    if out.endswith("notes.txt"):
        assert Path(out).read_text() == "mine"


def test_a_disk_too_full_for_the_checkpoint_is_found_before_training(capsys, tmp_path, monkeypatch):
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=100_000))
    code, line = refused(capsys, "train", *TINY, "--out", str(tmp_path / "out"), alone=False)
    assert code == 2 and "the checkpoint needs about" in line and "has 0 MB free" in line
    assert not (tmp_path / "out").exists()


def test_a_checkpoint_the_disk_refuses_after_training_is_kept_elsewhere(capsys, tmp_path, monkeypatch):
    from llmviz.training import checkpoint
    from llmviz.training.checkpoint import load_checkpoint

    out = tmp_path / "out"
    real = checkpoint.save_checkpoint

    def full_disk(directory, *args, **kwargs):
        if Path(directory) == out:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(directory, *args, **kwargs)

    monkeypatch.setattr(checkpoint, "save_checkpoint", full_disk)
    code, line = refused(capsys, "train", *TINY, "--out", str(out), alone=False)
    assert code == 2 and f"Cannot write the checkpoint to {out} (No space left on device)" in line
    kept = Path(line.split("it was saved to ")[1].removesuffix(" instead."))
    try:
        model, _, meta = load_checkpoint(kept)  # the run is there, whole
        assert meta["step"] == 1 and torch.isfinite(next(model.parameters())).all()
    finally:
        shutil.rmtree(kept)


@pytest.mark.processes
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_tokenize_refuses_a_fifo_at_once(tmp_path):
    """A FIFO nobody writes to blocked ``tokenize --file`` for ever: it is refused without waiting (a subprocess,
    so that a hang fails the test at its timeout instead of hanging pytest)."""
    os.mkfifo(tmp_path / "pipe")
    result = subprocess.run(
        [sys.executable, "-m", "llmviz", "tokenize", "--file", str(tmp_path / "pipe")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: {tmp_path / 'pipe'} is a pipe, not a text file."


@pytest.mark.parametrize("path, words", [("/dev/zero", "is a device, not a text file"), ("/", "is a folder")])
def test_tokenize_refuses_devices_and_folders(capsys, path, words):
    if not Path(path).exists():
        pytest.skip(f"no {path} here")
    code, line = refused(capsys, "tokenize", "--file", path)
    assert code == 2 and words in line


def test_tokenize_refuses_a_file_or_a_stream_over_its_cap(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(main, "MAX_TOKENIZE_BYTES", 2**20)
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (2**20 + 1))
    code, line = refused(capsys, "tokenize", "--file", str(big))
    assert code == 2 and "is 1.0 MB; the limit is 1 MB" in line
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"b" * (2**20 + 1))))
    code, line = refused(capsys, "tokenize", "--file", "-")
    assert code == 2 and "Standard input holds more than 1 MB" in line


@pytest.fixture(scope="module")
def nan_checkpoint(tmp_path_factory):
    from safetensors.torch import load_file, save_file

    from llmviz.training.checkpoint import save_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    trainer = Trainer.from_text("the cat sat on the mat\n" * 40, TrainConfig(model="gpt-nano", tokenizer="char"))
    folder = save_checkpoint(tmp_path_factory.mktemp("nan") / "run", trainer, trainer_state=False)
    weights = load_file(str(folder / "model.safetensors"))
    weights["blocks.0.attn.qkv.weight"][0, :3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    save_file(weights, str(folder / "model.safetensors"))
    return folder


@pytest.mark.parametrize("command", ["quantize", "lora", "finetune"])
def test_nan_or_infinite_weights_are_refused_not_reported(capsys, tmp_path, nan_checkpoint, command):
    code, line = refused(capsys, command, "--init", str(nan_checkpoint), "--out", str(tmp_path / "out"))
    assert code == 2 and "holds 3 NaN or infinite weights (in blocks.0.attn.qkv.weight): it cannot be adapted" in line
    assert not (tmp_path / "out").exists()


def test_sample_refuses_them_too(capsys, nan_checkpoint):
    code, line = refused(capsys, "sample", "--checkpoint", str(nan_checkpoint))
    assert code == 2 and "NaN or infinite" in line


@pytest.mark.processes
def test_the_whole_program_says_one_line(tmp_path):
    for argv in (["train", "--out", str(tmp_path / "o"), "--seed", str(2**70)], ["train", "--out", "/dev/null"]):
        result = subprocess.run(
            [sys.executable, "-m", "llmviz", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_good_quantize_still_writes_finite_numbers(capsys, tmp_path):
    code = main.main(["quantize", "--init", SHIPPED, "--out", str(tmp_path / "q"), "--corpus", "names"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and all(not isinstance(v, float) or v == v for v in report.values())


@pytest.mark.parametrize("seed", [str(2**70), "-1"])
def test_a_steering_seed_beyond_what_torch_takes_is_a_usage_error(capsys, seed):
    steer = ["interpret", "steer", "--model", SHIPPED, "--prompt", "def", "--layer", "1", "--alpha", "2"]
    code, line = refused(capsys, *steer, "--token", " list", "--seed", seed)
    assert code == 2 and "argument --seed" in line and "from 0 to 9,223,372,036,854,775,807" in line


def test_steering_takes_at_most_twenty_prompts_a_side_as_the_page_does(capsys):
    steer = ["interpret", "steer", "--model", SHIPPED, "--prompt", "def", "--layer", "1", "--alpha", "2"]
    pairs = [flag for _ in range(2000) for flag in ("--positive", "for x in y", "--negative", "while x")]
    code, line = refused(capsys, *steer, *pairs)
    assert code == 2 and "at most 20 --positive and 20 --negative prompts (got 2,000 and 2,000)" in line
    code, line = refused(capsys, *steer, "--token", " list", "--prompt", "x" * 20_001)
    assert code == 2 and "at most 20,000 are read" in line


def test_a_negative_number_of_qat_steps_is_a_usage_error(capsys, tmp_path):
    out = str(tmp_path / "q")
    code, line = refused(capsys, "quantize", "--init", SHIPPED, "--out", out, "--qat-steps", "-1")
    assert code == 2 and "argument --qat-steps" in line and "from 0 to 100,000" in line


def test_a_stride_longer_than_the_context_is_refused(capsys, tmp_path):
    out = str(tmp_path / "run")
    code, line = refused(capsys, "train", *TINY, "--out", out, "--stride", "1000000000000", alone=False)
    assert code == 2 and "--stride 1,000,000,000,000 is longer than the context (64 tokens)" in line
    assert not (tmp_path / "run").exists()


def test_training_into_a_folder_that_holds_a_run_is_refused_unless_overwrite(capsys, tmp_path):
    out = tmp_path / "run"
    assert main.main(["train", *TINY, "--out", str(out)]) == 0
    saved = (out / "checkpoint.json").read_bytes()
    capsys.readouterr()
    code, line = refused(capsys, "train", *TINY, "--out", str(out), "--seed", "7")
    assert code == 2 and "already holds a run" in line and "--overwrite" in line
    assert (out / "checkpoint.json").read_bytes() == saved  # untouched
    code, line = refused(capsys, "lora", "--init", SHIPPED, "--out", str(out), "--steps", "1")
    assert "already holds a run" in line
    assert main.main(["train", *TINY, "--out", str(out), "--seed", "7", "--overwrite"]) == 0
    assert json.loads((out / "checkpoint.json").read_text())["train_config"]["seed"] == 7
