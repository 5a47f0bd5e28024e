"""The fast lane holds no test that starts a process: a pytest plugin (loaded by ``tests/conftest.py``) that
watches every test of ``tests/unit/`` for a process it starts (``subprocess``, ``multiprocessing``: worker
processes, a second server, ``initdb`` and ``pg_ctl``, the ``python -m llmviz`` command line) and fails the test,
naming the marker it lacks, when it is in the fast lane (``-m unit``). Such a test is marked ``processes``
(``@pytest.mark.processes``, or ``pytestmark`` for a module), which keeps it out of the lane and in the default
run. A test on the real PostgreSQL (``database_url``'s ``postgresql`` case, ``postgres_url``, ``postgres_server``,
``own_postgres``) or Ray (``ray_address``, ``ray_server``, ``backend``'s ``ray`` case) is marked so by the fixture
itself, and ``services`` too (tests/support/services.py: the tests CI runs again once the hall's extras are in)."""

from __future__ import annotations

import multiprocessing.process
import subprocess

import pytest

_started: list[str] = []
_FIRST = pytest.StashKey[int]()


def _watch(function, what):
    def watched(self, *args, **kwargs):
        _started.append(what(self, args))
        return function(self, *args, **kwargs)

    return watched


def _command(popen, args) -> str:
    command = args[0] if args else "?"
    return " ".join(map(str, command))[:80] if isinstance(command, (list, tuple)) else str(command)[:80]


subprocess.Popen._execute_child = _watch(subprocess.Popen._execute_child, _command)  # type: ignore[attr-defined]
multiprocessing.process.BaseProcess.start = _watch(
    multiprocessing.process.BaseProcess.start, lambda process, _: f"multiprocessing {process.name}"
)

#: fixtures that give the test PostgreSQL or Ray (or what starts them): a test using one, directly or through another
#: fixture, is marked ``processes`` and ``services`` at collection
SERVICE_FIXTURES = {"postgres_url", "postgres_server", "own_postgres", "ray_address", "ray_server"}


def mark_service_tests(item) -> None:
    """Mark ``processes`` and ``services`` a test whose fixtures start a server of the hall's (``tests/conftest.py``
    calls it as tests are collected, before it deals out the fast lane)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if (
        SERVICE_FIXTURES & set(item.fixturenames)
        or params.get("database_url") == "postgresql"
        or params.get("backend") == "ray"
    ):
        item.add_marker(pytest.mark.processes)
        item.add_marker(pytest.mark.services)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item.stash[_FIRST] = len(_started)  # from the test's fixtures on
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    started = _started[item.stash.get(_FIRST, len(_started)) :]
    if started and item.get_closest_marker("unit") is not None:
        raise AssertionError(
            f"{item.nodeid} starts processes ({'; '.join(started[:3])}) but is in the fast lane: mark it "
            "@pytest.mark.processes (tests/support/processes.py)"
        )
    return result
