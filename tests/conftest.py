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

pytest_plugins = ["tests.browser_support"]  # app_url and browser fixtures (one server and browser per test process)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Downloads in tests never touch the user's real cache."""
    monkeypatch.setenv("LLMVIZ_CACHE_DIR", str(tmp_path_factory.mktemp("llmviz-cache")))


@pytest.fixture(autouse=True)
def _no_runs_left_behind():
    """AppTest gives every app run the same session id: end its training runs after each test, so no test
    sees another test's runs (the browser's sessions are real and separate)."""
    yield
    jobs = sys.modules.get("llmviz.jobs")
    if jobs is not None and jobs._default is not None:
        jobs._default.end_session("test session id")
