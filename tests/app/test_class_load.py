"""benchmarks/class_load.py measures what it says: the student id it derives from a browser secret is the app's, its
training check and Caddy's sticky value are right (its doctests), a page run logs the time its own thread spent in
database statements (``ui/sections.py``, a real SQLite file), and, with ``-m extended``, ``--setup two-process``
runs end to end with a tiny class: two real app processes behind a real Caddy, one lab database, the teacher's class
view open, both runs training (issue 49 §6)."""

from __future__ import annotations

import doctest
import importlib.util
import json
import shutil
import subprocess
import sys
import threading

import pytest
import sqlalchemy as sa

from tests.support.app_server import free_port
from tests.support.paths import ROOT


def _class_load():
    spec = importlib.util.spec_from_file_location("class_load_under_test", ROOT / "benchmarks" / "class_load.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are made
    spec.loader.exec_module(module)
    return module


def test_the_benchmarks_student_is_the_apps_student_and_its_checks_hold():
    from ui.identity import new_secret, student_from_secret

    class_load = _class_load()
    assert doctest.testmod(class_load).failed == 0
    secret = new_secret()
    assert class_load.student_of(secret) == student_from_secret(secret)


def test_a_page_run_logs_the_time_its_own_thread_spent_in_the_database(tmp_path, monkeypatch):
    from ui import sections

    log = tmp_path / "timings.jsonl"
    monkeypatch.setenv("LLMVIZ_TIMINGS", str(log))
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'lab.db'}")

    def elsewhere():  # another thread (the lab's keeper): not this page run's
        with engine.connect() as db:
            db.execute(sa.text("SELECT 3"))

    with sections.timed_page("attention"):
        with engine.connect() as db:
            db.execute(sa.text("SELECT 1"))
            db.execute(sa.text("SELECT 2"))
        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
    with sections.timed_page("training"):
        pass
    engine.dispose()
    first, second = [json.loads(line) for line in log.read_text().splitlines()]
    assert first["section"] == "page:attention" and first["db_statements"] == 2
    assert 0 < first["db_seconds"] < first["seconds"]
    assert second["section"] == "page:training" and second["db_statements"] == 0 and second["db_seconds"] == 0


@pytest.mark.slow
@pytest.mark.extended
def test_the_two_process_set_up_runs_end_to_end_with_a_tiny_class():
    if shutil.which("caddy") is None:
        pytest.skip("caddy is not installed (apt install caddy)")
    command = [sys.executable, "benchmarks/class_load.py", "--setup", "two-process", "--students", "2"]
    command += ["--toggles", "1", "--fresh", "0", "--port", str(free_port()), "--budget", "600"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in done.stdout.splitlines()
        if line.startswith("| llmviz /attention | 2 processes + Caddy |")
    ]
    assert [(row[2], row[4]) for row in rows] == [
        ("quiet", "open"),
        ("quiet", "toggle"),
        ("training", "open"),
        ("training", "toggle"),
    ]
    assert all(row[8] == "0" for row in rows), rows  # no errors: every open and flip finished, both runs trained
    assert all(row[11] != "—" for row in rows if row[4] == "open"), rows  # the database's time per page run
    notes = [line for line in done.stdout.splitlines() if line.startswith("- 2 students")]
    trained = next(note for note in notes if "runs trained during the phase" in note)
    assert trained.count("→") == 2, trained
    spreads = [note for note in notes if "students per app process" in note]
    assert len(spreads) == 2 and all("process :" in n and "unknown" not in n and "no sticky" not in n for n in spreads)
    assert sum("the teacher's class view refreshed" in note for note in notes) == 2


def _benchmark_module(name: str):
    """A helper module of benchmarks/ as class_load.py imports it (benchmarks/ on the path)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_follow_scenarios_helpers_read_what_the_app_draws():
    """The follower's script is read back as the app writes it (ui.class_live.go_script), and the doctests hold."""
    from ui.class_live import go_script

    client, follow = _benchmark_module("_class_client"), _benchmark_module("_class_follow")
    assert doctest.testmod(client).failed == 0 and doctest.testmod(follow).failed == 0
    link = "tokens?text=a</script>&b=1"
    assert client.lead_of(go_script(link, "12")) == (12, link)
    assert client.lead_of(go_script(link, "teacher-1.5")) is None  # the teacher's own move is not a lead


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.ci
def test_the_follow_scenario_runs_end_to_end_with_a_tiny_class():
    """``--scenario follow`` on one real app process, three students, both classes twice in turn: every student sees
    each of the teacher's moves and lands on the teacher's view, answers, and the teacher's chart counts all three
    in every round. It hung once on a cancel that Python 3.11's ``wait_for`` swallowed, and its second "Ask the
    class" pressed a button of the page before (issue 69 §6)."""
    command = [sys.executable, "benchmarks/class_load.py", "--scenario", "follow", "--setup", "one-process"]
    command += ["--students", "3", "--rounds", "2", "--moves", "2", "--timeout", "60", "--budget", "600"]
    done = subprocess.run(command + ["--port", str(free_port())], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {
        (cells[0], cells[1]): cells
        for line in done.stdout.splitlines()
        if line.startswith("| follows ")
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    nobody = [("follows nobody", what) for what in ("open", "toggle", "answer", "answers on the chart")]
    leader = [("follows the teacher", what) for what in ("open", "toggle", "lead seen", "page shown", "answer")]
    assert set(rows) == {*nobody, *leader, ("follows the teacher", "answers on the chart")}, sorted(rows)
    samples = {"open": 6, "toggle": 6, "answer": 6, "answers on the chart": 2, "lead seen": 12, "page shown": 12}
    for (_, what), cells in rows.items():
        assert cells[3] == str(samples[what]) and cells[7] == "0", cells  # every sample taken, no error
