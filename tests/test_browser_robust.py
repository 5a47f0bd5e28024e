"""Robustness in the real browser: the /home link, literal rendering of user text, removing an upload."""

import pytest

from tests.browser_support import SHOTS, wait_until_idle

pytestmark = pytest.mark.browser


def test_home_link_opens_the_home_page(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{app_url}/home")
    wait_until_idle(page)
    page.locator("h1").first.wait_for()
    assert "llmviz" in page.locator("h1").first.inner_text()
    assert page.get_by_text("Page not found").count() == 0
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()


def test_uploaded_file_name_is_literal_and_removing_the_file_stops_using_it(app_url, browser, tmp_path):
    name = "__init__ $x$ <b>bold</b>.txt"
    path = tmp_path / "upload.txt"
    path.write_text("A small text of my own about attention and tokens.\n" * 50, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(app_url)
    wait_until_idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name="Your own text (upload)").click()
    wait_until_idle(page)
    sidebar.locator("input[type='file']").set_input_files(files=[{
        "name": name, "mimeType": "text/plain", "buffer": path.read_bytes()}])
    caption = sidebar.get_by_text("Using", exact=False)
    caption.wait_for()
    wait_until_idle(page)
    assert name in caption.inner_text()  # shown as typed: no bold, no maths, no HTML
    main = page.get_by_test_id("stMainBlockContainer")
    assert main.get_by_text(f"The first lines of {name}", exact=False).count() == 1
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "upload-literal-name.png"))
    sidebar.get_by_test_id("stFileChipDeleteBtn").first.click()
    wait_until_idle(page)
    assert sidebar.get_by_text("Using", exact=False).count() == 0
    page.close()
