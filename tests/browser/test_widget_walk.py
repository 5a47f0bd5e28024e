"""Every widget of every page, operated once in headless chromium (issue 57 item 5: Inside › Features broke on every
interaction while its first-screen test passed).

On each page of app.py's navigation (and the class view, with a teacher key) and each of its tabs, the walk opens
every expander, then operates each widget once, the way a student would: types into text and number inputs, moves
sliders with the keyboard, picks another option of a selectbox, radio or segmented control, ticks checkboxes and
toggles, presses buttons (a button that starts long work is pressed and its run stopped, or, in the default run, left
alone: see :data:`LONG_WORK`). After each it checks that

- no exception box and no "Something went wrong" message appears (``ui.errors.friendly_errors``' words for a crash),
- no "needs the app around it" appears (``ui.routing.ensure_router`` refusing a section's own rerun),
- the tab is still drawn (its first heading is still on the page).

Widgets are found again after every operation (a section redraws its widgets), and each is named by its kind, its
label and its rank among widgets of that name, so a widget that appears after another is operated in its turn. The
walk is parametrized per page and tab so that pytest-xdist spreads it; it operates every widget once (at most
:data:`MOST_WIDGETS` a tab) and ``-m extended`` also presses the buttons that start long work (then Stop) and operates
every widget a second time with another value.

It is in CI's lane (``-m ci``, docs/testing.md): README's suite walks every widget over Streamlit's protocol
(``tests/app/test_widget_walk.py``, the server's side: every section's own rerun), where chromium's drawing of each
widget is most of this walk's cost.
"""

from __future__ import annotations

import collections
import re
import time

import pytest

from tests.support.app_server import start_app
from tests.support.browser import main_area, open_page, shot, sidebar, wait_until_idle
from tests.support.widget_walk import CASES, CRASH, LONG_WORK, MOST_WIDGETS, NEVER, NO_WIDGETS, PAGES, Case

pytestmark = pytest.mark.browser

WIDGETS = (  # the kinds operated, as Streamlit marks them (data-testid)
    "stExpander",
    "stTextInput",
    "stTextArea",
    "stNumberInput",
    "stSlider",
    "stSelectbox",
    "stMultiSelect",
    "stRadio",
    "stCheckbox",
    "stButtonGroup",
    "stButton",
    "stFormSubmitButton",
    "stChatInput",
)
FIND_WIDGETS = """([kinds, pageTabs]) => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]') || document;
  const seen = {};
  const ofKind = {};
  const found = [];
  const nodes = main.querySelectorAll(kinds.map((k) => `[data-testid="${k}"]`).join(','));
  for (const node of nodes) {
    const kind = node.getAttribute('data-testid');
    const labelNode = kind === 'stExpander'
      ? (node.querySelector('summary [data-testid="stMarkdownContainer"]') || node.querySelector('summary'))
      : (node.querySelector('[data-testid="stWidgetLabel"]') || node.querySelector('button') || node);
    const label = (labelNode ? labelNode.innerText : '').trim().split('\\n')[0].slice(0, 80);
    const name = kind + ':' + label;
    const rank = seen[name] = (seen[name] || 0) + 1;
    const index = ofKind[kind] = (ofKind[kind] ?? -1) + 1;
    const box = node.getBoundingClientRect();
    // inside a closed expander (one a rerun drew anew, closed) a widget keeps its width but draws nothing: hidden
    const closed = kind !== 'stExpander' && node.closest('details:not([open])') !== null;
    const hidden = (box.width === 0 && box.height === 0) || closed;
    const disabled = !!node.querySelector('input:disabled, button:disabled, textarea:disabled, [aria-disabled="true"]')
      && kind !== 'stExpander' && kind !== 'stButtonGroup';
    found.push({kind, label, rank, index, hidden, disabled,
                open: kind === 'stExpander' ? node.querySelector('details')?.open ?? false : null});
  }
  // the tabs inside a lesson (a lesson's own tabs, not the page's: the first tab list is the page's when it has one)
  const lists = [...main.querySelectorAll('[role="tablist"]')].slice(pageTabs ? 1 : 0);
  const allTabs = [...main.querySelectorAll('[role="tab"]')];
  for (const list of lists) {
    for (const tab of list.querySelectorAll('[role="tab"]')) {
      const label = tab.innerText.trim().slice(0, 80);
      const name = 'tab:' + label;
      const rank = seen[name] = (seen[name] || 0) + 1;
      const box = tab.getBoundingClientRect();
      found.push({kind: 'tab', label, rank, index: allTabs.indexOf(tab), hidden: box.width === 0 && box.height === 0,
                  disabled: tab.getAttribute('aria-selected') === 'true', open: null});
    }
  }
  return found;
}"""


