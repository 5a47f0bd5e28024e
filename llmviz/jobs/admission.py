"""Who may train, and who goes next: the server's shares as pure logic (no threads, no processes, no clock).

A *claim* is what one job group (a run, a race, a task) asks of the server: a slot to train in and the memory its
worker holds. A :class:`Ledger` keeps every claim, decides at submit time whether a new one is refused (with one
readable line saying why and what would fit) and, whenever a slot or memory frees, which waiting claim starts next.

- **Clients, not tabs.** Shares count every claim of one *client* (a student: every browser tab of one computer, or
  one tab where the server is told to count tabs: :mod:`llmviz.jobs.manager`).
- **Runs.** With ``runs_per_client = R``, a client trains at most R groups at once and keeps at most R more waiting
  or paused; asking for more is refused.
- **Memory.** The server holds what its workers hold (a training worker's estimated peak, from
  :mod:`llmviz.training.footprint`) and what it keeps for groups without a worker (a waiting group's payload, a
  paused group's parked state); this stays within the server's budget: a claim waits until its memory is free. A
  client's share counts what each of its groups needs to go on (its estimate, or its parked state if larger); a claim
  that would pass the client's share, or the whole budget, is refused.
- **Round-robin.** Waiting claims start in turns between clients: the client whose last start is oldest (or who never
  started one) goes first, and one client's claims start in the order they came. So one client cannot queue ahead of
  the others, however many tabs it opens.

>>> from llmviz.training.footprint import GB
>>> ledger = Ledger(Budget(slots=1, runs_per_client=None, memory=10 * GB, client_memory=4 * GB))
>>> for name, client in [("a1", "ann"), ("a2", "ann"), ("a3", "ann"), ("b1", "bob")]:
...     ledger.add(Claim(name, client, memory=GB))
>>> ledger.start(ledger.next().group)  # ann's first
>>> [claim.group for claim in ledger.order()]  # bob has not trained yet: his run goes before ann's others
['b1', 'a2', 'a3']
>>> ledger.refusal(Claim("a4", "ann", memory=2 * GB, what="Training GPT mini"))
'Training GPT mini needs about 2.0 GB; your share has 1.0 GB left.'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from llmviz.training.footprint import MB, size_text


class Phase(StrEnum):
    """Where a claim is: waiting for a slot, training, paused with its worker (a task) or without one (parked)."""

    WAITING = "waiting"
    RUNNING = "running"  # holds a slot, and its memory
    IDLE = "idle"  # every runner paused, its worker waits: no slot, still its memory
    PARKED = "parked"  # every runner paused, no worker: the server holds its state
    ENDED = "ended"


@dataclass
class Claim:
    """What one job group asks of the server."""

    group: str  # the group's id
    client: str  # the student it belongs to (every tab of one computer, or one tab)
    memory: int = 0  # bytes its worker holds while it trains (its estimated peak)
    held: int = 0  # bytes the server holds for it while it has no worker (a waiting payload, a parked state)
    what: str = "This run"  # how a refusal names it: "Training GPT mini (0.8 M parameters)"
    phase: Phase = Phase.WAITING
    stopping: bool = False  # asked to stop: no longer counts against the runs it may start
    arrival: int = 0  # set by the ledger

    @property
    def server_bytes(self) -> int:
        """What the server and its workers hold for this claim now."""
        if self.phase in (Phase.RUNNING, Phase.IDLE):
            return self.memory
        return self.held if self.phase != Phase.ENDED else 0

    @property
    def reserved_bytes(self) -> int:
        """What it counts in its client's share: what it needs to go on."""
        return max(self.memory, self.held) if self.phase != Phase.ENDED else 0


@dataclass(frozen=True)
class Budget:
    """The server's limits: slots (groups training at once), runs per client, and memory (None: no limit)."""

    slots: int
    runs_per_client: int | None = None
    memory: int | None = None  # bytes the server and its workers may hold for training
    client_memory: int | None = None  # bytes one client's groups may count together


Suggest = Callable[[int], str]  # bytes left → ": pick GPT mini, or lower the batch to 4" (or "")


