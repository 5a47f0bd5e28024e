"""Inside the model in headless chromium: its st.fragment sections, the links to Attention, the induction run."""

import re

import pytest

from tests.browser_support import wait_until_idle

pytestmark = pytest.mark.browser


def errors(page) -> int:
    return page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count()


def test_inside_sections_in_chromium(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{app_url}/inside")
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    main.get_by_text("Highest:").first.wait_for(timeout=120_000)
    assert errors(page) == 0
    # the detector radio reruns its fragment: the explanation and the ranking follow the new detector
    main.get_by_text("previous token", exact=True).first.click()
    main.get_by_text("attention from each token to the token just before it").wait_for(timeout=60_000)
    # every top head links to its pattern on the Attention page (layer/head in the URL)
    link = main.locator("a[href*='attention?']").first
    assert re.search(r"layer=\d+.*head=\d+|head=\d+.*layer=\d+", link.get_attribute("href"))
    # the per-token loss follows new text (its own fragment)
    box = main.get_by_label("Any text")
    box.fill("def f(x):\n    return x + 1")
    box.press("Control+Enter")
    wait_until_idle(page)
    assert main.locator(".tok").count() >= 5
    assert errors(page) == 0
    page.close()


def test_induction_run_starts_shows_in_the_picker_and_stops(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{app_url}/inside")
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    start = main.get_by_role("button", name=re.compile("^Train it"))
    start.wait_for(timeout=180_000)
    start.click()
    main.get_by_text("strongest induction head").first.wait_for(timeout=120_000)  # chart from the step-0 snapshot
    page.get_by_test_id("stSidebar").get_by_text(re.compile("Induction heads")).first.wait_for(timeout=60_000)
    main.get_by_role("button", name="Stop", exact=True).click()
    main.get_by_role("button", name="Train it again").wait_for(timeout=120_000)
    assert errors(page) == 0
    page.close()
