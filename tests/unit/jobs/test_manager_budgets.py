"""The manager's budgets (llmviz.jobs.manager with llmviz.jobs.admission): memory is checked before anything is built
or sent to a worker, the GPU's free memory too, and the shares count students (clients), not tabs."""

import functools
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobRefused, JobState
from llmviz.training import footprint
from llmviz.training.config import TrainConfig
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[3]

REFUSE = """
import functools, json, resource
from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobRefused
from llmviz.training import footprint
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer

def build_gpt2_sized(text):  # never called: the run is refused before its worker exists
    config = TrainConfig(model="gpt2-124m", tokenizer="char", batch_size=8, context_length=256)
    return Trainer.from_text(text, config)

manager = JobManager(max_running=1, workers="process", memory_mb=2048, client_memory_mb=1024)
config = TrainConfig(model="gpt2-124m", tokenizer="bpe", bpe_vocab_size=50257, batch_size=4, context_length=128)
footprint.of_config(config.replace(model="gpt-nano"), 50257)  # the code that estimates, imported and run once
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
message = None
try:
    manager.submit_training(
        "student", build=functools.partial(build_gpt2_sized, "some text " * 100),
        footprint=footprint.of_config(config, 50257), label="too big",
    )
except JobRefused as refused:
    message = str(refused)
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({"message": message, "grown": grown, "jobs": len(manager.jobs("student"))}))
manager.shutdown()
"""