def widget(page, found: dict):
    """The locator of a widget found by FIND_WIDGETS just now (its place among the main area's widgets of its kind)."""
    return main_area(page).locator(f"[data-testid='{found['kind']}']").nth(found["index"])


def crashed(page) -> str | None:
    """What went wrong on the page, or None: an exception box, a crash message, the router's refusal."""
    boxes = page.locator("[data-testid='stException']")
    if boxes.count():
        return "an exception: " + boxes.first.inner_text()[:600]
    text = main_area(page).inner_text()
    found = CRASH.search(text)
    if found:
        start = max(0, found.start() - 200)
        return f"{found.group(0)!r} in: {text[start : found.end() + 400]}"
    return None


def heading(page) -> str:
    """The open tab's first heading (the page's title on a page without tabs): the walk checks it stays drawn."""
    panel = main_area(page).locator("[role='tabpanel']:visible h2, [role='tabpanel']:visible h3")
    if panel.count():
        return panel.first.inner_text().strip()
    return main_area(page).locator("h1").first.inner_text().strip()


def operate(page, found: dict, second: bool = False, long_work: bool = False) -> str | None:
    """Operate one widget as a student would; returns what was done (None: left alone)."""
    kind, label = found["kind"], found["label"]
    node = widget(page, found) if kind != "tab" else main_area(page).get_by_role("tab").nth(found["index"])
    node.scroll_into_view_if_needed(timeout=30_000)
    if kind == "tab":
        main_area(page).get_by_role("tab").nth(found["index"]).click()
        return "opened"
    if kind == "stExpander":
        node.locator("summary").first.click()
        return "opened"
    if kind in ("stTextInput", "stChatInput"):
        box = node.locator("input, textarea").first
        value = box.input_value()
        box.fill(("the cat sat on the mat" if second else "the") if not value else value + (" cat" if second else " "))
        box.press("Enter")
        return "typed"
    if kind == "stTextArea":
        box = node.locator("textarea").first
        value = box.input_value()
        box.fill(value + (" The cat sat." if second else " ") if value else "the cat sat")
        box.press("Control+Enter")
        return "typed"
    if kind == "stNumberInput":
        up, down = node.get_by_test_id("stNumberInputStepUp"), node.get_by_test_id("stNumberInputStepDown")
        step = down if (second or up.is_disabled()) and not down.is_disabled() else up
        if step.is_disabled():
            return None
        step.click()
        return "stepped"
    if kind == "stSlider":
        thumb = node.get_by_role("slider").first
        now, top = thumb.input_value(), thumb.get_attribute("max")  # an <input type=range>
        thumb.focus()
        page.keyboard.press("ArrowLeft" if second or now == top else "ArrowRight")
        return "moved"
    if kind in ("stSelectbox", "stMultiSelect"):
        node.get_by_role("combobox").first.click()
        options = page.get_by_role("option")
        options.first.wait_for(timeout=15_000)
        count = options.count()
        if kind == "stSelectbox":
            current = node.get_by_role("combobox").first.input_value() or node.inner_text()
            choices = [i for i in range(count) if options.nth(i).inner_text().strip() not in current]
            if not choices:
                page.keyboard.press("Escape")
                return None
            options.nth(choices[-1 if second else 0]).click()
        else:
            options.nth(count - 1 if second else 0).click()
            page.keyboard.press("Escape")
        return "picked"
    if kind == "stRadio":
        choices = node.locator("label:has(input:not(:checked))")
        if not choices.count():
            return None
        choices.nth(choices.count() - 1 if second else 0).click()
        return "picked"
    if kind == "stCheckbox":
        node.locator("label").first.click()
        return "ticked"
    if kind == "stButtonGroup":
        choices = node.locator("button[aria-checked='false'], button:not([aria-checked]):not([kind*='Active'])")
        if not choices.count():
            return None
        choices.nth(choices.count() - 1 if second else 0).click()
        return "picked"
    if kind in ("stButton", "stFormSubmitButton"):
        if NEVER.search(label):
            return None
        if LONG_WORK.search(label) and not long_work:
            return "left alone (long work: -m extended presses it)"
        node.locator("button").first.click()
        if LONG_WORK.search(label):
            stop = main_area(page).get_by_role("button", name=re.compile(r"^Stop"))
            try:
                stop.first.wait_for(timeout=30_000)
                stop.first.click()
            except Exception:  # noqa: BLE001 - playwright's timeout: the work ended (or never showed a Stop)
                pass
        return "pressed"
    return None


