"""The class answers together, through the lab's one door: a teacher opens one of a page's predict-then-reveal
questions as a poll on the view on their screen (its link), every student answers once (changing it until the poll
closes), the teacher's projector counts the answers, and Reveal shows everyone the model's answer beside their own;
a teacher's *lead* brings the students who follow to the teacher's view (and a lesson's step). No Streamlit here.

Who may do what is checked here, not in a page: only the teacher (``lab_students.teacher``) opens, closes, reveals
and ends a poll, reads the answers (names only when asked) and moves the lead; a student writes only their own answer
and their own following. Every refusal is one sentence (:class:`ClassRefusal`), every database fault the lab's one
sentence (:class:`~llmviz.lab.faults.LabUnavailable`), and nothing a student sent is written unchecked.

>>> import tempfile
>>> from llmviz.lab.service import Lab
>>> lab = Lab.at(tempfile.mkdtemp())
>>> lab.keep_student("t", teacher=True); lab.keep_student("s1", name="Ada")
>>> asked = Asked("token-count-1", "How many tokens?", ("3", "4"), 1, "Four.")
>>> poll = lab.teaching.open_poll("t", "tokens", asked, "tokens")
>>> lab.teaching.answer("s1", poll, 0)
'Your answer is in: “3”. You can change it until the teacher closes the poll.'
>>> lab.teaching.class_poll("s1").answer is None  # the model's answer is hidden until Reveal
True
>>> lab.teaching.reveal_poll("t", poll); view = lab.teaching.class_poll("s1")
>>> view.options[view.answer], view.options[view.mine]
('4', '3')
>>> lab.teaching.answer("s1", poll, 1)
Traceback (most recent call last):
...
llmviz.lab.teaching.ClassRefusal: This poll is closed: your answer “3” is kept.
"""

from __future__ import annotations

import contextlib
import csv
import io
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llmviz.errors import LlmvizError
from llmviz.lab.polls import MAX_EXPLANATION, MAX_LINK, MAX_OPTION, MAX_OPTIONS, MAX_PROMPT, LeadRecord, PollRecord

if TYPE_CHECKING:
    from llmviz.lab.registry import Registry

MAX_POLLS = 500  # polls kept for one class (the CSVs of a term); the teacher deletes none, the lab refuses more
MAX_STEPS = 200  # a lesson's steps (llmviz.lessons.plans bounds its file too)
MAX_PLAN = 64 * 1024  # a lesson's file, kept with the lead


class ClassRefusal(LlmvizError):
    """An answer, a poll or a lead the lab refuses: the message is one sentence for the one who asked."""


@dataclass(frozen=True)
class Asked:
    """What a page asks the class: a question's key, prompt, options, the model's answer and its explanation, all
    computed by the page on the teacher's view (:class:`llmviz.lessons.quiz.Question`'s fields)."""

    key: str
    prompt: str
    options: tuple[str, ...]
    answer: int
    explanation: str = ""


@dataclass(frozen=True)
class PollView:
    """The poll on the class's screens as one person may see it: the model's ``answer`` and ``explanation`` only
    once revealed (or for the teacher); ``mine`` is their own answer; ``counts`` (value → students) and ``answered``
    for the teacher, or for everyone once revealed; ``names`` (value → names) for the teacher when asked."""

    id: int
    page: str
    question: str
    prompt: str
    options: tuple[str, ...]
    link: str
    state: str
    mine: int | None
    answer: int | None
    explanation: str
    counts: dict[int, int]
    answered: int
    names: dict[int, list[str]] | None = None

    @property
    def open(self) -> bool:
        return self.state == "open"

    @property
    def revealed(self) -> bool:
        return self.state == "revealed"


@dataclass(frozen=True)
class LeadView:
    """The teacher's lead as one student sees it: whether it is on, the view (a link), the lesson and step, its
    version (one more at every change), and whether this student follows it."""

    active: bool
    link: str
    lesson: str | None
    step: int
    version: int
    following: bool
    plan: str | None = None  # the lesson's file (TOML) while a lesson runs

    @property
    def leads_me(self) -> bool:
        return self.active and self.following and bool(self.link)


