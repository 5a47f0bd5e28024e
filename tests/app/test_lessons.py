"""The shipped lessons (issue 69 §3), headless: every step's view opens its page without an error, every step's poll
is a question its page asks on that view (the teacher's Ask the class button for it is there), and a lesson started
from the class view moves the lead with Next and Back."""

from __future__ import annotations

import urllib.parse

import pytest

import llmviz.lab.service
from llmviz.lessons import plans
from tests.support.pages import assert_clean, finish_jobs, run_app
from ui.stages import PIPELINE
from ui.text import literal_markdown

KEY = "a-teacher-key-for-lesson-tests"
STEPS = [(name, number, step) for name, lesson in plans.shipped().items() for number, step in enumerate(lesson.steps)]
VIEWS = sorted({step.view for _, _, step in STEPS})
POLLS = sorted({(step.view, step.poll) for _, _, step in STEPS if step.poll})


def _page_file(page: str) -> str:
    found = {("" if stage.key == "text" else stage.key): stage.path for stage in PIPELINE if stage.exists}
    return found["" if page == "start" else page]


def _query(view: str) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(view).query))


def test_the_lessons_pages_are_the_apps():
    assert set(plans.PAGES) - {"", "start"} == {stage.key for stage in PIPELINE if stage.exists} - {"text"}
    assert len(plans.shipped()["1-text-to-next-token"].steps) == 10
    assert sum(1 for step in plans.shipped()["1-text-to-next-token"].steps if step.poll) == 3


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_of_a_shipped_lesson_opens_its_page(view):
    at = run_app(_page_file(plans.PAGES and urllib.parse.urlsplit(view).path.strip("./")), query=_query(view))
    assert_clean(at)
    assert not [w.value for w in at.warning if "link's settings were partly used" in w.value]


@pytest.mark.parametrize("view, poll", POLLS)
def test_every_poll_of_a_shipped_lesson_is_a_question_its_page_asks(monkeypatch, view, poll):
    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    at = run_app(_page_file(urllib.parse.urlsplit(view).path), query={**_query(view), "teacher": KEY})
    for ask in [button for button in at.button if (button.key or "").startswith("quiz_ask_")]:
        ask.click().run()
    at = finish_jobs(at) if poll == "lr-times-ten" else at
    for more in [button for button in at.button if (button.key or "").startswith("quiz_pending_")]:
        more.click().run()
    asks = [button.key for button in at.button if (button.key or "").startswith(f"live_ask_{poll}-")]
    assert asks, [button.key for button in at.button]


def test_a_lesson_started_from_the_class_view_moves_the_lead_step_by_step(monkeypatch):
    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    lab = llmviz.lab.service.default_lab()
    teacher = run_app("stages/classroom.py", query={"teacher": KEY})
    teacher.button(key="lesson_start").click().run()
    assert_clean(teacher)
    lesson = plans.shipped()["1-text-to-next-token"]
    lead = lab.registry.polls.lead()
    assert (lead.active, lead.lesson, lead.step, lead.link) == (True, lesson.name, 0, lesson.steps[0].view)
    teacher.button(key="lesson_next_0").click().run()
    assert (lab.registry.polls.lead().step, lab.registry.polls.lead().link) == (1, lesson.steps[1].view)
    student = run_app("stages/home.py")  # a student who joins late lands on the current step
    assert any(literal_markdown(lesson.steps[1].title) in markdown.value for markdown in student.markdown)
    assert student.session_state["_llmviz_lead_seen"] == lab.registry.polls.lead().version  # sent to the step's view
    teacher.button(key="lesson_back_1").click().run()
    assert lab.registry.polls.lead().step == 0
    teacher.button(key="lesson_end").click().run()
    assert lab.registry.polls.lead().lesson is None
    lab.registry.polls.set_lead(active=False)


def test_a_bad_lesson_file_is_one_line_with_its_line_number(monkeypatch):
    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    teacher = run_app("stages/classroom.py", query={"teacher": KEY})
    with pytest.raises(plans.LessonError, match=r"^mine.toml, line 3: step 1 has no view"):
        plans.parse('title = "Mine"\n\n[[step]]\nteacher = "<b>hi</b>"\n', "mine.toml")
    assert_clean(teacher)
