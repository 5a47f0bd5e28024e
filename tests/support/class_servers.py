"""App processes for the tests that speak Streamlit's protocol across processes
(``tests/app/test_class_live_processes.py``, ``tests/app/test_lab_processes.py``): a server on a test's own lab with
a teacher key, and a wait that reruns a tab's page, as its live section's timer would, until a state is reached
(never a time)."""

from __future__ import annotations

import time

import pytest

from tests.support.app_server import AppDidNotStart, AppServer, start_app


def class_server(folder, name: str, key: str, **extra: str) -> AppServer:
    """``streamlit run app.py`` on ``folder/runs`` with the teacher key ``key`` (and ``extra`` environment); its log
    is ``folder/server-<name>.log``. One that does not start fails the test."""
    env = {
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
        "LLMVIZ_SESSION_TIMEOUT": "600",
        "LLMVIZ_TEACHER_KEY": key,
        **extra,
    }
    try:
        return start_app("app.py", env=env, log=folder / f"server-{name}.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))


async def until(tab, found, what: str, timeout: float = 180.0):
    """Rerun ``tab``'s page (a ``benchmarks._class_client.ClassTab``) until ``found()`` is true; its value."""
    deadline = time.monotonic() + timeout
    while not (value := found()):
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout:.0f} s; the page drew: {tab.texts[-12:]} {tab.toasts}")
        tab.forget()
        await tab.rerun()
    return value