@dataclass
class Ledger:
    """Every claim of a server, and the decisions about them (the caller holds a lock around every call)."""

    budget: Budget
    claims: dict[str, Claim] = field(default_factory=dict)
    served: dict[str, int] = field(default_factory=dict)  # client → the turn of its latest start
    _arrivals: int = 0
    _turns: int = 0

    # ------------------------------------------------------------------ reading

    def of(self, client: str) -> list[Claim]:
        """The client's claims that have not ended, oldest first."""
        return [c for c in self.claims.values() if c.client == client and c.phase != Phase.ENDED]

    def running(self, client: str | None = None) -> int:
        return sum(1 for c in self.claims.values() if c.phase == Phase.RUNNING and client in (None, c.client))

    def waiting(self) -> list[Claim]:
        return sorted((c for c in self.claims.values() if c.phase == Phase.WAITING), key=lambda c: c.arrival)

    def server_bytes(self) -> int:
        """What the server and its workers hold for every claim now."""
        return sum(claim.server_bytes for claim in self.claims.values())

    def client_bytes(self, client: str) -> int:
        """What the client's claims count in its share."""
        return sum(claim.reserved_bytes for claim in self.of(client))

    def order(self) -> list[Claim]:
        """The waiting claims in the order they would start if slots and memory allowed: round-robin between
        clients (oldest latest start first, never-started first of all), first come first served within one."""
        served = dict(self.served)
        pending, ordered, turn = self.waiting(), [], self._turns
        while pending:
            chosen = min(pending, key=lambda c: (served.get(c.client, -1), c.arrival))
            pending.remove(chosen)
            ordered.append(chosen)
            turn += 1
            served[chosen.client] = turn
        return ordered

    def position(self, group: str) -> int | None:
        """1 = the next to start; None when not waiting."""
        return next((n for n, claim in enumerate(self.order(), start=1) if claim.group == group), None)

    def share_full(self, client: str) -> bool:
        """Does the client already train as many groups as it may (so its waiting ones wait for its own)?"""
        limit = self.budget.runs_per_client
        return limit is not None and self.running(client) >= limit

    def fits(self, claim: Claim) -> bool:
        """Would the claim's worker fit in the server's memory now?"""
        if self.budget.memory is None:
            return True
        return self.server_bytes() - claim.server_bytes + claim.memory <= self.budget.memory

    def waits_for(self, group: str) -> str | None:
        """Why a waiting claim waits: "own run" (its client trains its share), "memory", "slot"; None if it can go."""
        claim = self.claims.get(group)
        if claim is None or claim.phase != Phase.WAITING:
            return None
        if self.share_full(claim.client):
            return "own run"
        if not self.fits(claim):
            return "memory"
        if self.running() >= self.budget.slots or self.next() is not claim:
            return "slot"
        return None

    # ------------------------------------------------------------------ deciding

    def refusal(self, claim: Claim, tabs: bool = True, suggest: Suggest | None = None) -> str | None:
        """Why ``claim`` cannot be accepted (one line), or None. ``tabs``: the shares count browser tabs (else every
        tab of one computer together), for the wording. ``suggest(left)`` says what would fit in ``left`` bytes."""
        return self.runs_refusal(claim.client, tabs) or self.memory_refusal(claim, suggest)

    def runs_refusal(self, client: str, tabs: bool = True) -> str | None:
        limit = self.budget.runs_per_client
        if limit is None:
            return None
        unfinished = [c for c in self.of(client) if not c.stopping]
        if len(unfinished) < 2 * limit:
            return None
        runs = "run" if limit == 1 else "runs"
        who = "each browser session trains" if tabs else "each computer (all its browser tabs together) trains"
        return (
            f"You already have {len(unfinished)} runs going (training, waiting or paused). This server is shared: "
            f"{who} {limit} {runs} at a time and keeps {limit} more waiting. Stop one of yours, or let it finish, "
            "before starting another (a race counts as one run)."
        )

    def memory_refusal(self, claim: Claim, suggest: Suggest | None = None) -> str | None:
        suggest = suggest or (lambda left: "")
        needs = f"{claim.what} needs about {size_text(claim.memory)}"
        total = self.budget.memory
        if total is not None and claim.memory > total:
            return f"{needs}; this server trains in at most {size_text(total)} at once{suggest(total)}."
        share = self.budget.client_memory
        if share is not None:
            left = max(0, share - self.client_bytes(claim.client))
            if claim.memory > left:
                return f"{needs}; your share has {size_text(left)} left{suggest(left)}."
        return None

    # ------------------------------------------------------------------ changing

    def add(self, claim: Claim) -> None:
        """A new claim, waiting."""
        self._arrivals += 1
        claim.arrival, claim.phase = self._arrivals, Phase.WAITING
        self.claims[claim.group] = claim

    def next(self, full: frozenset[str] = frozenset()) -> Claim | None:
        """The waiting claim that starts now: the first in :meth:`order` whose client has room in its share and
        whose memory fits; None when no slot is free or nothing may start. ``full``: clients whose share is full
        elsewhere (their runs on another app process of the lab), passed over like a full share here."""
        if self.running() >= self.budget.slots:
            return None
        return next(
            (c for c in self.order() if c.client not in full and not self.share_full(c.client) and self.fits(c)), None
        )

    def start(self, group: str) -> None:
        """The claim got a slot (its worker now holds its memory; the server no longer holds its payload)."""
        claim = self.claims[group]
        self._turns += 1
        self.served[claim.client] = self._turns
        claim.phase, claim.held = Phase.RUNNING, 0

    def wait(self, group: str, held: int | None = None) -> None:
        """The claim waits (again) for a slot: a resumed group, at the end of the line."""
        claim = self.claims[group]
        self._arrivals += 1
        claim.arrival, claim.phase = self._arrivals, Phase.WAITING
        if held is not None:
            claim.held = held

    def idle(self, group: str) -> None:
        """Every runner is paused and its worker waits: the slot is free, the memory is not."""
        self.claims[group].phase = Phase.IDLE

    def park(self, group: str, held: int) -> None:
        """Every runner is paused and its worker has gone: the server holds ``held`` bytes of state."""
        claim = self.claims[group]
        claim.phase, claim.held = Phase.PARKED, held

    def set_phase(self, group: str, phase: Phase) -> None:
        self.claims[group].phase = phase

    def stopping(self, group: str) -> None:
        if group in self.claims:
            self.claims[group].stopping = True

    def end(self, group: str) -> None:
        """The group has ended: it holds and counts nothing."""
        claim = self.claims.pop(group, None)
        if claim is not None:
            claim.phase = Phase.ENDED


