"""``python run.py app`` says the app is ready only once its first page has run (issue 71 §2): the first visitor
found the server answering while torch, Plotly and the shipped GPT were still loading and waited 19 s for Home. The
warm-up (Streamlit's script health check: a whole run of Home in a session of no browser) now ends before the line
"the app is at …" is printed, and Streamlit's own "You can now view …" line, which came first, is not printed. The
order is what is tested (the server's timing log against the ready line), not a time."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.app_server import free_port
from tests.support.run_py_app import ready_app

pytestmark = [pytest.mark.slow, pytest.mark.processes]  # an app server


def test_the_ready_line_comes_after_the_first_page_has_run(tmp_path):
    timings = tmp_path / "timings.jsonl"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(tmp_path / "runs"),
        "LLMVIZ_CACHE_DIR": str(tmp_path / "cache"),
        "LLMVIZ_TIMINGS": str(timings),
    }
    with ready_app(free_port(), env) as seen:
        # at that moment Home's first run has ended: its line is in the server's timing log
        pages = [json.loads(entry)["section"] for entry in timings.read_text().splitlines()] if timings.exists() else []
        assert "page:start" in pages, (pages, "".join(seen))
        assert not any("You can now view" in earlier for earlier in seen), "".join(seen)  # no ready line before ours
        assert any("starting the app" in earlier for earlier in seen), "".join(seen)
