"""Robustness in the real browser: the /home link, literal rendering of user text, removing an upload."""

import pytest

from tests.browser_support import SHOTS, wait_until_idle

pytestmark = pytest.mark.browser


def test_home_link_opens_the_home_page(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(120_000)
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
    page.set_default_timeout(120_000)
    page.goto(app_url)
    wait_until_idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").filter(has_text="Corpus").first.click()
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


def test_prompt_and_generated_text_render_literally(app_url, browser):
    """Markdown, HTML and $…$ in a prompt appear as typed in the generated text (the shipped GPT's byte-level
    BPE keeps every character)."""
    prompt = "class Foo: __dict__ **x** $y$ </span><b>z</b>"
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.set_default_timeout(120_000)  # a loaded 2-core machine can take a while to draw the page
    page.goto(f"{app_url}/sampling")
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    box = main.get_by_label("Prompt", exact=True).and_(main.get_by_test_id("stTextInputField"))
    box.fill(prompt)
    box.press("Enter")
    wait_until_idle(page)
    main.get_by_role("button", name="Generate", exact=True).click()
    wait_until_idle(page)
    shown = main.get_by_text(prompt, exact=False)
    shown.first.wait_for()
    assert main.locator("b", has_text="z").count() == 0  # no HTML was interpreted
    assert main.locator(".katex").count() == 0 or "y" not in main.locator(".katex").all_inner_texts()
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()
