"""The class answers together (issue 69): polls, answers and the teacher's lead in the lab's one record, on SQLite and
PostgreSQL, through the lab's door. Two :class:`Lab` objects on one database stand for two app processes; a new one
after the first is disposed stands for a restart."""

from __future__ import annotations

import csv
import io

import pytest

import llmviz.lab.registry
from llmviz.cli.main import main
from llmviz.lab import teaching
from llmviz.lab.faults import SENTENCES
from llmviz.lab.service import Lab, LabUnavailable
from llmviz.lab.teaching import Asked, ClassRefusal
from tests.support.locks import locked_by_another_process, release

QUESTION = Asked("token-count-00ab", "How many tokens will GPT-2 make of your text?", ("3", "4", "5", "7"), 1, "Four.")
VIEW = "tokens?text=abc+def&tokenizers=gpt2"


def _class(tmp_path, url, students=("s1", "s2")) -> tuple[Lab, Lab]:
    first, second = Lab.at(tmp_path, url), Lab.at(tmp_path, url)
    first.keep_student("teacher", teacher=True, name="Ms T")
    for number, student in enumerate(students, start=1):
        second.keep_student(student, name=f"Student {number}")
    return first, second


def _end(*labs: Lab) -> None:
    for lab in labs:
        lab.registry.dispose()


def test_a_poll_is_answered_from_another_process_counted_for_the_teacher_and_revealed(tmp_path, database_url):
    teacher_side, student_side = _class(tmp_path, database_url)
    poll = teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    seen = student_side.teaching.class_poll("s1")
    assert (seen.id, seen.prompt, seen.link, seen.answer, seen.counts) == (poll, QUESTION.prompt, VIEW, None, {})
    student_side.teaching.answer("s1", poll, 0)
    student_side.teaching.answer("s2", poll, 3)
    student_side.teaching.answer("s1", poll, 1)  # changed before the poll closes: still one answer
    projector = teacher_side.teaching.class_poll("teacher")
    assert (projector.counts, projector.answered, projector.answer) == ({1: 1, 3: 1}, 2, 1)
    assert projector.names is None and teacher_side.teaching.class_poll("teacher", names=True).names == {
        1: ["Student 1"],
        3: ["Student 2"],
    }
    with pytest.raises(ClassRefusal, match="Only the teacher"):
        student_side.teaching.class_poll("s2", names=True)  # answers are anonymous to other students
    with pytest.raises(ClassRefusal, match="Only the teacher"):
        student_side.teaching.reveal_poll("s2", poll)
    teacher_side.teaching.reveal_poll("teacher", poll)
    revealed = student_side.teaching.class_poll("s2")
    assert (revealed.state, revealed.mine, revealed.answer, revealed.explanation) == ("revealed", 3, 1, "Four.")
    with pytest.raises(ClassRefusal, match="closed: your answer “7” is kept"):
        student_side.teaching.answer("s2", poll, 0)
    teacher_side.teaching.end_poll("teacher", poll)
    assert student_side.teaching.class_poll("s1") is None
    _end(teacher_side, student_side)


@pytest.mark.parametrize(
    "poll, value, sentence",
    [
        (None, 1, "not open any more"),  # an unknown poll (None: the open one's id + 1)
        ("open", True, "one of the poll's choices"),  # the wrong type
        ("open", "1", "one of the poll's choices"),
        ("open", 4, "one of the poll's choices"),  # out of range
        ("open", -1, "one of the poll's choices"),
    ],
)
def test_a_bad_answer_is_one_sentence_and_changes_nothing(tmp_path, poll, value, sentence):
    teacher_side, student_side = _class(tmp_path, None)
    opened = teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    with pytest.raises(ClassRefusal, match=sentence) as refused:
        student_side.teaching.answer("s1", opened if poll == "open" else opened + 1, value)
    assert str(refused.value).count(".") == 1 and teacher_side.teaching.class_poll("teacher").answered == 0
    _end(teacher_side, student_side)


