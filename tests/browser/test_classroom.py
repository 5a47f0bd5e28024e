"""The classroom in a real browser (issue 16): a hostile link, figures to take away.

The links that reproduce each page's view are tested page by page in tests/browser/test_pages.py; presenter mode at
1280×720 in tests/browser/test_presenter.py.
"""

from pathlib import Path

import pytest

from tests.support.browser import eventually, no_error_box, open_page

pytestmark = pytest.mark.browser


def test_a_hostile_link_falls_back_with_a_notice(app_url, browser):
    page = open_page(
        browser,
        f"{app_url}/sampling?sampling_part=Generate&temperature=nan&top_k=1e99&method=%3Cscript%3Ealert(1)%3C/script%3E"
        "&prompt=" + "x" * 3000 + "&zoom=3",
    )
    notice = page.locator('[data-testid="stAlert"]', has_text="This link's settings were partly used").first
    notice.wait_for()
    text = notice.inner_text()
    for name in ("temperature", "top_k", "method", "prompt", "zoom"):
        assert name in text
    page.locator(".gtitle", has_text="temperature 0.8").first.wait_for()  # the default, in the chart's title
    no_error_box(page)
    address = lambda: page.evaluate("window.location.href")  # noqa: E731 - page.url is Playwright's stale copy
    eventually(lambda: "zoom" not in address() and "temperature" not in address(), what="the unused settings gone")
    page.close()


def test_figures_download_as_png_svg_csv_and_latex(app_url, browser):
    """Every chart: PNG at twice its size and SVG; every table: CSV; a worked example: its LaTeX source."""
    page = open_page(
        browser,
        f"{app_url}/sampling",
        viewport=(1400, 900),
        before=lambda tab: tab.add_init_script("delete window.showSaveFilePicker;"),
    )  # as in Firefox

    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.hover()
    box = chart.locator(".main-svg").first.bounding_box()
    with page.expect_download() as download:
        chart.locator('.modebar-btn[data-title^="Download plot"]').first.click()
    png = Path(download.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and download.value.suggested_filename.endswith(".png")
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (round(2 * box["width"]), round(2 * box["height"]))
    chart.hover()
    page.locator(".llmviz-svg").first.wait_for()
    with page.expect_download() as download:
        chart.locator(".llmviz-svg").first.click()
    svg = Path(download.value.path()).read_text()
    assert svg.startswith("<svg") and download.value.suggested_filename.endswith(".svg")
    assert "raw softmax" in svg  # the chart itself, as vectors

    table = page.locator('[data-testid="stDataFrame"]').first
    table.scroll_into_view_if_needed()
    table.hover()
    with page.expect_download() as download:
        # the table's toolbar shows on hover, under the page header: click the button itself
        page.get_by_role("button", name="Download as CSV").first.dispatch_event("click")
    found = download.value
    text = Path(found.path()).read_text(encoding="utf-8-sig")
    assert text.splitlines()[0].count(",") >= 1 and "probability" in text.splitlines()[0]

    page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Embeddings").first.click()
    page.get_by_role("button", name="Copy as LaTeX").first.click()
    code = page.locator('[data-testid="stPopoverBody"] code').first
    code.wait_for()
    source = code.inner_text()
    assert "\\cos\\theta" in source and "\\begin{align*}" in source
    page.close()
