"""Weight snapshots of a training run at log-spaced steps, within a memory cap.

A run keeps its weights at steps 0, 1, 2, 5, 10, 20, 50, 100, … (the 1-2-5 series) and at its
last step, so a page can show "your model at step N" and compare it with step 0. Each snapshot is a
CPU copy of the model's ``state_dict``; step 0 is the initial weights, bit for bit.

>>> [step for step in range(0, 60) if is_snapshot_step(step)]
[0, 1, 2, 5, 10, 20, 50]
>>> snapshot_steps(300)
[0, 1, 2, 5, 10, 20, 50, 100, 200, 300]

When the snapshots of a session pass its memory cap, :func:`evict` drops the one whose removal
leaves the smallest gap on a log scale (never step 0 nor the last step of a run).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable

import torch
import torch.nn as nn

from llmviz import settings


def session_cap_bytes(cap_mb: float | None = None) -> int:
    """The snapshot memory cap per browser session: ``cap_mb``, else env ``LLMVIZ_SNAPSHOT_MB``, else 128 MB.

    >>> session_cap_bytes(1)
    1048576
    """
    if cap_mb is None:
        cap_mb = float(settings.get("LLMVIZ_SNAPSHOT_MB"))
    return int(cap_mb * 2**20)


def is_snapshot_step(step: int) -> bool:
    """True for 0 and for 1, 2, 5 times a power of ten.

    >>> [is_snapshot_step(s) for s in (0, 3, 5, 500, 1000, 2500)]
    [True, False, True, True, True, False]
    """
    if step == 0:
        return True
    if step < 0:
        return False
    magnitude = 10 ** int(math.floor(math.log10(step)))
    return step % magnitude == 0 and step // magnitude in (1, 2, 5)


def snapshot_steps(last: int) -> list[int]:
    """The steps a run of ``last`` steps keeps (before any eviction).

    >>> snapshot_steps(7)
    [0, 1, 2, 5, 7]
    """
    steps = [s for s in _series(last) if s <= last]
    return steps if steps[-1] == last else [*steps, last]


def _series(last: int) -> Iterable[int]:
    yield 0
    magnitude = 1
    while magnitude <= last:
        for digit in (1, 2, 5):
            if digit * magnitude <= last:
                yield digit * magnitude
        magnitude *= 10


def state_of(model: nn.Module) -> dict[str, torch.Tensor]:
    """A detached CPU copy of ``model``'s weights (tied matrices stay shared in the copy)."""
    copies: dict[int, torch.Tensor] = {}
    state = {}
    for name, tensor in model.state_dict().items():
        key = tensor.data_ptr() if tensor.numel() else id(tensor)
        if key not in copies:
            copies[key] = tensor.detach().to("cpu", copy=True)
        state[name] = copies[key]
    return state


def state_bytes(state: dict[str, torch.Tensor]) -> int:
    """Bytes held by a state dict, counting shared tensors once.

    >>> weight = torch.zeros(4, 4)
    >>> state_bytes({"a": weight, "b": weight, "c": torch.zeros(2)})
    72
    """
    seen, total = set(), 0
    for tensor in state.values():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            total += tensor.numel() * tensor.element_size()
    return total


