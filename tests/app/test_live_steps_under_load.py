"""A live run's steps reach the lab's registry while a class loads the app (issue 56 §1, §7): a real app server
(``streamlit run app.py``, the lab in SQLite under its runs folder), a student trains on the Training page and keeps
it open, a few students open the Attention page again and again, and the test reads the run's row the way the
teacher's class view and the other app process do: a connection of its own, closed after each read.

The class benchmark's two-process training phase failed on this (``a run did not train during the phase: … 0 → 0
(queued)``): the lab's guard read ``lab.db``'s header with a plain ``open()`` once a second, whose ``close()`` dropped
the app's SQLite locks; the next reader that closed its last connection then deleted the ``-wal`` the app still
wrote into, and the run's row stayed at its first step for everyone but the app (here: "queued" at step 0 until
the test gave up). Over Streamlit's protocol (``benchmarks/_protocol_client.py``), no browser: one app start, a few
page runs and seconds of training (about 15 s on a quiet 2-core machine)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
import urllib.parse

import pytest

from benchmarks._protocol_client import Student
from tests.support.app_server import running_app
from tests.support.asyncio_thread import run_coroutine
from ui.identity import COOKIE, new_secret, student_from_secret

pytestmark = [pytest.mark.slow, pytest.mark.processes]  # an app server, its worker processes, page loads

LONG = {  # GPT micro on characters of the names corpus: longer than the test, no samples
    "corpus": "US census first names",
    "train_model": "GPT micro (2 layers, d 64)",
    "train_tokenizer": "char",
    "batch": 32,
    "train_context": 64,
    "sample_every": 0,
    "steps": 2000,
}
STUDENTS = 3  # the class: each opens the Attention page again and again while the run trains
ADVANCES = 3  # the row's step must move this many times while the class loads the pages
LOAD_S = 180  # the longest the class loads the pages waiting for that (a hang, or the row standing still)


def _row(database, student: str) -> tuple[str, str, int] | None:
    """The student's training run in the registry as another process reads it: (id, state, step), or None. A
    connection of its own, closed after the read (the last one of this process, as a class view's page run leaves
    it)."""
    with contextlib.closing(sqlite3.connect(database, timeout=30)) as db:
        try:
            found = db.execute(
                "select id, state, step from lab_runs where student = ? and kind = 'training' order by created",
                (student,),
            ).fetchall()
        except sqlite3.OperationalError:  # no tables yet: the app has not opened its lab
            return None
    return found[-1] if found else None


async def _first_step(database, student: str, timeout_s: float = 240) -> int:
    deadline = time.monotonic() + timeout_s
    while (row := _row(database, student)) is None or row[2] < 1:
        if time.monotonic() > deadline:
            pytest.fail(f"the run took no step in the registry within {timeout_s:.0f} s: {row}")
        await asyncio.sleep(0.5)
    return row[2]


async def _class(url: str, stop: asyncio.Event) -> tuple[int, list[str]]:
    """STUDENTS students open the Attention page at once, again and again until ``stop`` (each at least once);
    how many pages they opened, and the errors they saw."""

    async def one() -> tuple[int, list[str]]:
        opened, errors = 0, []
        async with Student(url, timeout_s=300, headers={"Cookie": f"{COOKIE}={new_secret()}"}) as student:
            while not opened or not stop.is_set():
                errors += (await student.open("attention", "attention_tab=Step+by+step")).errors
                opened += 1
        return opened, errors

    done = await asyncio.gather(*(one() for _ in range(STUDENTS)))
    return sum(n for n, _ in done), [error for _, errors in done for error in errors]


async def _steps_while_loading(url: str, database, student: str) -> tuple[list[int], int, list[str]]:
    """The run's step in the registry, read once a second while the class loads the pages (until it has moved
    ADVANCES times, or LOAD_S); with how many pages the class opened meanwhile and the errors it saw."""
    steps = [await _first_step(database, student)]
    stop = asyncio.Event()
    loading = asyncio.ensure_future(_class(url, stop))
    deadline = time.monotonic() + LOAD_S
    while len(set(steps)) <= ADVANCES and time.monotonic() < deadline and not loading.done():
        await asyncio.sleep(1.0)
        row = _row(database, student)
        steps.append(row[2] if row else -1)
    stop.set()
    opened, errors = await loading
    return steps, opened, errors


def test_a_live_runs_steps_reach_the_registry_while_the_class_loads_pages(tmp_path):
    runs = tmp_path / "runs"
    secret = new_secret()
    student = student_from_secret(secret)
    env = {"LLMVIZ_RUNS_DIR": str(runs), "LLMVIZ_NEW_STUDENTS_PER_MINUTE": "0", "LLMVIZ_MAX_JOBS": "2"}

    async def scenario(url: str) -> tuple[list[int], int, list[str]]:
        async with Student(url, timeout_s=300, headers={"Cookie": f"{COOKIE}={secret}"}) as trainer:
            opened = await trainer.open("training", urllib.parse.urlencode(LONG))
            assert opened.errors == [], opened.errors
            pressed = await trainer.click("train")
            assert pressed.errors == [], pressed.errors
            watching = asyncio.ensure_future(trainer.live())  # the trainer's tab stays open, its section refreshing
            try:
                return await _steps_while_loading(url, runs / "lab.db", student)
            finally:
                watching.cancel()

    with running_app(env=env, log=tmp_path / "app.log") as app:
        steps, opened, errors = run_coroutine(scenario(app.url))
    assert errors == [], errors
    assert opened >= STUDENTS
    assert steps == sorted(steps) and len(set(steps)) > ADVANCES, (
        f"the live run's step in the registry, read once a second while the class opened {opened} pages: {steps}"
    )
    assert "Traceback" not in (tmp_path / "app.log").read_text()
