"""The classroom in a real browser: links that reproduce a view, figure export, presenter mode at 1280×720."""

import os
import time
from pathlib import Path

import pytest

from tests.browser_support import wait_until_idle

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("LLMVIZ_SHOTS", "/work/shots/classroom"))

# Everything a student reads: metrics, captions, text, equations, code, token chips, and the charts' text
# (tick labels, cell values, titles).
NUMBERS_JS = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const parts = [];
  main.querySelectorAll('[data-testid="stMetricValue"], [data-testid="stCaptionContainer"], '
                        + '[data-testid="stMarkdownContainer"], .katex-mathml annotation, [data-testid="stCode"] code, '
                        + '.js-plotly-plot .main-svg text')
      .forEach(e => { if (!e.closest('[data-testid="stAlert"]') && !e.closest('[data-testid="stExpanderDetails"]'))
                        parts.push(e.textContent.trim()); });
  return parts.filter(t => t.length > 0);
}"""


def numbers(page, settle_s: float = 2.0, timeout_s: float = 120) -> list[str]:
    """What the page shows once it has stopped changing (charts draw after the script run ends)."""
    wait_until_idle(page)
    deadline = time.time() + timeout_s
    last, since = None, time.time()
    busy = ("() => document.querySelectorAll('[data-testid=\"stStatusWidget\"], [data-stale=\"true\"], "
            "[data-testid=\"stSkeleton\"], [data-testid=\"stSpinner\"]').length")
    while time.time() < deadline:
        now = page.evaluate(NUMBERS_JS)
        if page.evaluate(busy):
            last, since = None, time.time()
        elif now != last:
            last, since = now, time.time()
        elif time.time() - since >= settle_s and now:
            return now
        time.sleep(0.3)
    raise AssertionError("the page kept changing")


def open_page(context, url):
    page = context.new_page()
    page.goto(url)
    wait_until_idle(page)
    return page


def fill(page, selector, text, commit="Enter"):
    field = page.locator(selector).first
    field.fill(text)
    field.press(commit)
    wait_until_idle(page)


def nudge_slider(page, label, presses=2):
    slider = page.get_by_role("slider", name=label).first
    slider.focus()
    for _ in range(presses):
        page.keyboard.press("ArrowRight")
    wait_until_idle(page)


def pick(page, label, option):
    page.get_by_label(label).first.click()
    page.get_by_role("option", name=option).first.click()
    wait_until_idle(page)


def copied_link(page) -> str:
    page.get_by_role("button", name="Copy link to this view").first.click()
    page.wait_for_function("() => !!window.__llmvizCopiedLink")
    return page.evaluate("() => window.__llmvizCopiedLink")


# page, what a teacher changes (each leaves at least one setting away from its default)
CHANGES = {
    "home": lambda p: (pick(p, "Corpus", "US census first names"),
                       fill(p, '[data-testid="stSidebar"] input[type="number"]', "7")),
    "tokens": lambda p: fill(p, '[data-testid="stTextArea"] textarea', "Hello classroom: 12 tokens, maybe 13?",
                             commit="Control+Enter"),
    "embeddings": lambda p: fill(p, 'input[aria-label^="Tokens to compare"]', " print range len"),
    "attention": lambda p: (fill(p, 'input[aria-label="Sentence"]', "The function returns a list of values"),
                            nudge_slider(p, "Layer", 1)),
    "model": lambda p: fill(p, 'input[aria-label="A sentence"]', "A class defines new objects"),
    "training": lambda p: nudge_slider(p, "Positions per sequence", 2),
    "sampling": lambda p: (fill(p, 'input[aria-label="Prompt"]', "The while statement"),
                           nudge_slider(p, "Temperature", 3)),
}


@pytest.mark.parametrize("path", list(CHANGES))
def test_a_copied_link_opens_the_same_view(app_url, browser, path):
    teacher = browser.new_context(viewport={"width": 1400, "height": 900},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = open_page(teacher, f"{app_url}/{path}")
    default_numbers = numbers(page)
    CHANGES[path](page)
    shown = numbers(page)
    assert shown != default_numbers, "the change shows on the page"
    link = copied_link(page)
    assert "?" in link and link.startswith(f"{app_url}/{'' if path == 'home' else path}"), link
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    teacher.close()

    student = browser.new_context(viewport={"width": 1400, "height": 900})  # a fresh browser: nothing shared
    view = open_page(student, link)
    assert numbers(view) == shown
    assert view.locator('[data-testid="stException"]').count() == 0
    student.close()


def test_a_hostile_link_falls_back_with_a_notice(app_url, browser):
    context = browser.new_context()
    page = open_page(context, f"{app_url}/sampling?temperature=nan&top_k=1e99&method=%3Cscript%3Ealert(1)%3C/script%3E"
                              "&prompt=" + "x" * 3000 + "&zoom=3")
    notice = page.locator('[data-testid="stAlert"]', has_text="This link's settings were partly used").first
    notice.wait_for()
    text = notice.inner_text()
    for name in ("temperature", "top_k", "method", "prompt", "zoom"):
        assert name in text
    assert page.locator(".gtitle", has_text="temperature 0.8").count() == 1  # the default, in the chart's title
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "zoom" not in page.url and "temperature" not in page.url
    context.close()


def test_charts_download_as_png_at_twice_the_size_and_as_svg(app_url, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    page = open_page(context, f"{app_url}/sampling")
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
    context.close()


def test_tables_download_as_csv(app_url, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    context.add_init_script("delete window.showSaveFilePicker;")  # the plain download path, as in Firefox
    page = open_page(context, f"{app_url}/sampling")
    table = page.locator('[data-testid="stDataFrame"]').first
    table.scroll_into_view_if_needed()
    table.hover()
    buttons = table.locator("xpath=..").locator('[data-testid="stElementToolbarButton"]')
    found = None
    for index in range(buttons.count()):
        try:
            with page.expect_download(timeout=5000) as download:
                buttons.nth(index).click()
            found = download.value
            break
        except Exception:  # noqa: BLE001 - not the download button: try the next one
            page.keyboard.press("Escape")
            table.hover()
    assert found is not None, "a CSV download button on the table"
    text = Path(found.path()).read_text(encoding="utf-8-sig")
    assert text.splitlines()[0].count(",") >= 1 and "probability" in text.splitlines()[0]
    context.close()


def test_worked_examples_copy_as_latex(app_url, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = open_page(context, f"{app_url}/embeddings")
    page.get_by_role("button", name="Copy as LaTeX").first.click()
    code = page.locator('[data-testid="stPopoverBody"] code').first
    code.wait_for()
    source = code.inner_text()
    assert "\\cos\\theta" in source and "\\begin{align*}" in source
    context.close()


def test_presenter_mode_at_1280x720(app_url, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = open_page(context, f"{app_url}/attention?present=1")
    bar = page.locator("#llmviz-present-bar")
    bar.wait_for()
    assert page.locator('[data-testid="stSidebar"]').get_attribute("data-collapsed") == "true"
    where = page.locator("#llmviz-where")
    assert where.inner_text().startswith("section 1 of ")
    sections = int(where.inner_text().split(" of ")[1].split()[0])
    assert sections >= 5

    def visible_headers():
        return [h.inner_text() for h in page.locator('[data-testid="stMainBlockContainer"] h2').all() if h.is_visible()]

    assert visible_headers() == []  # section 1: the title and the introduction
    page.locator("#llmviz-next").click()
    deadline = time.time() + 30
    while not where.inner_text().startswith("section 2") and time.time() < deadline:
        page.locator("#llmviz-next").click()  # first the explanations, one step at a time
    assert len(visible_headers()) == 1 and visible_headers()[0].startswith("1.")
    font = page.evaluate("() => getComputedStyle(document.documentElement).fontSize")
    assert font == "20px"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    assert len(visible_headers()) == 1
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "presenter.png"))
    # switched off from the sidebar: everything shows again
    context.close()
