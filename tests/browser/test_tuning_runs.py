"""The Tuning page's own runs in headless chromium, as a student makes them (issue 59 §2-3): "Tune your own" starts a
DPO run from the shipped SFT model; it trains as a lab run with Pause/Resume/Stop beside its live curve, ends, and
the "DPO: the chosen over the rejected" tab draws its chart from the lab (the run's ratios, margin and accuracy, as
many points as it took steps); a reload opens the same chart (the lab's record, not the tab's state)."""

from __future__ import annotations

import re
import urllib.parse

import pytest

from tests.support.browser import eventually, main_area, no_error_box, open_page, shot, wait_until_idle

pytestmark = pytest.mark.browser

DPO_TAB = "DPO: the chosen over the rejected"


def _dpo_chart_titles(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot .gtitle')].map(n => n.textContent)")


def test_a_dpo_run_started_on_the_page_trains_ends_and_its_chart_survives_a_reload(app_url, browser):
    link = "tuning?" + urllib.parse.urlencode({"tuning_tab": "Tune your own", "tuning_dpo_steps": 10})
    page = open_page(browser, f"{app_url}/{link}", viewport=(1400, 1000))
    no_error_box(page)
    main_area(page).get_by_role("button", name="Start a DPO run").click()
    main_area(page).get_by_role("button", name=re.compile(r"^(Pause|Stop)")).first.wait_for(timeout=120_000)
    main_area(page).get_by_text(re.compile(r"finished · step 10/10|finished after 10 steps")).first.wait_for(
        timeout=300_000
    )
    no_error_box(page)
    shot(page, "tuning-own-dpo-run")
    page.goto(f"{app_url}/tuning?" + urllib.parse.urlencode({"tuning_tab": DPO_TAB}), timeout=120_000)
    wait_until_idle(page)
    titles = eventually(
        lambda: [t for t in _dpo_chart_titles(page) if t.startswith("DPO β=0.1 10 steps")] or None,
        what="the run's DPO chart",
    )
    assert len(titles) == 1 and "finished" in titles[0], titles
    page.reload()  # a reload: the chart comes from the lab's record again
    wait_until_idle(page)
    eventually(lambda: any(t.startswith("DPO β=0.1 10 steps") for t in _dpo_chart_titles(page)) or None)
    no_error_box(page)
    shot(page, "tuning-dpo-tab-with-own-run")


def test_the_set_uploaders_say_their_limit_take_a_students_set_and_refuse_a_bad_one_in_one_line(app_url, browser):
    """ "Tune your own"'s two uploaders, operated: each says the instruction sets' own limit (2 MB, not the server's
    20 MB for corpora); a valid SFT set names the run it starts; a malformed DPO set is refused in one line (where
    it is wrong), and nothing else on the page breaks; a file over the limit is refused by the box itself."""
    link = "tuning?" + urllib.parse.urlencode({"tuning_tab": "Tune your own"})
    page = open_page(browser, f"{app_url}/{link}", viewport=(1400, 1000))
    boxes = main_area(page).locator("[data-testid='stFileUploader']")
    # the tab's section may still be drawing when the page's script has ended (failed once in CI, 0 boxes found)
    eventually(lambda: boxes.count() == 2 or None, what="the two uploaders")
    for box in boxes.all():
        assert re.search(r"\b2\s?MB per file", box.inner_text()), box.inner_text()
    rows = b"".join(b'{"prompt": "What is a list %d?", "response": "A mutable sequence."}\n' % n for n in range(12))
    boxes.nth(0).locator("input[type='file']").set_input_files(
        {"name": "my_set.jsonl", "mimeType": "application/json", "buffer": rows}
    )
    wait_until_idle(page)
    no_error_box(page)
    bad = b'{"prompt": "a", "chosen": "b"}\n'  # no "rejected"
    boxes.nth(1).locator("input[type='file']").set_input_files(
        {"name": "pairs.jsonl", "mimeType": "application/json", "buffer": bad}
    )
    wait_until_idle(page)
    alert = main_area(page).get_by_text(re.compile(r"^Line 1 has no text in 'rejected'"))
    eventually(lambda: alert.count() or None, what="the one-line refusal")
    said = alert.first.inner_text().strip()
    assert "\n" not in said and said.endswith("each line needs prompt, chosen, rejected."), said  # where, and what
    assert main_area(page).locator("[data-testid='stException']").count() == 0
    big = b"x" * (3 * 10**6)
    boxes.nth(1).locator("input[type='file']").set_input_files(
        {"name": "huge.jsonl", "mimeType": "application/json", "buffer": big}
    )
    eventually(lambda: re.search(r"2\.?0?\s?MB or smaller|exceeds", main_area(page).inner_text()), what="too large")
    main_area(page).get_by_role("button", name="Start an SFT run").click()  # the valid set names the run
    eventually(lambda: main_area(page).get_by_text(re.compile(r"SFT 60 steps \(my_set\.jsonl\)")).count() or None)
    main_area(page).get_by_role("button", name=re.compile(r"^Stop")).first.click()
    wait_until_idle(page)
    assert main_area(page).locator("[data-testid='stException']").count() == 0
    shot(page, "tuning-own-sets")
