"""Real-browser smoke test: streamlit run app.py, every page in headless Debian chromium."""

import re

import pytest

import ui
from tests.browser_support import SHOTS, wait_until_idle

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
    note = page.get_by_text("stopped at step", exact=False).first  # the job reports it: no fixed wait
    note.wait_for(timeout=60_000)
    assert "of 2000" in note.inner_text()
    assert page.locator("[data-testid='stException']").count() == 0
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "training-stopped.png"))
    page.close()
