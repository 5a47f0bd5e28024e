"""One control path (issue 68 §3): pause, stop, park, resume and delete go through the lab's one door
(:meth:`llmviz.lab.service.Lab.control`), inside its guard, on SQLite and PostgreSQL. Under a database locked by
another process past its timeout each either acts (a run this process holds pauses at once: the record catches up)
or is refused in one sentence, and a refused one changes nothing: **Yes, delete it** in a 15 s lock ended in
Streamlit's generic error (``OperationalError`` from outside the fault classifier), and Resume was dropped without
a word."""

from __future__ import annotations

import os

import pytest

import llmviz.lab.registry
from llmviz.errors import LlmvizError
from llmviz.jobs.manager import JobManager
from llmviz.lab.faults import SENTENCES
from llmviz.lab.service import ACTIONS, Lab
from tests.support.disks import fill
from tests.support.lab_process import submit, wait_for
from tests.support.locks import locked_by_another_process, release

pytestmark = pytest.mark.slow  # real processes and workers: not the fast lane

LONG = 10_000_000  # steps: a run that trains through the whole test


def _said(lab: Lab, student: str, run_id: str, action: str) -> str:
    """What the door answers: a sentence, or a refusal's one sentence (what the app shows in both cases)."""
    try:
        return lab.control(student, run_id, action)
    except LlmvizError as refused:
        return str(refused)


def test_every_control_under_a_lock_answers_in_one_sentence_and_a_refused_one_changes_nothing(
    tmp_path, monkeypatch, database_url
):
    monkeypatch.setattr(llmviz.lab.registry, "BUSY_TIMEOUT_S", 1.0)  # past it in a second (the app waits 10 s)
    manager = JobManager(max_running=3, lab=Lab.at(tmp_path, url=database_url), runs_per_session=2)
    lab = manager.lab
    try:
        live = submit(manager, "ann", LONG)
        parked = submit(manager, "ann", LONG)
        assert wait_for(lambda: parked.status().step > 3 and live.status().step > 3, 120)
        assert lab.control("ann", parked.id, "park", by="teacher").endswith("after its current step.")
        assert wait_for(lambda: lab.run("ann", parked.id).state == "parked", 120)
        before = lab.run("ann", parked.id)
        locker = locked_by_another_process(database_url, tmp_path)
        try:
            said = {action: _said(lab, "ann", parked.id, action) for action in ("resume", "delete")}
            assert said == {"resume": SENTENCES["locked"], "delete": SENTENCES["locked"]}
            assert _said(lab, "ann", live.id, "delete") == SENTENCES["locked"]
            step = live.status().step
            assert wait_for(lambda: live.status().step > step + 5, 120)  # a refused delete left it training
            assert _said(lab, "ann", live.id, "pause").endswith("pauses after its current step.")  # held here: acts
            assert wait_for(lambda: live.status().state.value == "paused", 60)
            assert _said(lab, "ann", live.id, "resume").endswith("goes on after its current step.")
        finally:
            release(locker)
        assert manager.jobs("ann")[0].id == live.id and not live.ended  # nothing was deleted or stopped
        after = lab.run("ann", parked.id)
        assert (after.state, after.step, after.state_by) == (before.state, before.step, "teacher")
        assert lab.control("ann", parked.id, "resume").startswith("ann's run goes on from step")  # cleared: works
        assert wait_for(lambda: lab.run("ann", parked.id).state == "running", 120)
        assert lab.control("ann", live.id, "delete").endswith("is deleted, with its curve and snapshots.")
        assert lab.run("ann", live.id) is None and all(job.id != live.id for job in manager.jobs("ann"))
        assert live.wait(60) and live.ended  # stopped where it trained, once its rows were gone
    finally:
        manager.shutdown()


def _read(read):
    """``read()``, or None while the lab says its database cannot be reached (it tries again at most every 5 s)."""
    from llmviz.lab.faults import LabUnavailable

    try:
        return read()
    except LabUnavailable:
        return None


