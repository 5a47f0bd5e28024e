"""The request mailbox: any app process may ask the process that holds a run to pause, resume, stop or park it
(the student's tab served by another process, the teacher's class view); the holder takes its requests within a
second (:meth:`llmviz.jobs.keeping.Keeper.act_on_requests`) and acts on them between two steps.
"""

from __future__ import annotations

import sqlalchemy as sa

from llmviz.lab.records import BY, LIVE_STATES, runs

REQUESTS = ("pause", "resume", "stop", "park")  # what any process may ask of a run's holder (Mailbox.request)


class Mailbox:
    """Requests between processes (``registry.mailbox``, a part of :class:`llmviz.lab.registry.Registry`)."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine

    def request(self, run_id: str, action: str, student: str | None = None, by: str = "student") -> bool:
        """Ask the process that holds ``run_id`` to ``"pause"``, ``"resume"``, ``"stop"`` or ``"park"`` it: any app
        process may ask (the student's tab on another process, the teacher's class view), the holder acts within a
        second (:meth:`llmviz.jobs.keeping.Keeper.act_on_requests`). ``student``: only if the run is theirs. False
        when the run is not live (or not theirs); a later request replaces one not yet taken. ``by``: who asks (one of
        :data:`~llmviz.lab.records.BY`), written with the state the holder then sets."""
        if action not in REQUESTS:
            raise ValueError(f"a run can be asked to {', '.join(REQUESTS)}")
        if by not in BY:
            raise ValueError(f"a request is made by one of {', '.join(BY)}")
        where: list[sa.ColumnElement[bool]] = [runs.c.id == run_id, runs.c.state.in_(LIVE_STATES)]
        if student is not None:
            where.append(runs.c.student == student)
        with self.engine.begin() as db:
            changed = db.execute(sa.update(runs).where(*where).values(wanted=action, wanted_by=by)).rowcount
        return bool(changed)

    def take_requests(self, holder: str) -> list[tuple[str, str]]:
        """The ``(run id, action)`` asked of the runs ``holder`` holds, cleared as they are taken."""
        return [(run_id, action) for run_id, action, _ in self.take_requests_by(holder)]

    def take_requests_by(self, holder: str) -> list[tuple[str, str, str]]:
        """The ``(run id, action, who asked)`` asked of the runs ``holder`` holds, cleared as they are taken."""
        with self.engine.begin() as db:
            query = sa.select(runs.c.id, runs.c.wanted, runs.c.wanted_by).where(
                runs.c.holder == holder, runs.c.wanted.is_not(None)
            )
            found = [(run_id, action, by or "student") for run_id, action, by in db.execute(query)]
            if found:
                taken = [run_id for run_id, _, _ in found]
                db.execute(sa.update(runs).where(runs.c.id.in_(taken)).values(wanted=None, wanted_by=None))
        return found
