"""The class answers together across real app processes and through the lab's faults (issue 69 §4, §7), over
Streamlit's own protocol (``benchmarks/_class_client.py``: each tab a browser identity of its own, its cookie sent
with the websocket as a browser does):

- two ``streamlit run app.py`` processes on one runs folder and lab database: the teacher asks a Tokens question on
  process B, a student answers on process A, and the teacher's chart on B counts it; the teacher starts a shipped
  lesson and presses Next on A, and a student who joins late on B lands on its step; then A is killed (SIGKILL)
  and on B nothing is lost: the student's answer is still theirs, the chart still counts it, the lead is still at
  its step, and Next on B moves the follower on;
- one app process whose SQLite lab another process holds locked past its busy timeout: a student's answer and the
  teacher's Next are each refused in the lab's one sentence (a toast), the pages go on, and once the lock is let go
  the answer and the step kept before it are still there and the class goes on.

The tabs rerun their page where a browser's timer would rerun the class's section (every second): a state is waited
for, never a time."""

from __future__ import annotations

import asyncio
import signal

import pytest

from benchmarks._class_client import ClassTab, cookie_of
from llmviz.lab.faults import SENTENCES
from llmviz.lab.service import Lab
from llmviz.lessons import plans
from tests.support.asyncio_thread import run_coroutine
from tests.support.class_servers import class_server, until
from tests.support.locks import locked_by_another_process, release
from ui.identity import new_secret, student_from_secret
from ui.text import literal_markdown

pytestmark = pytest.mark.slow  # real app servers

LOCKED = literal_markdown(SENTENCES["locked"])  # the lab's sentence, as the toast writes it
KEY = "a-teacher-key-for-the-class-across-processes"
LESSON = plans.shipped()["1-text-to-next-token"]


def server(folder, name: str):
    return class_server(folder, name, KEY, LLMVIZ_NEW_STUDENTS_PER_MINUTE="0")


async def open_clean(tab: ClassTab, path: str, query: str = ""):
    opened = await tab.open(path, query)
    assert opened.errors == [], (path, opened.errors)
    return opened


def answered(tab: ClassTab, count: int) -> bool:
    return any(f"{count} student answered" in text or f"{count} students answered" in text for text in tab.texts)


def at_step(tab: ClassTab, step: int) -> bool:
    return any(f"step {step + 1} of {len(LESSON.steps)}" in text for text in tab.texts)


async def teacher_asks(teacher: ClassTab) -> None:
    """The teacher opens the Tokens page's questions and asks the class the first."""
    await teacher.press("quiz_ask_tokens")
    ask = next(button for button in teacher.buttons.values() if "-live_ask_token-count-" in button.id)
    await teacher.press_button(ask, either=True)


