"""Every page in headless chromium, as a teacher uses it: it opens with no error box, a setting changes what it
shows, and the link copied with "Copy link to this view" opens the same numbers in a fresh browser (issue 16).

Each page's default view is saved to ``screenshots/<page>.png``.
"""

import time

import pytest

import ui
from tests.browser_support import SCRIPT_STATE, main_area, no_error_box, open_page, shot, slider, wait_until_idle

pytestmark = pytest.mark.browser

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
BUSY_JS = ("() => document.querySelectorAll('[data-stale=\"true\"], [data-testid=\"stSkeleton\"], "
           "[data-testid=\"stSpinner\"]').length")


def numbers(page, settle_s: float = 1.0, timeout_s: float = 120) -> list[str]:
    """What the page shows once it has stopped changing (charts draw after the script run ends).

    Callers have just waited for the script run to end (open_page, fill, nudge, pick); a run still going, a
    stale element, a skeleton or a spinner restarts the ``settle_s`` clock."""
    deadline = time.time() + timeout_s
    last, since = None, time.time()
    while time.time() < deadline:
        now = page.evaluate(NUMBERS_JS)
        if page.evaluate(BUSY_JS) or page.evaluate(SCRIPT_STATE) != "notRunning":
            last, since = None, time.time()
        elif now != last:
            last, since = now, time.time()
        elif time.time() - since >= settle_s and now:
            return now
        time.sleep(0.2)
    raise AssertionError("the page kept changing")


def fill(page, selector, text, commit="Enter"):
    field = page.locator(selector).first
    field.fill(text)
    field.press(commit)
    wait_until_idle(page)


def nudge(page, label, presses=2):
    handle = slider(page, label)
    handle.focus()
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


# what a teacher changes on each page (each leaves at least one setting away from its default)
CHANGES = {
    "text": lambda p: (pick(p, "Corpus", "US census first names"),
                       fill(p, '[data-testid="stSidebar"] input[type="number"]', "7")),
    "tokens": lambda p: fill(p, '[data-testid="stTextArea"] textarea', "Hello classroom: 12 tokens, maybe 13?",
                             commit="Control+Enter"),
    "embeddings": lambda p: fill(p, 'input[aria-label^="Tokens to compare"]', " print range len"),
    "attention": lambda p: (fill(p, 'input[aria-label="Sentence"]', "The function returns a list of values"),
                            nudge(p, "Layer", 1)),
    "model": lambda p: fill(p, 'input[aria-label="A sentence"]', "A class defines new objects"),
    "inside": lambda p: fill(p, 'input[aria-label="A sentence"]', "The while loop repeats a block of code"),
    "training": lambda p: nudge(p, "Positions per sequence", 2),
    "sampling": lambda p: (fill(p, 'input[aria-label="Prompt"]', "The while statement"), nudge(p, "Temperature", 3)),
}
STAGES = [stage for stage in ui.PIPELINE if stage.exists]


def test_every_page_is_covered():
    assert set(CHANGES) == {stage.key for stage in STAGES}


@pytest.mark.parametrize("stage", STAGES, ids=[s.key for s in STAGES])
def test_page_opens_and_its_link_reproduces_the_view(app_url, browser, stage):
    path = "" if stage.key == "text" else stage.key
    teacher = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = open_page(teacher, f"{app_url}/{path}")
    title = page.locator("h1").first
    assert title.inner_text().strip(), "every page has a title"
    no_error_box(page)
    default_numbers = numbers(page)
    shot(page, stage.key)

    CHANGES[stage.key](page)
    shown = numbers(page)
    assert shown != default_numbers, "the change shows on the page"
    no_error_box(page)
    link = copied_link(page)
    assert "?" in link and link.startswith(f"{app_url}/{path}"), link
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    teacher.close()

    student = browser.new_context(viewport={"width": 1400, "height": 1000})  # a fresh browser: nothing shared
    view = open_page(student, link)
    assert numbers(view) == shown
    no_error_box(view)
    assert main_area(view).get_by_text("This link's settings were partly used").count() == 0
    student.close()