def walk(
    page, url: str, page_tabs: bool, second: bool = False, long_work: bool = False, most: int = MOST_WIDGETS
) -> list[str]:
    """Operate every widget of the open page once (opening expanders first as they come; ``page_tabs``: the first
    tab list is the page's own, left to the parametrization); returns what was done.
    Fails at the first widget after which the page shows a crash or loses its tab's heading."""
    done: list[str] = []
    visited: set[tuple[str, str, int]] = set()
    opened: collections.Counter = collections.Counter()  # how often each expander was opened
    title = heading(page)
    path = page.url.split("?")[0]
    while len(done) < most:
        found = page.evaluate(FIND_WIDGETS, [list(WIDGETS), page_tabs])
        todo = [
            w
            for w in found
            if (w["kind"] == "stExpander" or (w["kind"], w["label"], w["rank"]) not in visited)
            and not w["hidden"]
            and not w["disabled"]
            and not (w["kind"] == "stExpander" and (w["open"] or opened[(w["label"], w["rank"])] >= 3))
        ]
        # open what is closed first: what it holds is operated in its turn
        todo.sort(key=lambda w: w["kind"] != "stExpander")
        if not todo:
            break
        target = todo[0]
        visited.add((target["kind"], target["label"], target["rank"]))
        if target["kind"] == "stExpander":  # opened again when a rerun draws it anew, closed (at most 3 times)
            opened[(target["label"], target["rank"])] += 1
        what = f"{target['kind']} {target['label']!r} #{target['rank']}"
        try:
            action = operate(page, target, second=second, long_work=long_work)
        except Exception as error:  # noqa: BLE001 - a widget that moved away under a rerun: the next look finds it
            done.append(f"{what}: could not operate ({type(error).__name__})")
            page.keyboard.press("Escape")
            wait_until_idle(page)
            continue
        if action is None:
            continue
        wait_until_idle(page)
        done.append(f"{what}: {action}")
        problem = crashed(page)
        if problem is None and heading(page) != title:
            problem = f"the tab's heading {title!r} is gone (now {heading(page)!r})"
        if problem:
            shot(page, "walk-failure", full_page=True)
            raise AssertionError(f"{url}: after {what} was {action}: {problem}\n(before it: {done[:-1]})")
        if page.url.split("?")[0] != path:  # a button that opens another page: back to the one walked
            page.goto(url)
            wait_until_idle(page)
    return done


