"""Watching runs in a real browser (the classroom server): refreshes cost a bounded amount, pages follow a run.

Two students each train a run and watch it; the server's timing log (``LLMVIZ_TIMINGS``) says how often each tab's
live sections refreshed and what they cost. A page that shows the picked run (Attention) follows its newest
snapshot within one refresh, and the sidebar's step slider with it."""

import re
import time
import urllib.parse
from collections import Counter

import pytest

from tests.support.browser import main_area, no_error_box, open_page, script_runs, shot, sidebar

pytestmark = pytest.mark.browser

TRAINING = "training?" + urllib.parse.urlencode(
    {"corpus": "names", "train_model": "GPT micro (2 layers, d 64)", "steps": 2000, "batch": 16}
)  # ≈ 20 s of one core a run
RUNNING = re.compile(r"running · step (\d+)/2000")
LIVE = ("training.run", "training.all_runs", "sidebar.jobs", "sidebar.step")


def start_runs(browser, app_url, students: int) -> list:
    """Each student opens the Training page and presses Train; then every run is seen training (the runs start
    while the other students' pages open)."""
    opened = []
    for _ in range(students):
        page = open_page(browser, f"{app_url}/{TRAINING}", viewport=(1280, 900))  # a student's tab
        main_area(page).get_by_role("button", name="Train", exact=True).click()
        opened.append(page)
    for page in opened:
        main_area(page).get_by_text(RUNNING).first.wait_for(timeout=120_000)
    return opened


def newest_step(page) -> int:
    values = sidebar(page).get_by_role("slider").first.get_attribute("aria-valuetext")
    return (
        int(values)
        if values and values.isdigit()
        else int(sidebar(page).get_by_role("slider").first.get_attribute("aria-valuenow"))
    )


def test_watching_costs_a_bounded_refresh_and_pages_follow_the_run(app_url, browser, timings_log):
    students = start_runs(browser, app_url, 2)
    before = len(script_runs(timings_log))
    began = time.monotonic()
    # a measurement window: both tabs sit on the Training page, watching their runs train
    deadline = began + 5  # each tab refreshes each live section 2 or 3 times
    while time.monotonic() < deadline:
        students[0].wait_for_timeout(500)
    window = time.monotonic() - began
    runs = script_runs(timings_log)[before:]
    refreshes = Counter(run["section"] for run in runs if run["section"] in LIVE and run["rerun"])
    for section, count in refreshes.items():
        # each of the 2 tabs refreshes each live section at most once every 2 s (ui.watch.FASTEST)
        assert count <= 2 * (window / 2.0 + 1), (section, count, window)
    assert refreshes["training.all_runs"] >= 2, refreshes  # and they do refresh
    # the Training page does not draw the picked model at page level: following the run reran no whole page
    assert not [run for run in runs if run["section"] == "page:training"], "no whole-page reruns while watching"
    # the second run has served its purpose: paused, it gives its core back to the rest of the suite
    main_area(students[1]).get_by_role("button", name="Pause", exact=True).first.click()
    main_area(students[1]).get_by_text(re.compile(r"paused · step \d+/2000")).first.wait_for()

    # Attention draws the picked run: it follows the newest snapshot (the sidebar slider and the page agree)
    page = students[0]
    page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Attention").first.click()
    main_area(page).get_by_text("Your sentence through the model picked in the sidebar", exact=False).first.wait_for()
    first = newest_step(page)
    assert first < 2000, "the run was still training when Attention opened (else there is nothing to follow)"
    for _ in range(240):  # ≤ 60 s: a newer snapshot shows up in the sidebar, and the page is drawn again with it
        page.wait_for_timeout(250)
        if newest_step(page) > first:
            break
    assert newest_step(page) > first, "the step slider follows the run"

    def redrawn():  # the slider's refresh asks for a whole-page run of Attention, at the newer step
        return len([run for run in script_runs(timings_log)[before:] if run["section"] == "page:attention"]) >= 2

    for _ in range(120):
        if redrawn():
            break
        page.wait_for_timeout(250)
    assert redrawn(), "Attention was drawn again at the newer step"
    no_error_box(page)
    shot(page, "watching-attention-follows")
    for student in students:
        student.close()
