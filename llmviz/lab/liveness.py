"""Process liveness: which process holds which run, and whether it is still there. A run's row names its holder
(``"host:pid:started"``) and when that process last said it was alive (``heartbeat``): a run whose holder has gone
while it trained is *interrupted*, not lost (it resumes from its last resume state).
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from llmviz.lab.holders import holder_alive
from llmviz.lab.records import LIVE_STATES, runs


class Liveness:
    """Heartbeats and orphaned runs (``registry.liveness``, a part of :class:`llmviz.lab.registry.Registry`)."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine

    def beat(self, holder: str) -> None:
        """The process ``holder`` is alive: every run it holds says so."""
        with self.engine.begin() as db:
            db.execute(sa.update(runs).where(runs.c.holder == holder).values(heartbeat=time.time()))

    def interrupt_orphans(self, stale_s: float = 60.0, student: str | None = None) -> list[str]:
        """Runs that were queued, training or paused in a process that has gone (or has not said it is alive for
        ``stale_s`` seconds, where it runs on another host) become *interrupted*; returns their ids. ``student``:
        only theirs (a page listing a student's runs checks them, so a killed app process's runs show as
        interrupted at once on the other)."""
        now = time.time()
        where: list[sa.ColumnElement[bool]] = [runs.c.state.in_(LIVE_STATES)]
        if student is not None:
            where.append(runs.c.student == student)
        with self.engine.connect() as db:
            rows = db.execute(sa.select(runs.c.id, runs.c.holder, runs.c.heartbeat).where(*where)).all()
        gone = []
        for run_id, holder, heartbeat in rows:
            alive = holder_alive(holder)
            if alive is False or (alive is None and now - (heartbeat or 0) > stale_s):
                gone.append(run_id)
        if gone:
            with self.engine.begin() as db:
                db.execute(
                    sa.update(runs)
                    .where(runs.c.id.in_(gone), runs.c.state.in_(LIVE_STATES))
                    .values(
                        state="interrupted",
                        state_by="server",
                        state_step=runs.c.step,
                        training=False,
                        memory=0,
                        updated=now,
                    )
                )
        return gone