def test_a_browser_the_class_does_not_know_cannot_answer_and_a_student_cannot_lead(tmp_path):
    teacher_side, student_side = _class(tmp_path, None)
    poll = teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    with pytest.raises(ClassRefusal, match="not a student of the class"):
        student_side.teaching.answer("forged-id", poll, 1)
    with pytest.raises(ClassRefusal, match="Only the teacher can lead"):
        student_side.teaching.set_lead("s1", active=True, link="sampling")
    with pytest.raises(ClassRefusal, match="Only the teacher can open"):
        student_side.teaching.open_poll("s1", "tokens", QUESTION, VIEW)
    with pytest.raises(ClassRefusal, match="not another address"):
        teacher_side.teaching.set_lead("teacher", link="https://elsewhere.example/")
    with pytest.raises(ClassRefusal, match="not a step"):
        teacher_side.teaching.set_lead("teacher", step=-1)
    with pytest.raises(ClassRefusal, match="at most 64 KB"):
        teacher_side.teaching.set_lead("teacher", plan="x" * (65 * 1024))
    with pytest.raises(ClassRefusal, match="a view, a lesson"):
        teacher_side.teaching.set_lead("teacher", since=0.0)
    assert teacher_side.teaching.lead("s1").active is False
    _end(teacher_side, student_side)


def test_the_number_of_polls_and_their_choices_are_bounded(tmp_path, monkeypatch):
    teacher_side, _ = _class(tmp_path, None, students=())
    monkeypatch.setattr(teaching, "MAX_POLLS", 2)
    for _ in range(2):
        teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    with pytest.raises(ClassRefusal, match="keeps 2 polls already"):
        teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    with pytest.raises(ClassRefusal, match="2 to 12 choices"):
        teacher_side.teaching.open_poll("teacher", "tokens", Asked("k", "?", ("only",), 0), VIEW)
    long = Asked("k" * 500, "?" * 5000, tuple("x" * 900 for _ in range(3)), 0)
    with pytest.raises(ClassRefusal):
        teacher_side.teaching.open_poll("teacher", "t" * 90, long, VIEW)  # the third poll: refused before it is made
    _end(teacher_side)


def test_a_restart_keeps_the_open_poll_its_answers_and_the_leads_step(tmp_path, database_url):
    teacher_side, student_side = _class(tmp_path, database_url)
    poll = teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    student_side.teaching.answer("s1", poll, 2)
    plan = 'title = "T"\n[[step]]\nview = "tokens"\n'
    teacher_side.teaching.set_lead("teacher", active=True, link=VIEW, lesson="text-to-next-token", step=3, plan=plan)
    _end(teacher_side, student_side)
    again = Lab.at(tmp_path, database_url)
    found = again.teaching.class_poll("s1")
    assert (found.id, found.state, found.mine) == (poll, "open", 2)
    lead = again.teaching.lead("s1")
    assert (lead.active, lead.link, lead.lesson, lead.step, lead.following, lead.plan) == (
        True,
        VIEW,
        "text-to-next-token",
        3,
        True,
        plan,
    )
    _end(again)


