"""Reading a manager's shares (runs training and waiting, memory, queue positions) and keeping every client's
snapshots within its cap: a part of :class:`~llmviz.jobs.manager.JobManager` (``manager.shares``), on the manager's
ledger, lock and sessions.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from llmviz.jobs.admission import Phase, snapshot_refusal
from llmviz.training.snapshots import evict

if TYPE_CHECKING:
    from llmviz.jobs.admission import Ledger
    from llmviz.jobs.job import Job
    from llmviz.jobs.keeping import Keeper
    from llmviz.jobs.sessions import Sessions

log = logging.getLogger(__name__)


class Shares:
    """Shares and snapshots (see the module's docstring). ``snapshot_cap``: the bytes of snapshots one client keeps;
    ``keeper``: the lab's, which is handed each run's resume state (None: no lab)."""

    def __init__(self, lock: Any, ledger: Ledger, sessions: Sessions, snapshot_cap: int, keeper: Keeper | None = None):
        self._lock = lock
        self.ledger = ledger
        self.sessions = sessions
        self.snapshot_cap = snapshot_cap
        self.keeper = keeper

    # ---------------------------------------------------------------- shares

    def share(self, owner: str) -> tuple[int, int]:
        """``(training now, waiting or paused)`` runs of ``owner``'s client (a race counts once)."""
        with self._lock:
            claims = self.ledger.of(self.sessions.client_of(owner))
            running = sum(1 for claim in claims if claim.phase == Phase.RUNNING)
            return running, len(claims) - running

    def memory_line(self, owner: str) -> tuple[int, int | None, int, int | None]:
        """``(bytes owner's client counts, its share or None, bytes the server's training holds, the budget or
        None)``: for a page's line about the server."""
        with self._lock:
            client = self.sessions.client_of(owner)
            return (
                self.ledger.client_bytes(client),
                self.ledger.budget.client_memory,
                self.ledger.server_bytes(),
                self.ledger.budget.memory,
            )

    @property
    def waiting_count(self) -> int:
        """Runs waiting for a slot, all owners together (a race counts once)."""
        with self._lock:
            return len(self.ledger.waiting())

    def queued(self) -> list[Job]:
        """Every job waiting for a slot, in the order they would start (all owners: for "N waiting" lines)."""
        with self._lock:
            order = [claim.group for claim in self.ledger.order()]
            groups = {
                job.group.id: job.group for session in self.sessions.by_owner.values() for job in session.jobs.values()
            }
            return [job for group_id in order if group_id in groups for job in groups[group_id].jobs]

    @property
    def running_count(self) -> int:
        """Runs training now, all owners together (a race counts once: it holds one slot)."""
        with self._lock:
            return self.ledger.running()

    # ---------------------------------------------------------------- snapshots

    def snapshot_bytes(self, owner: str) -> int:
        """Bytes of snapshots ``owner``'s client keeps (every session of it)."""
        with self._lock:
            jobs = self.sessions.client_jobs(self.sessions.client_of(owner))
            return sum(job.snapshots.nbytes for job in jobs if job.snapshots is not None)

    def snapshot_refusal(self, owner: str, new: list[Job]) -> str | None:
        """Why runs whose step 0 and newest snapshot would not fit beside the client's other runs are refused."""
        with self._lock:
            held = 0
            for other in self.sessions.client_jobs(self.sessions.client_of(owner)):
                if other.snapshots is not None and all(other is not job for job in new):
                    reserved = other.reserved_snapshot_bytes if not other.ended else 0
                    held += max(reserved, other.snapshots.protected_bytes())
            return snapshot_refusal(sum(job.reserved_snapshot_bytes for job in new), held, self.snapshot_cap)

    def keep_snapshot(self, job: Job, step: int, state: dict, training: tuple[dict, dict] | None = None) -> None:
        """Keep ``state`` as ``job``'s snapshot at ``step``, evicting the client's others first: under the manager's
        lock, so nobody ever sees the client above the cap. ``training``: the run's resume state at that step, held
        for the lab's keeper (which writes it beside that step's weights)."""
        if job.snapshots is None:
            return
        if training is not None and self.keeper is not None:
            job.offer_resume_state(step, state, training)
        with self._lock:
            stores = [
                j.snapshots
                for j in self.sessions.client_jobs(self.sessions.client_of(job.owner))
                if j.snapshots is not None
            ]
            if job.snapshots not in stores:
                stores.append(job.snapshots)
            job.snapshots.add_state(step, state)
            left = evict(stores, self.snapshot_cap)
            if left:
                log.warning(
                    "snapshots of %s are %d bytes above the cap (only step 0 and newest steps are left)",
                    job.owner,
                    left,
                )
