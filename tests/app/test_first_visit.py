"""``python run.py app`` says the app is ready only once its first page has run (issue 71 §2): the first visitor
found the server answering while torch, Plotly and the shipped GPT were still loading and waited 19 s for Home. The
warm-up (Streamlit's script health check: a whole run of Home in a session of no browser) now ends before the line
"the app is at …" is printed, and Streamlit's own "You can now view …" line, which came first, is not printed. The
order is what is tested (the server's timing log against the ready line), not a time."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest

from tests.support.app_server import free_port
from tests.support.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.processes]  # an app server


def _lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def test_the_ready_line_comes_after_the_first_page_has_run(tmp_path):
    timings = tmp_path / "timings.jsonl"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(tmp_path / "runs"),
        "LLMVIZ_CACHE_DIR": str(tmp_path / "cache"),
        "LLMVIZ_TIMINGS": str(timings),
    }
    port = free_port()
    command = [sys.executable, "run.py", "app", "--server.address", "127.0.0.1", "--server.port", str(port)]
    server = subprocess.Popen(
        [*command, "--server.headless", "true"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    said: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(server.stdout, said), daemon=True).start()
    seen = []
    try:
        while (line := said.get(timeout=300)) is not None and "the app is at" not in line:
            seen.append(line)
        assert line is not None, "".join(seen)
        # at that moment Home's first run has ended: its line is in the server's timing log
        pages = [json.loads(entry)["section"] for entry in timings.read_text().splitlines()] if timings.exists() else []
        assert "page:start" in pages, (pages, "".join(seen))
        assert not any("You can now view" in earlier for earlier in seen), "".join(seen)  # no ready line before ours
        assert any("starting the app" in earlier for earlier in seen), "".join(seen)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
