"""Crafted checkpoints are refused before anything big is allocated, and the CLI never prints a traceback."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from llmviz.errors import CheckpointError
from llmviz.training.checkpoint import load_checkpoint
from tests.support.checkpoints import bounded, craft, good_checkpoint, hostile_runs_folder
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return good_checkpoint(tmp_path_factory.mktemp("good"))


def _set(path, value):
    def change(meta):
        target = meta
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


ABSURD = {
    "layers-10000": _set(["model", "config", "n_layers"], 10_000),
    "d-model-huge": _set(["model", "config", "d_model"], 2**20),
    "vocab-billion": _set(["model", "config", "vocab_size"], 10**9),
    "layers-string": _set(["model", "config", "n_layers"], "12"),
    "layers-negative": _set(["model", "config", "n_layers"], -3),
    "plausible-but-not-these-weights": _set(["model", "config", "d_model"], 256),
    "unknown-kind": _set(["model", "kind"], "rnn-from-mars"),
}


@pytest.mark.parametrize("name", list(ABSURD))
def test_absurd_descriptions_are_refused(good, tmp_path, name):
    folder = craft(good, tmp_path, name, ABSURD[name])
    with pytest.raises(CheckpointError):
        load_checkpoint(folder)


def test_header_that_promises_more_than_the_file_holds(good, tmp_path):
    folder = craft(good, tmp_path, "lying-header", lambda meta: None)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])  # the header's offsets run past the end
    with pytest.raises(CheckpointError):
        load_checkpoint(folder)


@pytest.mark.processes
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc (Linux)")
def test_memory_stays_small_while_refusing(good, tmp_path):
    """In a fresh process: refusing every crafted checkpoint grows the peak memory by less than 100 MB."""
    folders = [str(craft(good, tmp_path, name, change)) for name, change in ABSURD.items()]
    code = f"""
import sys
import torch

def peak_kb():  # VmHWM: this process's peak resident memory (ru_maxrss would include the parent's, after fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

from llmviz.errors import CheckpointError
from llmviz.training.checkpoint import load_checkpoint
before = peak_kb()
for folder in {folders!r}:
    try:
        load_checkpoint(folder)
    except CheckpointError:
        pass
    else:
        sys.exit("loaded " + folder)
after = peak_kb()
print(before, after)
"""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    before_kb, after_kb = map(int, result.stdout.split())
    assert after_kb < 500 * 1024, f"peak {after_kb / 1024:.0f} MB"
    assert after_kb - before_kb < 100 * 1024, f"grew by {(after_kb - before_kb) / 1024:.0f} MB"


@pytest.mark.processes
def test_cli_prints_a_message_not_a_traceback(good, tmp_path):
    folder = craft(good, tmp_path, "cli", ABSURD["layers-10000"])
    result = subprocess.run(
        [sys.executable, "-m", "llmviz", "sample", "--checkpoint", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "error:" in result.stderr
    assert "n_layers" in result.stderr


def test_a_good_checkpoint_still_loads(good):
    model, tokenizer, _ = load_checkpoint(good)
    assert torch.isfinite(next(model.parameters())).all() and tokenizer.vocab_size > 0


def test_foreign_tensors_with_the_right_names_but_wrong_shapes(good, tmp_path):
    folder = craft(good, tmp_path, "shapes", lambda meta: None)
    from safetensors.torch import load_file

    tensors = load_file(str(folder / "model.safetensors"))
    first = next(iter(tensors))
    tensors[first] = torch.zeros(3, 3)
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="do not match"):
        load_checkpoint(folder)


@pytest.fixture()
def hostile_runs(good, tmp_path):
    return hostile_runs_folder(good, tmp_path)


BAD = ["deep", "fifo", "null.safetensors", "pipe-meta", "zero-meta", "zero-weights"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero and FIFOs (POSIX)")
def test_each_bad_entry_is_refused_quickly_with_a_reason_and_no_server_path(hostile_runs):
    for name in BAD:
        error = bounded(lambda name=name: load_checkpoint(hostile_runs / name))
        assert isinstance(error, CheckpointError), (name, repr(error))
        assert str(hostile_runs) not in str(error) and str(hostile_runs.parent) not in str(error), str(error)
    assert "nested too deeply" in str(bounded(lambda: load_checkpoint(hostile_runs / "deep")))
    assert bounded(lambda: load_checkpoint(hostile_runs / "fine")) is None


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero and FIFOs (POSIX)")
def test_the_runs_folder_lists_bad_entries_as_unreadable_and_the_rest_as_usual(hostile_runs):
    from llmviz.training.checkpoint import list_checkpoints

    listed = {}
    assert bounded(lambda: listed.update({item.name: item for item in list_checkpoints(hostile_runs)})) is None
    assert sorted(listed) == sorted(["fine", *BAD])
    assert listed["fine"].readable
    for name in BAD:
        assert not listed[name].readable and listed[name].problem
        assert str(hostile_runs) not in listed[name].problem


@pytest.mark.slow  # two CLI processes
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero and FIFOs (POSIX)")
def test_the_cli_refuses_a_deeply_nested_checkpoint_without_a_traceback(hostile_runs):
    for name in ("deep", "zero-meta"):
        result = subprocess.run(
            [sys.executable, "-m", "llmviz", "sample", "--checkpoint", str(hostile_runs / name)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
        assert result.returncode == 2 and "Traceback" not in result.stderr and "error:" in result.stderr, name
        assert str(hostile_runs) not in result.stderr


def test_a_checkpoint_whose_tokenizer_is_damaged_is_listed_as_unreadable_with_the_reason_in_words(tmp_path):
    """It was listed as a normal choice and, picked, showed raw exception text ("… is damaged: 999999")."""
    import json

    from llmviz.training.checkpoint import list_checkpoints

    shipped = ROOT / "data" / "gpt-python-docs"
    runs = tmp_path / "runs"
    runs.mkdir()

    def unknown_token(meta):
        meta["tokenizer"]["merges"][0]["pair"] = [32, 999999]

    def fewer_tokens(meta):
        meta["tokenizer"]["merges"] = meta["tokenizer"]["merges"][:-1]

    craft(shipped, runs, "unknown-token", unknown_token)
    craft(shipped, runs, "fewer-tokens", fewer_tokens)
    craft(shipped, runs, "good", lambda meta: None)
    listed = {item.name: item for item in list_checkpoints(runs)}
    assert listed["good"].readable
    merge = listed["unknown-token"].problem
    assert merge == (
        "The tokenizer in unknown-token's checkpoint.json is damaged: Merge 0 joins tokens 32, 999999: a merge joins "
        "two tokens that exist before it (ids 0 to 255)."
    )
    vocabulary = json.loads((shipped / "checkpoint.json").read_text())["model"]["config"]["vocab_size"]
    assert listed["fewer-tokens"].problem.endswith(f"it has {vocabulary - 1:,} tokens, the model {vocabulary:,}.")
    with pytest.raises(CheckpointError) as raised:
        load_checkpoint(runs / "unknown-token")
    assert str(raised.value) == merge  # picked anyway (by a link): the same words
