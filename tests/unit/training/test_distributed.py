"""torchrun data parallel training equals one process: 1 × batch 16 vs 2 processes × batch 8 (gloo, 127.0.0.1),
with DistributedDataParallel and with FSDP (``--fsdp``: the model sharded over the processes).

Bounded: every launch has a timeout, the processes talk only over the loopback interface.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest
import torch
from safetensors.torch import load_file

from llmviz.training.checkpoint import save_checkpoint
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer
from tests.support.app_server import free_port
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow

STEPS = 20
ARGS = [
    "--model",
    "gpt-micro",
    "--tokenizer",
    "char",
    "--context",
    "32",
    "--batch",
    "16",
    "--steps",
    str(STEPS),
    "--lr",
    "3e-3",
    "--warmup",
    "5",
    "--eval-interval",
    "10",
    "--seed",
    "7",
    "--device",
    "cpu",
]


def _environment() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "MASTER_ADDR": "127.0.0.1",
        "GLOO_SOCKET_IFNAME": "lo",
        "HF_HUB_OFFLINE": "1",
    }


def train(*arguments: str, processes: int = 1, torchrun: bool = False) -> dict:
    """Run the command line; its closing JSON line.

    Several ``processes`` are started the way torchrun starts them: one ``python -m llmviz train`` per rank, told
    its place by the environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``:
    torch.distributed's ``env://`` rendezvous, which is all that llmviz reads). ``torchrun=True`` launches them
    with torchrun itself, as README does (:func:`test_two_processes_equal_one`); the other tests spare its launcher,
    one more Python process that imports torch (~2 CPU-s a launch)."""
    command = [sys.executable, "-m", "llmviz", "train", *arguments]
    if processes == 1:
        result = subprocess.run(command, cwd=ROOT, env=_environment(), capture_output=True, text=True, timeout=120)
    elif torchrun:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={processes}",
            "--nnodes=1",
            "--master_addr=127.0.0.1",
            f"--master_port={free_port()}",
            *command[1:],
        ]
        result = subprocess.run(command, cwd=ROOT, env=_environment(), capture_output=True, text=True, timeout=120)
    else:
        result = _ranks(command, processes)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["processes"] == processes
    return summary


def _ranks(command: list[str], processes: int) -> subprocess.CompletedProcess:
    """``command`` once per rank, each with torchrun's environment variables; rank 0's output (every rank's
    errors), failing if any rank fails. Each rank writes to files, not pipes: a rank whose unread pipe filled up
    would stop, and the others would wait for it at the next collective."""
    port = free_port()
    with contextlib.ExitStack() as files:
        outputs = [
            (files.enter_context(tempfile.TemporaryFile("w+")), files.enter_context(tempfile.TemporaryFile("w+")))
            for _ in range(processes)
        ]
        ranks = [
            subprocess.Popen(
                command,
                cwd=ROOT,
                text=True,
                stdout=out,
                stderr=err,
                env={
                    **_environment(),
                    "MASTER_PORT": str(port),
                    "RANK": str(rank),
                    "LOCAL_RANK": str(rank),
                    "WORLD_SIZE": str(processes),
                    "LOCAL_WORLD_SIZE": str(processes),
                },
            )
            for rank, (out, err) in enumerate(outputs)
        ]
        try:
            deadline = time.monotonic() + 120
            for rank in ranks:
                rank.wait(timeout=max(0.0, deadline - time.monotonic()))
        finally:
            for rank in ranks:
                rank.kill()  # after a timeout: no rank waits forever for the others
        texts = []
        for out, err in outputs:
            out.seek(0)
            err.seek(0)
            texts.append((out.read(), err.read()))
    errors = "".join(f"rank {index}: {err}" for index, (_, err) in enumerate(texts) if err)
    failed = next((rank.returncode for rank in ranks if rank.returncode), 0)
    return subprocess.CompletedProcess(command, failed, texts[0][0], errors)


def losses(folder) -> list[float]:
    metrics = json.loads((folder / "checkpoint.json").read_text())["metrics"]
    return [m["train_loss"] for m in metrics]


def assert_same_weights(folder_a, folder_b, tolerance=1e-5):
    a, b = load_file(str(folder_a / "model.safetensors")), load_file(str(folder_b / "model.safetensors"))
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=tolerance, msg=name)


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    from pydoc_data.topics import topics

    path = tmp_path_factory.mktemp("corpus") / "text.txt"
    path.write_text("".join(topics.values())[:30_000], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def one_process(corpus_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("one") / "run"
    train("--corpus", str(corpus_file), *ARGS, "--out", str(out))
    return out


def test_two_processes_equal_one(corpus_file, one_process, tmp_path):
    out = tmp_path / "two"
    train("--corpus", str(corpus_file), *ARGS, "--out", str(out), processes=2, torchrun=True)
    single, double = losses(one_process), losses(out)
    assert len(single) == len(double) == STEPS
    for step, (a, b) in enumerate(zip(single, double), start=1):
        assert abs(a - b) <= 1e-4 * abs(a), f"step {step}: {a} vs {b}"
    assert single[-1] < single[0]  # it learned something
    assert_same_weights(one_process, out)
    meta = json.loads((out / "checkpoint.json").read_text())
    assert meta["final"]["val_loss"] is not None  # rank 0 evaluated


def optimizer_state(folder) -> dict[str, torch.Tensor]:
    return {k: v for k, v in load_file(str(folder / "trainer.safetensors")).items() if k.startswith("optimizer.")}


# FSDP2 on gloo (CPU) once aborted rank 1 (SIGABRT) about 1 run in 4 on this 2-core machine: rank 0 was still gathering
# the weights to save while the others tore the group down. Since the processes meet at a barrier before leaving
# (llmviz.training.distributed.leave) both FSDP tests passed 19 runs out of 19 here, alone and beside other tests.
def test_fsdp_on_two_processes_equals_one(corpus_file, one_process, tmp_path):
    """FSDP (each process holds half of every parameter, gradient and Adam moment), each process's 8 windows as
    two micro-batches of 4: step by step the same losses as one process on batch 16, the same validation loss,
    and rank 0 saves the full weights and the full optimizer state, equal to the one process's."""
    out = tmp_path / "fsdp"
    summary = train("--corpus", str(corpus_file), *ARGS, "--micro-batch", "4", "--fsdp", "--out", str(out), processes=2)
    single, sharded = losses(one_process), losses(out)
    assert len(single) == len(sharded) == STEPS
    for step, (a, b) in enumerate(zip(single, sharded), start=1):
        assert abs(a - b) <= 1e-5 * abs(a), f"step {step}: {a} vs {b}"
    meta_single = json.loads((one_process / "checkpoint.json").read_text())
    meta = json.loads((out / "checkpoint.json").read_text())
    # gradient clipping is on (max norm 1.0) and the norms before clipping agree
    assert meta["train_config"]["grad_clip"] == 1.0
    for a, b in zip(meta_single["metrics"], meta["metrics"]):
        assert abs(a["grad_norm"] - b["grad_norm"]) <= 1e-4 * a["grad_norm"], a["step"]
    assert summary["val_loss"] is not None  # every process evaluated its slice, rank 0 reports the mean
    assert abs(meta["final"]["val_loss"] - meta_single["final"]["val_loss"]) <= 1e-5 * meta_single["final"]["val_loss"]
    assert meta["model"] == meta_single["model"]  # a plain GPT's description, not FSDP's wrapper class
    # nanoGPT's two AdamW groups, the same settings; the kernel differs (fused in one process, per tensor over the
    # shards: llmviz.training.trainer.FUSED_ADAM_DEVICES), which the tolerances above and below allow for
    kernel = ("fused", "foreach")
    assert [{k: v for k, v in g.items() if k not in kernel} for g in meta["optimizer_param_groups"]] == [
        {k: v for k, v in g.items() if k not in kernel} for g in meta_single["optimizer_param_groups"]
    ]
    assert_same_weights(one_process, out)
    a, b = optimizer_state(one_process), optimizer_state(out)
    assert a.keys() == b.keys() and a
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("sharding", [[], ["--fsdp"]], ids=["ddp", "fsdp"])
def test_a_run_resumes_on_a_different_number_of_processes(corpus_file, one_process, tmp_path, sharding):
    """Ten steps in this process, the last ten in two processes (copies of the model, or shards of it and of
    the optimizer state with FSDP): the same weights as twenty in one."""
    meta = json.loads((one_process / "checkpoint.json").read_text())
    config = TrainConfig.from_dict(meta["train_config"])
    trainer = Trainer.from_text(corpus_file.read_text(encoding="utf-8"), config)
    for _ in trainer.run(steps=STEPS // 2):
        pass
    half = save_checkpoint(tmp_path / "half", trainer)
    out = tmp_path / "resumed"
    train(
        "--corpus",
        str(corpus_file),
        "--resume",
        str(half),
        "--steps",
        str(STEPS),
        "--out",
        str(out),
        *sharding,
        processes=2,
    )
    assert losses(out)[: STEPS // 2] == losses(half)
    assert_same_weights(one_process, out)


def test_gradient_accumulation_equals_the_whole_batch(corpus_file):
    """One process, batch 16 as two micro-batches of 8: the same step as one batch of 16."""
    text = corpus_file.read_text(encoding="utf-8")[:8000]
    config = TrainConfig(model="gpt-micro", tokenizer="char", context_length=16, batch_size=16, steps=3, seed=3)
    whole = Trainer.from_text(text, config)
    accumulated = Trainer.from_text(text, config.replace(micro_batch_size=8))
    assert accumulated.accumulation == 2
    for a, b in zip(whole.run(), accumulated.run()):
        assert abs(a.train_loss - b.train_loss) <= 1e-5 * a.train_loss
    for (name, p), q in zip(whole.model.named_parameters(), accumulated.model.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-5, msg=name)


def test_batch_that_does_not_split_is_a_clear_error():
    from llmviz.errors import ConfigError
    from llmviz.training.distributed import accumulation_steps

    with pytest.raises(ConfigError, match="multiple of the number of processes"):
        accumulation_steps(10, 4, None)
    with pytest.raises(ConfigError, match="must divide"):
        accumulation_steps(16, 2, 3)