def test_an_answer_and_the_lead_cross_two_processes_and_a_killed_process_loses_neither(tmp_path):
    (tmp_path / "runs").mkdir()
    a, b = server(tmp_path, "a"), server(tmp_path, "b")
    lab = Lab.at(tmp_path / "runs")  # the test reads the lab's database beside the servers
    secrets = {name: new_secret() for name in ("teacher", "ann", "bob")}

    async def scenario() -> None:
        teacher_b = ClassTab(b.url, cookie_of(secrets["teacher"]))
        await open_clean(teacher_b, "tokens", f"teacher={KEY}")
        await teacher_asks(teacher_b)
        poll = lab.registry.polls.current_poll()
        assert poll is not None and poll.page == "tokens" and poll.link.startswith("tokens")

        ann = ClassTab(a.url, cookie_of(secrets["ann"]))  # a student served by process A
        await open_clean(ann, "tokens")
        options = ann.radios["Your answer"]
        await ann.choose(f"live_answer_{poll.id}", options[2])
        assert [row[:2] for row in lab.registry.polls.answers(poll.id)] == [(student_from_secret(secrets["ann"]), 2)]
        await until(teacher_b, lambda: answered(teacher_b, 1), "answer counted on B's chart")
        assert any(title.endswith(": 1 answered") for title in teacher_b.chart_titles), teacher_b.chart_titles

        teacher_a = ClassTab(a.url, cookie_of(secrets["teacher"]))  # the same teacher's tab on process A
        await open_clean(teacher_a, "classroom")
        await teacher_a.press("lesson_start")
        await teacher_a.press("Next")
        await teacher_a.press("Next")
        assert (lab.registry.polls.lead().active, lab.registry.polls.lead().step) == (True, 2)

        bob = ClassTab(b.url, cookie_of(secrets["bob"]))  # a student who joins late, served by process B
        await open_clean(bob, "")
        assert bob.leads and bob.leads[-1][1] == LESSON.steps[2].view, (bob.leads, bob.texts, lab.registry.polls.lead())
        await bob.follow()
        assert at_step(bob, 2), bob.texts

        a.process.send_signal(signal.SIGKILL)  # process A is killed with the class on it
        a.process.wait(timeout=60)
        await ann.close()
        await teacher_a.close()
        ann = ClassTab(b.url, cookie_of(secrets["ann"]))  # ann's browser reconnects, to the process left
        await open_clean(ann, "tokens")
        assert ann.chosen["Your answer"] == options[2], "ann's answer is still hers"
        teacher_b.forget()
        await teacher_b.rerun()
        assert answered(teacher_b, 1), teacher_b.texts
        bob.forget()
        await bob.rerun()
        assert at_step(bob, 2), bob.texts  # the lead's step is kept

        teacher_b.forget()
        await open_clean(teacher_b, "classroom")
        await teacher_b.press("Next")  # the lesson goes on from process B
        assert lab.registry.polls.lead().step == 3
        await until(bob, lambda: bob.leads and bob.leads[-1][1] == LESSON.steps[3].view, "the follower moved on")
        for tab in (ann, bob, teacher_b):
            await tab.close()

    try:
        run_coroutine(scenario())
    finally:
        lab.registry.dispose()
        a.stop()
        b.stop()
    for app in (a, b):
        assert "Traceback" not in app.log_path.read_text(errors="replace")


def test_a_locked_database_is_one_sentence_to_the_student_and_the_teacher_and_nothing_is_lost(tmp_path):
    (tmp_path / "runs").mkdir()
    app = server(tmp_path, "locked")
    lab = Lab.at(tmp_path / "runs")
    secrets = {name: new_secret() for name in ("teacher", "ann")}

    async def scenario() -> None:
        teacher = ClassTab(app.url, cookie_of(secrets["teacher"]))
        await open_clean(teacher, "tokens", f"teacher={KEY}")
        await teacher_asks(teacher)
        poll = lab.registry.polls.current_poll()
        ann = ClassTab(app.url, cookie_of(secrets["ann"]))
        await open_clean(ann, "tokens")
        options = ann.radios["Your answer"]
        await ann.choose(f"live_answer_{poll.id}", options[1])
        await open_clean(teacher, "classroom")
        await teacher.press("lesson_start")
        await teacher.press("Next")
        kept = lab.registry.polls.lead()

        locker = locked_by_another_process("sqlite", tmp_path / "runs")  # runs/lab.db, past the app's 10 s
        try:
            ann.forget()
            changed = await ann.choose(f"live_answer_{poll.id}", options[3])
            assert changed.errors == [] and ann.toasts == [LOCKED], ann.toasts
            teacher.forget()
            moved = await teacher.press("Next")
            assert moved.errors == [] and teacher.toasts == [LOCKED], teacher.toasts
            ann.forget()
            await open_clean(ann, "tokens")  # a page opened under the lock is drawn, with the poll and the step
            assert at_step(ann, 1), ann.texts
            assert ann.chosen["Your answer"] == options[1]
        finally:
            release(locker)
        assert [row[:2] for row in lab.registry.polls.answers(poll.id)] == [(student_from_secret(secrets["ann"]), 1)]
        assert lab.registry.polls.lead() == kept  # nothing half-written
        await ann.choose(f"live_answer_{poll.id}", options[3])  # the lock let go: the class goes on by itself
        assert [row[1] for row in lab.registry.polls.answers(poll.id)] == [3]
        await teacher.press("Next")
        assert lab.registry.polls.lead().step == 2
        for tab in (ann, teacher):
            await tab.close()

    try:
        run_coroutine(asyncio.wait_for(scenario(), 900))
    finally:
        lab.registry.dispose()
        app.stop()
    assert "Traceback" not in app.log_path.read_text(errors="replace")
