"""Start the app the way a teacher does (``streamlit run app.py``), for tests, benchmarks and scripts.

One place knows the command line, the address, and how to tell that the server is up (Streamlit's own health
endpoint answers ``ok``); it needs neither pytest nor llmviz::

    from tests.support.app_server import running_app

    with running_app(port=8531, env={"LLMVIZ_RUNS_DIR": "/tmp/runs"}) as app:
        ...  # open app.url in a browser

The server listens on 127.0.0.1 only, runs headless, watches no files, and is stopped (terminate, then kill) when
the block ends.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tests.support.paths import ROOT


class AppDidNotStart(RuntimeError):
    """The server exited, or did not answer its health check in time; the message ends with its log."""


def free_port() -> int:
    """A TCP port nothing listens on right now (the system picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def command(script: str | Path, port: int) -> list[str]:
    """The command line: ``streamlit run <script>`` on 127.0.0.1:<port>, headless, without a file watcher."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
    ]


@dataclass
class AppServer:
    """A running ``streamlit run`` process, its address, and where its output goes."""

    url: str
    process: subprocess.Popen
    log_path: Path | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    def log_tail(self, characters: int = 2000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log kept)"
        return self.log_path.read_text(errors="replace")[-characters:]

    def stop(self) -> None:
        """Terminate the server (kill it after 10 s) and close its log."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().strip() == b"ok"
    except OSError:
        return False


def start_app(
    script: str | Path = "app.py",
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    timeout_s: float = 120,
) -> AppServer:
    """Start ``script`` (relative to the repository root) and return once Streamlit says it is healthy.

    ``env`` is added to this process's environment; the output goes to the file ``log`` (else it is dropped).
    Raises :class:`AppDidNotStart` (the server stopped) when it exits or stays unhealthy for ``timeout_s``.
    """
    port = port or free_port()
    handle = open(log, "wb") if log is not None else None  # noqa: SIM115 - closed by AppServer.stop
    process = subprocess.Popen(
        command(script, port),
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=handle if handle is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    server = AppServer(f"http://127.0.0.1:{port}", process, log, handle)
    deadline = time.monotonic() + timeout_s
    while not _healthy(server.url):
        if process.poll() is not None or time.monotonic() > deadline:
            reason = (
                f"exited with code {process.returncode}"
                if process.poll() is not None
                else f"was not healthy after {timeout_s:.0f} s"
            )
            server.stop()
            raise AppDidNotStart(f"streamlit run {script} {reason}:\n{server.log_tail()}")
        time.sleep(0.3)
    return server


@contextlib.contextmanager
def running_app(script: str | Path = "app.py", **options) -> Iterator[AppServer]:
    """:func:`start_app` for the length of a ``with`` block."""
    server = start_app(script, **options)
    try:
        yield server
    finally:
        server.stop()


TEACHER_KEY = "a-long-random-teacher-key-for-this-test"  # the teacher's key of lab_server's app


def lab_server(tmp_path: Path, port: int) -> AppServer:
    """The app on ``port`` with its own lab in ``tmp_path/runs`` (which the caller makes): a test that stops it and
    starts it again on the same port reads the same lab (a restart); the teacher's key is :data:`TEACHER_KEY`. Its
    log is ``tmp_path/server-<port>.log`` (:func:`logs_on_failure`); one that does not start fails the test."""
    import pytest

    (tmp_path / "runs").mkdir(exist_ok=True)
    env = {
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(tmp_path / "runs"),
        "LLMVIZ_CACHE_DIR": str(tmp_path / "cache"),
        "LLMVIZ_SESSION_TIMEOUT": "600",
        "LLMVIZ_WATCH_BUDGET": "4",
        "LLMVIZ_TEACHER_KEY": TEACHER_KEY,
    }
    try:
        return start_app("app.py", port=port, env=env, log=tmp_path / f"server-{port}.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))


@contextlib.contextmanager
def logs_on_failure(tmp_path: Path) -> Iterator[None]:
    """A failure inside says the last lines of every :func:`lab_server` log of this test: what a failure on a loaded
    machine needs to be read."""
    try:
        yield
    except Exception as error:
        logs = "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-40:])
            for log in sorted(tmp_path.glob("server-*.log"))
        )
        raise AssertionError(f"{error}\n{logs}") from error