def snapshot_refusal(needed: int, held: int, cap: int) -> str | None:
    """Why a run's snapshots (step 0 and the newest: ``needed`` bytes) cannot be kept beside ``held`` bytes of the
    client's other snapshots within ``cap``; None when they fit.

    >>> snapshot_refusal(3 * MB, 126 * MB, 128 * MB)[:60]
    "This run's snapshots (3.0 MB at least) would not fit in the "
    """
    if not needed or held + needed <= cap:
        return None
    return (
        f"This run's snapshots ({needed / MB:.1f} MB at least) would not fit in the {cap / MB:.0f} MB kept for "
        "your snapshots next to your other runs: delete a run, or train a smaller model."
    )


def device_refusal(what: str, needed: int, free: int, reserved: int = 0) -> str | None:
    """Why a run cannot train on the GPU: ``needed`` bytes there, ``free`` free now, ``reserved`` promised to runs
    that are waiting to start on it; None when it fits.

    >>> from llmviz.training.footprint import GB
    >>> device_refusal("Training GPT-2 (124 M parameters)", 3 * GB, 2 * GB)
    'Training GPT-2 (124 M parameters) needs about 3.0 GB on the GPU, which has 2.0 GB free: lower the batch size or
    the context, or train a smaller model.'
    """
    left = max(0, free - reserved)
    if needed <= left:
        return None
    promised = f" ({size_text(reserved)} of it promised to runs waiting to start)" if reserved else ""
    return (
        f"{what} needs about {size_text(needed)} on the GPU, which has {size_text(free)} free{promised}: lower the "
        "batch size or the context, or train a smaller model."
    )
