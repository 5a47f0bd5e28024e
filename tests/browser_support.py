"""Shared by every browser test file: a streamlit server on a free 127.0.0.1 port and headless Debian chromium.

conftest.py loads this module as a plugin, so every test file can ask for the ``app_url`` and ``browser``
fixtures; import helpers such as ``wait_until_idle`` from here. Each test module gets its own server.
Mark browser test modules with ``pytestmark = pytest.mark.browser``.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "screenshots"
IN_CI = os.environ.get("CI", "").lower() == "true"

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def app_url():
    if not Path(CHROMIUM).exists() or shutil.which("streamlit") is None and not (Path(sys.prefix) / "bin" / "streamlit").exists():
        if IN_CI:
            pytest.fail("CI=true: chromium must be installed (.ci/run installs it with apt)")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    break
        except OSError:
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("streamlit did not start: " + process.stdout.read().decode()[-2000:])
    yield url
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if IN_CI:
            pytest.fail("CI=true: playwright must be installed")
        pytest.skip("playwright is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        yield browser
        browser.close()


def wait_until_idle(page, timeout_s: float = 120) -> None:
    """Wait for the app to finish its script run (no 'Running…' widget for a moment)."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_s * 1000)
    deadline = time.time() + timeout_s
    quiet_since = None
    while time.time() < deadline:
        running = page.locator("[data-testid='stStatusWidget']").count() > 0
        if running:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.time()
        elif time.time() - quiet_since > 1.5:
            return
        time.sleep(0.25)
    raise AssertionError("the page kept running")


