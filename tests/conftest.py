import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest_plugins = ["tests.browser_support"]  # app_url and browser fixtures for every browser test file


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Downloads in tests never touch the user's real cache."""
    monkeypatch.setenv("LLMVIZ_CACHE_DIR", str(tmp_path_factory.mktemp("llmviz-cache")))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, keep each browser test module on one worker, so its streamlit server starts once."""
    for item in items:
        if item.get_closest_marker("browser") is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
