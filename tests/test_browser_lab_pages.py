"""Sections are st.fragments (issue 12): a widget change reruns only its own section, in real chromium.

The server of this module runs with ``LLMVIZ_TIMINGS`` set, so app.py logs every whole script run
(``page:<name>``) and ``ui.sections`` every section run: a widget change must add lines of its own
section only, and no whole-page run. Every wait is on the app's state (the log, a text), never a sleep.
"""

import json
import os
import re
import tempfile
import time
from pathlib import Path

import pytest

from tests.browser_support import wait_until_idle

pytestmark = pytest.mark.browser
SHOT_DIR = Path(os.environ.get("LLMVIZ_SHOTS", "/work/shots/lab-pages"))
LOG = Path(tempfile.mkdtemp(prefix="llmviz-lab-pages-")) / "timings.jsonl"


@pytest.fixture(scope="module", autouse=True)
def timings_log():
    """This module's server logs its script runs and section runs (before app_url starts it)."""
    before = os.environ.get("LLMVIZ_TIMINGS")
    os.environ["LLMVIZ_TIMINGS"] = str(LOG)
    yield LOG
    if before is None:
        os.environ.pop("LLMVIZ_TIMINGS", None)
    else:
        os.environ["LLMVIZ_TIMINGS"] = before


def log_lines() -> list[dict]:
    return [json.loads(line) for line in LOG.read_text().splitlines()] if LOG.exists() else []


def no_error(page):
    boxes = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']")
    assert boxes.count() == 0, boxes.first.inner_text()


def open_page(browser, app_url, path: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{app_url}/{path}", timeout=120_000)
    wait_until_idle(page)
    return page


def change(page, do) -> list[dict]:
    """Do one widget change; return the log lines of the script/section runs it caused."""
    before = len(log_lines())
    do()
    deadline = time.time() + 120
    while len(log_lines()) == before:
        assert time.time() < deadline, "the widget change ran nothing"
        page.wait_for_timeout(50)  # polling the log file, not waiting for a fixed time
    wait_until_idle(page)
    return log_lines()[before:]


def slider(page, label: str, index: int = 0):
    return page.locator("[data-testid='stSlider']").filter(has_text=label).get_by_role("slider").nth(index)


def press(page, locator, key: str = "ArrowRight"):
    def do():
        locator.focus()
        page.keyboard.press(key)
    return do


def assert_only(lines: list[dict], section: str):
    names = {line["section"] for line in lines}
    assert names == {section}, f"expected only {section} to rerun, got {names}"
    assert all(line["rerun"] for line in lines)


def test_attention_widgets_rerun_only_their_section(app_url, browser):
    page = open_page(browser, app_url, "attention")
    main = page.get_by_test_id("stMainBlockContainer")
    assert_only(change(page, lambda: main.get_by_text("Causal mask", exact=True).click()), "attention.toy")
    assert_only(change(page, press(page, slider(page, "Layer", 0))), "attention.head")
    no_error(page)
    sentence = main.get_by_label("Sentence", exact=True)
    lines = change(page, lambda: (sentence.fill("The cat sat on the mat"), sentence.press("Enter")))
    assert "attention.sentence" in {line["section"] for line in lines}
    assert not any(line["section"].startswith("page:") for line in lines), "a new sentence reruns sections 5-6 only"
    main.get_by_text("layer 0, head 0").first.wait_for()
    no_error(page)
    page.close()


def test_tokens_embeddings_sampling_sections(app_url, browser):
    page = open_page(browser, app_url, "tokens")
    assert_only(change(page, press(page, slider(page, "Context size"))), "tokens.pairs")
    no_error(page)
    page.close()
    page = open_page(browser, app_url, "embeddings")
    main = page.get_by_test_id("stMainBlockContainer")
    assert_only(change(page, lambda: main.get_by_text("3D PCA", exact=True).click()), "embeddings.projection")
    assert_only(change(page, press(page, slider(page, "Positions"))), "embeddings.sinusoidal")
    no_error(page)
    page.close()
    page = open_page(browser, app_url, "sampling")
    main = page.get_by_test_id("stMainBlockContainer")
    take = main.get_by_role("button", name=re.compile("^Take the sampled token"))
    assert_only(change(page, lambda: take.click()), "sampling.step_mode")
    assert main.get_by_role("button", name="Undo").is_enabled()
    no_error(page)
    page.close()


def test_before_and_after_for_a_run(app_url, browser):
    """A short GPT run; Attention, Sampling and Embeddings then show step 0 beside its last step."""
    page = open_page(browser, app_url, "training?steps=40")
    main = page.get_by_test_id("stMainBlockContainer")
    main.get_by_role("button", name="Train", exact=True).click()
    main.get_by_text(re.compile(r"finished · step 40/40")).first.wait_for(timeout=180_000)
    wait_until_idle(page)
    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    for number, (title, shot) in enumerate((("Attention", "attention-before-after"),
                                            ("Sampling", "sampling-before-after"),
                                            ("Embeddings", "embeddings-before-after"))):
        page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text=title).first.click()
        wait_until_idle(page)
        if number == 0:  # the student picks the run in the shared sidebar picker; every page then shows it
            page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model shown on every page").click()
            page.get_by_role("option").filter(has_text="Your run").first.click()
            wait_until_idle(page)
        main = page.get_by_test_id("stMainBlockContainer")
        main.get_by_text("Step 0 (initial weights)", exact=False).first.wait_for(timeout=60_000)
        main.get_by_text("Step 40", exact=True).first.wait_for(timeout=60_000)
        no_error(page)
        heading = main.get_by_text("Step 0 (initial weights)", exact=False).first
        heading.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOT_DIR / f"{shot}.png"))
    page.close()