def _text(value: object, limit: int) -> str:
    """One line of at most ``limit`` characters.

    >>> _text("a\\nb  c", 3)
    'a b'
    """
    return " ".join(str(value).split())[:limit]


def checked_link(link: object) -> str:
    """A view's link as the lab keeps it: a relative address (a page and its settings), never another site's.

    >>> checked_link("sampling?temperature=0.2")
    'sampling?temperature=0.2'
    >>> checked_link("https://elsewhere.example/")
    Traceback (most recent call last):
    ...
    llmviz.lab.teaching.ClassRefusal: A view is a page of this app and its settings, not another address.
    """
    text = str(link).strip()
    if (
        len(text) > MAX_LINK
        or "://" in text
        or text.startswith(("/", "\\", "javascript:"))
        or any(ch in text for ch in "\n\r\t<>\"'`")
    ):
        raise ClassRefusal("A view is a page of this app and its settings, not another address.")
    return text


def csv_cell(text: object) -> str:
    """A cell a spreadsheet shows as text, never runs as a formula (a name typed as ``=cmd()``).

    >>> csv_cell("=HYPERLINK(1)"), csv_cell("Ada")
    ("'=HYPERLINK(1)", 'Ada')
    """
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class ClassLive:
    """Polls (the first half of :class:`Teaching`), on the lab's registry and inside its guard
    (:meth:`llmviz.lab.service.Lab.guard`, which turns a fault of the database into its one sentence)."""

    def __init__(self, registry: Registry, guard: Callable[..., contextlib.AbstractContextManager]):
        self.registry = registry
        self.guard = guard

    # ------------------------------------------------------------------ who

    def _teacher(self, who: str, what: str) -> None:
        found = self.registry.records.student(who)
        if not found or not found["teacher"]:
            raise ClassRefusal(f"Only the teacher can {what}.")

    def _known(self, student: str) -> None:
        if self.registry.records.student(student) is None:
            raise ClassRefusal("This browser is not a student of the class yet: open any page of the app first.")

    # ------------------------------------------------------------------ polls

    def open_poll(self, teacher: str, page: str, asked: Asked, link: str) -> int:
        """The teacher opens ``asked`` (computed by ``page`` on the view ``link``) for the class: it replaces the
        poll on the class's screens; its id. Refused past :data:`MAX_POLLS` or with a malformed question."""
        options = tuple(_text(option, MAX_OPTION) for option in asked.options)
        if not 2 <= len(options) <= MAX_OPTIONS or not 0 <= int(asked.answer) < len(options):
            raise ClassRefusal(f"A poll has 2 to {MAX_OPTIONS} choices and the model's answer among them.")
        link = checked_link(link)
        with self.guard("open a poll", writes=True):
            self._teacher(teacher, "open a poll")
            if self.registry.polls.poll_count() >= MAX_POLLS:
                raise ClassRefusal(
                    f"The class keeps {MAX_POLLS} polls already: download them and start a new lab to ask more."
                )
            record = PollRecord(
                0,
                _text(page, 40),
                _text(asked.key, 80),
                str(asked.prompt)[:MAX_PROMPT],
                options,
                int(asked.answer),
                str(asked.explanation)[:MAX_EXPLANATION],
                link,
                opened=time.time(),
                by=teacher,
            )
            return self.registry.polls.add_poll(record)

    def _change_poll(self, teacher: str, poll_id: int, what: str, **values: float) -> None:
        with self.guard(f"{what} a poll", writes=True):
            self._teacher(teacher, f"{what} a poll")
            if not self.registry.polls.set_poll(int(poll_id), **values):
                raise ClassRefusal("That poll is not kept any more.")

    def close_poll(self, teacher: str, poll_id: int) -> None:
        """No more answers (each student's last one is kept)."""
        self._change_poll(teacher, poll_id, "close", closed=time.time())

    def reveal_poll(self, teacher: str, poll_id: int) -> None:
        """Close the poll and show everyone the model's answer beside their own."""
        now = time.time()
        self._change_poll(teacher, poll_id, "reveal", closed=now, revealed=now)

    def end_poll(self, teacher: str, poll_id: int) -> None:
        """Take the poll off the class's screens (it is kept, with its answers, for the CSV)."""
        now = time.time()
        self._change_poll(teacher, poll_id, "end", closed=now, ended=now)

    def answer(self, student: str, poll_id: object, value: object) -> str:
        """``student``'s answer ``value`` (a choice's index) to poll ``poll_id``; the sentence to show. Refused in
        one sentence (:class:`ClassRefusal`) for an unknown, closed or ended poll, a value that is not one of its
        choices, or a browser the class does not know."""
        if isinstance(value, bool) or not isinstance(value, int) or isinstance(poll_id, bool):
            raise ClassRefusal("An answer is one of the poll's choices.")
        with self.guard("keep an answer", writes=True):
            self._known(student)
            poll = self.registry.polls.poll(int(poll_id)) if isinstance(poll_id, int) else None
            if poll is None or poll.state == "ended":
                raise ClassRefusal("That poll is not open any more.")
            if not 0 <= value < len(poll.options):
                raise ClassRefusal("An answer is one of the poll's choices.")
            if poll.state != "open":
                mine = self.registry.polls.answer_of(poll.id, student)
                kept = f"your answer “{poll.options[mine]}” is kept" if mine is not None else "you did not answer"
                raise ClassRefusal(f"This poll is closed: {kept}.")
            self.registry.polls.put_answer(poll.id, student, value, time.time())
        return f"Your answer is in: “{poll.options[value]}”. You can change it until the teacher closes the poll."

    def class_poll(self, who: str, names: bool = False) -> PollView | None:
        """The poll on the class's screens as ``who`` may see it (see :class:`PollView`); None when there is none.
        ``names``: the teacher's view with who answered what (refused to anyone else)."""
        with self.guard("read the class's poll"):
            poll = self.registry.polls.current_poll()
            return None if poll is None else self._view(who, poll, names)

    def _view(self, who: str, poll: PollRecord, names: bool) -> PollView:
        found = self.registry.records.student(who)
        teacher = bool(found and found["teacher"])
        if names and not teacher:
            raise ClassRefusal("Only the teacher can see who answered what.")
        shown = teacher or poll.state == "revealed"
        counts = self.registry.polls.answer_counts(poll.id) if shown else {}
        named: dict[int, list[str]] | None = None
        if names:
            named = {}
            people = {row["id"]: row["name"] for row in self.registry.records.students()}
            for number, (student, value, _) in enumerate(self.registry.polls.answers(poll.id), start=1):
                named.setdefault(value, []).append(_text(people.get(student) or f"student {number}", 40))
        return PollView(
            poll.id,
            poll.page,
            poll.question,
            poll.prompt,
            poll.options,
            poll.link,
            poll.state,
            self.registry.polls.answer_of(poll.id, who),
            poll.answer if shown else None,
            poll.explanation if shown else "",
            counts,
            sum(counts.values()),
            named,
        )

    def polls(self, teacher: str) -> list[PollRecord]:
        """Every poll the class kept, newest first (the teacher's list)."""
        with self.guard("list the class's polls"):
            self._teacher(teacher, "list the polls")
            return self.registry.polls.all_polls()

    def poll_csv(self, teacher: str | None, poll_id: int, names: bool = False) -> str:
        """Poll ``poll_id`` as CSV: its question, view and the model's answer, then one row per answer (the
        student's name only with ``names``, for the teacher; ``teacher`` None: the lab's command line, run by whoever
        holds the server). :class:`ClassRefusal` for anyone else, or a poll that is not kept."""
        with self.guard("write a poll's answers"):
            if teacher is not None:
                self._teacher(teacher, "download a poll's answers")
            poll = self.registry.polls.poll(int(poll_id))
            if poll is None:
                raise ClassRefusal(f"No poll {poll_id} is kept.")
            people = {row["id"]: row["name"] for row in self.registry.records.students()} if names else {}
            rows = self.registry.polls.answers(poll.id)
        return "".join(_csv_lines(poll, rows, people, names))


