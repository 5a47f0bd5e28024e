"""The class's live rows: polls on a page's predict-then-reveal questions, each student's answer, and the teacher's
lead (the view the class follows, and the lesson step it is at). SQLAlchemy Core over the same database as the runs
(:mod:`llmviz.lab.records`), so two app processes serve one class and a restart keeps an open poll, its answers and
the lead's step. Pages never read these rows: :class:`llmviz.lab.service.Lab` checks who may do what (only the
teacher opens, closes, reveals and reads names; a student writes only their own answer) and bounds what is kept.

>>> from llmviz.lab.registry import Registry
>>> registry = Registry("sqlite://")
>>> registry.records.ensure_student("t", teacher=True); registry.records.ensure_student("s1")
>>> poll = registry.polls.add_poll(PollRecord(0, "tokens", "token-count-1", "How many tokens?", ("3", "4", "5"), 1,
...                                     "Four.", "tokens?text=abc", opened=1.0, by="t"))
>>> registry.polls.put_answer(poll, "s1", 2, 2.0)
>>> registry.polls.put_answer(poll, "s1", 1, 3.0)  # changed before the poll closes: one answer per student
>>> registry.polls.answers(poll)
[('s1', 1, 3.0)]
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

import sqlalchemy as sa

from llmviz.lab.records import metadata
from llmviz.lab.work import UnitOfWork

MAX_PROMPT = 1000  # the longest question kept
MAX_OPTIONS = 12  # the most choices a question offers
MAX_OPTION = 200  # the longest choice
MAX_LINK = 2000  # the longest view (a link: page and settings)
MAX_EXPLANATION = 4000

polls = sa.Table(
    "lab_polls",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("page", sa.String(40), nullable=False),
    sa.Column("question", sa.String(80), nullable=False),  # the question's key (llmviz.lessons.quiz.Question.key)
    sa.Column("prompt", sa.String(MAX_PROMPT), nullable=False),
    sa.Column("options", sa.JSON, nullable=False),
    sa.Column("answer", sa.Integer, nullable=False),  # the model's answer, computed by the page on the teacher's view
    sa.Column("explanation", sa.String(MAX_EXPLANATION), nullable=False, default=""),
    sa.Column("link", sa.String(MAX_LINK), nullable=False),  # the teacher's view: page and settings
    sa.Column("opened", sa.Float, nullable=False),
    sa.Column("closed", sa.Float, nullable=True),
    sa.Column("revealed", sa.Float, nullable=True),
    sa.Column("ended", sa.Float, nullable=True),  # taken off the class's screens (kept for the CSV)
    sa.Column("by", sa.String(64), nullable=False),
)

answers = sa.Table(
    "lab_answers",
    metadata,
    sa.Column("poll", sa.Integer, sa.ForeignKey("lab_polls.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("value", sa.Integer, nullable=False),  # the option's index
    sa.Column("time", sa.Float, nullable=False),
)

# one row (id 1): whether the teacher leads, the view the followers see, the lesson and its step
lead = sa.Table(
    "lab_lead",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("active", sa.Boolean, nullable=False, default=False),
    sa.Column("link", sa.String(MAX_LINK), nullable=False, default=""),
    sa.Column("lesson", sa.String(80), nullable=True),
    sa.Column("plan", sa.Text, nullable=True),  # the lesson's file (TOML), as the teacher started it
    sa.Column("step", sa.Integer, nullable=False, default=0),
    sa.Column("since", sa.Float, nullable=False),  # when the lead was switched on (a student's stop is for this one)
    sa.Column("version", sa.Integer, nullable=False, default=0),  # one more at every change the followers follow
    sa.Column("changed", sa.Float, nullable=False),
    sa.Column("by", sa.String(64), nullable=False, default=""),
)

# a student who stopped following the lead that began at ``since`` (switching the lead on again brings them back)
unfollowed = sa.Table(
    "lab_unfollowed",
    metadata,
    sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("since", sa.Float, nullable=False),
)


@dataclass(frozen=True)
class PollRecord:
    """One poll's row."""

    id: int
    page: str
    question: str
    prompt: str
    options: tuple[str, ...]
    answer: int
    explanation: str
    link: str
    opened: float = 0.0
    closed: float | None = None
    revealed: float | None = None
    ended: float | None = None
    by: str = ""

    @property
    def state(self) -> str:
        """ "open", "closed", "revealed" (closed too) or "ended".

        >>> PollRecord(1, "p", "q", "?", ("a",), 0, "", "p", closed=2.0, revealed=3.0).state
        'revealed'
        """
        if self.ended is not None:
            return "ended"
        if self.revealed is not None:
            return "revealed"
        return "closed" if self.closed is not None else "open"


@dataclass(frozen=True)
class LeadRecord:
    """The lead's row: whether the teacher leads, the view (a link), the lesson and step, and its version."""

    active: bool = False
    link: str = ""
    lesson: str | None = None
    plan: str | None = None
    step: int = 0
    since: float = 0.0
    version: int = 0
    changed: float = 0.0
    by: str = ""


_POLL_FIELDS = [f.name for f in fields(PollRecord)]


def _poll(row) -> PollRecord:
    values = {name: row[name] for name in _POLL_FIELDS}
    values["options"] = tuple(str(option) for option in values["options"] or ())
    return PollRecord(**values)


