"""The class answers together in the app (issue 69), headless: the teacher asks the class a Sampling question on the
teacher's view, a student's page shows it and sends the answer, the teacher's chart counts it with a sentence in
words, Reveal shows the student the model's answer beside their own; the teacher's Lead brings a follower's page the
teacher's view, and a student stops following and rejoins. (AppTest runs no fragment on its own timer: each test
runs the page again, as the second's refresh would.)"""

from __future__ import annotations

import doctest
import json

import pytest
from streamlit.testing.v1 import AppTest

import llmviz.lab.service
from tests.support.pages import ROOT, TIMEOUT, assert_clean, run_app
from ui import class_live

KEY = "a-teacher-key-for-class-tests"


@pytest.fixture
def a_class(monkeypatch):
    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    lab = llmviz.lab.service.default_lab()
    for poll in lab.registry.polls.all_polls():  # a poll another test of this process left open
        lab.registry.polls.set_poll(poll.id, closed=1.0, ended=1.0)
    yield lab
    if lab.registry.polls.lead().active:
        lab.registry.polls.set_lead(active=False)


def _student_of(at) -> str:
    from llmviz.lab.identity import student_key

    return student_key(at.session_state["_llmviz_session_id"])


def test_a_poll_goes_from_the_teachers_question_to_a_students_answer_and_back_revealed(a_class):
    teacher = run_app("stages/sampling.py", query={"teacher": KEY})
    teacher.button(key="quiz_ask_sampling").click().run()
    asks = [button for button in teacher.button if (button.key or "").startswith("live_ask_")]
    assert asks, "the teacher has an Ask the class button under each question"
    asks[0].click().run()
    assert_clean(teacher)
    poll = a_class.registry.polls.current_poll()
    assert poll is not None and poll.page == "sampling" and poll.link.startswith("sampling")

    student = run_app("stages/sampling.py")
    radio = student.radio(key=f"live_answer_{poll.id}")
    assert list(radio.options) and not [b for b in student.button if (b.key or "").startswith("live_ask_")]
    wrong = next(option for option in radio.options if option != radio.options[poll.answer])
    radio.set_value(wrong).run()
    assert a_class.registry.polls.answers(poll.id)[0][:2] == (_student_of(student), poll.options.index(wrong.strip()))

    teacher.run()
    assert any("1 student answered" in caption.value for caption in teacher.caption)
    chart = next(json.loads(c.proto.spec) for c in teacher.get("plotly_chart") if "answered" in c.proto.spec)
    bars = chart["data"][0]  # the chart's sentence (its text alternative) says every bar's count, as drawn
    chosen = ", ".join(f"{int(n)} chose “{o.strip()}”" for o, n in zip(bars["x"], bars["y"], strict=True))
    assert f"{int(sum(bars['y']))} student answered: {chosen}." in chart["layout"]["meta"], chart["layout"]["meta"]
    teacher.button(key="live_reveal").click().run()
    student.run()
    said = [error.value for error in student.error]
    assert any("The model's answer" in text and "yours" in text for text in said), said
    assert_clean(student, errors_expected=True)


def test_a_follower_is_taken_to_the_teachers_view_and_can_stop_and_rejoin(a_class):
    teacher = run_app("stages/tokens.py", query={"teacher": KEY})
    teacher.toggle(key="live_lead").set_value(True).run()
    lead = a_class.registry.polls.lead()
    assert lead.active and lead.link.startswith("tokens")

    student = run_app("stages/sampling.py")  # its first page run (Home) went to the teacher's view
    assert student.session_state["_llmviz_lead_seen"] == lead.version
    student.button(key="live_unfollow").click().run()
    assert not [html for html in student.get("html") if "/* lead" in html.value]
    assert a_class.registry.polls.unfollowed_since(_student_of(student)) == lead.since
    student.button(key="live_follow").click().run()
    scripts = [html.value for html in student.get("html") if "/* lead" in html.value]
    assert scripts and '"tokens' in scripts[0], "the follower's page goes to the teacher's view"
    teacher.toggle(key="live_lead").set_value(False).run()
    assert not a_class.registry.polls.lead().active


def _scripts(at) -> list[str]:
    return [html.value for html in at.get("html") if "/* lead" in html.value]


def _first_run_on(path: str, query: dict) -> AppTest:
    """A fresh session whose first page run is ``path`` with ``query`` (a browser opening that link)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    return at.switch_page(str(ROOT / path)).run()


def test_a_follower_on_the_teachers_page_at_other_settings_is_moved_and_a_lost_move_is_asked_again(a_class):
    """The teacher's view is a page *and* its settings: a follower who opens the teacher's page with another text is
    taken to the teacher's (one who opens the teacher's very link is not); a move whose script was lost (the page is
    still at the other text at the next refresh) is drawn again, the same script, a few times at most; a page seen
    at the view is not moved again."""
    teacher = run_app("stages/tokens.py", query={"teacher": KEY, "text": "The teacher's own text"})
    teacher.toggle(key="live_lead").set_value(True).run()
    lead = a_class.registry.polls.lead()
    assert "teacher" in lead.link and lead.link.startswith("tokens?"), lead.link

    there = _first_run_on("stages/tokens.py", {"text": "The teacher's own text"})
    assert there.session_state["_llmviz_lead_seen"] == lead.version
    assert not _scripts(there), "a page already at the teacher's view stays"

    elsewhere = _first_run_on("stages/tokens.py", {"text": "A student's own text"})
    assert elsewhere.session_state["_llmviz_lead_seen"] == lead.version
    first = _scripts(elsewhere)
    assert first, "the teacher's page at other settings is not the teacher's view"
    for drawn in range(1, class_live.KEEP_ASKING + 1):  # the script was lost: the page is still at the student's text
        elsewhere.run()
        assert _scripts(elsewhere) == first, f"asked again, the same move ({drawn})"
    elsewhere.run()
    assert not _scripts(elsewhere), "a few times at most"

    there.session_state["_llmviz_lead_asked"] = 0  # it drew a move
    there.run()
    assert not _scripts(there), "a page at the teacher's view is not moved again"
    assert there.session_state["_llmviz_lead_asked"] == class_live.KEEP_ASKING, "nor later, when it changes"
    teacher.toggle(key="live_lead").set_value(False).run()


def test_the_followers_script_keeps_a_link_inside_its_string():
    """The link a follower's browser goes to holds what the teacher typed into the view's boxes: written into a
    ``<script>`` element, no ``</script>`` in it may end the element, and the browser reads back the link itself."""
    assert doctest.testmod(class_live).failed == 0
    link = 'tokens?text=</script><img src=x onerror="alert(1)">&b=1'
    script = class_live.go_script(link, "7")
    inner = script.removeprefix("<script>").removesuffix("</script>")
    assert "<" not in inner and ">" not in inner
    quoted = inner[inner.index("new URL(") + len("new URL(") : inner.index(", window.location.href")]
    assert json.loads(quoted) == link  # a JavaScript string reads as JSON does
