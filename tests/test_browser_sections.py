"""Sections are st.fragments (issue 12): a widget change reruns only its own section, in real chromium.

The test server logs every whole script run (``page:<name>``) and every section run (``LLMVIZ_TIMINGS``, see
browser_support): a widget change must add lines of its own section only, and no whole-page run. Every wait is on
the app's state (the log, a text), never a sleep.
"""

import re
import time

import pytest

from tests.browser_support import go, main_area, no_error_box, open_page, script_runs, slider, wait_until_idle

pytestmark = pytest.mark.browser


def change(page, log, do) -> list[dict]:
    """Do one widget change; return the log lines of the script/section runs it caused (every step before it
    ended with the page idle: open_page, go, and this function itself)."""
    before = len(script_runs(log))
    do()
    deadline = time.time() + 120
    while len(script_runs(log)) == before:
        assert time.time() < deadline, "the widget change ran nothing"
        page.wait_for_timeout(50)  # polling the log file, not waiting for a fixed time
    wait_until_idle(page)
    return script_runs(log)[before:]


def press(page, locator, key: str = "ArrowRight"):
    def do():
        locator.focus()
        page.keyboard.press(key)
    return do


def assert_only(lines: list[dict], section: str):
    names = {line["section"] for line in lines}
    assert names == {section}, f"expected only {section} to rerun, got {names}"
    assert all(line["rerun"] for line in lines)


def test_widgets_rerun_only_their_section(app_url, browser, timings_log):
    page = open_page(browser, f"{app_url}/attention")
    main = main_area(page)
    assert_only(change(page, timings_log, lambda: main.get_by_text("Causal mask", exact=True).click()), "attention.toy")
    assert_only(change(page, timings_log, press(page, slider(page, "Layer", 0))), "attention.head")
    sentence = main.get_by_label("Sentence", exact=True)
    lines = change(page, timings_log, lambda: (sentence.fill("The cat sat on the mat"), sentence.press("Enter")))
    assert "attention.sentence" in {line["section"] for line in lines}
    assert not any(line["section"].startswith("page:") for line in lines), "a new sentence reruns its sections only"
    main.get_by_text("layer 0, head 0").first.wait_for()
    no_error_box(page)

    go(page, "Tokens")
    assert_only(change(page, timings_log, press(page, slider(page, "Context size"))), "tokens.pairs")
    no_error_box(page)

    go(page, "Embeddings")
    assert_only(change(page, timings_log, lambda: main.get_by_text("3D PCA", exact=True).click()),
                "embeddings.projection")
    assert_only(change(page, timings_log, press(page, slider(page, "Positions"))), "embeddings.sinusoidal")
    no_error_box(page)

    go(page, "Sampling")
    take = main.get_by_role("button", name=re.compile("^Take the sampled token"))
    assert_only(change(page, timings_log, lambda: take.click()), "sampling.step_mode")
    assert main.get_by_role("button", name="Undo").is_enabled()
    no_error_box(page)
    page.close()
