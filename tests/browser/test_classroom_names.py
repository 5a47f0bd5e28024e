"""The class view draws what students typed as text, in real chromium (issue 56 §6): Plotly draws a legend entry as
HTML, so a display name ``<a href="https://evil.example/x">Ada</a>`` became a link in the class chart and
``<span style="font-size:99px">X</span>`` covered it; four runs of one student read the same cut legend text; the
table showed a raw None. The lab is this test's own (its server's runs folder), filled through the lab's registry."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from llmviz.lab.records import RunRecord
from llmviz.lab.service import Lab
from tests.support.app_server import TEACHER_KEY, free_port, lab_server
from tests.support.browser import main_area, no_error_box, open_page, shot

pytestmark = pytest.mark.browser

LINK = '<a href="https://evil.example/x">Ada</a>'
BIG = '<span style="font-size:99px">X</span>'
LABEL = "GPT micro (2 layers, d 64) · AdamW · lr 0.003 · 300 steps · context 64 · batch 16 · Python reference manual"


def fill(lab: Lab) -> None:
    """Two students with hostile names: four runs of one label (#2, #3, #4 after the first), one run of the other."""
    for student, name, count in (("s-names-test-1", LINK, 4), ("s-names-test-2", BIG, 1)):
        lab.registry.records.ensure_student(student, name=name)
        for number in range(count):
            run_id = f"{student[-1]}run{number}"
            label = LABEL + (f" #{number + 1}" if number else "")
            lab.registry.records.add_run(RunRecord(run_id, student, "training", label, "finished", 40, 40, model="gpt"))
            lab.registry.records.add_points(
                run_id, [(step, 4.0 - step / 20 - number / 10, None) for step in range(1, 41)]
            )


@pytest.fixture
def class_server(tmp_path):
    """The app with its own lab and the teacher's key (tests.support.app_server.lab_server)."""
    (tmp_path / "runs").mkdir()
    fill(Lab.at(tmp_path / "runs"))
    server = lab_server(tmp_path, free_port())
    yield server
    server.stop()


def test_names_in_the_class_chart_are_text_and_each_run_reads_apart(browser, class_server):
    for viewport, suffix, name in (
        ((1400, 1000), "", "class-view-names"),
        ((1280, 720), "&present=1", "class-present"),
    ):
        page = open_page(browser, f"{class_server.url}/classroom?teacher={TEACHER_KEY}{suffix}", viewport=viewport)
        chart = main_area(page).locator(".js-plotly-plot").first
        chart.locator(".legendtext").first.wait_for(timeout=120_000)
        legend = [text.text_content() for text in chart.locator(".legendtext").all()]
        theirs = [text for text in legend if text.startswith('<a href="')]
        assert len(theirs) == 4 == len(set(theirs)), legend  # four runs, four texts, the name as typed
        assert any(text.startswith("<span styl") for text in legend), legend  # (cut in its middle)
        assert page.locator('a[href*="evil.example"]').count() == 0  # no link made from a name
        sizes = chart.locator(".legendtext").evaluate_all("els => els.map(e => getComputedStyle(e).fontSize)")
        assert all(float(size.removesuffix("px")) < 20 for size in sizes), sizes  # nothing drawn at 99 px
        table = main_area(page).get_by_test_id("stTable").first
        assert "None" not in table.inner_text()
        # every column in view, the long labels wrapped (issue 72 item 7: the table was cut at 1400 px)
        assert LABEL in table.inner_text() and "last training loss" in table.inner_text()
        assert table.evaluate("t => t.scrollWidth <= t.clientWidth + 1"), "the class table scrolls sideways"
        if not suffix:  # the teacher keeps the table: a CSV of every row, the names as typed
            with page.expect_download() as download:
                page.get_by_role("button", name="Download the class table (CSV)").click()
            rows = list(csv.reader(Path(download.value.path()).read_text(encoding="utf-8").splitlines()))
            assert len(rows) == 6 and rows[0][:3] == ["student", "run", "model"] and rows[1][0] == LINK, rows
        no_error_box(page)
        shot(page, name + ("-present" if suffix and "present" not in name else ""))
        page.close()