@pytest.mark.processes  # the lock is held by another process
def test_a_locked_database_refuses_answers_and_the_lead_in_one_sentence_and_loses_nothing(
    tmp_path, monkeypatch, database_url
):
    """Another process holds the database locked past the lab's busy timeout (SQLite's file, or every PostgreSQL
    table): a student's answer, a changed answer, following, the teacher's Next and Close are each refused in the
    lab's one sentence, while the poll, the answer kept and the lead's step are still read; once the lock is let go,
    nothing was lost or half-written and the class goes on by itself."""
    monkeypatch.setattr(llmviz.lab.registry, "BUSY_TIMEOUT_S", 1.0)  # past it in a second (the app waits 10 s)
    teacher_side, student_side = _class(tmp_path, database_url)
    poll = teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    student_side.teaching.answer("s1", poll, 2)
    plan = 'title = "T"\n[[step]]\nview = "tokens"\n'
    teacher_side.teaching.set_lead("teacher", active=True, link=VIEW, lesson="text-to-next-token", step=3, plan=plan)
    before = teacher_side.registry.polls.lead()
    locker = locked_by_another_process(database_url, tmp_path)
    try:
        for write in (
            lambda: student_side.teaching.answer("s1", poll, 0),  # a changed answer
            lambda: student_side.teaching.answer("s2", poll, 1),  # a first one
            lambda: student_side.teaching.follow("s1", False),
            lambda: teacher_side.teaching.set_lead("teacher", step=4, link="sampling"),  # Next
            lambda: teacher_side.teaching.close_poll("teacher", poll),
        ):
            with pytest.raises(LabUnavailable) as refused:
                write()
            assert str(refused.value) == SENTENCES["locked"]
        seen = student_side.teaching.class_poll(
            "s1"
        )  # reads go on under the lock: the student's page is drawn as it was
        assert (seen.state, seen.mine) == ("open", 2)
        assert (student_side.teaching.lead("s2").step, student_side.teaching.lead("s2").leads_me) == (3, True)
    finally:
        release(locker)
    assert [row[:2] for row in teacher_side.registry.polls.answers(poll)] == [("s1", 2)]  # nothing half-written
    assert teacher_side.registry.polls.lead() == before and teacher_side.registry.polls.unfollowed_since("s1") is None
    assert teacher_side.registry.polls.poll(poll).state == "open"
    student_side.teaching.answer("s2", poll, 1)  # the lock let go: the class goes on by itself
    teacher_side.teaching.set_lead("teacher", step=4, link="sampling")
    assert (
        teacher_side.teaching.class_poll("teacher").counts == {2: 1, 1: 1}
        and student_side.teaching.lead("s1").step == 4
    )
    _end(teacher_side, student_side)


def test_a_student_stops_following_and_rejoins_and_a_new_lead_brings_everyone_back(tmp_path, database_url):
    teacher_side, student_side = _class(tmp_path, database_url)
    started = teacher_side.teaching.set_lead("teacher", active=True, link="tokens")
    assert student_side.teaching.lead("s1").leads_me
    assert not student_side.teaching.follow("s1", False).following
    assert not student_side.teaching.lead("s1").leads_me and student_side.teaching.lead("s2").leads_me
    moved = teacher_side.teaching.set_lead("teacher", link="attention?layer=1")
    assert moved.version > started.version and student_side.teaching.lead("s2").link == "attention?layer=1"
    assert student_side.teaching.follow("s1", True).following and student_side.teaching.lead("s1").leads_me
    student_side.teaching.follow("s1", False)
    teacher_side.teaching.set_lead("teacher", active=False)
    teacher_side.teaching.set_lead("teacher", active=True)  # a new lead: everyone follows it again
    assert student_side.teaching.lead("s1").leads_me
    _end(teacher_side, student_side)


def test_a_polls_csv_names_students_only_when_asked_and_never_runs_a_typed_formula(tmp_path, capsys):
    teacher_side, student_side = _class(tmp_path, None)
    student_side.keep_student("s2", name="=HYPERLINK(evil)")
    poll = teacher_side.teaching.open_poll("teacher", "tokens", QUESTION, VIEW)
    student_side.teaching.answer("s1", poll, 1)
    student_side.teaching.answer("s2", poll, 0)
    rows = list(csv.reader(io.StringIO(teacher_side.teaching.poll_csv("teacher", poll, names=True))))
    assert rows[1][2:5] == [QUESTION.prompt, VIEW, "4"]
    assert sorted(row[:3] for row in rows[4:]) == [["'=HYPERLINK(evil)", "3", "False"], ["Student 1", "4", "True"]]
    anonymous = teacher_side.teaching.poll_csv("teacher", poll)
    assert "Student 1" not in anonymous and "HYPERLINK" not in anonymous
    with pytest.raises(ClassRefusal, match="Only the teacher"):
        student_side.teaching.poll_csv("s1", poll)
    assert main(["lab", "polls", "--runs-dir", str(tmp_path)]) == 0
    assert "How many tokens" in capsys.readouterr().out
    out = tmp_path / "poll.csv"
    assert main(["lab", "polls", str(poll), "--names", "--runs-dir", str(tmp_path), "--out", str(out)]) == 0
    assert "Student 1" in out.read_text(encoding="utf-8")
    assert main(["lab", "polls", "99", "--runs-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().endswith("No poll 99 is kept.")
    _end(teacher_side, student_side)
