"""The lab's stories of issue 68 §8 in real chromium, a student and the teacher each in a browser of their own: the
teacher's **Park it** reaches the student's open tab and a new tab of hers as "parked by the teacher" with Resume
right under it (before, the open tab read "stopped … everything learned so far is kept" with no Resume at the top);
after Resume, the live chart draws the run's whole history from step 1 (before, it started at the resume step).

The server is this test's own, on its own lab (tmp_path/runs), which the test reads as the teacher's class view
does."""

from __future__ import annotations

import urllib.parse

import pytest

from llmviz.lab.service import Lab
from tests.support.app_server import TEACHER_KEY, free_port, lab_server, logs_on_failure
from tests.support.browser import eventually, main_area, no_error_box, person_page, shot

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