@pytest.mark.processes
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_a_run_that_does_not_fit_is_refused_before_anything_is_allocated():
    """A GPT-2-sized run (124 M parameters: 495 MB of weights alone) on a server that trains in 2 GB: refused
    with the numbers and what would fit, and the asking process's peak memory grows by far less than the model (it
    was never built)."""
    done = subprocess.run(
        [sys.executable, "-c", REFUSE], capture_output=True, text=True, timeout=300, cwd=ROOT, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    weights = (124_439_808 - (1024 - 128) * 768) * 4  # GPT-2 small at a context of 128
    assert found["grown"] < weights / 20, found  # under 25 MB: nothing of the model's size was allocated
    assert found["jobs"] == 0
    message = found["message"]
    assert message.startswith("Training GPT-2 small's shape (124 M parameters) needs about ")
    assert "; this server trains in at most 2.0 GB at once: pick GPT mini" in message
    assert "\n" not in message


def gated(gate: threading.Event, should_stop, steps=1):
    for step in range(1, steps + 1):
        gate.wait(30)
        yield step, 0.0


def test_the_share_refuses_what_would_pass_it_and_says_what_is_left():
    manager = JobManager(max_running=1, session_timeout=None, memory_mb=4096, client_memory_mb=1024)
    try:
        config = TrainConfig(model="gpt-mini", tokenizer="char", batch_size=64, context_length=128)
        first = footprint.of_config(config, 64)
        gate = threading.Event()
        job = manager.submit_task("ann", functools.partial(gated, gate), label="one", total=1, footprint=first)
        left = 1024 * footprint.MB - footprint.worker_peak([first])
        second = footprint.of_config(config.replace(batch_size=128), 64)
        with pytest.raises(JobRefused) as refused:
            manager.submit_task("ann", functools.partial(gated, gate), label="two", total=1, footprint=second)
        assert str(refused.value) == (
            f"{second.what} needs about {footprint.size_text(footprint.worker_peak([second]))}; your share has "
            f"{footprint.size_text(left)} left{footprint.suggestion([second], left)}."
        )
        assert manager.memory_line("ann")[0] == footprint.worker_peak([first])
        gate.set()
        assert job.wait(30)
        wait_for(lambda: manager.memory_line("ann")[0] == 0)  # an ended run counts nothing
    finally:
        manager.shutdown()


def test_a_run_for_the_gpu_is_refused_when_the_gpu_has_no_room(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (256 * footprint.MB, 16 * footprint.GB))
    manager = JobManager(max_running=1, session_timeout=None)
    try:
        config = TrainConfig(
            model="gpt-mini", tokenizer="char", batch_size=64, context_length=128, device="cuda", precision="float32"
        )
        needs = footprint.of_config(config, 64)
        assert needs.device_bytes > 256 * footprint.MB
        with pytest.raises(JobRefused, match="needs about .* on the GPU, which has 256 MB free: lower the batch"):
            manager.submit_training("ann", build=functools.partial(print, "never"), footprint=needs, label="cuda")
        small = footprint.of_config(config.replace(model="gpt-nano", batch_size=2, context_length=16), 64)
        assert small.device_bytes < 256 * footprint.MB and footprint.worker_peak([small]) == small.peak_bytes
        gate = threading.Event()
        gate.set()
        job = manager.submit_task("ann", functools.partial(gated, gate), label="fits", total=1, footprint=small)
        assert job.wait(30) and job.status().state == JobState.FINISHED  # admitted
    finally:
        manager.shutdown()


def test_five_sessions_of_one_client_hold_one_share_and_another_clients_run_starts_first():
    """Five tabs of one computer (one address) are one student: one run training, one waiting, the rest refused;
    another student's run, asked for later, starts before the first student's waiting one."""
    manager = JobManager(max_running=1, session_timeout=None, runs_per_session=1)
    gates = {}

    def submit(owner):
        gates[owner] = threading.Event()
        return manager.submit_task(owner, functools.partial(gated, gates[owner]), label=owner, total=1)

    try:
        for tab in range(5):
            manager.bind(f"tab{tab}", "10.0.0.7")
        manager.bind("other", "10.0.0.8")
        first, second = submit("tab0"), submit("tab1")
        for tab in (2, 3, 4):
            with pytest.raises(JobRefused, match="each computer .all its browser tabs together. trains 1 run"):
                submit(f"tab{tab}")
        assert manager.share("tab3") == (1, 1)  # any tab of that computer sees its one share
        wait_for(lambda: first.status().state == JobState.RUNNING)
        theirs = submit("other")
        assert theirs.status().queue_position == 1 and second.status().queue_position == 2
        gates["tab0"].set()
        wait_for(lambda: theirs.status().state == JobState.RUNNING)
        assert second.status().state == JobState.QUEUED and second.status().waits_for_own_run is False
        gates["other"].set()
        gates["tab1"].set()
        assert second.wait(30) and theirs.wait(30)
        assert manager.queue.admitted == [first.id, theirs.id, second.id]
    finally:
        for gate in gates.values():
            gate.set()
        manager.shutdown()


def test_without_a_runs_limit_one_client_still_cannot_queue_ahead_of_others():
    manager = JobManager(max_running=1, session_timeout=None)
    gate = threading.Event()
    try:
        for tab in range(5):
            manager.bind(f"tab{tab}", "10.0.0.7")
        mine = [
            manager.submit_task(f"tab{tab}", functools.partial(gated, gate), label=f"{tab}.{n}", total=1)
            for tab in range(5)
            for n in range(2)
        ]
        wait_for(lambda: mine[0].status().state == JobState.RUNNING)
        theirs = manager.submit_task("bob", functools.partial(gated, gate), label="bob", total=1)
        assert theirs.status().queue_position == 1  # ten runs of one student queued before it: it goes next
        assert [job.label for job in manager.shares.queued()][:2] == ["bob", "0.1"]
    finally:
        gate.set()
        manager.shutdown()


def test_a_run_that_fits_later_waits_for_memory_and_says_so():
    manager = JobManager(max_running=2, session_timeout=None, memory_mb=1024, client_memory_mb=1024)
    gate = threading.Event()
    try:
        big = footprint.Footprint("a big task", preparing_bytes=600 * footprint.MB, worker_bytes=100 * footprint.MB)
        first = manager.submit_task("ann", functools.partial(gated, gate), label="a", total=1, footprint=big)
        wait_for(lambda: first.status().state == JobState.RUNNING)
        second = manager.submit_task("bob", functools.partial(gated, gate), label="b", total=1, footprint=big)
        status = second.status()
        assert status.state == JobState.QUEUED and status.waits_for_memory
        assert status.describe().startswith("waiting: the memory this server trains in is in use")
        gate.set()
        assert second.wait(30) and second.status().state == JobState.FINISHED
    finally:
        gate.set()
        manager.shutdown()
