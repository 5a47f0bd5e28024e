"""A real local Ray head for the tests of the Ray backend (:mod:`llmviz.jobs.ray_executor`), one per test session.

- ``LLMVIZ_TEST_RAY_ADDRESS`` set (``.ci/run`` starts a head and sets it): the tests use that head.
- else, where ``ray`` is installed: the session starts ``ray start --head --block`` in a temporary folder (no
  dashboard, a small object store, 2 CPUs, the repository on the workers' ``PYTHONPATH``) and ends it, by its process
  group, when the session ends.
- else (Ray's package or its ``ray`` command not installed: one of the hall's extras, requirements-hall.txt): every
  test that asks for Ray is skipped, with the reason (:func:`ray_missing`), except in CI (``CI`` set), where it must
  run. The fixtures mark their tests ``services`` (tests/support/services.py): CI runs them again with the extras.

Fixtures: ``ray_address`` (the head's ``host:port``), ``ray_server`` (the ``ray`` command, Ray importable: for a
test that starts a head of its own) and ``backend`` (a ``JobManager``'s keyword arguments, once for local worker
processes and once for Ray: ``JobManager(max_running=1, **backend)``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.services import require

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ray_command() -> str | None:
    """The ``ray`` command beside this Python (a virtual environment's), else on ``PATH``, else None."""
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else shutil.which("ray")


def head_command(port: int, temp_dir: str, cpus: int = 2) -> list[str]:
    """``ray start`` for a small head on loopback that stays in the foreground (its process group is the cluster)."""
    return [
        ray_command() or "ray",
        "start",
        "--head",
        "--block",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
        "--object-store-memory=200000000",
        f"--num-cpus={cpus}",
        "--num-gpus=0",
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]


def head_answers(address: str, timeout: float = 120.0, process: subprocess.Popen | None = None) -> None:
    """Wait until the head's GCS port accepts connections (fail if ``process``, the head, exits first)."""
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"ray start exited with code {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the Ray head at {address} did not answer within {timeout:g} s")


@contextlib.contextmanager
def local_head(cpus: int = 2) -> Iterator[str]:
    """A Ray head of this machine for as long as the context lasts; its address."""
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    process = subprocess.Popen(
        head_command(port, temp_dir, cpus),
        env=env,
        start_new_session=True,  # its own process group: ended as one below, never by name
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(temp_dir, "ray-start.log"), "w"),  # noqa: SIM115 - closed with the process
    )
    address = f"127.0.0.1:{port}"
    try:
        head_answers(address, process=process)
        yield address
    finally:
        stop_group(process)
        shutil.rmtree(temp_dir, ignore_errors=True)


def stop_group(process: subprocess.Popen) -> None:
    """End ``process`` and everything in its process group (SIGTERM, then SIGKILL after 10 s)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def ray_installed() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def ray_missing(command: bool = True) -> str | None:
    """Why the tests cannot have Ray here (its package, then, with ``command``, its ``ray`` command), or None.

    >>> ray_missing() in (None, "Ray is not installed (pip install -r requirements-hall.txt)",
    ...                   "Ray's ray command is not installed (pip install -r requirements-hall.txt)")
    True
    """
    if not ray_installed():
        return "Ray is not installed (pip install -r requirements-hall.txt)"
    if command and ray_command() is None:
        return "Ray's ray command is not installed (pip install -r requirements-hall.txt)"
    return None


@pytest.fixture(scope="session")
def ray_server() -> str:
    """The ``ray`` command, Ray importable here; the test skipped with the reason if not."""
    require(ray_missing(), "Ray")
    return ray_command()


@pytest.fixture(scope="session")
def ray_address(request) -> Iterator[str]:
    """The address of a real Ray head for this test session (see the module's docstring)."""
    given = os.environ.get("LLMVIZ_TEST_RAY_ADDRESS")
    if given:
        require(ray_missing(command=False), "Ray")
        head_answers(given, timeout=30)
        yield given
        disconnect()
        return
    request.getfixturevalue("ray_server")
    with local_head() as address:
        yield address
        disconnect()


def disconnect() -> None:
    """This test process leaves the cluster (before its head is ended)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture(params=["process", pytest.param("ray", marks=pytest.mark.slow)])  # Ray: out of the fast lane
def backend(request) -> dict:
    """A ``JobManager``'s worker arguments: local worker processes, then the Ray backend on ``ray_address``."""
    if request.param == "ray":
        return {"workers": "ray", "ray_address": request.getfixturevalue("ray_address")}
    return {"workers": "process"}
