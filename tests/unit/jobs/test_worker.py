"""Jobs in worker processes (the classroom server): a killed worker, fair shares, the snapshot cap, races, tasks.

Plain pytest, no Streamlit: the server's manager is ``JobManager(workers="process", runs_per_session=1)``.
"""

import functools
import os
import signal
import sys
import time

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobRefused, JobState
from llmviz.training.safetensors_file import read_safetensors
from llmviz.training.snapshots import state_bytes, state_of
from tests.support.jobs import small_trainer as trainer
from tests.support.waiting import wait_for


def counting_loop(should_stop, steps=5):
    """A picklable task: counts to ``steps`` and returns the total (the job's result)."""
    total = 0
    for step in range(1, steps + 1):
        total += step
        yield step, 1.0 / step
    return total


def dynamo_was_imported(should_stop):
    """A picklable task: whether its worker started with ``torch._dynamo`` imported (the job's result)."""
    imported = "torch._dynamo" in sys.modules
    yield 1, 0.0
    return imported


@pytest.fixture(scope="module")
def processes():
    manager = JobManager(
        max_running=2, session_timeout=None, workers="process", runs_per_session=1, latest_snapshot_s=0.2
    )
    yield manager
    manager.shutdown()


@pytest.mark.processes
def test_a_worker_starts_with_what_the_first_optimizer_imports(processes):
    """torch.optim imports torch._dynamo when it builds its first optimizer (~0.9 CPU-s): the workers' forkserver
    imports it once, so a run's worker starts its first step at once (it did so ~1 s late, in every run)."""
    job = processes.submit_task("dora", dynamo_was_imported, label="imports", total=1)
    assert job.wait(60) and job.status().state == JobState.FINISHED, job.status().error
    assert job.worker_pid not in (None, os.getpid())
    assert job.result is True


@pytest.mark.processes
def test_a_run_trains_in_another_process_and_hands_back_what_pages_read(processes):
    t = trainer(steps=25)
    initial = {name: tensor.clone() for name, tensor in t.model.state_dict().items()}
    job = processes.submit_training("alice", t, label="run", sample_every=25, sample_prompt="th")
    assert job.trainer is None  # the server keeps no trainer: the worker has it
    assert job.info.vocab_size == t.dataset.vocab_size and job.info.parameters == sum(
        p.numel() for p in t.model.parameters()
    )
    assert job.wait(60) and job.status().state == JobState.FINISHED, job.status().error
    assert job.worker_pid not in (None, os.getpid())
    status = job.status()
    assert status.step == 25 and [s for s, _ in status.losses] == list(range(1, 26))
    assert status.samples and status.samples[-1][0] == 25
    assert job.snapshots.steps()[0] == 0 and job.snapshots.steps()[-1] == 25
    for name, tensor in initial.items():  # step 0 is the weights before training, bit for bit
        assert job.snapshots.get(0)[name].equal(tensor)
    # the same run in a thread of this process ends on the same weights
    twin = trainer(steps=25)
    list(twin.run())
    for name, tensor in twin.model.state_dict().items():
        assert job.snapshots.get(25)[name].allclose(tensor, atol=1e-6), name
    assert job.checkpoint is not None and job.checkpoint[:8]  # the Training page's download


@pytest.mark.processes
def test_a_killed_worker_fails_its_run_and_the_server_goes_on(processes):
    job = processes.submit_training("bob", trainer(steps=1_000_000), label="doomed")
    wait_for(lambda: job.status().step >= 3)
    os.kill(job.worker_pid, signal.SIGKILL)
    assert job.wait(30)
    status = job.status()
    assert status.state == JobState.FAILED and "stopped unexpectedly" in status.error and "-9" in status.error
    assert job.snapshots.steps()[0] == 0  # what it had is still there
    again = processes.submit_training("bob", trainer(steps=5), label="again")  # the server answers
    assert again.wait(60) and again.status().state == JobState.FINISHED


