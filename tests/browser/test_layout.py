"""The layout of Home, Tokens, Embeddings, Attention and Model, in chromium at 1400×1000, each with a
test that failed before its fix: text that is cut or clipped (measured: an element scrolls no wider and no taller than
it is), labels drawn over each other, boxes that looked like links and were not, a bar with no number."""

import re

import pytest

from tests.support.browser import main_area, no_error_box, open_page, settled, wait_until_idle
from ui.stages import PIPELINE

pytestmark = pytest.mark.browser

SCREEN = (1400, 1000)


def page_at(browser, url: str):
    page = open_page(browser, url, viewport=SCREEN)
    settled(page)  # every chart and formula drawn
    no_error_box(page)
    return page


def test_home_pipeline_boxes_are_links_to_their_stages(app_url, browser):
    """Before: the pipeline's boxes looked clickable and were not (the links were a separate row under them)."""
    page = page_at(browser, app_url)
    boxes = page.locator('.st-key-picture_home [data-testid="stColumn"] [data-testid="stLayoutWrapper"]')
    stages = [stage for stage in PIPELINE if stage.exists]
    assert boxes.count() == len(stages)
    # what a click anywhere on a box (its middle, its corner, its description) lands on: the link to its stage
    targets = boxes.evaluate_all("""(boxes) => boxes.map((box) => {
      const r = box.getBoundingClientRect();
      return [[r.left + r.width / 2, r.top + r.height / 2], [r.left + 6, r.bottom - 6]].map(([x, y]) => {
        const link = document.elementFromPoint(x, y).closest('a');
        return link ? link.getAttribute('href') : null;
      });
    })""")
    for stage, (middle, corner) in zip(stages, targets):
        expected = "" if stage.key == "text" else stage.key
        assert middle is not None and middle.rstrip("/").endswith(expected), (stage.key, middle)
        assert corner == middle, (stage.key, corner)
    cursor = boxes.nth(1).evaluate(
        "(box) => getComputedStyle(document.elementFromPoint("
        "box.getBoundingClientRect().left + 6, box.getBoundingClientRect().bottom - 6)).cursor"
    )
    assert cursor == "pointer"
    blurb = boxes.nth(1).get_by_text(stages[1].blurb).bounding_box()
    page.mouse.click(blurb["x"] + 4, blurb["y"] + blurb["height"] / 2)  # on the description: the box is the link
    wait_until_idle(page)
    assert page.locator("h1").first.inner_text().startswith("Tokens")
    page.close()


CLIPPED = """() => Array.from(document.querySelectorAll(
    '[data-testid="stMainBlockContainer"] .katex-display, [data-testid="stMainBlockContainer"] .dvn-scroller'))
  .filter((e) => e.checkVisibility())
  .filter((e) => e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1)  // 1 px: sub-pixel rounding
  .map((e) => `${e.textContent.slice(0, 60)}: ${e.scrollWidth}×${e.scrollHeight} `
              + `in ${e.clientWidth}×${e.clientHeight}`)"""


@pytest.mark.parametrize(
    "path",
    ["embeddings", "attention", "attention?attention_tab=Step+by+step", "attention?attention_tab=Grouped-query"],
)
def test_formulas_and_tables_are_shown_whole(app_url, browser, path):
    """Before: the numerator of the cosine's fraction was clipped at the top (Embeddings, the worked cosine), the
    superscripts of the worked attention weights too, and the grouped-query calculator's table scrolled sideways,
    its last column cut off."""
    page = page_at(browser, f"{app_url}/{path}")
    if path.endswith("Grouped-query"):  # the calculator's table (its cells are drawn on a canvas)
        assert main_area(page).get_by_text("W_K + W_V per layer:", exact=False).count()
        assert main_area(page).locator(".dvn-scroller").count()
    assert main_area(page).locator(".katex-display").count(), "formulas on the page"
    clipped = page.evaluate(CLIPPED)
    assert clipped == [], clipped
    page.close()


def test_the_map_of_tokens_labels_do_not_overlap_and_a_click_looks_a_token_up(app_url, browser):
    """Before: the labels of the PCA map were drawn over each other. A click on a token now looks it up."""
    page = page_at(browser, f"{app_url}/embeddings")
    chart = main_area(page).locator('[data-testid="stPlotlyChart"]').first
    boxes = chart.evaluate("""(chart) => Array.from(chart.querySelectorAll('.textpoint text'))
      .filter((t) => t.textContent.trim()).map((t) => { const r = t.getBoundingClientRect();
        return [t.textContent, r.left, r.right, r.top, r.bottom]; })""")
    assert len(boxes) >= 8, boxes  # the looked-up token, its neighbours and yours are labelled
    overlapping = [
        (a[0], b[0])
        for n, a in enumerate(boxes)
        for b in boxes[n + 1 :]
        if a[1] < b[2] - 0.5 and b[1] < a[2] - 0.5 and a[3] < b[4] - 0.5 and b[3] < a[4] - 0.5
    ]
    assert overlapping == [], overlapping
    query = main_area(page).get_by_label("Nearest neighbours of", exact=True)
    before = query.input_value()
    point = chart.locator(".scatterlayer .trace").nth(2).locator("path.point").first  # a nearest neighbour
    point.click(force=True)
    wait_until_idle(page)
    page.wait_for_function(
        "(before) => { const box = document.querySelector('input[aria-label=\"Nearest neighbours of\"]');"
        " return box && box.value !== before; }",
        arg=before,
    )
    assert query.input_value() != before
    no_error_box(page)
    page.close()


def test_the_tied_output_head_has_its_number(app_url, browser):
    """Before: GPT-2's tied output head was a bar of zero with no number beside it, which read as a missing value."""
    page = page_at(browser, f"{app_url}/model?preset=gpt2-124m")
    chart = main_area(page).locator('[data-testid="stPlotlyChart"]').first
    bars = chart.locator(".bars path").count()
    texts = chart.locator(".bartext").evaluate_all("(texts) => texts.map((text) => text.textContent)")
    assert bars == 7 and len(texts) == bars, (bars, texts)
    assert any(re.match(r"0: tied", text) for text in texts), texts
    page.close()
