"""A class together in real chromium, on two app processes sharing one lab (issue 69 §7): a teacher and three
students, each in a browser of their own (their own cookies: a window that follows the teacher is a navigation, and
loads as its own student). The class answers a poll and sees the model's answer; follows the teacher to another page;
one student stops following, stays where they are while the others move, and rejoins with one click; then the class
walks a shipped lesson, Next and Back moving every follower, and a student who joins late lands on the current step.
The second process serves one student, so every answer and every move crosses the processes through the lab."""

from __future__ import annotations

import contextlib

import pytest

from tests.support.app_server import TEACHER_KEY, free_port, lab_server, logs_on_failure
from tests.support.browser import main_area, person_page, shot, wait_until_idle

pytestmark = pytest.mark.browser

FOLLOWING = "You follow the teacher"
WHILE, RARE = "The while statement", "antidisestablishmentarianism"  # the texts of the lesson's steps 1-2 and 3
ON_THEIR_OWN = "you explore on your own"


@pytest.fixture
def two_processes(tmp_path):
    """Two app processes on one lab (tmp_path/runs), as docs/classroom.md's bigger class runs them."""
    servers = [lab_server(tmp_path, free_port()), lab_server(tmp_path, free_port())]
    yield servers
    for server in servers:
        server.stop()


@contextlib.contextmanager
def _shots_on_failure(pages: list):
    """A failure leaves a screenshot of every window open (screenshots/class-together-failed-<n>.png)."""
    try:
        yield
    except Exception:
        for number, page in enumerate(pages):
            with contextlib.suppress(Exception):  # a window in the middle of a navigation: what it shows
                shot(page, f"class-together-failed-{number}", full_page=True)
        raise


def _poll_box(page):
    return page.locator(".st-key-live_poll")


def _shows(page, text: str) -> None:
    """``page`` is the Tokens page on ``text`` (what the student sees: the app may write its address anew)."""
    page.wait_for_url("**/tokens*")
    page.wait_for_function(
        "(text) => Array.from(document.querySelectorAll('textarea')).some((t) => t.value.includes(text))", arg=text
    )


def _lesson_step(page, number: int) -> None:
    """The lesson's line on ``page`` says step ``number``."""
    page.get_by_text(f"step {number} of ").first.wait_for()


def test_a_class_answers_follows_stops_rejoins_and_walks_a_lesson_across_two_processes(people, two_processes, tmp_path):
    a, b = (server.url for server in two_processes)
    opened = []
    with logs_on_failure(tmp_path), _shots_on_failure(opened):
        teacher = person_page(people(), f"{a}/sampling?teacher={TEACHER_KEY}")
        opened.append(teacher)
        main = main_area(teacher)
        main.get_by_text("Predict, then reveal: guess before you look").first.click()
        main.get_by_role("button", name="Ask me").click()
        main.get_by_role("button", name="Ask the class").first.click()
        teacher.get_by_text("No student has answered yet.").first.wait_for()

        # the poll: three students answer, two on the teacher's process and one on the other
        students = [person_page(people(), f"{url}/sampling") for url in (a, a, b)]
        opened.extend(students)
        for number, student in enumerate(students):
            box = _poll_box(student)
            box.get_by_text("The teacher asks the class").wait_for()
            box.locator('[role="radiogroup"] label').nth(number).click()  # (the first <label> is the widget's own)
            box.get_by_text("” is in: change it until").wait_for()
        teacher.get_by_text("3 students answered").first.wait_for()
        teacher.locator(".st-key-live_reveal button").first.click()
        for student in students:
            _poll_box(student).get_by_text("The model's answer").first.wait_for()
        shot(students[2], "class-together-revealed-other-process")

        # the lead: everyone follows; one stops, stays, and rejoins with one click
        teacher.get_by_text("Lead", exact=True).first.click()
        for student in students:
            student.get_by_text(FOLLOWING).first.wait_for()
        leaver = students[2]
        leaver.get_by_role("button", name="Stop following").click()
        leaver.get_by_text(ON_THEIR_OWN).first.wait_for()
        teacher.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Tokens").first.click()
        for student in students[:2]:
            student.wait_for_url("**/tokens*")  # following opens the teacher's link (a navigation)
        leaver.wait_for_timeout(3000)  # three of its live box's refreshes: it stays where it chose to be
        assert "/sampling" in leaver.url, leaver.url
        leaver.get_by_role("button", name="Follow the teacher").click()
        leaver.wait_for_url("**/tokens*")
        leaver.get_by_text(FOLLOWING).first.wait_for()

        # a shipped lesson: Start, Next, Next, Back; every follower on the step; a late student lands there
        teacher.goto(f"{a}/classroom")
        teacher.get_by_role("button", name="Start the lesson").click()
        _shows(teacher, WHILE)  # the teacher's page goes to step 1's view too (a navigation)
        wait_until_idle(teacher)
        for student in students:
            _lesson_step(student, 1)
            _shows(student, WHILE)  # step 1's view: the Tokens page on its text
        teacher.locator('[class*="st-key-lesson_next_"] button').click()  # step 2 is on step 1's view: no page moves
        _lesson_step(teacher, 2)
        for student in students:
            _lesson_step(student, 2)
        teacher.locator('[class*="st-key-lesson_next_"] button').click()
        _shows(teacher, RARE)  # step 3's own view
        wait_until_idle(teacher)
        _lesson_step(teacher, 3)
        for student in students:
            _lesson_step(student, 3)
            _shows(student, RARE)
        teacher.locator('[class*="st-key-lesson_back_"] button').click()
        for student in students:
            _lesson_step(student, 2)
            _shows(student, WHILE)
        late = person_page(people(), f"{b}/attention", idle=False)  # (moved on at once: never idle there)
        opened.append(late)
        _lesson_step(late, 2)
        _shows(late, WHILE)
        shot(late, "class-together-late-student-on-step-2")
        for page in (teacher, *students, late):  # (a student's wrong answer beside the model's is an error box)
            assert page.get_by_test_id("stException").count() == 0, page.get_by_test_id(
                "stException"
            ).first.inner_text()
