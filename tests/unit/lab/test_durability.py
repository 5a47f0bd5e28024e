"""Faults injected into a real app-like process (tests/support/lab_process.py: a JobManager with a Lab, training
the pages' way): the lab's SQLite file deleted while a run trains, a damaged file at start, PostgreSQL stopped and
started again (a real server of this test's own), a full disk (a 4 MB tmpfs; skipped where it cannot be mounted).
Each: one sentence in the log, said once; no ghost; nothing lost (the run's curve has every step); recovery."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # real processes that import torch: not the fast lane

TIMEOUT = 600.0  # a bound only a hang reaches on a loaded 2-core machine


def _start(folder: Path, url: str, *specs: str, logs: Path | None = None) -> tuple[subprocess.Popen, Path]:
    logs = logs or folder  # the process's stderr (never on the disk a test fills)
    log = logs / f"process-{len(list(logs.glob('process-*.log')))}.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.lab_process", str(folder), url, *specs],
        stdout=subprocess.PIPE,
        stderr=log.open("wb"),
        text=True,
    )
    return process, log


def _ids(process: subprocess.Popen) -> dict[str, str]:
    line = process.stdout.readline()
    assert line, "the lab process ended before its runs trained"
    return json.loads(line)


def _sqlite_run(path: Path, run_id: str) -> tuple[str, int, list[int]] | None:
    """(state, step, curve steps) of a run in a SQLite file, read-only; None while it cannot be read."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)) as db:
            row = db.execute("select state, step from lab_runs where id = ?", (run_id,)).fetchone()
            steps = [s for (s,) in db.execute("select step from lab_points where run = ? order by step", (run_id,))]
    except sqlite3.Error:
        return None
    return (row[0], row[1], steps) if row else None


def _complete(steps: list[int], last: int) -> bool:
    """One point per step, from step 1 to the run's last step."""
    return steps == list(range(1, last + 1))


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # as Streamlit's server ends: the runs park, their last steps written
        try:
            process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_database_deleted_while_a_run_trains_is_rebuilt_and_nothing_is_lost(tmp_path):
    database = tmp_path / "lab.db"
    process, log = _start(tmp_path, f"sqlite:///{database}", "ada:100000")
    try:
        run_id = _ids(process)["ada"]
        wait_for(lambda: (_sqlite_run(database, run_id) or ("", 0, []))[1] >= 5, TIMEOUT)
        before = _sqlite_run(database, run_id)[1]
        os.remove(database)  # the teacher's `rm runs/lab.db`, the app running
        wait_for(lambda: (_sqlite_run(database, run_id) or ("", 0, []))[1] > before + 5, TIMEOUT)
    finally:
        _stop(process)
    state, step, steps = _sqlite_run(database, run_id)
    assert state in ("paused", "parked", "stopped") and step > before + 5
    assert _complete(steps, step), f"curve of {len(steps)} points for step {step}"
    said = log.read_text()
    assert said.count("deleted or replaced while the app ran: it was rebuilt from the run folders") == 1, said
    assert "Traceback" not in said


def test_a_damaged_database_is_put_aside_and_rebuilt_at_start(tmp_path):
    database = tmp_path / "lab.db"
    first, _ = _start(tmp_path, f"sqlite:///{database}", "ada:20")
    ada = _ids(first)["ada"]
    assert first.wait(TIMEOUT) == 0
    assert _sqlite_run(database, ada)[:2] == ("finished", 20)
    database.write_bytes(b"\x00damaged" * 4096)
    second, log = _start(tmp_path, f"sqlite:///{database}", "bo:20")
    try:
        bo = _ids(second)["bo"]
        assert second.wait(TIMEOUT) == 0
    finally:
        _stop(second)
    assert _sqlite_run(database, ada) == ("finished", 20, list(range(1, 21)))  # nothing lost
    assert _sqlite_run(database, bo)[:2] == ("finished", 20)
    said = log.read_text()
    assert said.count("The lab's database was damaged (kept aside as lab.db.damaged-") == 1, said
    assert len([p for p in tmp_path.glob("lab.db.damaged-*") if not p.name.endswith("-wal")]) == 1  # its journal too


def _pg_run(url: str, run_id: str) -> tuple[str, int, list[int]] | None:
    import sqlalchemy as sa

    engine = sa.create_engine(url, connect_args={"connect_timeout": 2})
    try:
        with engine.connect() as db:
            row = db.execute(sa.text("select state, step from lab_runs where id = :r"), {"r": run_id}).first()
            query = sa.text("select step from lab_points where run = :r order by step")
            steps = [s for (s,) in db.execute(query, {"r": run_id})]
    except sa.exc.DBAPIError:
        return None
    finally:
        engine.dispose()
    return (row[0], row[1], steps) if row else None


def test_postgresql_stopped_mid_run_is_said_once_and_the_run_goes_on(tmp_path, own_postgres):
    with own_postgres() as (url, start, stop):
        process, log = _start(tmp_path, url, "ada:100000")
        try:
            run_id = _ids(process)["ada"]
            wait_for(lambda: (_pg_run(url, run_id) or ("", 0, []))[1] >= 5, TIMEOUT)
            stop()
            wait_for(lambda: "cannot be reached" in log.read_text(), TIMEOUT)
            start()
            wait_for(lambda: "answers again" in log.read_text(), TIMEOUT)
            read = []  # this test's own connection may time out too while the server comes back (2 s, loaded)
            wait_for(lambda: read.append(_pg_run(url, run_id)) or read[-1] is not None, TIMEOUT)
            before = read[-1][1]
            wait_for(lambda: (_pg_run(url, run_id) or ("", 0, []))[1] > before + 5, TIMEOUT)
        finally:
            _stop(process)
        state, step, steps = _pg_run(url, run_id)
    assert state in ("paused", "parked", "stopped") and _complete(steps, step), (
        f"{state}, {len(steps)} points, step {step}"
    )
    said = log.read_text()
    assert said.count("cannot be reached") == 1, said
    assert said.count("The lab's database answers again.") == 1


def test_a_full_disk_is_said_once_and_the_run_is_written_when_there_is_room(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here: {mounted.stderr.decode().strip()}")
    try:
        database = disk / "lab.db"
        process, log = _start(disk, f"sqlite:///{database}", "ada:100000", logs=tmp_path)
        try:
            run_id = _ids(process)["ada"]
            wait_for(lambda: (_sqlite_run(database, run_id) or ("", 0, []))[1] >= 5, TIMEOUT)
            filler = disk / "filler"
            with contextlib.suppress(OSError), filler.open("wb") as out:
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
            wait_for(lambda: "disk is full" in log.read_text() or "No space left" in log.read_text(), TIMEOUT)
            stalled = _sqlite_run(database, run_id)[1]
            filler.unlink()  # the teacher frees space
            wait_for(lambda: (_sqlite_run(database, run_id) or ("", 0, []))[1] > stalled + 5, TIMEOUT)
        finally:
            _stop(process)
        state, step, steps = _sqlite_run(database, run_id)
        assert state in ("paused", "parked", "stopped") and _complete(steps, step), (
            f"{state}, {len(steps)} pts, step {step}"
        )
        said = log.read_text()
        assert said.count("The server's disk is full") + said.count("cannot write a run's files") <= 2, said
        assert "Traceback" not in said
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
