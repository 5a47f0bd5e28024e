"""The sessions a manager serves, and their end: the jobs of each owner (a student's browser session, ``"cli"``),
which client's shares they count in, and the reaper that parks the runs of owners that have gone: a part of
:class:`~llmviz.jobs.manager.JobManager` (``manager.sessions``), on the manager's lock and keeper.

An owner is alive while ``liveness(owner)`` says so or it sent a :meth:`Sessions.heartbeat` within
``session_timeout`` seconds; once it has gone, its runs still training stop after their step and are kept in the lab
as *parked* (resumable), or, without a lab, are stopped and forgotten.

>>> from llmviz.jobs.manager import JobManager
>>> import time
>>> manager = JobManager(max_running=1, session_timeout=0.01)
>>> sessions = manager.sessions
>>> sessions.bind("tab-1", "computer-1"); sessions.client_of("tab-1"), sessions.client_of("tab-2")
('computer-1', 'tab-2')
>>> time.sleep(0.05); sessions.reap()  # no heartbeat within 0.01 s: the session has gone
['tab-1']
>>> manager.jobs("tab-1")
[]
>>> manager.shutdown()
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmviz.jobs.job import Job
    from llmviz.jobs.keeping import Keeper


@dataclass
class Session:
    """One owner's jobs (by id, oldest first), its last heartbeat and the client whose shares it counts in."""

    jobs: dict[str, Job] = field(default_factory=dict)
    heartbeat: float = field(default_factory=time.monotonic)
    client: str | None = None  # None: the session is its own client


class Sessions:
    """Owners, clients and the reaper (see the module's docstring). ``lock``: the manager's, which guards every
    session; ``closed``: set when the manager shuts down (the reaper ends); ``keeper``: the lab's, which keeps the
    runs of an owner that has gone as *parked* (None: they are stopped and forgotten)."""

    def __init__(
        self,
        lock: Any,
        closed: threading.Event,
        keeper: Keeper | None = None,
        liveness: Callable[[str], bool | None] | None = None,
        session_timeout: float | None = None,
        reap_interval: float = 2.0,
    ):
        self._lock = lock
        self._closed = closed
        self.keeper = keeper
        self.liveness = liveness
        self.session_timeout = session_timeout
        self.reap_interval = reap_interval
        self.by_owner: dict[str, Session] = {}
        self._reaper: threading.Thread | None = None

    # ---------------------------------------------------------------- clients

    def bind(self, owner: str, client: str) -> None:
        """Count ``owner``'s jobs in ``client``'s shares (the server: the student's address, so every tab of one
        computer shares one share). Cheap: pages call it on every run."""
        with self._lock:
            session = self.by_owner.setdefault(owner, Session())
            session.client = None if client == owner else client

    def client_of(self, owner: str) -> str:
        with self._lock:
            session = self.by_owner.get(owner)
            return session.client if session is not None and session.client is not None else owner

    def client_jobs(self, client: str) -> list[Job]:
        return [
            job
            for owner, session in self.by_owner.items()
            if (session.client or owner) == client
            for job in session.jobs.values()
        ]

    # ---------------------------------------------------------------- reading (per owner)

    def jobs(self, owner: str) -> list[Job]:
        """The owner's jobs, oldest first (never anyone else's)."""
        with self._lock:
            session = self.by_owner.get(owner)
            return list(session.jobs.values()) if session else []

    def get(self, owner: str, job_id: str) -> Job | None:
        with self._lock:
            session = self.by_owner.get(owner)
            return session.jobs.get(job_id) if session else None

    def every_job(self) -> list[Job]:
        """Every owner's jobs."""
        with self._lock:
            return [job for session in self.by_owner.values() for job in session.jobs.values()]

    def job_of(self, student: str, run_id: str, key: Callable[[str], str]) -> Job | None:
        """``student``'s job ``run_id`` (``key(owner)``: the student an owner is), None when no session holds it."""
        with self._lock:
            for owner, session in self.by_owner.items():
                if key(owner) == student and run_id in session.jobs:
                    return session.jobs[run_id]
        return None

    def forget(self, owner: str, job_ids: list[str]) -> None:
        """``owner``'s session lists those jobs no more."""
        with self._lock:
            jobs = self.by_owner[owner].jobs if owner in self.by_owner else {}
            for job_id in job_ids:
                jobs.pop(job_id, None)

    # ---------------------------------------------------------------- ended sessions

    def heartbeat(self, owner: str) -> None:
        with self._lock:
            if owner in self.by_owner:
                self.by_owner[owner].heartbeat = time.monotonic()

    def end_session(self, owner: str) -> None:
        """Stop every job of ``owner`` and forget them (a closed browser tab)."""
        with self._lock:
            session = self.by_owner.pop(owner, None)
        for job in session.jobs.values() if session else ():
            job.discard()

    def ensure_reaper(self) -> None:
        if self.session_timeout is None or (self._reaper is not None and self._reaper.is_alive()):
            return
        self._reaper = threading.Thread(target=self._reap_forever, name="llmviz-job-reaper", daemon=True)
        self._reaper.start()

    def _reap_forever(self) -> None:
        while not self._closed.wait(self.reap_interval):
            self.reap()

    def reap(self) -> list[str]:
        """Stop and forget the jobs of owners that have gone; returns those owners."""
        now = time.monotonic()
        gone = []
        with self._lock:
            owners = list(self.by_owner.items())
        for owner, session in owners:
            alive = self.liveness(owner) if self.liveness is not None else None
            if alive:
                session.heartbeat = now  # a live browser session counts as a heartbeat
                continue
            if now - session.heartbeat > (self.session_timeout or math.inf):
                gone.append(owner)
        for owner in gone:
            if self.keeper is not None:
                self.park_session(owner)
            else:
                self.end_session(owner)
        return gone

    def park_session(self, owner: str) -> None:
        """``owner`` has gone (no tab for ``session_timeout``): their runs still training stop after this step and
        are kept as *parked* in the lab (snapshots and curve), their workers and memory freed; the manager forgets
        them (the lab lists them)."""
        with self._lock:
            session = self.by_owner.pop(owner, None)
        for job in session.jobs.values() if session else ():
            if not job.ended and self.keeper is not None:
                self.keeper.park(job, "server")
            job.stop()
            job.group.wake()