def open_case(browser, app_url: str, case: Case):
    page = open_page(browser, f"{app_url}/{case.path}{case.query}", viewport=(1400, 1000))
    problem = crashed(page)
    assert problem is None, problem
    if case.tab is not None:
        tabs = main_area(page).locator("[data-testid='stTabs']").first.get_by_role("tablist").first.get_by_role("tab")
        assert tuple(t.inner_text().strip() for t in tabs.all()) == PAGES[case.path][1], (
            "the page's tabs changed: update PAGES"
        )
    return page


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_widget_once(app_url, browser, case):
    url = f"{app_url}/{case.path}{case.query}"
    page = open_case(browser, app_url, case)
    done = walk(page, url, case.tab is not None)
    print(f"{case.name}: {len(done)} widgets", *done, sep="\n  ")  # with -s: what the walk did
    assert done or (case.path, case.tab) in NO_WIDGETS, "the walk found no widget: FIND_WIDGETS no longer finds them"
    page.close()


def test_every_sidebar_widget_once(app_url, browser):
    """The shared sidebar (the corpus, the seed, the device, presenter mode…) on Home: each rerun the page."""
    page = open_page(browser, f"{app_url}/", viewport=(1400, 1000))
    title = heading(page)
    for kind in ("stNumberInput", "stCheckbox", "stSelectbox"):
        labels = [n.inner_text().strip().split("\n")[0] for n in sidebar(page).locator(f"[data-testid='{kind}']").all()]
        for label in labels:
            if "Presenter" in label:
                continue  # presenter mode has its own test (tests/browser/test_presenter.py)
            node = sidebar(page).locator(f"[data-testid='{kind}']").filter(has_text=label).first
            if kind == "stNumberInput":
                node.get_by_test_id("stNumberInputStepUp").click()
            elif kind == "stCheckbox":
                node.locator("label").first.click()
            else:  # the second option: a shipped model, a shipped corpus, the CPU (nothing downloaded)
                pick_second(page, node)
            wait_until_idle(page)
            problem = crashed(page)
            assert problem is None, f"after the sidebar's {label!r}: {problem}"
            assert heading(page) == title
    page.close()


def pick_second(page, node) -> None:
    """Open a selectbox and pick its second option; a rerun that redraws the box while it opens closes its list
    again (the sidebar redraws after a pick): then it is opened again."""
    options = page.get_by_role("option")
    for _ in range(3):
        node.get_by_role("combobox").click()
        try:
            options.nth(1).wait_for(timeout=15_000)
            break
        except Exception:  # noqa: BLE001 - playwright's timeout: the list closed before it showed
            page.keyboard.press("Escape")
            wait_until_idle(page)
    options.nth(1).click()


@pytest.mark.extended
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_widget_twice_and_the_long_work(app_url, browser, case):
    """The extended walk: every widget with a second value, after a first walk that also presses the buttons that
    start long work (and stops them)."""
    url = f"{app_url}/{case.path}{case.query}"
    page = open_case(browser, app_url, case)
    walk(page, url, case.tab is not None, long_work=True, most=200)
    walk(page, url, case.tab is not None, second=True, most=200)
    page.close()


TEACHER_KEY = "a-long-random-teacher-key-for-the-widget-walk"


def test_the_class_view_every_widget_once(browser, tmp_path):
    """The teacher's class view (``/classroom``, a server with a teacher key), every widget once."""
    env = {
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(tmp_path / "runs"),
        "LLMVIZ_CACHE_DIR": str(tmp_path / "cache"),
        "LLMVIZ_TEACHER_KEY": TEACHER_KEY,
    }
    server = start_app("app.py", env=env, log=tmp_path / "server.log")
    try:
        page = open_page(browser, f"{server.url}/classroom?teacher={TEACHER_KEY}", viewport=(1400, 1000))
        assert crashed(page) is None
        started = time.monotonic()
        walk(page, f"{server.url}/classroom", False)
        assert time.monotonic() - started < 600
        page.close()
    finally:
        server.stop()
