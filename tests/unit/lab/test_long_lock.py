"""A 45 s lock on the lab's SQLite database, with the app's own 10 s busy timeout (issue 56 §7: "a 45 s lock"), in a
file of its own: CI's first phase runs the files whose tests use a PostgreSQL fixture (``.ci/run``), and this one
needs none. The faster lock tests, on SQLite and PostgreSQL, are in ``test_one_record.py``."""

from __future__ import annotations

import time

import pytest

import llmviz.lab.registry
from llmviz.jobs.manager import JobManager
from llmviz.lab.faults import SENTENCES
from llmviz.lab.live_status import JobRefused
from llmviz.lab.service import Lab
from tests.support.lab_process import submit, wait_for
from tests.support.locks import locked_by_another_process, release

LONG = 10_000_000  # steps: a run that trains through the whole test

pytestmark = pytest.mark.slow  # real processes and workers: not the fast lane


def test_a_45_s_lock_with_the_apps_own_timeout_is_refused_in_time_and_training_and_reading_go_on(tmp_path):
    """The fault as the issue found it (SQLite locked by another process for more than the app's 10 s): held 45 s,
    with the app's own busy timeout. A Train is refused in one sentence once the timeout has passed (not after
    Streamlit's generic error, and never with a ghost in the queue), a page's reads answer at once, the run that was
    training goes on throughout, and the lab goes on by itself once the lock is let go."""
    assert llmviz.lab.registry.BUSY_TIMEOUT_S == 10.0
    manager = JobManager(max_running=2, lab=Lab.at(tmp_path))
    try:
        cy = submit(manager, "cy", LONG)
        assert wait_for(lambda: manager.lab.run("cy", cy.id) is not None and cy.status().step > 3, 120)
        locker = locked_by_another_process("sqlite", tmp_path)  # lab.db in the folder
        locked_at = time.monotonic()
        try:
            before = cy.status().step
            with pytest.raises(JobRefused) as refused:
                submit(manager, "ann", 30)
            waited = time.monotonic() - locked_at
            assert str(refused.value) == SENTENCES["locked"]
            assert 9.0 <= waited < 40.0, waited  # the busy timeout, then a refusal (a freeze would wait 45 s)
            assert manager.waiting_count == 0 and manager.jobs("ann") == []  # no ghost in the queue
            read_at = time.monotonic()
            assert [run.id for run in manager.lab.runs("cy")] == [cy.id]  # a page's read: no wait for the lock
            assert time.monotonic() - read_at < 5.0
            assert wait_for(lambda: cy.status().step > before + 20, 120)  # training goes on through the lock
            time.sleep(max(0.0, 45.0 - (time.monotonic() - locked_at)))  # the lock is held for 45 s in all
            assert cy.status().state.value == "running"
        finally:
            release(locker)
        bob = submit(manager, "bob", 30)  # the fault cleared: the lab goes on by itself
        assert bob.wait(120) and bob.status().state.value == "finished"
        assert wait_for(lambda: manager.lab.curve("bob", bob.id).steps == list(range(1, 31)), 60)
        assert wait_for(lambda: manager.lab.run("cy", cy.id).step >= cy.status().step - 50, 60)  # caught up
        steps = manager.lab.curve("cy", cy.id).steps
        assert steps == list(range(1, len(steps) + 1))  # every step the lock held back was written after it
        assert manager.lab.runs("ann") == []
    finally:
        manager.shutdown()


def test_the_keepers_thread_outlives_a_round_that_fails(tmp_path, monkeypatch):
    """A fault outside the keeper's own guards (here its database check raising what no guard expects) ended its
    thread once, and with it the keeping of every run of the process: a run that finished afterwards stayed
    "running at step 0" in the lab for ever (CI). The round fails, is logged once, and the next one goes on."""
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    try:
        guard = manager.keeper.guard
        real, failures = guard.tick, []

        def tick_that_fails_three_times():
            if len(failures) < 3:
                failures.append(1)
                raise RuntimeError("a fault no guard expects")
            return real()

        monkeypatch.setattr(guard, "tick", tick_that_fails_three_times)
        run = submit(manager, "ann", 30)
        assert run.wait(120) and run.status().state.value == "finished"
        assert wait_for(lambda: len(failures) == 3 and manager.lab.run("ann", run.id).state == "finished", 60)
        assert manager.lab.curve("ann", run.id).steps == list(range(1, 31))
    finally:
        manager.shutdown()
