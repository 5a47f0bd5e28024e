"""scripts/gpu_check.py runs end to end where there is no GPU: it says so and runs a small smoke of itself."""

import importlib.util
import sys

import pytest

from tests.support.paths import ROOT


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_gpu_check_smoke_runs_on_the_cpu_and_prints_its_table(capsys):
    gpu_check = load_script()
    # a few CPU-seconds' worth: the worker and the command line start processes of their own, the nanoGPT comparison
    # trains for minutes (each is tested on its own elsewhere; `python scripts/gpu_check.py --smoke` runs them all)
    code = gpu_check.main(["--smoke", "--only", "logits,fused,syncs,precision,checkpoint,gpt2-shape,footprint"])
    out = capsys.readouterr().out
    assert out.startswith("No CUDA GPU here (or --smoke): a small smoke run on the CPU.")
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert table[0] == "| check | result | what was measured | s |"
    results = {line.split(" | ")[0][2:]: line.split(" | ")[1] for line in table[1:]}
    assert results == {
        "logits": "SKIP",  # the CPU is its reference
        "fused": "PASS",
        "syncs": "SKIP",
        "precision": "PASS",
        "checkpoint": "PASS",
        "gpt2-shape": "PASS",
        "footprint": "SKIP",  # a GPU's own memory
    }, out
    assert code == 0


def test_unknown_checks_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        load_script().main(["--smoke", "--only", "everything"])
    assert exited.value.code == 2 and "unknown checks everything" in capsys.readouterr().err