def test_every_control_with_postgresql_stopped_answers_in_one_sentence_and_changes_nothing(tmp_path, own_postgres):
    """PostgreSQL stopped under the lab: every control of every kind of kept run is the lab's one sentence (never
    the driver's error), nothing is changed, and the controls act again once the server is back."""
    from llmviz.lab.records import RunRecord

    with own_postgres() as (url, start, stop):
        lab = Lab.at(tmp_path, url=url)
        try:
            lab.registry.records.ensure_student("ann")
            kept = {
                "parked1": RunRecord(
                    "parked1", "ann", "training", "a parked run", "parked", 100, 40, state_by="teacher"
                ),
                "stopped1": RunRecord("stopped1", "ann", "training", "a stopped run", "stopped", 100, 60),
            }
            for record in kept.values():
                lab.registry.records.add_run(record)
            before = {run_id: lab.run("ann", run_id) for run_id in kept}
            stop()
            said = {(run_id, action): _said(lab, "ann", run_id, action) for run_id in kept for action in ACTIONS}
            assert set(said.values()) == {SENTENCES["unreachable"]}, said
            start()
            read: list = []  # (wait_for says whether; the reads it made are kept here)
            assert wait_for(lambda: read.append(_read(lambda: {i: lab.run("ann", i) for i in kept})) or read[-1], 60)
            after = read[-1]
            assert {k: (v.state, v.step, v.state_by) for k, v in after.items()} == {
                k: (v.state, v.step, v.state_by) for k, v in before.items()
            }
            assert _said(lab, "ann", "stopped1", "delete") == "a stopped run is deleted, with its curve and snapshots."
            assert lab.run("ann", "stopped1") is None and lab.run("ann", "parked1") is not None
        finally:
            lab.registry.dispose()


def test_every_control_on_a_full_disk_answers_in_one_sentence_and_a_refused_one_changes_nothing(small_disk):
    """The server's disk full under the lab (SQLite on a 3 MB tmpfs): each control of a parked run, a live run and a
    finished one answers in one sentence (what it did, or the lab's "disk is full"), never an error of the driver or
    of the file system; a refused one leaves the run as it was; with space again every control acts."""
    manager = JobManager(max_running=3, lab=Lab.at(small_disk), runs_per_session=3)
    lab = manager.lab
    try:
        done = submit(manager, "ann", 20)
        live = submit(manager, "ann", LONG)
        parked = submit(manager, "ann", LONG)
        assert done.wait(120) and wait_for(lambda: lab.run("ann", done.id).state == "finished", 60)
        assert wait_for(lambda: parked.status().step > 3 and live.status().step > 3, 120)
        assert lab.control("ann", parked.id, "park", by="teacher").endswith("after its current step.")
        assert wait_for(lambda: lab.run("ann", parked.id).state == "parked", 120)
        kept = {run_id: lab.run("ann", run_id) for run_id in (done.id, parked.id)}
        filler = fill(small_disk)
        try:
            said = {
                (run_id, action): _said(lab, "ann", run_id, action)
                for run_id in (parked.id, done.id)
                for action in ("resume", "delete")
            }
            # refused (the database cannot grow its journal), the run as it was; or done, when the journal had room
            assert said[(done.id, "resume")] == "ann's run cannot be resumed: it is finished at step 20."
            for (run_id, action), sentence in said.items():
                after = lab.run("ann", run_id)
                if sentence == SENTENCES["full"]:
                    was = kept[run_id]
                    assert (after.state, after.step, after.state_by) == (was.state, was.step, was.state_by)
                elif action == "delete":
                    assert sentence.endswith("is deleted, with its curve and snapshots.") and after is None
                elif run_id == parked.id:
                    assert sentence.startswith("ann's run goes on from step") and after.state in ("queued", "running")
            assert _said(lab, "ann", live.id, "pause").endswith("pauses after its current step.")  # held here: acts
            assert wait_for(lambda: live.status().state.value == "paused", 60)
            assert _said(lab, "ann", live.id, "resume").endswith("goes on after its current step.")
        finally:
            os.remove(filler)
        assert not live.ended and live.id in [job.id for job in manager.jobs("ann")]  # nothing live was lost
        for run_id in (parked.id, done.id):  # space again: each control acts, once the lab has looked again
            assert wait_for(lambda run_id=run_id: _said(lab, "ann", run_id, "delete") != SENTENCES["full"], 60)
            assert wait_for(lambda run_id=run_id: _read(lambda: lab.run("ann", run_id) is None), 60)
        assert _said(lab, "ann", live.id, "stop").endswith("after its current step.")
        assert live.wait(60)
        assert wait_for(lambda: getattr(_read(lambda: lab.run("ann", live.id)), "state", None) == "stopped", 60)
    finally:
        manager.shutdown()