class SnapshotStore:
    """The snapshots of one run: step → CPU state dict, thread-safe.

    The training thread :meth:`add`\\ s; pages read :meth:`steps` and :meth:`get` at any time. The store
    never holds a reference to the live model, so what a page reads never changes under it.
    """

    def __init__(self, every: int = 0) -> None:
        self.every = every  # also keep every ``every``-th step (0: only the log-spaced series)
        self._states: dict[int, dict[str, torch.Tensor]] = {}
        self._sizes: dict[int, int] = {}
        self._lock = threading.Lock()
        self.last_step: int | None = None  # the newest step; it is never evicted
        self.version = 0  # grows with every snapshot added or dropped

    def add(self, step: int, model: nn.Module) -> None:
        """Keep the weights of ``model`` at ``step``; the previous "last" snapshot is dropped when it
        is not on the log-spaced series (it was only kept for being the newest)."""
        self.add_state(step, state_of(model))

    def add_state(self, step: int, state: dict[str, torch.Tensor]) -> None:
        """Keep ``state`` (a CPU copy of the weights nobody else changes) at ``step``, as :meth:`add` does."""
        size = state_bytes(state)
        with self._lock:
            previous = self.last_step
            if previous is not None and previous != step and not self.keeps(previous):
                self._states.pop(previous, None)
                self._sizes.pop(previous, None)
            self._states[step] = state
            self._sizes[step] = size
            self.last_step = step if previous is None else max(previous, step)
            self.version += 1

    def keeps(self, step: int) -> bool:
        """Is ``step`` on this store's schedule (the log-spaced series, plus every ``every``-th step)?

        >>> store = SnapshotStore(every=25)
        >>> [s for s in range(0, 101) if store.keeps(s)]
        [0, 1, 2, 5, 10, 20, 25, 50, 75, 100]
        """
        return is_snapshot_step(step) or (self.every > 0 and step % self.every == 0)

    def steps(self) -> list[int]:
        with self._lock:
            return sorted(self._states)

    def get(self, step: int) -> dict[str, torch.Tensor]:
        with self._lock:
            if step not in self._states:
                raise KeyError(f"no snapshot at step {step} (kept: {sorted(self._states)})")
            return self._states[step]

    def resolve(self, step: int | None) -> tuple[int, dict[str, torch.Tensor]]:
        """``(kept step, its state)`` for ``step`` (None: the newest), read in one go: the training thread
        replaces the newest snapshot every few seconds, so looking up a step and then its state could miss.

        >>> store = SnapshotStore()
        >>> store.resolve(None)
        Traceback (most recent call last):
        KeyError: 'no snapshot yet'
        """
        with self._lock:
            if not self._states:
                raise KeyError("no snapshot yet")
            kept = sorted(self._states)
            found = kept[-1] if step is None else min(kept, key=lambda s: (abs(s - step), s))
            return found, self._states[found]

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(self._sizes.values())

    def protected_bytes(self) -> int:
        """Bytes of the snapshots that are never evicted (step 0 and the last)."""
        with self._lock:
            steps = sorted(self._states)
            return sum(self._sizes[s] for s in {steps[0], steps[-1]}) if steps else 0

    def evictable(self) -> list[tuple[float, int]]:
        """``(log gap left if removed, step)`` for every snapshot that may go (not 0, not the last)."""
        with self._lock:
            steps = sorted(self._states)
            out = []
            for i in range(1, len(steps) - 1):
                if steps[i] == self.last_step:
                    continue
                gap = math.log1p(steps[i + 1]) - math.log1p(steps[i - 1])
                out.append((gap, steps[i]))
            return out

    def drop(self, step: int) -> int:
        """Forget one snapshot; returns the bytes freed."""
        with self._lock:
            if step == 0 or step == self.last_step:
                raise ValueError("step 0 and the last step are always kept")
            self.version += 1
            self._states.pop(step, None)
            return self._sizes.pop(step, 0)


def evict(stores: Iterable[SnapshotStore], cap_bytes: int) -> int:
    """Drop snapshots across ``stores`` (one session's runs) until they fit in ``cap_bytes``.

    Each time, the snapshot whose removal leaves the smallest gap (on a log scale) goes, so the kept
    steps stay spread from 0 to the last. Step 0 and the last step of each run are never dropped; returns
    the bytes still above the cap (0 when the cap holds).
    """
    stores = list(stores)
    total = sum(store.nbytes for store in stores)
    while total > cap_bytes:
        candidates = [(gap, step, store) for store in stores for gap, step in store.evictable()]
        if not candidates:
            return total - cap_bytes
        _, step, store = min(candidates, key=lambda c: (c[0], c[1]))
        total -= store.drop(step)
    return 0


def load_into(model: nn.Module, state: dict[str, torch.Tensor]) -> nn.Module:
    """Copy a snapshot into ``model`` (a fresh instance of the run's architecture), in eval mode, grads off."""
    model.load_state_dict(state, strict=True)
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model
