"""Names for processes: ``"host:pid:started"`` names a process uniquely (even after its process id is reused), and
says whether it is still running (:mod:`llmviz.lab.liveness` marks the runs of processes that have gone)."""

from __future__ import annotations

import os
import socket

import psutil


def this_holder() -> str:
    """``"host:pid:started"`` for this process: names it uniquely even after its process id is reused.

    >>> this_holder().split(":")[1] == str(os.getpid())
    True
    """
    started = int(psutil.Process().create_time())
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{started}"


def holder_alive(holder: str | None) -> bool | None:
    """Is the process ``holder`` names still running? None where it cannot be told (another host).

    >>> holder_alive(this_holder()), holder_alive(None)
    (True, False)
    """
    if not holder:
        return False
    host, _, rest = holder.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname()[:60]:
        return None
    try:
        process = psutil.Process(int(pid))
        return int(process.create_time()) == int(started)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False
