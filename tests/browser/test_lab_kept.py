"""Runs are kept (issue 49): in real chromium, a student's run survives a reload, shows in a second tab of theirs,
is still listed, at its steps, after the server is stopped and started again and in a second app process on the same
runs folder; another student never sees it; the teacher's class view lists it and puts it on the projector.

The server is this test's own (its runs folder is a temporary one, so the restart reads the same lab)."""

from __future__ import annotations

import re
import urllib.parse

import pytest

from tests.support.app_server import TEACHER_KEY, free_port, lab_server, logs_on_failure
from tests.support.browser import (
    STUDENT_COOKIE,
    eventually,
    main_area,
    no_error_box,
    open_page,
    shot,
    sidebar,
    wait_until_idle,
)

pytestmark = pytest.mark.browser

TRAINING = "training?" + urllib.parse.urlencode({"steps": 60})
FINISHED = "finished after 60 steps"
YOUR_RUN = re.compile(r"Run \d+ · \d\d:\d\d · ")  # how the picker names a run (ui.labels.run_label)


def sidebar_options(page) -> list[str]:
    sidebar(page).get_by_role("combobox", name="Model shown on every page").click()
    options = [o.inner_text() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return options


def her_runs(page) -> list[str]:
    return [option for option in sidebar_options(page) if YOUR_RUN.match(option)]


def test_a_run_survives_a_reload_a_second_tab_and_a_restart(browser, tmp_path):
    with logs_on_failure(tmp_path):
        # the system picks the port; the restart reuses it (a cookie is the host's, whatever the port)
        the_story(browser, tmp_path, free_port())


def the_story(browser, tmp_path, port: int):
    server = lab_server(tmp_path, port)
    try:
        page = open_page(browser, f"{server.url}/{TRAINING}")  # Alice's browser
        main_area(page).get_by_role("button", name="Train", exact=True).click()
        main_area(page).get_by_text(FINISHED).first.wait_for(timeout=300_000)
        cookie = [c for c in browser.cookies() if c["name"] == STUDENT_COOKIE]
        assert len(cookie) == 1 and len(cookie[0]["value"]) >= 32  # ≥ 192 random bits, set on the first visit
        assert cookie[0]["value"] not in page.url
        [run] = eventually(lambda: her_runs(page), what="her run in the picker")

        page.reload()  # F5: the same student, the same run
        wait_until_idle(page)
        assert her_runs(page) == [run]
        shot(page, "lab-kept-after-reload")

        second = open_page(browser, f"{server.url}/attention", same_student=True)  # her second tab
        assert her_runs(second) == [run]
        no_error_box(second)
        second.close()

        server.stop()  # the server stops and starts again on the same runs folder
        server = lab_server(tmp_path, port)
        page.goto(f"{server.url}/training")
        wait_until_idle(page)
        [kept] = eventually(lambda: her_runs(page), what="her run listed after the restart")
        assert kept.split(" · ", 2)[2] == run.split(" · ", 2)[2]  # the same run (its label)
        main_area(page).get_by_text(FINISHED).first.wait_for()  # it opens on her run, from the lab, not "No run yet"
        assert main_area(page).get_by_text("No run yet").count() == 0
        main_area(page).locator(".js-plotly-plot").first.wait_for()  # its whole curve, read from the registry
        shot(page, "lab-training-after-restart")
        main_area(page).get_by_text("Kept runs").first.scroll_into_view_if_needed()
        table = main_area(page).get_by_test_id("stDataFrame").last
        eventually(lambda: "60 of 60" in table.inner_text() or table.get_attribute("data-testid"), what="table")
        shot(page, "lab-kept-after-restart")
        no_error_box(page)

        other_process = lab_server(tmp_path, free_port())  # a second app process on the same runs folder (one lab)
        try:
            elsewhere = open_page(browser, f"{other_process.url}/attention", same_student=True)
            shot(elsewhere, "lab-kept-other-process")
            assert [option.split(" · ", 2)[2] for option in her_runs(elsewhere)] == [run.split(" · ", 2)[2]]
            no_error_box(elsewhere)
            elsewhere.goto(f"{other_process.url}/training")  # its Training page opens on her run, from the lab
            main_area(elsewhere).get_by_text(FINISHED).first.wait_for()
            assert main_area(elsewhere).get_by_text("No run yet").count() == 0
            no_error_box(elsewhere)
            elsewhere.close()
        finally:
            other_process.stop()

        bob = open_page(browser, f"{server.url}/training")  # another browser: another student
        assert her_runs(bob) == []
        no_error_box(bob)

        teacher = open_page(browser, f"{server.url}/classroom?teacher={TEACHER_KEY}")  # the teacher's browser
        main_area(teacher).get_by_text("1 students · 1 runs").first.wait_for()
        # the key leaves the address (read from the page: Playwright's page.url is brought up to date only while a
        # call into the browser waits, and the page cleans its address after its last script run)
        eventually(
            lambda: "teacher" not in teacher.evaluate("window.location.href"), what="the key gone from the address"
        )
        table = main_area(teacher).get_by_test_id("stTable").first
        eventually(lambda: table.is_visible(), what="the class table")
        teacher.get_by_role("button", name="Show on the projector").click()
        wait_until_idle(teacher)
        picked = sidebar(teacher).get_by_role("combobox", name="Model shown on every page").input_value()
        assert picked.startswith("On the projector · GPT micro")
        sidebar(teacher).get_by_role("slider").first.wait_for()  # its kept steps, on the sidebar's slider
        shot(teacher, "lab-class-view")
        no_error_box(teacher)

        # Alice (her window is still open on Training: a new page would now carry the teacher's cookie) deletes her
        # run: Delete asks once
        main_area(page).get_by_text("your kept runs and files take", exact=False).first.wait_for()  # against the quota
        main_area(page).get_by_role("button", name="Delete it").click()
        wait_until_idle(page)
        main_area(page).get_by_text("Press the button again to delete it").first.wait_for()
        assert her_runs(page) == [kept]  # asked, not deleted
        shot(page, "lab-delete-asks")
        main_area(page).get_by_role("button", name=re.compile(r"^Yes, delete")).click()
        wait_until_idle(page)
        eventually(lambda: her_runs(page) == [], what="her run deleted after the second press")
        no_error_box(page)
    finally:
        server.stop()


def test_clear_all_runs_asks_first_and_cancel_keeps_the_runs(browser, tmp_path):
    """Issue 72 §3: Clear all runs deleted every run of the table in one click. It asks first, as Delete does (how
    many runs, their snapshots and megabytes), Cancel keeps them, and Yes deletes them."""
    with logs_on_failure(tmp_path):
        server = lab_server(tmp_path, free_port())
        try:
            page = open_page(browser, f"{server.url}/{TRAINING}")
            main_area(page).get_by_role("button", name="Train", exact=True).click()
            main_area(page).get_by_text(FINISHED).first.wait_for(timeout=300_000)
            [run] = eventually(lambda: her_runs(page), what="her run in the picker")
            main_area(page).get_by_role("button", name="Clear all runs").click()
            wait_until_idle(page)
            question = main_area(page).get_by_text("Delete the run in the table above").first
            question.wait_for()
            assert re.search(r"its \d+ kept snapshots? \([\d.]+ MB\)", question.inner_text()), question.inner_text()
            assert her_runs(page) == [run]  # asked, not deleted
            shot(page, "lab-clear-asks")
            main_area(page).get_by_role("button", name="Cancel").click()
            wait_until_idle(page)
            assert main_area(page).get_by_text("Delete the run in the table above").count() == 0
            assert her_runs(page) == [run]  # Cancel keeps it
            main_area(page).get_by_role("button", name="Clear all runs").click()
            wait_until_idle(page)
            main_area(page).get_by_role("button", name="Yes, delete them").click()
            wait_until_idle(page)
            eventually(lambda: her_runs(page) == [], what="her run deleted after Yes")
            no_error_box(page)
        finally:
            server.stop()
