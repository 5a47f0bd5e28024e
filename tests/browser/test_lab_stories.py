"""The lab's stories of issue 68 §8 in real chromium, a student and the teacher each in a browser of their own: the
teacher's **Park it** reaches the student's open tab and a new tab of hers as "parked by the teacher" with Resume
right under it (before, the open tab read "stopped … everything learned so far is kept" with no Resume at the top);
after Resume, the live chart draws the run's whole history from step 1 (before, it started at the resume step);
**Yes, delete it** while another process holds the database for 15 s is refused in the lab's one sentence, with the
run as it was (before, Streamlit's generic error after 13.9 s), and deletes it once the lock is gone.

The server is this test's own, on its own lab (tmp_path/runs), which the test reads as the teacher's class view
does."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import urllib.parse

import pytest

from llmviz.lab.faults import SENTENCES
from llmviz.lab.service import Lab
from tests.support.app_server import TEACHER_KEY, free_port, lab_server, logs_on_failure
from tests.support.browser import eventually, main_area, no_error_box, person_page, press, shot

pytestmark = pytest.mark.browser

TRAINING = "training?" + urllib.parse.urlencode({"steps": 2000})  # the most a run takes: parked mid-run

#: The first loss chart of the main area: each trace's name, first and last step (Plotly's own data, as drawn)
TRACES = """() => {
  const plot = document.querySelector('[data-testid="stMainBlockContainer"] .js-plotly-plot');
  const traces = plot && plot._fullData ? plot._fullData : [];  // decoded: data's x may be a typed array's spec
  return traces.map((t) => [t.name || '', Number(t.x[0]), Number(t.x[t.x.length - 1])]);
}"""


def _resume_on_top(page, parked_line: str) -> None:
    """The state line says the teacher parked it, Resume is right under it, above the run's chart."""
    line = main_area(page).get_by_text(parked_line).first
    line.wait_for()
    resume = main_area(page).get_by_role("button", name="Resume").first
    resume.wait_for()
    chart = main_area(page).locator(".js-plotly-plot").first
    chart.wait_for()
    assert line.bounding_box()["y"] < resume.bounding_box()["y"] < chart.bounding_box()["y"]
    assert main_area(page).get_by_text("everything learned so far is kept").count() == 0
    no_error_box(page)


def _per_step(page) -> tuple[int, int] | None:
    """The chart's per-step curve as drawn: (its first step, its last step)."""
    found = [(first, last) for name, first, last in page.evaluate(TRACES) if name.endswith("(per step)")]
    return found[0] if found else None


def test_a_parked_run_reads_parked_with_resume_on_top_in_every_tab_and_resumes_with_its_whole_curve(people, tmp_path):
    with logs_on_failure(tmp_path):
        server = lab_server(tmp_path, free_port())
        lab = Lab.at(tmp_path / "runs")
        try:
            the_story(people, server.url, lab)
        finally:
            lab.registry.dispose()
            server.stop()


def the_story(people, url: str, lab: Lab) -> None:
    student = people()
    page = person_page(student, f"{url}/{TRAINING}")  # her open tab
    main_area(page).get_by_role("button", name="Train", exact=True).click()
    [row] = eventually(lambda: [r for r in lab.class_runs() if r.step >= 20], 300, "her run past step 20")

    teacher = person_page(people(), f"{url}/classroom?teacher={TEACHER_KEY}")
    main_area(teacher).get_by_role("button", name="Park it").click()
    eventually(lambda: lab.run(row.student, row.run_id).state == "parked", 120, "the run parked")
    parked = lab.run(row.student, row.run_id)
    step = parked.state_step if parked.state_step is not None else parked.step  # where the park acted (the record)
    line = f"parked by the teacher at step {step} of"

    _resume_on_top(page, line)  # her open tab, as it was
    shot(page, "lab-parked-by-the-teacher")
    second = person_page(student, f"{url}/training")  # a new tab of hers
    _resume_on_top(second, line)
    second.close()

    main_area(page).get_by_role("button", name="Resume").first.click()
    eventually(lambda: lab.run(row.student, row.run_id).step > step + 10, 300, "the run trained on past the park")
    try:
        first, last = eventually(
            lambda: (found := _per_step(page)) and found[1] > step and found, 120, "the live chart past the park"
        )
    except AssertionError as error:
        shot(page, "lab-resumed-failed", full_page=True)
        raise AssertionError(f"{error}; drawn: {page.evaluate(TRACES)}") from error
    assert first == 1, f"the live chart draws the whole history, from step 1 (it started at step {first})"
    assert lab.run(row.student, row.run_id).state == "running"  # still live: the chart above was the live one's
    shot(page, "lab-resumed-whole-curve")
    lab.control(row.student, row.run_id, "stop")


@contextlib.contextmanager
def _locked(database, seconds: float):
    """Another process's write lock on the lab's SQLite file for ``seconds`` (past the lab's 10 s busy timeout)."""
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(database, timeout=5)
        try:
            connection.execute("BEGIN EXCLUSIVE")
            held.set()
            done.wait(seconds)
        finally:
            connection.rollback()
            connection.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(30), "the lock was taken"
    try:
        yield
    finally:
        holder.join()


def test_yes_delete_it_in_a_15_s_lock_says_one_sentence_changes_nothing_and_deletes_once_it_clears(people, tmp_path):
    with logs_on_failure(tmp_path):
        server = lab_server(tmp_path, free_port())
        lab = Lab.at(tmp_path / "runs")
        try:
            page = person_page(people(), f"{server.url}/training?steps=40")
            main_area(page).get_by_role("button", name="Train", exact=True).click()
            main_area(page).get_by_text("finished after 40 steps").first.wait_for(timeout=300_000)
            [row] = eventually(lambda: [r for r in lab.class_runs() if r.state == "finished"], 120, "her kept run")
            delete = main_area(page).get_by_role("button", name="Delete it", exact=True)
            confirm = main_area(page).get_by_role("button", name="Yes, delete it", exact=True)
            press(page, delete, confirm)  # asks first (a press the page's last redraw after the run swallowed: again)
            with _locked(tmp_path / "runs" / "lab.db", 15):
                confirm.click()
                main_area(page).get_by_text(SENTENCES["locked"].split(":")[0]).first.wait_for(timeout=60_000)
                no_error_box(page)
                shot(page, "lab-delete-in-a-lock")
            assert lab.run(row.student, row.run_id) is not None, "a refused deletion changes nothing"
            press(page, delete, confirm)
            confirm.click()
            main_area(page).get_by_text("is deleted, with its curve and snapshots.").first.wait_for()
            assert lab.run(row.student, row.run_id) is None
            no_error_box(page)
        finally:
            lab.registry.dispose()
            server.stop()
