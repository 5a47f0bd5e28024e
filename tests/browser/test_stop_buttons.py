"""The BPE and word2vec Stop buttons in a real browser (issues #13 and #19).

Every wait is on the app's state (a text, a button), never a fixed sleep: the machine may be busy."""

import re
from pydoc_data.topics import topics

import pytest

from tests.support.browser import (
    choose,
    eventually,
    go,
    main_area,
    no_error_box,
    open_page,
    shot,
    sidebar,
    slider,
    wait_until_idle,
)

pytestmark = pytest.mark.browser


def upload(page, name: str, data: bytes):
    """Send a file through the real uploader in the sidebar."""
    sidebar(page).locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": name, "mimeType": "text/plain", "buffer": data}]
    )


def test_bpe_and_word2vec_stop_buttons(app_url, browser):
    """Stop a long BPE run, then train a short one: the short one must not inherit the stopped run's
    settings (#13.3: it said 'Stopped with 43 merges (vocabulary 300 of the 4096 asked for)'). Then stop
    word2vec: the vectors learned so far stay usable."""
    page = open_page(browser, f"{app_url}/tokens", viewport=(1400, 1600))
    main = main_area(page)
    # the trainer is fast (#20: all 3,839 merges of the 465 KB Python manual in 1.5 s on a quiet core, so a Stop
    # could land after the end): a run long enough to press Stop in is 2.8 MB of text (the manual six times)
    # taken whole, as one sequence
    choose(page, "Corpus", "Your own text (upload)", where=sidebar(page))
    upload(page, "manual-six-times.txt", "\n\n".join(topics.values()).encode() * 6)
    sidebar(page).get_by_text("Using", exact=False).first.wait_for()
    wait_until_idle(page)
    vocabulary = slider(page, "Vocabulary size")
    vocabulary.focus()
    page.keyboard.press("End")  # 4,096: thousands of merges
    wait_until_idle(page)
    choose(page, "Pre-split pattern", "none (whole text)", where=main)
    limit = slider(page, "Train on the first")
    limit.focus()
    page.keyboard.press("End")
    wait_until_idle(page)
    main.get_by_role("button", name="Train BPE").click()
    stop = main.get_by_role("button", name="Stop", exact=True)
    stop.wait_for()
    main.get_by_text(re.compile(r"merge \d+ of 3839")).first.wait_for()  # merging has begun
    stop.click()  # once: the button's callback stops the run even while the live section redraws it
    stopped = main.get_by_text("Stopped with", exact=False).first
    stopped.wait_for()
    assert "of the 4096 asked for" in stopped.inner_text()
    wait_until_idle(page)
    assert main.get_by_role("button", name="Stop", exact=True).count() == 0
    # a second run with other settings: the GPT-2 pattern, the first 10,000 characters and 260 tokens (3 merges;
    # every key press is a rerun)
    choose(page, "Pre-split pattern", "GPT-2 regex", where=main)
    limit.focus()
    page.keyboard.press("Home")
    wait_until_idle(page)
    vocabulary.focus()
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    # the slider's own value (a table on the page can hold a "260" too: the stopped run's vocabulary, say)
    eventually(lambda: vocabulary.input_value() == "260", what="the vocabulary slider at 260")
    wait_until_idle(page)
    main.get_by_role("button", name="Train BPE").click()
    main.get_by_text("Learned 3 merges: a vocabulary of 260.").first.wait_for()
    wait_until_idle(page)
    assert main.get_by_text("with the GPT-2 regex", exact=False).count() >= 1
    assert main.get_by_text("Stopped with", exact=False).count() == 0
    assert main.get_by_role("button", name="Stop", exact=True).count() == 0  # no Stop left behind
    no_error_box(page)
    shot(page, "fixes-bpe-stop")

    go(page, "Embeddings")
    main.get_by_role("tab", name="Word2vec", exact=True).click()  # the lesson's tab under the map
    wait_until_idle(page)
    steps = slider(page, "Steps")
    steps.focus()
    page.keyboard.press("End")  # 5,000 steps
    wait_until_idle(page)
    main.get_by_role("button", name="Train word2vec").click()
    stop.wait_for()
    main.get_by_text(re.compile(r"step \d+/5000")).first.wait_for()  # training has begun
    stop.click()
    note = main.get_by_text("Stopped at step", exact=False).first
    note.wait_for()
    assert "of 5000" in note.inner_text()
    wait_until_idle(page)
    assert main.get_by_role("button", name="Stop", exact=True).count() == 0
    assert main.get_by_text("Nearest neighbours of").count() >= 1  # the vectors learned so far are usable
    no_error_box(page)
    shot(page, "fixes-word2vec-stop")
    page.close()
