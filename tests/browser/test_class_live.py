"""The class answers together in real chromium (issue 69): a teacher asks the class a Sampling question, two students
answer from their own browsers, the teacher's chart counts them, Reveal shows each student the model's answer beside
their own; then the teacher leads, changes page, and a follower's browser lands there. The app is this test's own
(its runs folder, its teacher key); the refreshing sections read the lab every second."""

from __future__ import annotations

import pytest

from llmviz.lab.service import Lab
from tests.support.app_server import TEACHER_KEY, free_port, lab_server
from tests.support.browser import eventually, main_area, no_error_box, open_page, shot

pytestmark = pytest.mark.browser


@pytest.fixture
def class_server(tmp_path):
    """The app with its own lab and the teacher's key (tests.support.app_server.lab_server)."""
    (tmp_path / "runs").mkdir()
    server = lab_server(tmp_path, free_port())
    yield server
    server.stop()


def _poll_box(page):
    return page.locator(".st-key-live_poll")


def test_a_poll_is_answered_counted_and_revealed_and_a_follower_lands_on_the_teachers_page(browser, class_server):
    teacher = open_page(browser, f"{class_server.url}/sampling?teacher={TEACHER_KEY}")
    main = main_area(teacher)
    main.get_by_text("Predict, then reveal: guess before you look").first.click()
    main.get_by_role("button", name="Ask me").click()
    main.get_by_role("button", name="Ask the class").first.click()
    teacher.get_by_text("No student has answered yet.").first.wait_for()

    students = [open_page(browser, f"{class_server.url}/sampling") for _ in range(2)]
    for number, student in enumerate(students):
        box = _poll_box(student)
        box.get_by_text("The teacher asks the class").wait_for()
        box.locator('[role="radiogroup"] label').nth(number).click()  # (the first <label> is the widget's own)
        box.get_by_text("” is in: change it until").wait_for()

    teacher.get_by_text("2 students answered").first.wait_for()
    teacher.locator(".st-key-live_reveal button").first.click()  # (each question has a Reveal of its own)
    for student in students:
        _poll_box(student).get_by_text("The model's answer").first.wait_for()
    no_error_box(teacher)

    teacher.get_by_text("Lead", exact=True).first.click()  # the switch
    follower = students[0]
    follower.get_by_text("You follow the teacher").first.wait_for()
    teacher.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Tokens").first.click()
    follower.wait_for_url("**/tokens*")  # following opens the teacher's link (a navigation)
    follower.get_by_text("You follow the teacher").first.wait_for()
    for page in (teacher, *students):
        page.close()


def test_the_teachers_lead_switch_is_in_view_and_clickable_on_every_slide_in_presenter_mode(
    browser, class_server, tmp_path
):
    """At 1280×720 in presenter mode the Lead switch is on every slide, beside the Back/Next bar (never under it, nor
    under Streamlit's header), and a click on it starts the lead."""
    teacher = open_page(browser, f"{class_server.url}/attention?present=1&teacher={TEACHER_KEY}", viewport=(1280, 720))
    switch = teacher.locator(".st-key-live_lead")
    switch.wait_for()
    slides = teacher.evaluate("window.__llmvizPresent.count()")
    assert slides > 2
    for slide in (0, slides - 1):
        teacher.evaluate(f"window.__llmvizPresent.goto({slide})")
        box, bar = switch.bounding_box(), teacher.locator("#llmviz-present-bar").bounding_box()
        assert switch.is_visible() and box is not None and bar is not None
        assert 0 <= box["x"] and box["x"] + box["width"] <= 1280 and 0 <= box["y"] and box["y"] + box["height"] <= 720
        apart = box["x"] >= bar["x"] + bar["width"] or box["x"] + box["width"] <= bar["x"]
        assert apart or box["y"] >= bar["y"] + bar["height"], (box, bar)
        middle, x, y = box["y"] + box["height"] / 2, box["x"] + box["width"] / 2, box["y"]
        edges = [(x, y + 3), (x, y + box["height"] - 3), (box["x"] + 6, middle), (box["x"] + box["width"] - 6, middle)]
        covered = teacher.evaluate(
            "(points) => points.filter(([x, y]) => !document.elementFromPoint(x, y).closest('.st-key-live_lead'))",
            edges,
        )
        assert covered == [], "nothing covers the switch, not even its edges (Streamlit's header did its top)"
        shot(teacher, f"presenter-lead-switch-slide-{slide + 1}")
    teacher.get_by_text("Lead", exact=True).first.click()
    lab = Lab.at(tmp_path / "runs")  # the app's lab (class_server's runs folder)
    try:
        eventually(lambda: lab.registry.polls.lead().active, what="the lead switched on")
    finally:
        lab.registry.dispose()
    teacher.close()
