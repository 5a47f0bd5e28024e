"""Inside the model's interventions in headless chromium: each tab opens from the link (``look=``), its widgets rerun
its own section alone (st.fragment), its settings are in the copied link, and a sweep too large for the page runs as a
lab job whose grid appears when it ends."""

import re
import time
import urllib.parse

import pytest

from tests.support.browser import (
    eventually,
    main_area,
    no_error_box,
    open_page,
    script_runs,
    slider,
    wait_until_idle,
)

pytestmark = pytest.mark.browser


def reran(page, log, action) -> set[str]:
    """Do ``action(page)`` and return the names of the runs it caused (the page's, or sections')."""
    before = len(script_runs(log))
    action(page)
    deadline = time.time() + 120
    while len(script_runs(log)) == before:
        assert time.time() < deadline, "the change ran nothing"
        page.wait_for_timeout(50)  # polling the log file, not waiting for a fixed time
    wait_until_idle(page)
    return {line["section"] for line in script_runs(log)[before:]}


def only(names: set[str], section: str) -> bool:
    return {name for name in names if not name.startswith(section + ".")} == {section}


def test_knock_out_patch_and_steer_in_their_tabs(app_url, browser, timings_log):
    page = open_page(browser, f"{app_url}/inside?look=Knock+out+heads", viewport=(1400, 1600))
    main = main_area(page)
    names = reran(
        page, timings_log, lambda p: main.get_by_role("button", name="Knock out each head, one at a time").click()
    )
    assert only(names, "inside.ablation"), names
    main.get_by_text(re.compile(r"nats with every head; each cell is the change")).wait_for()
    main.locator("[data-testid='stPlotlyChart']").first.wait_for()  # the layer × head grid
    names = reran(
        page,
        timings_log,
        lambda p: (
            main.get_by_role("combobox", name="Knock out these heads together").click(),
            p.get_by_role("option", name="layer 0, head 1").click(),
        ),
    )
    assert only(names, "inside.ablation"), names
    page.keyboard.press("Escape")  # close the list: while it is open, the rest of the page is hidden from roles
    page.get_by_role("listbox").wait_for(state="hidden")
    main.get_by_text("The loss on every next token without those heads").wait_for()
    link = urllib.parse.unquote_plus(page.url)
    assert "knocked=layer 0, head 1" in link and "look=Knock out heads" in link  # the link holds the tab and heads
    no_error_box(page)

    # the link reopens the same view: the tab, and the heads knocked out together
    again = open_page(browser, page.url, viewport=(1400, 1600))
    main_area(again).get_by_text("The loss on every next token without those heads").wait_for()
    again.close()

    main.get_by_role("tab", name="Patch activations").click()
    wait_until_idle(page)
    names = reran(page, timings_log, lambda p: main.get_by_text("each head", exact=True).click())
    assert only(names, "inside.patching"), names
    main.get_by_role("heading", name="Every layer × head").wait_for()
    reran(page, timings_log, lambda p: main.get_by_role("button", name="Patch every one").click())
    main.get_by_text(re.compile(r"1 = that activation alone brings the clean answer back")).wait_for()
    assert "patch_component=" in page.url
    no_error_box(page)

    main.get_by_role("tab", name="Steer").click()
    wait_until_idle(page)
    steered = main.locator("[data-testid='stCode']").nth(1)
    before = steered.inner_text()

    def more_alpha(p):
        handle = slider(p, "α")
        handle.focus()
        for _ in range(8):  # 1.0 → 3.0 in steps of 0.25
            p.keyboard.press("ArrowRight")

    names = reran(page, timings_log, more_alpha)
    assert only(names, "inside.steering"), names
    assert eventually(lambda: steered.inner_text() != before, what="the steered text following α")
    assert "steer_alpha=3" in urllib.parse.unquote(page.url)
    no_error_box(page)
    page.close()


def test_a_sweep_too_large_for_the_page_runs_as_a_lab_job(app_url, browser, timings_log):
    """GPT-2 (the test server's small random one, with GPT-2's 50,257-token vocabulary): patching two 39-token prompts
    at every layer and position is beyond the page's budget, so it is a job of the session with its progress and Stop
    drawn live (the section ``inside.patching_job``), and the grid appears when it ends."""
    clean = (  # 39 GPT-2 tokens: 2 layers × 38 positions after the changed word, 9.7·10⁹ multiply-adds (over 3·10⁹)
        "The quick brown fox jumps over the lazy dog because the dog was lazy and the fox was quick and brown. "
        "The lazy dog sleeps while the quick fox runs around the old barn in the cold night"
    )
    corrupted = clean.replace("quick", "sleek", 1)
    query = urllib.parse.urlencode(
        {"model": "hub:gpt2", "look": "Patch activations", "patch_clean": clean, "patch_corrupted": corrupted}
    )
    page = open_page(browser, f"{app_url}/inside?{query}", viewport=(1400, 1600))
    main = main_area(page)
    main.get_by_role("button", name="Patch every one").wait_for()
    before = len(script_runs(timings_log))
    main.get_by_role("button", name="Patch every one").click()
    # the grid, or (a random model's pair may keep its answer) the words that say no share can be read from it
    main.get_by_text(
        re.compile(r"1 = that activation alone brings the clean answer back|prefers the answer as much as the clean")
    ).first.wait_for(timeout=300_000)
    names = {line["section"] for line in script_runs(timings_log)[before:]}
    assert "inside.patching_job" in names, names  # the job's progress and Stop were drawn while it ran
    no_error_box(page)
    page.close()