@pytest.mark.processes
def test_a_session_cannot_hold_more_than_its_share(processes):
    submitted = time.monotonic()
    first = processes.submit_training("carol", trainer(steps=1_000_000), label="one")
    second = processes.submit_training("carol", trainer(steps=1_000_000), label="two")
    with pytest.raises(JobRefused, match="each browser session trains 1 run at a time"):
        processes.submit_training("carol", trainer(steps=5), label="three")
    with pytest.raises(JobRefused):
        processes.submit_task("carol", functools.partial(counting_loop, steps=3), label="task", total=3)
    wait_for(lambda: first.status().state == JobState.RUNNING)
    admitting = time.monotonic() - submitted  # how long this machine took to admit a run into a free slot
    time.sleep(min(10.0, max(0.5, 3 * admitting)))
    assert second.status().state == JobState.QUEUED  # a free slot, but carol already trains her one run
    dave = processes.submit_training("dave", trainer(steps=1_000_000), label="dave")
    wait_for(lambda: dave.status().state == JobState.RUNNING)  # admitted before carol's second: her share is full
    assert processes.share("carol") == (1, 1) and processes.share("dave") == (1, 0)
    first.stop()
    wait_for(lambda: second.status().state == JobState.RUNNING)
    for job in (second, dave):
        job.stop()
        assert job.wait(30)
    done = processes.submit_task("carol", functools.partial(counting_loop, steps=4), label="count", total=4)
    assert done.wait(60) and done.status().state == JobState.FINISHED, (done.status().describe(), done.status().error)
    assert done.result == 10


@pytest.mark.slow  # 20 runs in worker processes
def test_the_snapshot_cap_holds_at_every_moment_after_20_quick_submissions():
    size = state_bytes(state_of(trainer().model))
    cap_mb = 7 * size / 2**20
    manager = JobManager(
        max_running=2,
        session_timeout=None,
        workers="process",
        runs_per_session=2,
        snapshot_cap_mb=cap_mb,
        latest_snapshot_s=0.05,
    )
    try:
        accepted, refused = [], 0
        for number in range(20):
            try:
                accepted.append(manager.submit_training("erin", trainer(steps=400, seed=number), label=f"r{number}"))
            except JobRefused:
                refused += 1
            assert manager.shares.snapshot_bytes("erin") <= manager.shares.snapshot_cap
        assert len(accepted) == 3 and refused == 17  # 2 training + 2 waiting, but only 3 × (step 0 + newest) fit
        peak = 0
        while not all(job.status().done for job in accepted):
            peak = max(peak, manager.shares.snapshot_bytes("erin"))
            assert peak <= manager.shares.snapshot_cap
            time.sleep(0.005)
        for job in accepted:
            assert job.status().state == JobState.FINISHED, job.status().error
            steps = job.snapshots.steps()
            assert steps[0] == 0 and steps[-1] == 400
    finally:
        manager.shutdown()


@pytest.mark.processes
def test_pause_gives_the_slot_back_and_resume_goes_on():
    manager = JobManager(max_running=1, session_timeout=None, workers="process", latest_snapshot_s=0.2)
    try:
        job = manager.submit_training("fred", trainer(steps=1_000_000), label="long")
        other = manager.submit_training("gina", trainer(steps=1_000_000), label="waits")
        wait_for(lambda: job.status().step >= 2)
        job.pause()
        wait_for(lambda: job.status().state == JobState.PAUSED)
        frozen = job.status().step
        assert job.snapshots.steps()[-1] == frozen  # the step slider can show where it paused
        wait_for(lambda: other.status().state == JobState.RUNNING)  # the slot went to the next in line
        job.resume()
        assert job.status().state == JobState.QUEUED or job.changing
        other.stop()
        wait_for(lambda: job.status().step > frozen + 2)
        job.pause()
        wait_for(lambda: job.status().state == JobState.PAUSED)
        job.stop()  # stopping a paused run ends it at once
        assert job.wait(30) and job.status().state == JobState.STOPPED
        assert job.snapshots.steps()[-1] == job.status().step
    finally:
        manager.shutdown()


@pytest.mark.processes
def test_a_race_is_one_run_of_the_session_with_a_curve_per_runner():
    manager = JobManager(max_running=2, session_timeout=None, workers="process", runs_per_session=1)
    try:
        runners = [
            (f"runner {n}", trainer(steps=20, model=model, seed=0))
            for n, model in enumerate(["bigram-neural", "mlp", "bigram-counts"])
        ]
        race = manager.submit_race("hana", runners)
        assert manager.share("hana")[0] + manager.share("hana")[1] == 1
        solo = manager.submit_training("hana", trainer(steps=5), label="solo")  # the race counted once
        for job in [*race, solo]:
            assert job.wait(60)
            assert job.status().state == JobState.FINISHED, job.status().error
        assert [job.status().step for job in race] == [20, 20, 20]
        assert race[0].worker_pid == race[2].worker_pid != solo.worker_pid
    finally:
        manager.shutdown()


