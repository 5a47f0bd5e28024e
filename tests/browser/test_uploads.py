"""The file uploader in a real browser (issues #13 and #19): names shown literally, a binary file refused, removing
the file, the /home address; the upload kept in the student's lab (runs folder) when it is uploaded.

Every wait is on the app's state (a text, a button), never a fixed sleep: the machine may be busy."""

import hashlib

import pytest

from tests.support.browser import (
    choose,
    go,
    main_area,
    no_error_box,
    open_page,
    shot,
    sidebar,
    wait_until_idle,
)

pytestmark = pytest.mark.browser


STORY = (
    "Once upon a time a small robot learned to read. It read every book in the library, "
    "one token at a time, and it never stopped asking what came next.\n"
) * 40


def upload(page, name: str, data: bytes):
    """Send a file through the real uploader in the sidebar."""
    sidebar(page).locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": name, "mimeType": "text/plain", "buffer": data}]
    )


def test_upload_through_the_real_file_uploader(app_url, browser, timings_log):
    page = open_page(browser, f"{app_url}/home")  # the address people type: opens Home, no "Page not found"
    assert "llmviz" in page.locator("h1").first.inner_text()
    assert page.get_by_text("Page not found").count() == 0
    choose(page, "Corpus", "Your own text (upload)", where=sidebar(page))
    name = "__init__ $x$ <b>bold</b>.txt"  # shown as typed: no bold, no maths, no HTML
    upload(page, name, STORY.encode())
    using = sidebar(page).get_by_text("Using", exact=False).first
    using.wait_for()
    wait_until_idle(page)
    assert name in using.inner_text()
    assert main_area(page).get_by_text(f"The first lines of {name}", exact=False).count() == 1
    no_error_box(page)
    digest = hashlib.sha256(STORY.encode()).hexdigest()  # kept in the student's lab when uploaded, by its content
    [kept] = list((timings_log.parent / "runs" / "lab").glob(f"*/uploads/{digest}"))
    assert kept.read_bytes() == STORY.encode()
    shot(page, "upload-literal-name")
    # another tab of the same student (a new session, as after a reload): the text is offered back from the lab
    again = open_page(browser, f"{app_url}/tokens", same_student=True)
    choose(again, "Corpus", "Your own text (upload)", where=sidebar(again))
    choose(
        again, "Or a text you uploaded before", f"{name} ({len(STORY.encode()) / 1024:,.1f} KB)", where=sidebar(again)
    )
    sidebar(again).get_by_text("Using", exact=False).first.wait_for()
    assert name in sidebar(again).get_by_text("Using", exact=False).first.inner_text()
    no_error_box(again)
    shot(again, "upload-offered-back")
    again.close()
    stranger = open_page(browser, f"{app_url}/tokens")  # another student: nothing of it
    choose(stranger, "Corpus", "Your own text (upload)", where=sidebar(stranger))
    wait_until_idle(stranger)
    assert stranger.get_by_text("Or a text you uploaded before").count() == 0
    stranger.close()
    go(page, "Tokens")
    page.get_by_text(f"{name}: training on", exact=False).first.wait_for()
    no_error_box(page)
    # a binary file: a clear error in the sidebar, never a traceback
    upload(page, "noise.bin", bytes(range(256)) * 40)
    sidebar(page).get_by_test_id("stAlertContentError").first.wait_for()
    assert page.locator("[data-testid='stException']").count() == 0
    # removing the file (×) stops using it
    sidebar(page).get_by_test_id("stFileChipDeleteBtn").first.click()
    wait_until_idle(page)
    assert sidebar(page).get_by_text("Using", exact=False).count() == 0
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()
