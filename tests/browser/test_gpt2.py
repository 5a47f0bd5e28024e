"""GPT-2 in the real browser (issue 17): a shared link with ``?model=hub:gpt2`` opens GPT-2 in the picker, and the
pages with sections of their own draw it without an error box.

The test server's Hugging Face cache holds a tiny random GPT-2 under the id ``gpt2`` (browser_support); every page
on it is checked headless in tests/app/test_gpt2.py.
"""

import pytest

from tests.support.browser import go, no_error_box, open_page, sidebar

pytestmark = pytest.mark.browser

GPT2 = "GPT-2 small (124M), from the Hugging Face cache"


def test_a_link_opens_gpt2_on_every_page_with_sections(app_url, browser):
    page = open_page(browser, f"{app_url}/attention?model=hub:gpt2")
    no_error_box(page)
    assert GPT2 in sidebar(page).inner_text(), "the picker shows GPT-2"
    for title in ("Inside the model", "Sampling", "Embeddings"):
        go(page, title)
        no_error_box(page)
        assert GPT2 in sidebar(page).inner_text(), f"GPT-2 stays picked on {title}"
    page.close()
