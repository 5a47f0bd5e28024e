"""Inside the model's Features tab in headless chromium: it opens on a picture (the shipped autoencoder's features by
frequency, the picked feature's corpus contexts coloured by activation) inside the first screen, at 1400×1000 and
in presenter mode at 1280×720."""

import re

import pytest

from tests.support.browser import main_area, no_error_box, open_page, shot, wait_until_idle

pytestmark = pytest.mark.browser


def first_screen_top(page, selector: str) -> float:
    """The top of the first element matching ``selector`` in the page's coordinates (the window's top is 0)."""
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not drawn"
    return box["y"]


def test_the_features_tab_opens_on_the_feature_browser_in_the_first_screen(app_url, browser):
    page = open_page(browser, f"{app_url}/inside?look=Features", viewport=(1400, 1000))
    main = main_area(page)
    main.get_by_text(re.compile(r"Feature \d+ fires on")).first.wait_for()
    wait_until_idle(page)
    no_error_box(page)
    for selector in ("[data-testid='stDataFrame']", "span.tok"):  # the table and the coloured contexts
        assert first_screen_top(page, selector) < 1000 - 40, selector
    assert main.locator("span.tok[title^='activation']").count() >= 10
    shot(page, "inside-features")  # docs/screenshots/inside-features.png is this picture
    page.close()

    page = open_page(browser, f"{app_url}/inside?look=Features&present=1", viewport=(1280, 720))
    page.locator("#llmviz-present-bar").wait_for()
    slide = page.evaluate(
        """() => { const P = window.__llmvizPresent;
          for (let i = 0; i < P.count(); i++) { P.goto(i);
            const h = [...document.querySelectorAll('[data-testid="stMainBlockContainer"] h2')]
              .find((e) => e.getBoundingClientRect().height > 0 && e.innerText.includes('Features'));
            if (h) return i; }
          return -1; }"""
    )
    assert slide >= 0, "no slide of presenter mode shows the Features heading"
    wait_until_idle(page)
    page.get_by_text(re.compile(r"Feature \d+ fires on")).first.wait_for()
    no_error_box(page)
    assert first_screen_top(page, "span.tok") < 720 * 1.5  # the slide's picture: within a screen and a half
    shot(page, "inside-features-presenter")
    page.close()
