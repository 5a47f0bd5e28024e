"""The interventions' sweeps as lab jobs (llmviz.training.tasks): in a worker process they give the grid computed here,
and a Stop keeps what was measured so far."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import pytest
import torch

from llmviz.interpret import ablation, patching
from llmviz.jobs.manager import JobManager
from llmviz.training import tasks
from tests.support.interventions import ARCHITECTURES, model_of
from tests.support.paths import ROOT

IDS = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38]


def drain(loop):
    progress = []
    while True:
        try:
            progress.append(next(loop)[0])
        except StopIteration as end:
            return progress, end.value


@pytest.mark.processes
def test_sweeps_run_in_a_worker_process_and_give_the_grid():
    model = model_of(ARCHITECTURES["llama"], seed=4)
    corrupted = IDS[:4] + [7] + IDS[5:]
    answer, wrong = patching.default_answers(model, IDS, corrupted)
    manager = JobManager(max_running=1, workers="process")
    try:
        heads_job = manager.submit_task(
            "alice",
            functools.partial(tasks.head_effects_sweep, model=model, ids=IDS, mode="mean"),
            label="every head",
            total=8,
            returns_when_stopped=True,
        )
        patch_job = manager.submit_task(
            "alice",
            functools.partial(
                tasks.patching_sweep,
                model=model,
                clean=IDS,
                corrupted=corrupted,
                answer=answer,
                wrong=wrong,
                component="attn.z",
            ),
            label="every head patched",
            total=8,
            returns_when_stopped=True,
        )
        assert heads_job.wait(timeout=300) and patch_job.wait(timeout=300)
        assert heads_job.status().state == "finished", heads_job.status().error
        assert patch_job.status().state == "finished", patch_job.status().error
    finally:
        manager.shutdown()
    torch.testing.assert_close(heads_job.result.losses, ablation.head_effects(model, IDS, "mean").losses)
    expected = patching.patching(model, IDS, corrupted, answer, wrong, "attn.z")
    torch.testing.assert_close(patch_job.result.differences, expected.differences)


def test_a_stopped_sweep_returns_what_it_measured(monkeypatch):
    model = model_of(ARCHITECTURES["gpt2"], seed=4)
    monkeypatch.setattr(ablation, "rows_per_batch", lambda config, tokens: 3)  # two heads per forward pass
    progress, result = drain(tasks.head_effects_sweep(lambda: True, model, IDS, "zero"))
    assert progress == [2] and result.done == 2 and not result.complete
    monkeypatch.setattr(patching, "rows_per_batch", lambda config, tokens: 4)
    corrupted = IDS[:2] + [1] + IDS[3:]
    progress, found = drain(tasks.patching_sweep(lambda: True, model, IDS, corrupted, 1, 2, "resid_pre"))
    assert found.done == 2 * 2 + 4  # positions 0 and 1 of both layers are known (the prompts agree) + one batch
    assert progress == [found.done]


@pytest.mark.parametrize("heads_per_pass", [1, 3])
def test_the_sweep_ends_with_the_whole_grid_when_not_stopped(heads_per_pass, monkeypatch):
    model = model_of(ARCHITECTURES["gpt2"], seed=4)
    monkeypatch.setattr(ablation, "rows_per_batch", lambda config, tokens: 1 + heads_per_pass)
    progress, result = drain(tasks.head_effects_sweep(lambda: False, model, IDS, "zero"))
    assert result.complete and progress[-1] == 8 and len(progress) == -(-8 // heads_per_pass)


def test_steered_writing_as_a_job_is_the_pair_and_a_stop_keeps_what_was_written():
    from llmviz.interpret import steering

    model = model_of(ARCHITECTURES["gpt2"], seed=4)
    direction = steering.token_direction(model, 5)
    progress, pair = drain(
        tasks.steering_generation(lambda: False, model, IDS[:3], 1, direction.tolist(), 3.0, 5, 0.8, 2)
    )
    expected = steering.steered_pair(model, IDS[:3], 1, direction, 3.0, 5, 0.8, 2)
    assert progress == list(range(1, 11)) and (pair.plain, pair.steered) == (expected.plain, expected.steered)
    progress, cut = drain(
        tasks.steering_generation(lambda: True, model, IDS[:3], 1, direction.tolist(), 3.0, 5, 0.8, 2)
    )
    assert progress == [1] and cut.plain == expected.plain[:1] and cut.steered == []


BPE_GROWTH = """
import json, sys
from pydoc_data.topics import topics
from llmviz.training import tasks
text = ("\\n\\n".join(topics.values()) * 3)[: int(sys.argv[1])]
def status(field):  # kB, from /proc/self/status
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")  # the peak (VmHWM) starts again from now: the imports' own peak is left out
before = status("VmRSS")
for _ in tasks.bpe_training(lambda: False, text=text, merges=20, split_pattern=None):
    pass
grown = (status("VmHWM") - before) * 1024
print(json.dumps({"grown": grown, "estimate": tasks.bpe_training_footprint(len(text)).preparing_bytes}))
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads the peak memory from /proc/self (Linux)")
def test_a_bpe_tasks_memory_estimate_covers_what_it_grows_by():
    """BPE training on a text taken as one sequence (its costliest way) grows the process by less than the estimate
    it is admitted with (measured in a fresh process: its peak memory from just before the task, reset there)."""
    done = subprocess.run(
        [sys.executable, "-c", BPE_GROWTH, "1000000"], capture_output=True, text=True, timeout=300, cwd=ROOT, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0 < found["grown"] < found["estimate"], found


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads the peak memory from /proc/self (Linux)")
def test_a_small_word2vec_tasks_estimate_covers_the_processs_first_training_step():
    """On a short text the first backward pass and optimizer step (autograd, the optimizer's imports: 97 MB here)
    are most of the growth: an estimate proportional to the text alone (1.6 MB for 20,000 characters) fell short."""
    done = subprocess.run(
        [sys.executable, "-c", W2V_GROWTH, "20000", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0 < found["grown"] < found["estimate"], found


W2V_GROWTH = """
import json, sys
from pydoc_data.topics import topics
from llmviz.training import tasks
text = ("\\n\\n".join(topics.values()) * 3)[: int(sys.argv[1])]
def status(field):  # kB, from /proc/self/status
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")  # the peak (VmHWM) starts again from now: the imports' own peak is left out
before = status("VmRSS")
window = int(sys.argv[2]) if len(sys.argv) > 2 else 5
for _ in tasks.word2vec_training(lambda: False, text=text, dim=128, window=window, steps=50, max_vocab=5000, seed=0):
    pass
grown = (status("VmHWM") - before) * 1024
print(json.dumps({"grown": grown, "estimate": tasks.word2vec_footprint(len(text), window).preparing_bytes}))
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads the peak memory from /proc/self (Linux)")
def test_a_word2vec_tasks_memory_estimate_covers_what_it_grows_by():
    """word2vec at its widest window and largest vocabulary grows a fresh process by less than its estimate."""
    done = subprocess.run(
        [sys.executable, "-c", W2V_GROWTH, "1000000"], capture_output=True, text=True, timeout=300, cwd=ROOT, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0 < found["grown"] < found["estimate"], found
