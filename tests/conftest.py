import os
import sys
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.jobs import end_every_session  # noqa: E402 - after the path is set
from tests.support.ordering import deal_browser_tests  # noqa: E402

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
    while the tests run: look once per test process. llmviz's one custom component (the flow, ui/panels/flow.py) is
    registered inline, not by a package manifest, so the answer is the same list every time."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=1)(
        manifest_scanner.scan_component_manifests
    )


_scan_installed_components_once()

# app_url and browser fixtures (one server and browser per test process); database_url and postgres_url (a real
# PostgreSQL); ray_address and backend (a real Ray head); services (a test skipped for want of one is marked so)
pytest_plugins = [
    "tests.support.services",
    "tests.support.browser",
    "tests.support.postgres",
    "tests.support.ray_cluster",
    "tests.support.processes",
    "tests.support.disks",
]


@pytest.fixture(autouse=True, scope="session")
def _lab_in_a_temporary_folder(tmp_path_factory):
    """The app's lab (llmviz.lab: kept runs, their registry) lives in a temporary folder, never in the clone's runs/."""
    import llmviz.lab.service

    if llmviz.lab.service._default is None:
        llmviz.lab.service._default = llmviz.lab.service.Lab.at(tmp_path_factory.mktemp("lab"))
    yield


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
    """End every training run a test's app runs started, after the test, so no test sees another test's runs
    (AppTest's runs all belong to one browser identity of the process's job manager; the browser's sessions are
    real and separate). It ended nothing while it named a fixed session id that owners no longer were."""
    yield
    end_every_session()


UNIT = ROOT / "tests" / "unit"


def pytest_itemcollected(item):
    """Everything under tests/unit/ is marked ``unit``, except what is marked ``slow`` or ``processes``
    (tests/support/processes.py): ``python -m pytest -m unit`` is the fast lane (the library's tests; no Streamlit,
    no browser, no process started). A browser test is marked ``ci`` (CI's lane, after README's suite) unless its
    module says ``IN_THE_SUITE = True`` (tests/browser/test_pages.py: every page opened once in chromium) or the test
    is marked ``suite`` (the flow's hover, open and Play: the Model page's key picture as a student uses it)."""
    from tests.support.processes import mark_service_tests  # a plugin (pytest_plugins): loaded by now

    mark_service_tests(item)
    in_the_suite = getattr(getattr(item, "module", None), "IN_THE_SUITE", False) or item.get_closest_marker("suite")
    if item.get_closest_marker("browser") and not item.get_closest_marker("extended") and not in_the_suite:
        item.add_marker(pytest.mark.ci)  # chromium beyond each page's first look: CI's lane (docs/testing.md)
    if (
        item.path.is_relative_to(UNIT)
        and not item.get_closest_marker("slow")
        and not item.get_closest_marker("processes")
    ):
        item.add_marker(pytest.mark.unit)


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected: the slices are those of the tests that run
def pytest_collection_modifyitems(config, items):
    """Every worker's first slice starts with its share of the browser tests, longest first
    (:func:`tests.support.ordering.deal_browser_tests`)."""
    deal_browser_tests(items, getattr(config, "workerinput", {}).get("workercount", 1))


@pytest.fixture
def fresh_session_jobs():
    """AppTest gives every test the same session id: forget the jobs earlier tests left behind, and this test's."""
    from llmviz.jobs.default import default_manager

    default_manager()
    end_every_session()
    yield
    end_every_session()
