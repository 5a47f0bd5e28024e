"""What the lab needs of whatever trains runs, declared here so that the lab imports nothing of it (issue 68 §1).

The lab (:mod:`llmviz.lab`) is the record; something else trains the runs it records: today the jobs layer's
manager (:mod:`llmviz.jobs.manager`, worker processes or a Ray cluster). As JupyterHub declares a ``Spawner`` and is
told which one to use, the lab declares :class:`Trainer` (what a page's door to this process's runs calls:
:class:`llmviz.lab.live.StudentRuns`) and :class:`Job` (a run as it trains here), and is handed the factory of the
process's trainer at start: ``app.py`` calls :func:`install` with :func:`llmviz.jobs.default.default_manager`. A
process that was not wired (a page run alone under a test, the command line) gets :data:`DEFAULT`, named by its
dotted path and imported on first use, never at import time. The lab's other half of the contract,
:class:`llmviz.lab.service.Controller` (act at once on a run held here, resume a kept run here, hold writes while a
run is deleted), is what the trainer offers back: it attaches itself to the lab when it is made.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from llmviz.lab.live_status import JobStatus

#: The trainer a process uses when nothing installed one: ``module:function`` returning the process's trainer.
DEFAULT = "llmviz.jobs.default:default_manager"


class Job(Protocol):
    """A run as it trains in this process (read-only to the pages: :class:`llmviz.lab.live.LiveRun` wraps it)."""

    id: str
    label: str
    kind: str
    created: float
    info: Any
    result: Any
    checkpoint: Any
    snapshots: Any

    @property
    def changing(self) -> bool: ...

    @property
    def paused(self) -> bool: ...

    @property
    def ended(self) -> bool: ...

    def status(self) -> JobStatus: ...


class Trainer(Protocol):
    """What trains the runs of this process, as the lab's door to them asks it (every method takes the page's
    ``owner``; a trainer never shows one student another's run)."""

    runs_per_session: int | None
    running_count: int
    waiting_count: int
    max_running: int

    def bind(self, owner: str, client: str) -> None: ...

    def get(self, owner: str, run_id: str) -> Job | None: ...

    def jobs(self, owner: str) -> list[Job]: ...

    def heartbeat(self, owner: str) -> None: ...

    def resume_line(self, owner: str, run_id: str) -> str: ...

    def share(self, owner: str) -> tuple[int, int]: ...

    def memory_line(self, owner: str) -> tuple[int, int | None, int, int | None]: ...

    def run_devices(self) -> list[str]: ...

    def where_runs_train(self) -> str | None: ...

    def submit_training(self, owner: str, trainer: Any = None, **options: Any) -> Job: ...

    def submit_race(self, owner: str, runners: list[tuple[str, Any]], **options: Any) -> list[Job]: ...

    def submit_task(
        self, owner: str, loop: Callable[[Callable[[], bool]], Iterator[tuple[int, float]]], **options: Any
    ) -> Job: ...

    def keep_upload(self, owner: str, name: str, data: bytes) -> str | None: ...


_factory: Callable[..., Trainer] | None = None
_lock = threading.Lock()


def install(factory: Callable[..., Trainer]) -> None:
    """Use ``factory(liveness=...)`` for this process's trainer (``app.py`` does, at start)."""
    global _factory
    with _lock:
        _factory = factory


def trainer(liveness: Callable[[str], bool | None] | None = None) -> Trainer:
    """This process's trainer (one per process: the factory makes it once); :data:`DEFAULT` when none was
    installed."""
    global _factory
    with _lock:
        if _factory is None:
            module, name = DEFAULT.split(":")
            _factory = getattr(importlib.import_module(module), name)
        factory = _factory
    return factory(liveness=liveness)
