"""What a student's task made is kept (issue 56), in real chromium against this test's own server: a BPE tokenizer
trained on the Tokens page is back after a reload and after the server is stopped and started again (the same
merges: the replay's last merge, its ids and its count, read off the page before and after), listed among the Training
page's kept runs (Delete's choice); another student's Tokens page has none."""

from __future__ import annotations

import re
import urllib.parse

import pytest

from tests.support.app_server import free_port, lab_server, logs_on_failure
from tests.support.browser import main_area, no_error_box, open_page, shot, wait_until_idle

pytestmark = pytest.mark.browser

TOKENS = "tokens?" + urllib.parse.urlencode({"tokens_tab": "Train your own BPE", "vocab": 260})
LAST_MERGE = re.compile(r"^Merge 3: .* \(id 258, seen [\d,]+ times in the training text\)")


def merge_caption(page) -> str:
    """The replay's caption of the last merge (its pair, its new id, its count in the training text)."""
    caption = main_area(page).get_by_text(LAST_MERGE).first
    caption.wait_for(timeout=120_000)
    return caption.inner_text().split(" Your text is now")[0]


def test_a_trained_bpe_survives_a_reload_and_a_restart(browser, tmp_path):
    with logs_on_failure(tmp_path):
        the_story(browser, tmp_path, free_port())


def the_story(browser, tmp_path, port: int):
    server = lab_server(tmp_path, port)
    try:
        page = open_page(browser, f"{server.url}/{TOKENS}")
        main = main_area(page)
        main.get_by_role("button", name="Train BPE").click()
        main.get_by_text("Learned 3 merges: a vocabulary of 260.").first.wait_for(timeout=120_000)
        wait_until_idle(page)
        trained = merge_caption(page)

        page.reload()  # F5: a new session of the same student holds no BPE; the lab gives it back
        wait_until_idle(page)
        assert merge_caption(page) == trained
        assert main.get_by_text("Your BPE: 3 merges learned from", exact=False).count() == 1
        no_error_box(page)

        server.stop()  # the server stops and starts again on the same runs folder
        server = lab_server(tmp_path, port)
        page.goto(f"{server.url}/{TOKENS}")
        wait_until_idle(page)
        assert merge_caption(page) == trained
        shot(page, "kept-bpe-after-restart")
        no_error_box(page)

        page.goto(f"{server.url}/training")  # listed among her kept runs: Delete and the quota cover it
        wait_until_idle(page)
        main.get_by_text("what your tasks made", exact=False).first.scroll_into_view_if_needed()
        main.get_by_role("combobox", name="A kept run").click()  # the run Delete acts on (the table is a canvas)
        options = [option.inner_text() for option in page.get_by_role("option").all()]
        page.keyboard.press("Escape")
        assert [o for o in options if o.startswith("BPE tokenizer · 260 tokens · Python reference manual")], options
        shot(page, "kept-bpe-in-kept-runs")
        no_error_box(page)

        stranger = open_page(browser, f"{server.url}/{TOKENS}")  # another browser: another student
        shot(stranger, "kept-bpe-stranger")
        assert main_area(stranger).get_by_text("Your BPE:", exact=False).count() == 0
        assert main_area(stranger).get_by_role("button", name="Train BPE").count() == 1
        no_error_box(stranger)
    finally:
        server.stop()
