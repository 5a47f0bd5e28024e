"""Issue #13 in a real browser: the file uploader itself, and the BPE and word2vec Stop buttons.

Every wait is on the app's state (a text, a button), never a fixed sleep: the machine may be busy.
"""

import re

import pytest

from tests.browser_support import SHOTS, wait_until_idle

pytestmark = pytest.mark.browser

STORY = ("Once upon a time a small robot learned to read. It read every book in the library, "
         "one token at a time, and it never stopped asking what came next.\n") * 40


def new_page(browser):
    return browser.new_page(viewport={"width": 1400, "height": 1600})


def no_exception(page):
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()


def slider(page, label: str):
    return page.locator("[data-testid='stSlider']").filter(has_text=label).get_by_role("slider")


def choose(page, label: str, option: str, where=None):
    """Open the selectbox labelled ``label`` and pick ``option``."""
    (where or page).get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()


def upload(page, name: str, data: bytes):
    """Pick 'Your own text (upload)' in the sidebar and send a file through the real uploader."""
    sidebar = page.get_by_test_id("stSidebar")
    choose(page, "Corpus", "Your own text (upload)", where=sidebar)
    sidebar.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": name, "mimeType": "text/plain", "buffer": data}])


def go(page, title: str):
    """Navigate inside the app (the session and its upload stay), like a student clicking the sidebar."""
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    page.locator("h1").filter(has_text=re.compile(title.split()[0], re.IGNORECASE)).first.wait_for(timeout=120_000)
    wait_until_idle(page)


def test_upload_through_the_real_file_uploader(app_url, browser):
    page = new_page(browser)
    page.goto(f"{app_url}/home")
    wait_until_idle(page)
    upload(page, "robot-story.txt", STORY.encode())
    page.get_by_text("Using robot-story.txt", exact=False).first.wait_for(timeout=60_000)
    wait_until_idle(page)
    no_exception(page)
    go(page, "Tokens")
    page.get_by_text("robot-story.txt: training on", exact=False).first.wait_for(timeout=60_000)
    no_exception(page)
    # a binary file: a clear error in the sidebar, the app keeps the earlier text
    upload(page, "noise.bin", bytes(range(256)) * 40)
    page.get_by_test_id("stSidebar").get_by_test_id("stAlertContentError").first.wait_for(timeout=60_000)
    no_exception(page)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "fixes-upload.png"))
    page.close()


def test_bpe_stop_then_a_new_run_keeps_its_own_settings(app_url, browser):
    """Stop a long BPE run, then train a short one: the short one must not inherit the stopped run's
    settings (#13.3: it said 'Stopped with 43 merges (vocabulary 300 of the 4096 asked for)')."""
    page = new_page(browser)
    page.goto(f"{app_url}/tokens")
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    vocabulary = slider(page, "Vocabulary size")
    vocabulary.focus()
    page.keyboard.press("End")  # 4,096: thousands of merges
    wait_until_idle(page)
    # the trainer is fast (#20): make the run long enough to press Stop in — the whole corpus as one sequence
    choose(page, "Pre-split pattern", "none (whole text)", where=main)
    wait_until_idle(page)
    slider(page, "Train on the first").focus()
    page.keyboard.press("End")
    wait_until_idle(page)
    main.get_by_role("button", name="Train BPE").click()
    stop = main.get_by_role("button", name="Stop", exact=True)
    stop.wait_for(timeout=60_000)
    main.get_by_text(re.compile(r"merge \d+ of 3839")).first.wait_for(timeout=120_000)  # merging has begun
    stop.click()
    stopped = main.get_by_text("Stopped with", exact=False).first
    stopped.wait_for(timeout=60_000)
    assert "of the 4096 asked for" in stopped.inner_text()
    wait_until_idle(page)
    assert main.get_by_role("button", name="Stop", exact=True).count() == 0
    # a second run with other settings: the GPT-2 pattern and 300 tokens (43 merges)
    choose(page, "Pre-split pattern", "GPT-2 regex", where=main)
    wait_until_idle(page)
    vocabulary.focus()
    page.keyboard.press("Home")
    for _ in range(43):
        page.keyboard.press("ArrowRight")
    main.get_by_text("300", exact=True).first.wait_for(timeout=30_000)
    wait_until_idle(page)
    main.get_by_role("button", name="Train BPE").click()
    learned = main.get_by_text("Learned 43 merges: a vocabulary of 300.").first
    learned.wait_for(timeout=120_000)
    wait_until_idle(page)
    assert main.get_by_text("with the GPT-2 regex", exact=False).count() >= 1
    assert main.get_by_text("Stopped with", exact=False).count() == 0
    assert main.get_by_role("button", name="Stop", exact=True).count() == 0  # no Stop left behind
    no_exception(page)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "fixes-bpe-stop.png"))
    page.close()


def test_word2vec_stop_keeps_the_vectors(app_url, browser):
    page = new_page(browser)
    page.goto(f"{app_url}/embeddings")
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    steps = slider(page, "Steps")
    steps.focus()
    page.keyboard.press("End")  # 5,000 steps
    wait_until_idle(page)
    main.get_by_role("button", name="Train word2vec").click()
    stop = main.get_by_role("button", name="Stop", exact=True)
    stop.wait_for(timeout=60_000)
    main.get_by_text(re.compile(r"step \d+/5000")).first.wait_for(timeout=120_000)  # training has begun
    stop.click()
    note = main.get_by_text("Stopped at step", exact=False).first
    note.wait_for(timeout=60_000)
    assert "of 5000" in note.inner_text()
    wait_until_idle(page)
    assert main.get_by_role("button", name="Stop", exact=True).count() == 0
    assert main.get_by_text("Nearest neighbours of").count() >= 1  # the vectors learned so far are usable
    no_exception(page)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "fixes-word2vec-stop.png"))
    page.close()
