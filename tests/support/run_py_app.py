"""``python run.py app`` as a teacher starts it, until it says the app is ready (tests/app/test_first_visit.py and
benchmarks/first_visit.py): what run.py itself does at start (its warm-up before the ready line) is what they look at,
which tests.support.app_server's ``streamlit run`` command does not do."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping

from tests.support.paths import ROOT

READY = "the app is at"  # run.py's line once the app's first page has run


def _lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


@contextlib.contextmanager
def ready_app(port: int, env: Mapping[str, str], timeout_s: float = 300) -> Iterator[list[str]]:
    """Start ``python run.py app`` on 127.0.0.1:``port`` with ``env`` and return once it prints :data:`READY`;
    yields the lines it printed before that one. Raises ``RuntimeError`` (with those lines) when it ends first or
    stays silent for ``timeout_s``; stops the server and everything it started on exit."""
    command = [sys.executable, "run.py", "app", "--server.address", "127.0.0.1", "--server.port", str(port)]
    server = subprocess.Popen(
        [*command, "--server.headless", "true"],
        cwd=ROOT,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    said: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(server.stdout, said), daemon=True).start()
    seen: list[str] = []
    try:
        while True:
            try:
                line = said.get(timeout=timeout_s)
            except queue.Empty:
                raise RuntimeError(f"run.py app said nothing for {timeout_s:.0f} s:\n{''.join(seen)}") from None
            if line is None:
                raise RuntimeError(f"run.py app ended before it said the app is ready:\n{''.join(seen)}")
            if READY in line:
                break
            seen.append(line)
        yield seen
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
