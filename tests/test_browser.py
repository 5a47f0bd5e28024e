"""Real-browser smoke test: streamlit run app.py, every page in headless Debian chromium."""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import ui

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


STAGES = [stage for stage in ui.PIPELINE if stage.exists]


@pytest.mark.parametrize("stage", STAGES, ids=[s.key for s in STAGES])
def test_page_in_chromium(app_url, browser, stage):
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    path = "home" if stage.key == "text" else stage.key
    page.goto(f"{app_url}/{path}")
    wait_until_idle(page)
    title = page.locator("h1").first
    title.wait_for(state="visible", timeout=60_000)
    assert title.inner_text().strip()
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{stage.key}.png"), full_page=True)
    page.close()


def test_training_stop_button_in_chromium(app_url, browser):
    """Press Train, then Stop: the run ends early and what it learned stays on the page."""
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(f"{app_url}/training")
    wait_until_idle(page)
    steps = page.get_by_role("slider").nth(4)  # Steps: push it to the maximum (2000)
    steps.focus()
    page.keyboard.press("End")
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    main.get_by_role("button", name="Train", exact=True).click()
    stop = main.get_by_role("button", name="Stop", exact=True)
    stop.wait_for(timeout=60_000)
    main.get_by_text(re.compile(r"step \d+/2000")).first.wait_for(timeout=120_000)  # training has started
    stop.click()
    wait_until_idle(page)
    note = page.get_by_text("stopped at step", exact=False)
    note.wait_for(timeout=60_000)
    assert "of 2000" in note.inner_text()
    assert page.locator("[data-testid='stException']").count() == 0
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "training-stopped.png"))
    page.close()
