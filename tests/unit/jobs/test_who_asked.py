"""Who changed a run's state is written with the state they asked for, whatever a flush writes first (issue 68: CI
read a teacher's Park as "parked when you left": a flush that first found the run started took the teacher's name
for its start, and the park, by nobody, read as the server's)."""

from __future__ import annotations

from types import SimpleNamespace

from llmviz.jobs.kept_rows import Kept, ask, state_values
from llmviz.lab.live_status import JobState


def _flush(entry: Kept, state: JobState, step: int) -> dict:
    return state_values(entry, SimpleNamespace(state=state, step=step, error=None))


def test_a_park_asked_before_the_flush_that_finds_the_run_started_is_the_teachers():
    entry = Kept(job=None, student="ann", state="queued")  # type: ignore[arg-type]
    ask(entry, "park", "teacher")  # between the flush's reading of the job and its writing of the row
    started = _flush(entry, JobState.RUNNING, 6)
    assert (started["state"], started["state_by"]) == ("running", None)
    ask(entry, "park", "server")  # then the student's tab went: the park asked already stays the teacher's
    parked = _flush(entry, JobState.STOPPED, 20)
    assert (parked["state"], parked["state_by"], parked["state_step"]) == ("parked", "teacher", 20)
    assert "state_by" not in _flush(entry, JobState.STOPPED, 20)  # written once, with its change


def test_each_control_is_written_with_the_state_it_leads_to_and_nobody_else_s():
    entry = Kept(job=None, student="ann", state="running")  # type: ignore[arg-type]
    ask(entry, "pause", "student")
    assert _flush(entry, JobState.PAUSED, 3)["state_by"] == "student"
    ask(entry, "resume", "teacher")
    assert _flush(entry, JobState.RUNNING, 3)["state_by"] == "teacher"
    ask(entry, "stop", "teacher")  # the run finished first: nobody stopped it, and the ask ends with the run
    finished = _flush(entry, JobState.FINISHED, 10)
    assert (finished["state"], finished["state_by"]) == ("finished", None)
    assert (entry.by, entry.asked) == (None, None)
    entry = Kept(job=None, student="ann", state="running")  # type: ignore[arg-type]
    assert _flush(entry, JobState.STOPPED, 4)["state_by"] == "student"  # a stop nobody named: the student's own
    entry = Kept(job=None, student="ann", state="running")  # type: ignore[arg-type]
    ask(entry, "park", "server")  # the student's tab went, then the teacher parked it too: the first ask stands
    ask(entry, "park", "teacher")
    assert _flush(entry, JobState.STOPPED, 4)["state_by"] == "server"
