"""The lab across real processes, on both databases (a SQLite file and a real PostgreSQL server: the
``database_url`` fixture): app-like processes (tests/support/lab_process.py: a JobManager with a Lab, as the app makes
one) that share nothing but the database URL and the runs folder show a student the same runs, count one share per
student, take Pause/Resume/Stop from either process, and lose nothing when one is stopped (SIGTERM) or killed
(SIGKILL) and started again (issue 49 §3 and §6, issue 52 §2 and §4)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobRefused
from llmviz.lab.service import Lab
from tests.support.lab_process import READY_STEPS, submit, wait_for

pytestmark = pytest.mark.slow  # real processes that import torch, on two databases: not the fast lane

LONG = 10_000_000  # steps: trains until its process is stopped


def start(folder, url, *specs) -> tuple[subprocess.Popen, dict[str, str]]:
    """A lab process training ``specs`` (``student:steps[:pause]``); the run ids once each has trained a little."""
    errors = folder / "lab_process.err"  # a file, not a pipe: a long run never fills it
    with errors.open("a") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.support.lab_process", str(folder), url, *specs],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    line = child.stdout.readline()
    if not line:
        child.kill()
        pytest.fail(f"the lab process ended early (exit {child.wait()}): {errors.read_text()[-2000:]}")
    return child, json.loads(line)


def end(child: subprocess.Popen, how: signal.Signals = signal.SIGKILL) -> None:
    if child.poll() is None:
        child.send_signal(how)
    child.wait(60)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_restart_lists_every_run_at_its_steps_and_the_live_ones_resumable(tmp_path, database_url, how):
    """3 students: one training, one paused, one finished → the server stopped and started → all listed."""
    child, ids = start(tmp_path, database_url, "ann:1000000", "bob:1000000:pause", "cy:30")
    try:
        lab = Lab.at(tmp_path, url=database_url)
        assert wait_for(lambda: lab.registry.records.run("cy", ids["cy"]).state == "finished", 120)
        before = {student: lab.registry.records.run(student, run_id).step for student, run_id in ids.items()}
    finally:
        end(child, how)
    restarted = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    try:
        assert set(restarted.keeper.interrupted) == {ids["ann"], ids["bob"]}
        registry = restarted.keeper.lab.registry
        for student, run_id in ids.items():
            [kept] = restarted.lab_side.kept_runs(student)
            curve = registry.records.curve(run_id)
            assert kept.id == run_id and kept.step >= before[student] >= READY_STEPS
            # every step's loss, none missing, and its snapshots' rows: one flush is one unit of work
            # (keeping.Keeper._flush_one), so a SIGKILL leaves the curve, the snapshots and the row's step together
            assert [step for step, *_ in curve] == list(range(1, len(curve) + 1)) and curve[-1][0] >= kept.step
            kept_steps = [step for step, *_ in registry.records.snapshots(run_id)]
            assert kept_steps[0] == 0 and kept_steps[-1] <= kept.step
        states = {student: restarted.lab_side.kept_runs(student)[0] for student in ids}
        assert (states["ann"].state, states["ann"].resumable) == ("interrupted", True)
        assert (states["bob"].state, states["bob"].resumable) == ("interrupted", True)
        assert (states["cy"].state, states["cy"].step) == ("finished", 30)
        assert registry.slots.training_count() == 0  # their slots are the machine's again
        last = registry.records.snapshots(ids["ann"])[-1][0]
        at = {student: registry.records.resume_state(run_id) for student, run_id in ids.items()}
        assert (
            at["bob"][0] == registry.records.snapshots(ids["bob"])[-1][0] == states["bob"].step
        )  # paused: resumable there
        assert at["cy"] is None  # finished: no optimizer state kept
        if how == signal.SIGTERM:  # stopped in order: the training run paused at exit, its resume state is its last
            assert at["ann"][0] == last
        resumed = restarted.lab_side.resume_kept("ann", ids["ann"])
        # one run, one history: the same id and label, its resume step recorded (with its optimizer's state:
        # test_resume_exact.py)
        assert (resumed.id, resumed.label) == (ids["ann"], "ann's run")
        assert wait_for(lambda: resumed.status().step >= at["ann"][0] + 3)
        assert resumed.status().losses[0][0] == at["ann"][0] + 1  # on from its kept resume state
        assert wait_for(lambda: registry.records.run("ann", ids["ann"]).step >= at["ann"][0] + 3)
        [again] = restarted.lab_side.kept_runs("ann")
        assert again.id == ids["ann"] and again.resumes == [at["ann"][0]]
        steps = [step for step, *_ in registry.records.curve(ids["ann"])]
        assert steps == list(range(1, len(steps) + 1))  # one curve from the first step, none missing
    finally:
        restarted.shutdown()


def test_two_processes_count_one_share_per_student_and_one_machine(tmp_path, database_url):
    """runs_per_session=2 (a student trains 2 at once and keeps 2 more waiting), max_running=4, across both."""
    child, ids = start(tmp_path, database_url, "ann:1000000", "ann:1000000")  # ann trains 2 on the other process
    here = JobManager(max_running=4, runs_per_session=2, lab=Lab.at(tmp_path, url=database_url))
    try:
        registry = here.keeper.lab.registry
        assert [run.id for run in here.lab_side.kept_runs("ann")] == list(ids.values())  # her runs of the other process
        assert registry.slots.student_training("ann") == 2
        mine = submit(here, "ann", 50)  # her third: waits, the other process trains her two
        bob = submit(here, "bob", 50)  # bob's trains at once: the machine has room
        assert bob.wait(120) and bob.status().step == 50
        assert mine.status().state.value == "queued" and not mine.ended
        fourth = submit(here, "ann", 50)  # her share: 2 training and 2 waiting, across both processes
        with pytest.raises(JobRefused, match="another of this class's app processes"):
            submit(here, "ann", 50)  # her fifth: beyond her share, whichever process she asks
        assert registry.slots.training_count() <= 4
        end(child)
        assert wait_for(lambda: mine.status().step > 0 and fourth.status().step > 0, 60)  # hers here train now
    finally:
        end(child)
        here.shutdown()


def test_pause_resume_and_stop_from_the_other_process(tmp_path, database_url):
    """A student's second tab lands on the other app process: its buttons control the run the first one trains."""
    child, ids = start(tmp_path, database_url, f"ann:{LONG}")
    other = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    try:
        registry, run_id = other.keeper.lab.registry, ids["ann"]
        assert other.get("ann", run_id) is None  # not this process's
        assert not other.lab_side._control("bob", run_id, "pause")  # another student's run: nothing happens
        assert other.lab_side._control("ann", run_id, "pause")
        assert wait_for(lambda: registry.records.run("ann", run_id).state == "paused", 30)
        paused_at = registry.records.run("ann", run_id).step
        assert wait_for(lambda: registry.records.run("ann", run_id).step == paused_at, 5)
        assert other.lab_side._control("ann", run_id, "resume")
        assert wait_for(lambda: registry.records.run("ann", run_id).step > paused_at + 5, 30)
        assert other.lab_side._control("ann", run_id, "stop")
        assert wait_for(lambda: registry.records.run("ann", run_id).state == "stopped", 30)
        assert not other.lab_side._control("ann", run_id, "pause")  # ended: nothing to ask
    finally:
        end(child)
        other.shutdown()


def test_an_app_process_killed_its_students_find_their_runs_on_the_other(tmp_path, database_url):
    survivor = JobManager(max_running=2, lab=Lab.at(tmp_path, url=database_url))
    child, ids = start(tmp_path, database_url, f"ann:{LONG}")
    try:
        registry, run_id = survivor.keeper.lab.registry, ids["ann"]
        assert [(run.id, run.state) for run in survivor.lab_side.kept_runs("ann")] == [(run_id, "running")]
        end(child, signal.SIGKILL)  # the process that served ann's page and trained her run
        [kept] = survivor.lab_side.kept_runs("ann")  # ann's browser reconnects to the other process
        assert (kept.id, kept.state, kept.resumable) == (run_id, "interrupted", True)
        assert kept.step >= READY_STEPS and registry.slots.training_count() == 0
        resumed = survivor.lab_side.resume_kept("ann", run_id)
        assert wait_for(lambda: resumed.status().step > kept.step, 60)
        assert survivor.lab_side.kept_runs("bob") == []
    finally:
        end(child)
        survivor.shutdown()
