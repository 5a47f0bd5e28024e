import itertools
import os
import sys
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# pytest-xdist runs a test process per core, beside streamlit servers and chromium: one torch thread per
# process (and per subprocess it starts) keeps them from fighting over the cores
os.environ.setdefault("OMP_NUM_THREADS", "1")
# AppTest sessions have no Streamlit runtime to say they are alive: only page runs send heartbeats, so a test that
# waits a long time for its jobs (a race on a busy machine) must not see its session reaped after the default 30 s.
# (The browser tests' servers set their own, short, timeout.)
os.environ.setdefault("LLMVIZ_SESSION_TIMEOUT", "600")


def _scan_installed_components_once() -> None:
    """Every AppTest run asks Streamlit to look for custom components in every installed package's metadata
    (~0.35 s with the test dependencies installed; more than the page's own run). The packages do not change
    while the tests run: look once per test process. llmviz uses no custom component, so the answer is the
    same list every time."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=1)(
        manifest_scanner.scan_component_manifests
    )


_scan_installed_components_once()

pytest_plugins = ["tests.browser_support"]  # app_url and browser fixtures (one server and browser per test process)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Downloads in tests never touch the user's real cache."""
    monkeypatch.setenv("LLMVIZ_CACHE_DIR", str(tmp_path_factory.mktemp("llmviz-cache")))


_THIS_MACHINE = {"localhost", "127.0.0.1", "::1", "0.0.0.0", ""}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Tests never reach the network: looking up any host but this machine fails as if offline, and fails the
    test (the code under test may well handle "offline" quietly, which would hide the attempt)."""
    import socket

    attempts = []
    real_getaddrinfo = socket.getaddrinfo

    def this_machine_only(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and name not in _THIS_MACHINE:
            attempts.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"tests never reach the network (looked up {name})")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", this_machine_only)
    yield
    assert not attempts, f"this test tried to reach the network: {attempts}"


@pytest.fixture(autouse=True)
def _no_runs_left_behind():
    """AppTest gives every app run the same session id: end its training runs after each test, so no test
    sees another test's runs (the browser's sessions are real and separate)."""
    yield
    jobs = sys.modules.get("llmviz.jobs.manager")
    if jobs is not None and jobs._default is not None:
        jobs._default.end_session("test session id")


# The browser tests, longest first (measured with --durations on a 2-core machine); modules not named here follow.
BROWSER_LONGEST_FIRST = (
    "test_browser_lab",
    "test_browser_fixes_pages",
    "test_browser_pages",
    "test_browser_gpt2",
    "test_browser_inside",
    "test_browser_classroom",
)


def _browser_rank(item) -> int:
    module = item.module.__name__.rsplit(".", 1)[-1]
    return BROWSER_LONGEST_FIRST.index(module) if module in BROWSER_LONGEST_FIRST else len(BROWSER_LONGEST_FIRST)


def worksteal_slices(count: int, workers: int) -> list[int]:
    """How many tests pytest-xdist's ``worksteal`` scheduler first sends each worker: contiguous slices of the
    collection, ``pending // workers_left`` each.

    >>> worksteal_slices(783, 2)
    [391, 392]
    >>> worksteal_slices(10, 3)
    [3, 3, 4]
    """
    sizes, left = [], count
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    return sizes


def pytest_collection_modifyitems(config, items):
    """Share the browser tests out among the test processes.

    ``--dist worksteal`` gives each worker a contiguous slice of the collection, and all browser tests sit next to
    each other (tests/test_browser_*.py), so one worker got all of them and ran them back to back (~4 minutes) while
    the other ran out of work. Instead every slice starts with its share of the browser tests, dealt round-robin
    longest first; the rest keep their order (so module-scoped fixtures are still built once), and stealing evens
    out the end. Workers only read the order, so every worker must compute the same one: it depends on the
    collection and the worker count alone."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    browser = sorted((item for item in items if item.get_closest_marker("browser")), key=_browser_rank)
    if workers < 2 or not browser:
        return
    chosen = set(map(id, browser))
    rest = iter([item for item in items if id(item) not in chosen])
    ordered = []
    for worker, size in enumerate(worksteal_slices(len(items), workers)):
        share = browser[worker::workers]
        ordered += share + list(itertools.islice(rest, max(0, size - len(share))))  # rest may run out first
    ordered += list(rest)
    assert len(ordered) == len(items)
    items[:] = ordered


@pytest.fixture
def fresh_session_jobs():
    """AppTest gives every test the same session id: forget the jobs earlier tests left behind, and this test's."""
    from llmviz.jobs.manager import default_manager

    for owner in list(default_manager()._sessions):
        default_manager().end_session(owner)
    yield
    for owner in list(default_manager()._sessions):
        default_manager().end_session(owner)