def _csv_lines(poll: PollRecord, rows, people: dict, names: bool) -> Iterator[str]:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["poll", "page", "question", "view", "model's answer", "opened", "answers"])
    opened = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(poll.opened))
    model = poll.options[poll.answer]
    writer.writerow(
        [poll.id, poll.page, csv_cell(poll.prompt), csv_cell(poll.link), csv_cell(model), opened, len(rows)]
    )
    writer.writerow([])
    writer.writerow(
        ["student", "answer", "right", "seconds after opening"] if names else ["answer", "right", "seconds"]
    )
    for number, (student, value, when) in enumerate(rows, start=1):
        cells = [csv_cell(poll.options[value]), value == poll.answer, f"{when - poll.opened:.1f}"]
        if names:
            cells.insert(0, csv_cell(_text(people.get(student) or f"student {number}", 40)))
        writer.writerow(cells)
    yield out.getvalue()


class Teaching(ClassLive):
    """The class answering together, the lab's ``lab.teaching`` (:class:`llmviz.lab.service.Lab`): polls
    (:class:`ClassLive`) and the teacher's lead."""

    def lead(self, student: str) -> LeadView:
        """The lead as ``student`` sees it: two reads by key, cheap enough for every follower every second."""
        with self.guard("read the teacher's lead"):
            row = self.registry.polls.lead()
            stopped = self.registry.polls.unfollowed_since(student) if row.active else None
        return _lead_view(row, following=stopped is None or stopped != row.since)

    def set_lead(self, teacher: str, **values) -> LeadView:
        """The teacher turns the lead on or off (``active``), moves it to a view (``link``) or a lesson's step
        (``lesson``, ``step``); refused (one sentence) for anyone but the teacher. Turning it on starts a new lead:
        every student follows it again."""
        allowed = {"active", "link", "lesson", "step", "plan"}
        if not set(values) <= allowed:
            raise ClassRefusal("The lead is a view, a lesson and its step.")
        if "link" in values:
            values["link"] = checked_link(values["link"])
        if "step" in values and not (isinstance(values["step"], int) and 0 <= values["step"] < MAX_STEPS):
            raise ClassRefusal("That is not a step of the lesson.")
        if values.get("plan") is not None and (not isinstance(values["plan"], str) or len(values["plan"]) > MAX_PLAN):
            raise ClassRefusal(f"A lesson file is at most {MAX_PLAN // 1024} KB of text.")
        if values.get("lesson") is not None:
            values["lesson"] = _text(values["lesson"], 80)
        with self.guard("move the teacher's lead", writes=True):
            self._teacher(teacher, "lead the class")
            if values.get("active") and not self.registry.polls.lead().active:
                values["since"] = time.time()
            values["by"] = teacher
            row = self.registry.polls.set_lead(**values)
        return _lead_view(row, following=True)

    def follow(self, student: str, following: bool) -> LeadView:
        """``student`` stops following the teacher's lead, or follows it again (one click each); their runs and
        uploads are not touched."""
        with self.guard("keep whom you follow", writes=True):
            self._known(student)
            row = self.registry.polls.lead()
            self.registry.polls.unfollow(student, None if following else row.since)
        return _lead_view(row, following=following)


def _lead_view(row: LeadRecord, following: bool) -> LeadView:
    return LeadView(bool(row.active), row.link, row.lesson, int(row.step), int(row.version), following, row.plan)