class PollRows:
    """Polls, answers and the lead: the registry's ``registry.polls`` (:class:`llmviz.lab.registry.Registry`). Every
    statement goes through the registry's unit of work (``work``: :mod:`llmviz.lab.work`) and so its database's one
    watch (:mod:`llmviz.lab.faults`)."""

    def __init__(self, work: UnitOfWork):
        self.work = work

    def add_poll(self, record: PollRecord) -> int:
        """Keep a new poll (every other poll still on the class's screens ends: one poll at a time); its id."""
        values = {name: getattr(record, name) for name in _POLL_FIELDS if name != "id"}
        values["options"] = list(record.options)
        with self.work.begin() as db:
            now = record.opened or time.time()
            db.execute(
                sa.update(polls)
                .where(polls.c.ended.is_(None))
                .values(ended=now, closed=sa.func.coalesce(polls.c.closed, now))
            )
            made = db.execute(sa.insert(polls).values(**values)).inserted_primary_key
            assert made is not None
            return int(made[0])

    def poll(self, poll_id: int) -> PollRecord | None:
        with self.work.connect() as db:
            row = db.execute(sa.select(polls).where(polls.c.id == poll_id)).mappings().first()
        return _poll(row) if row else None

    def current_poll(self) -> PollRecord | None:
        """The poll on the class's screens now (the newest that has not ended), or None."""
        with self.work.connect() as db:
            row = (
                db.execute(sa.select(polls).where(polls.c.ended.is_(None)).order_by(polls.c.id.desc()).limit(1))
                .mappings()
                .first()
            )
        return _poll(row) if row else None

    def all_polls(self) -> list[PollRecord]:
        """Every poll kept, newest first."""
        with self.work.connect() as db:
            return [_poll(row) for row in db.execute(sa.select(polls).order_by(polls.c.id.desc())).mappings()]

    def poll_count(self) -> int:
        with self.work.connect() as db:
            return int(db.execute(sa.select(sa.func.count()).select_from(polls)).scalar_one())

    def set_poll(self, poll_id: int, **values: float | None) -> bool:
        """Set ``closed``, ``revealed`` or ``ended`` (only where not set yet); whether the poll exists."""
        with self.work.begin() as db:
            found = db.execute(sa.select(polls.c.id).where(polls.c.id == poll_id)).first() is not None
            for name, value in values.items():
                column = polls.c[name]
                db.execute(sa.update(polls).where(polls.c.id == poll_id, column.is_(None)).values({name: value}))
        return found

    def put_answer(self, poll_id: int, student: str, value: int, when: float) -> None:
        """``student``'s answer to the poll (their earlier one replaced), in one transaction."""
        with self.work.begin() as db:
            changed = db.execute(
                sa.update(answers)
                .where(answers.c.poll == poll_id, answers.c.student == student)
                .values(value=value, time=when)
            ).rowcount
            if not changed:
                try:
                    with db.begin_nested():
                        db.execute(sa.insert(answers).values(poll=poll_id, student=student, value=value, time=when))
                except sa.exc.IntegrityError:  # the same student's other tab answered meanwhile: this one is newer
                    db.execute(
                        sa.update(answers)
                        .where(answers.c.poll == poll_id, answers.c.student == student)
                        .values(value=value, time=when)
                    )

    def answers(self, poll_id: int) -> list[tuple[str, int, float]]:
        """``(student, value, time)`` of every answer to the poll, in the order they came."""
        with self.work.connect() as db:
            rows = db.execute(
                sa.select(answers.c.student, answers.c.value, answers.c.time)
                .where(answers.c.poll == poll_id)
                .order_by(answers.c.time, answers.c.student)
            )
            return [(str(s), int(v), float(t)) for s, v, t in rows]

    def answer_of(self, poll_id: int, student: str) -> int | None:
        with self.work.connect() as db:
            found = db.execute(
                sa.select(answers.c.value).where(answers.c.poll == poll_id, answers.c.student == student)
            ).first()
        return None if found is None else int(found[0])

    def answer_counts(self, poll_id: int) -> dict[int, int]:
        """How many students gave each value (one grouped query: the projector's chart reads it every second)."""
        with self.work.connect() as db:
            rows = db.execute(
                sa.select(answers.c.value, sa.func.count()).where(answers.c.poll == poll_id).group_by(answers.c.value)
            )
            return {int(value): int(count) for value, count in rows}

    # ------------------------------------------------------------------ the lead

    def lead(self) -> LeadRecord:
        with self.work.connect() as db:
            row = db.execute(sa.select(lead).where(lead.c.id == 1)).mappings().first()
        if row is None:
            return LeadRecord()
        return LeadRecord(**{name: row[name] for name in row if name != "id"})

    def set_lead(self, **values) -> LeadRecord:
        """Change the lead's row (made at the first change) and count one more version; the row as it is now."""
        now = time.time()
        with self.work.begin() as db:
            changed = db.execute(
                sa.update(lead).where(lead.c.id == 1).values(version=lead.c.version + 1, changed=now, **values)
            ).rowcount
            if not changed:
                try:
                    with db.begin_nested():
                        db.execute(
                            sa.insert(lead).values(id=1, version=1, changed=now, **{"since": now, "link": "", **values})
                        )
                except sa.exc.IntegrityError:  # another process made it meanwhile
                    db.execute(
                        sa.update(lead).where(lead.c.id == 1).values(version=lead.c.version + 1, changed=now, **values)
                    )
        return self.lead()

    def unfollow(self, student: str, since: float | None) -> None:
        """``student`` stops following the lead that began at ``since`` (None: follows again)."""
        with self.work.begin() as db:
            db.execute(sa.delete(unfollowed).where(unfollowed.c.student == student))
            if since is not None:
                db.execute(sa.insert(unfollowed).values(student=student, since=since))

    def unfollowed_since(self, student: str) -> float | None:
        with self.work.connect() as db:
            found = db.execute(sa.select(unfollowed.c.since).where(unfollowed.c.student == student)).first()
        return None if found is None else float(found[0])
