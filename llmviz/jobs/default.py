"""The process's one job manager (the Streamlit server shares one between all its sessions), made from the settings
on first use (:func:`default_manager`), with the process's lab when it can be opened; ``app.py`` hands it to the lab
(:func:`llmviz.lab.trainer.install`) at start.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable

from llmviz import settings
from llmviz.jobs import processes
from llmviz.jobs.manager import JobManager
from llmviz.lab.service import Lab, default_lab
from llmviz.training.footprint import MB

log = logging.getLogger(__name__)

_default: JobManager | None = None
_default_lock = threading.Lock()


def default_memory_mb() -> float:
    """The server's default memory budget for training: half of the machine's memory, less what the server holds
    already (at least 512 MB)."""
    machine = processes.machine_memory_bytes()
    if not machine:
        return 4096.0
    return max(512.0, (machine / 2 - processes.resident_bytes()) / MB)


def _lab_or_none() -> Lab | None:
    """The process's lab, or None (logged) when its database or folder cannot be opened: the server then trains as
    before, keeping nothing, rather than failing every page."""
    try:
        return default_lab()
    except Exception:  # noqa: BLE001 - a read-only runs folder, an unreachable database: one log line, no lab
        log.exception("the lab (LLMVIZ_DATABASE_URL, LLMVIZ_RUNS_DIR) cannot be opened: runs are not kept")
        return None


def default_manager(liveness: Callable[[str], bool | None] | None = None) -> JobManager:
    """The process's manager (the Streamlit server shares one between all sessions), from the settings
    (``llmviz/settings.py``; docs/configuration.md): ``LLMVIZ_WORKERS``, ``LLMVIZ_MAX_JOBS``,
    ``LLMVIZ_RUNS_PER_SESSION`` (0: no limit), ``LLMVIZ_TORCH_THREADS``, ``LLMVIZ_SESSION_TIMEOUT``,
    ``LLMVIZ_MEMORY_MB`` (default :func:`default_memory_mb`), ``LLMVIZ_STUDENT_MEMORY_MB`` (default: half the
    budget) and ``LLMVIZ_WORKER_TIMEOUT``.
    """
    global _default
    with _default_lock:
        if _default is None:
            cap = settings.get_or("LLMVIZ_MAX_JOBS", processes.cpu_count)
            threads = settings.get_or("LLMVIZ_TORCH_THREADS", lambda: max(1, processes.cpu_count() // cap))
            per_session = settings.get("LLMVIZ_RUNS_PER_SESSION")
            memory = settings.get_or("LLMVIZ_MEMORY_MB", default_memory_mb)
            _default = JobManager(
                max_running=cap,
                torch_threads=threads,
                session_timeout=settings.get("LLMVIZ_SESSION_TIMEOUT"),
                liveness=liveness,
                workers="ray" if settings.get("LLMVIZ_RAY_ADDRESS") else settings.get("LLMVIZ_WORKERS"),
                runs_per_session=per_session if per_session > 0 else None,
                memory_mb=memory,
                client_memory_mb=min(memory, settings.get_or("LLMVIZ_STUDENT_MEMORY_MB", lambda: memory / 2)),
                worker_timeout=settings.get("LLMVIZ_WORKER_TIMEOUT"),
                ray_address=settings.get("LLMVIZ_RAY_ADDRESS"),
                lab=_lab_or_none(),
            )
            if _default.workers == "process":
                processes.warm_up_workers()
            if _default.keeper is not None:  # a server stopped in order (SIGTERM) keeps its runs' last steps
                atexit.register(_default.close_for_restart)
        elif liveness is not None and _default.liveness is None:
            _default.liveness = liveness
        return _default
