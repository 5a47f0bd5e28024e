"""Robustness in the real browser (issue 19): user and model text render literally.

The upload's file name and the /home address are covered in test_browser_fixes_pages.py.
"""

import pytest

from tests.browser_support import main_area, no_error_box, open_page, wait_until_idle

pytestmark = pytest.mark.browser


def test_prompt_and_generated_text_render_literally(app_url, browser):
    """Markdown, HTML and $…$ in a prompt appear as typed in the generated text (the shipped GPT's byte-level
    BPE keeps every character)."""
    prompt = "class Foo: __dict__ **x** $y$ </span><b>z</b>"
    page = open_page(browser, f"{app_url}/sampling")
    main = main_area(page)
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
    no_error_box(page)
    page.close()
