"""The fair queue in front of a manager's training slots: a group waits here (:meth:`FairQueue.acquire`, the body of its
supervisor's wait) until the ledger (:mod:`llmviz.jobs.admission`) chooses it and, with a lab, one of the machine's
slots is free in every app process (:meth:`llmviz.jobs.lab_side.LabSide.machine_slot`); it frees its slot when its run
pauses, parks or ends. A part of :class:`~llmviz.jobs.manager.JobManager` (``manager.queue``) on its one lock, and the
:class:`~llmviz.jobs.job.Board` its jobs ask where they stand.

>>> import threading
>>> from llmviz.jobs.admission import Budget, Claim, Ledger, Phase
>>> from llmviz.jobs.job import Group
>>> ledger = Ledger(Budget(slots=1))
>>> queue = FairQueue(threading.RLock(), ledger, threading.Event())
>>> first, second = Group("ann", "ann", None), Group("bo", "bo", None)
>>> for group in (first, second):
...     ledger.add(Claim(group.id, group.owner))
>>> queue.acquire(first, give_up=lambda: False, otherwise=Phase.ENDED)  # the one slot
True
>>> queue.acquire(second, give_up=lambda: True, otherwise=Phase.WAITING)  # it waits (here it gives up at once)
False
>>> queue.ended(first); queue.acquire(second, give_up=lambda: False, otherwise=Phase.ENDED)
True
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llmviz.jobs.admission import Phase

if TYPE_CHECKING:
    from llmviz.jobs.admission import Ledger
    from llmviz.jobs.job import Group, Job
    from llmviz.jobs.lab_side import LabSide


class FairQueue:
    """Waiting for a slot, and freeing it (see the module's docstring). ``lock``: the manager's; ``closed``: set when
    the manager shuts down (every wait ends); ``lab_side``: the machine's slots shared with every app process (None:
    this process's ledger is the whole story)."""

    def __init__(self, lock: Any, ledger: Ledger, closed: threading.Event, lab_side: LabSide | None = None):
        self._slots = threading.Condition(lock)
        self.ledger = ledger
        self._closed = closed
        self.lab_side = lab_side
        self.device_needs: dict[str, int] = {}  # group id → bytes it needs on the GPU (waiting to start)
        self.admitted: list[str] = []  # job ids in the order they got a slot (tests read it)

    def acquire(self, group: Group, give_up: Callable[[], bool], otherwise: Phase) -> bool:
        """Wait for a slot (and the memory) in the fair queue; False when ``give_up()`` turned true (stopped) or the
        manager shut down while waiting: the group's claim then goes to ``otherwise``."""
        with self._slots:
            claim = self.ledger.claims.get(group.id)
            if claim is None:
                return False
            if claim.phase != Phase.WAITING:
                self.ledger.wait(group.id)
            try:
                while not give_up() and not self._closed.is_set():
                    full = self.lab_side.full_elsewhere() if self.lab_side is not None else frozenset()
                    chosen = self.ledger.next(full)
                    if chosen is claim and (self.lab_side is None or self.lab_side.machine_slot(group, claim)):
                        self.ledger.start(group.id)
                        self.device_needs.pop(group.id, None)
                        self.admitted.extend(job.id for job in group.jobs)
                        return True
                    self._slots.wait(timeout=0.5)
                if otherwise == Phase.ENDED:
                    self.ledger.end(group.id)
                else:
                    self.ledger.set_phase(group.id, otherwise)
                return False
            finally:
                self._slots.notify_all()

    def release(self, group: Group, idle: bool = False) -> None:
        """The group's slot is free (``idle``: its worker still waits, holding its memory)."""
        if not idle:
            self._free_machine_slot(group)
        with self._slots:
            if idle and group.id in self.ledger.claims:
                self.ledger.idle(group.id)
            self._slots.notify_all()

    def parked(self, group: Group, held: int) -> None:
        """The group's worker has gone; the server holds ``held`` bytes of its state."""
        self._free_machine_slot(group)
        with self._slots:
            if group.id in self.ledger.claims:
                self.ledger.park(group.id, held)
            self._slots.notify_all()

    def ended(self, group: Group) -> None:
        self._free_machine_slot(group)
        with self._slots:
            self.ledger.end(group.id)
            self.device_needs.pop(group.id, None)
            self._slots.notify_all()

    def stopping(self, group: Group) -> None:
        """A job was asked to stop: when its whole group is, it no longer counts against new runs."""
        with self._slots:
            if group.stopping:
                self.ledger.stopping(group.id)
            self._slots.notify_all()

    def wake_all(self) -> None:
        """Every wait looks again (the manager shut down)."""
        with self._slots:
            self._slots.notify_all()

    # ---------------------------------------------------------------- what a job asks (its Board)

    def waits_for(self, group: Group) -> str | None:
        with self._slots:
            return self.ledger.waits_for(group.id)

    def queue_position(self, job: Job) -> int | None:
        with self._slots:
            return self.ledger.position(job.group.id)

    def _free_machine_slot(self, group: Group) -> None:
        if self.lab_side is not None:
            self.lab_side.free_machine_slot(group)
