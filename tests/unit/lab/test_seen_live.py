"""What an app process writes into the lab's SQLite file reaches every other process at once, whatever the lab's
guard does meanwhile (issue 56 §1, §7: the class view and the other app process read a live run's steps there).

The guard checks the file's header every second (:func:`llmviz.lab.faults.damaged_file`). Read with a plain
``open()`` and closed, that dropped every POSIX lock the process held on the file, SQLite's included; the next
process whose last connection closed (a teacher's class view, the class benchmark's reader) then took the file for
unused and deleted its ``-wal`` while the app still wrote into it: the run's steps stayed at the step written before,
for everyone but the app itself, until the app ended. Real SQLite files, a reader in a process of its own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llmviz.lab import faults
from llmviz.lab.rebuild import Guard
from llmviz.lab.records import RunRecord
from llmviz.lab.service import Lab

pytestmark = pytest.mark.processes  # the reader is a process of its own

READ = (
    "import contextlib, sqlite3, sys\n"
    "with contextlib.closing(sqlite3.connect(sys.argv[1], timeout=30)) as db:\n"
    "    print(db.execute('select step from lab_runs where id = ?', (sys.argv[2],)).fetchone()[0])\n"
)


def _step_elsewhere(database, run_id: str) -> int:
    """The run's step as another process reads it: a connection of its own, closed when it has read (the last one
    of that process, as a class view's page run or the benchmark's reader leaves it)."""
    done = subprocess.run(
        [sys.executable, "-c", READ, str(database), run_id], capture_output=True, text=True, timeout=120, check=True
    )
    return int(done.stdout)


def test_steps_written_while_the_guard_checks_the_file_reach_another_process(tmp_path):
    lab = Lab.at(tmp_path)
    guard = Guard(lab)
    lab.registry.records.ensure_student("ada")
    lab.registry.records.add_run(
        RunRecord(id="r1", student="ada", kind="training", label="Run 1", state="running", total=9)
    )
    seen = []
    for step in range(1, 5):
        lab.registry.records.update_run("r1", step=step)
        assert guard.tick()  # the keeper's once a second: the file's header checked (it is whole)
        guard.sync()
        seen.append(_step_elsewhere(tmp_path / "lab.db", "r1"))
    assert seen == [1, 2, 3, 4]
    assert (tmp_path / "lab.db-wal").exists()  # the app's journal is still the file's: nobody deleted it
    lab.registry.dispose()


def test_the_header_check_keeps_the_process_locks(tmp_path):
    """:func:`faults.damaged_file` itself, with a plain SQLite writer: the reader in another process still sees
    every write after each check (a plain ``open()``/``close()`` of the file lost the second one on)."""
    import sqlite3

    path = tmp_path / "lab.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("create table lab_runs (id text primary key, step integer)")
    writer.execute("insert into lab_runs values ('r1', 0)")
    seen = []
    for step in range(1, 4):
        writer.execute("update lab_runs set step = ? where id = 'r1'", (step,))
        assert not faults.damaged_file(str(path))
        seen.append(_step_elsewhere(path, "r1"))
    writer.close()
    assert seen == [1, 2, 3]
