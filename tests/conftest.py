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
