"""Starting workers: processes from a forkserver that has torch imported already (or threads), and what the
machine's memory is.

- **forkserver** where the platform has it: a worker then starts in milliseconds, with torch already imported, and
  never inherits the server's threads; spawn elsewhere (Windows). The forkserver preloads what every worker imports
  (:data:`PRELOAD`).
- **``__main__`` hidden.** multiprocessing would also import the parent's ``__main__`` in every worker (and in the
  forkserver); in a Streamlit server that is whichever page script ran last, in a test a temporary script. A worker
  needs only llmviz, so :func:`main_module_hidden` hides it while a worker (or the forkserver) starts.
- **Memory.** :func:`machine_memory_bytes` (the container's limit where there is one) and :func:`resident_bytes`
  read what the operating system says (through psutil), for the memory budget of
  :mod:`llmviz.jobs.admission`.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.context
import os
import resource
import sys
import threading
import types
from typing import Any

import psutil

from llmviz.jobs.channels import Channel, PipeChannel, ReadAhead
from llmviz.jobs.worker import WorkerOptions, process_entry, worker_main

log = logging.getLogger(__name__)

# torch.optim builds its first optimizer by importing torch._dynamo (~0.9 CPU-s): once, in the forkserver, rather than
# in every worker
PRELOAD = ["llmviz.jobs.worker", "llmviz.training.trainer", "torch._dynamo"]

_CONTEXT: multiprocessing.context.BaseContext | None = None
_CONTEXT_LOCK = threading.Lock()
_MAIN_LOCK = threading.Lock()


def process_context() -> Any:
    """The multiprocessing context workers start from: forkserver (preloaded) where there is one, else spawn."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            methods = multiprocessing.get_all_start_methods()
            if "forkserver" in methods and sys.platform != "win32":
                forkserver = multiprocessing.get_context("forkserver")
                forkserver.set_forkserver_preload(PRELOAD)
                _CONTEXT = forkserver
            else:
                _CONTEXT = multiprocessing.get_context("spawn")
        return _CONTEXT


@contextlib.contextmanager
def main_module_hidden():
    """While a worker process (or the forkserver) starts, ``sys.modules["__main__"]`` is an empty module, so
    multiprocessing gives the child no main script to import again. Put back unless a Streamlit script run has
    replaced it meanwhile (each script run installs its own ``__main__``)."""
    stub = types.ModuleType("__main__")
    with _MAIN_LOCK:
        previous = sys.modules.get("__main__")
        sys.modules["__main__"] = stub
        try:
            yield
        finally:
            if sys.modules.get("__main__") is stub and previous is not None:
                sys.modules["__main__"] = previous


def start_process(payload_bytes: bytes, options: WorkerOptions, name: str) -> tuple[Any, Channel]:
    """A worker process running ``payload_bytes`` (a pickled list of payloads), and the server's end of its pipe.
    The payload goes over the pipe, not as an argument, so neither side keeps a copy once it is read."""
    context = process_context()
    ours, theirs = context.Pipe(duplex=True)
    process = context.Process(target=process_entry, args=(theirs, options), name=name, daemon=True)
    with main_module_hidden():
        process.start()
    theirs.close()
    channel = PipeChannel(ours)
    try:
        ours.send_bytes(payload_bytes)
    except (BrokenPipeError, ConnectionError, OSError):
        pass  # the worker has died already: its supervisor finds out and says so
    return process, ReadAhead(channel)  # read by a thread of its own: a worker frozen mid-message freezes nobody


def _thread_worker(channel: Channel, payloads: list, options: WorkerOptions) -> None:
    try:
        worker_main(channel, payloads, options)
    except Exception:  # noqa: BLE001 - a bug in the loop itself: the supervisor sees the channel close
        log.exception("worker thread failed")
    finally:
        channel.close()


def start_thread(payloads: list, options: WorkerOptions, name: str) -> Channel:
    """A worker thread of this process running ``payloads`` (objects, never pickled), and the server's end."""
    from llmviz.jobs.channels import thread_channel_pair

    ours, theirs = thread_channel_pair()
    threading.Thread(target=_thread_worker, args=(theirs, payloads, options), daemon=True, name=name).start()
    return ours


def warm_up_workers() -> None:
    """Start the worker processes' forkserver now, in the background (it imports torch once, which takes a few
    seconds), so the first student who presses Train gets a worker at once. No-op where there is no forkserver."""

    def start() -> None:
        context = process_context()
        if context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            try:
                with main_module_hidden():
                    forkserver.ensure_running()
            except Exception:  # noqa: BLE001 - the first job will try again, and say why if it cannot
                log.exception("could not start the workers' forkserver")

    threading.Thread(target=start, name="llmviz-forkserver-warm-up", daemon=True).start()


def cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------- memory


def machine_memory_bytes() -> int:
    """The memory the server's training may count on: the machine's, or its container's limit where a cgroup sets
    one (:func:`llmviz.device.machine_memory_bytes`, the one function llmviz reads it with); 0 where nothing says."""
    from llmviz.device import machine_memory_bytes as limit

    return limit() or 0


def resident_bytes(pid: int | None = None) -> int:
    """The resident memory of process ``pid`` (this one by default) now, as psutil reads it; 0 for another process
    that is gone or not ours to read, and this process's peak (``ru_maxrss``, never less) where psutil cannot say.

    >>> resident_bytes() > 0
    True
    """
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        if pid is not None and pid != os.getpid():
            return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux
