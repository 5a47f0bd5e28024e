"""The lab's door to the runs this process trains (llmviz.lab.live): a student reads, starts and controls only their
own runs, through read-only views; the jobs layer behind it is the reference (plain pytest, no Streamlit)."""

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lab.live import LiveRun, StudentRuns
from llmviz.lab.live_status import JobState
from tests.support.jobs import Gate, small_trainer
from tests.support.waiting import wait_for


@pytest.fixture
def manager():
    made = JobManager(max_running=2, session_timeout=None)
    yield made
    made.shutdown()


def test_a_student_sees_starts_and_stops_only_their_own_runs(manager):
    ada, bo = StudentRuns(manager, "ada"), StudentRuns(manager, "bo")
    gate = Gate()
    run = ada.submit_task(gate.loop, label="ada's task", total=1000)
    assert isinstance(run, LiveRun) and run.kind == "task" and run.label == "ada's task"
    assert ada.live(run.id) == run and ada.live_runs(None) == [run] and ada.live_runs("train") == []
    assert bo.live(run.id) is None and bo.live_runs(None) == []  # a run id alone opens nothing
    gate.go.release(1)
    wait_for(lambda: run.status().step >= 1)  # it trains: a stop now reaches its worker
    assert not hasattr(bo, "control") and not hasattr(ada, "forget")  # controls: the lab's one path (Lab.control)
    assert manager.lab_side._control("bo", run.id, "stop") is False  # nor stops another student's run
    assert manager.lab_side._control("ada", run.id, "stop") is True
    gate.go.release(1000)  # the loop goes on until the stop is seen between two steps
    assert manager.get("ada", run.id).wait(30)
    assert run.status().state == JobState.STOPPED and run.ended
    manager.remove("ada", run.id)
    assert ada.live(run.id) is None


def test_a_training_run_reads_as_the_job_behind_it(manager):
    mine = StudentRuns(manager, "ada", client="address 10.0.0.7")
    run = mine.submit_training(small_trainer(steps=5), label="five steps")
    job = manager.get("ada", run.id)
    assert job.wait(60)
    status = run.status()
    assert status == job.status() and status.state == JobState.FINISHED and status.step == 5
    assert run.snapshots is job.snapshots and run.info is job.info and run.created == job.created
    assert manager.sessions.client_of("ada") == "address 10.0.0.7"  # the share the page run said
    StudentRuns(manager, "ada")  # a control alone (no client) leaves the share as it was
    assert manager.sessions.client_of("ada") == "address 10.0.0.7"
    assert mine.share() == (0, 0) and mine.here()[2] == 2
