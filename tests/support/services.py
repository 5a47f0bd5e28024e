"""The hall's services in the tests: a test that needs PostgreSQL or Ray, and the Python driver of either (the
hall's extras, requirements-hall.txt, which ``python run.py test`` does not install), gets them from one fixture of
``tests/support/postgres.py`` or ``tests/support/ray_cluster.py``. That fixture skips the test, with the reason, when
the server or its driver is missing (fails it in CI, ``CI`` set, where both must be there), and marks it ``services``
as it is collected (``tests/support/processes.py``), so ``python -m pytest -m services`` runs again exactly the tests
that skipped for want of them (``.ci/run`` does, once the extras are installed).

A plugin (``tests/conftest.py`` loads it): a test skipped by :func:`require` that is not marked ``services`` fails
instead, naming the marker, since no run with the services would ever pick it up again."""

from __future__ import annotations

import os

import pytest


def require(missing: str | None, what: str) -> None:
    """Skip the test when ``missing`` (why ``what`` cannot be had here) is not None; in CI, fail it.

    >>> require(None, "PostgreSQL")  # all there: nothing happens
    """
    if missing is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must test on {what}: {missing}")
    skip = pytest.skip.Exception(missing)
    skip.service = what  # told apart from other skips by the plugin below
    raise skip


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if (
        report.skipped
        and call.excinfo is not None
        and getattr(call.excinfo.value, "service", None)
        and item.get_closest_marker("services") is None
    ):
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} skipped for want of a service ({call.excinfo.value.msg}) but is not marked services: "
            "ask for the service by its fixture (tests/support/postgres.py, tests/support/ray_cluster.py), which "
            "marks it, so that a run with the services (.ci/run: -m services) picks it up again"
        )
    return report
