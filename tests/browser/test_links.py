"""A long typed or pasted text never makes the address too long to open: the link carries its first characters,
the page says so, and the copied link (a reload, or another browser) opens with HTTP 200."""

import urllib.parse
import urllib.request

import pytest

from tests.support.browser import eventually, no_error_box, open_page, wait_until_idle
from ui import share

pytestmark = pytest.mark.browser

# ~60,000 characters, ~110 KB in an address: past what the server accepts in a request line (the old code wrote it
# all into the address; a 1 MB paste made a 1,000,040-character one)
LONG = "Zwölf Boxkämpfer jagen Viktor 👩‍💻 quer über den großen Sylter Deich. " * 850


def _carried(href: str, name: str) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(href).query).get(name, [""])[-1]


def _opens(href: str) -> int:
    with urllib.request.urlopen(href, timeout=60) as response:  # the server refused the old 1 MB addresses (400)
        return response.status


@pytest.mark.extended  # ~3 minutes of chromium on 2 cores; the capping itself is tested in tests/app/test_links.py
def test_a_pasted_megabyte_leaves_a_link_that_opens(browser, app_url):
    page = open_page(browser, f"{app_url}/sampling")
    area = page.get_by_label("Prompt", exact=True)
    area.fill(LONG)
    area.press("Enter")
    caption = eventually(
        lambda: page.get_by_text("The link to this view carries the first").count(), what="the caption about the link"
    )
    assert caption
    wait_until_idle(page)
    href = eventually(
        lambda: (lambda h: h if _carried(h, "prompt") == share.link_text(LONG) else None)(
            page.evaluate("location.href")
        ),
        what="the address carrying the start of the prompt",
    )
    assert len(href) < 20_000 and "👩\u200d💻" in _carried(href, "prompt")
    assert _opens(href) == 200
    other = open_page(browser, href)  # the copied link in a fresh browser session
    eventually(
        lambda: other.get_by_label("Prompt", exact=True).input_value() == share.link_text(LONG),
        what="the prompt from the copied link",
    )
    no_error_box(other)
    other.close()

    # a text box inside a section (a fragment rerun, not a whole-page run) is capped too
    page.goto(f"{app_url}/attention")
    wait_until_idle(page)
    box = page.get_by_label("Sentence", exact=True)
    box.fill("The cat sat. " * 400)
    box.press("Enter")
    eventually(
        lambda: (
            len(_carried(page.evaluate("location.href"), "sentence")) == len(share.link_text("The cat sat. " * 400))
        ),
        what="the sentence capped in the address",
    )
    assert page.get_by_text("The link to this view carries the first").count()
    no_error_box(page)
    page.close()