@pytest.mark.processes
def test_a_checkpoint_from_the_worker_is_an_ordinary_safetensors_file(processes, tmp_path):
    job = processes.submit_training("ida", trainer(steps=3), label="small")
    assert job.wait(60)
    path = tmp_path / "run.safetensors"
    path.write_bytes(job.checkpoint)
    weights = read_safetensors(path)
    assert set(weights) == set(job.snapshots.get(3))


def failing_loop(should_stop):
    """A task that fails at its first step, as a bug would."""
    yield 1, 1.0
    raise KeyError("missing")


def test_a_failing_runner_logs_its_traceback_once_and_sends_the_page_one_line(caplog):
    """The runner logs the failure where its traceback is (llmviz.errors.log_failure, the same one line as before:
    "KeyError: 'missing'") and sends that line, without a second copy of the traceback for the server to log."""
    from llmviz.jobs.channels import thread_channel_pair
    from llmviz.jobs.events import Done, Failed
    from llmviz.jobs.worker import TaskPayload, WorkerOptions, worker_main

    ours, theirs = thread_channel_pair()
    with caplog.at_level("WARNING", logger="llmviz"):
        worker_main(theirs, [TaskPayload(failing_loop)], WorkerOptions())
    events = []
    while ours.poll(0):
        events.append(ours.recv())
    failed = [event for event in events if isinstance(event, Failed)]
    assert failed == [Failed(0, "KeyError: 'missing'", "")]
    assert events[-1] == Done(0, JobState.FAILED)
    [record] = [r for r in caplog.records if r.name == "llmviz.errors"]
    assert record.levelname == "ERROR" and record.getMessage() == "job runner 0 failed: KeyError: 'missing'"
    assert record.exc_info is not None and "failing_loop" in caplog.text  # the traceback, from the worker


@pytest.mark.processes
def test_a_worker_never_runs_the_servers_main_script(tmp_path, monkeypatch):
    """multiprocessing imports the parent's __main__ in every worker; in a Streamlit server that is a page script
    (a test's AppTest installs a temporary one). The workers must not run it: here it would fail the worker."""
    import types

    script = tmp_path / "page.py"
    script.write_text("raise SystemExit('a worker ran the main script')\n")
    fake_main = types.ModuleType("__main__")
    fake_main.__file__ = str(script)
    monkeypatch.setitem(__import__("sys").modules, "__main__", fake_main)
    manager = JobManager(max_running=1, session_timeout=None, workers="process")
    try:
        job = manager.submit_training("jo", trainer(steps=3), label="plain")
        assert job.wait(60) and job.status().state == JobState.FINISHED, job.status().error
    finally:
        manager.shutdown()


@pytest.mark.processes
def test_a_run_waiting_for_its_own_sessions_run_says_so(processes):
    first = processes.submit_training("kim", trainer(steps=1_000_000), label="one")
    second = processes.submit_training("kim", trainer(steps=5), label="two")
    try:
        wait_for(lambda: first.status().state == JobState.RUNNING)
        status = second.status()
        assert status.state == JobState.QUEUED and status.waits_for_own_run
        assert "when your run in training ends" in status.describe()
        assert processes.waiting_count >= 1
    finally:
        first.stop()
        assert second.wait(60) and first.wait(60)


@pytest.mark.processes
@pytest.mark.parametrize("action", ["stop", "pause"])
def test_the_curve_reaches_the_step_kept_when_losses_are_read_back_in_bulk(processes, action):
    """On a GPU the trainer reads its losses back every 10 steps and yields them one by one: a Stop or a Pause that
    comes between two of them still sends every step trained, so the curve ends at the step its snapshot holds."""
    bulk = trainer(steps=1_000_000, seed=3)
    bulk.report_every = 10  # as on an accelerator (the CPU reads every step back)
    job = processes.submit_training(f"bulk-{action}", bulk, label=action)
    wait_for(lambda: job.status().step >= 3)
    getattr(job, action)()
    if action == "stop":
        assert job.wait(60)
    else:
        wait_for(lambda: job.status().state == JobState.PAUSED)
    status = job.status()
    steps = [step for step, _ in status.losses]
    assert steps == list(range(1, steps[-1] + 1))  # every step, in order
    wait_for(lambda: job.snapshots.steps()[-1] == steps[-1])  # the snapshot kept is the curve's last step
    if action == "pause":
        job.stop()
        assert job.wait(60)
