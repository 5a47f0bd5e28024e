"""examples/classroom/Caddyfile works as docs/classroom.md says: Caddy serves Streamlit's static files itself
(compressed, cached for a year), sets the cookie that keeps a browser on one app process, and passes the page and its
websocket through to two app processes. Needs the ``caddy`` binary (skipped without it); starts two servers, so it
runs with ``-m extended``."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import streamlit

from benchmarks._protocol_client import Student
from tests.support.app_server import free_port, start_app
from tests.support.asyncio_thread import run_coroutine
from tests.support.paths import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.extended]
STATIC = Path(streamlit.__file__).parent / "static"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    if shutil.which("caddy") is None:
        pytest.skip("caddy is not installed (apt install caddy)")
    folder = tmp_path_factory.mktemp("classroom")
    env = {
        "STREAMLIT_SERVER_COOKIE_SECRET": "the same for every process",
        "LLMVIZ_RUNS_DIR": str(folder),
        "LLMVIZ_TRUSTED_PROXIES": "127.0.0.1",  # as docs/classroom.md sets it: Caddy runs on this machine
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
    }
    apps = [start_app("app.py", env=env, log=folder / f"app{n}.log") for n in range(2)]
    port = free_port()
    caddy = subprocess.Popen(
        ["caddy", "run", "--config", str(ROOT / "examples/classroom/Caddyfile"), "--adapter", "caddyfile"],
        env={
            **os.environ,
            "STREAMLIT_STATIC": str(STATIC),
            "LLMVIZ_BIND": "127.0.0.1",
            "LLMVIZ_PORT": str(port),
            "LLMVIZ_BACKENDS": " ".join(app.url.removeprefix("http://") for app in apps),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:  # Caddy is up once it answers, and a process once its health check passed
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.read().strip() == b"ok":
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline and caddy.poll() is None, "Caddy did not start"
        time.sleep(0.3)
    yield url
    caddy.terminate()
    caddy.wait(timeout=10)
    for app in apps:
        app.stop()


def test_static_files_come_from_caddy_compressed_and_cached(proxy):
    name = next(path.name for path in (STATIC / "static" / "js").glob("index.*.js"))
    request = urllib.request.Request(f"{proxy}/static/js/{name}", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.headers["Server"] == "Caddy" and "uvicorn" not in str(answer.headers)
        assert answer.headers["Content-Encoding"] == "gzip"
        assert "immutable" in answer.headers["Cache-Control"]


def test_the_page_sets_the_sticky_cookie_and_its_websocket_goes_through(proxy):
    with urllib.request.urlopen(f"{proxy}/attention", timeout=30) as answer:
        assert "llmviz_backend=" in answer.headers.get("Set-Cookie", "")

    async def visit():
        async with Student(proxy) as student:
            opened = await student.open("attention", "attention_tab=Step+by+step")  # the tab with the mask toggle
            flipped = await student.set_widget("mask", False)
            return opened, flipped

    opened, flipped = run_coroutine(visit())
    assert opened.status == "finished" and opened.errors == [] and opened.deltas > 50
    assert flipped.status == "fragment finished" and flipped.errors == []
