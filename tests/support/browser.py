"""Shared by every browser test file: one streamlit server and one headless Debian chromium per test process.

conftest.py loads this module as a plugin, so every test file can ask for the ``app_url`` and ``browser``
fixtures; import helpers such as ``wait_until_idle`` from here. Mark browser test modules with
``pytestmark = pytest.mark.browser``.

The server is started once per test process (pytest-xdist worker) and shared by all its browser tests,
so its caches stay warm. It runs as a teacher would run it, with four test settings:

- ``HF_HUB_CACHE`` is a temporary Hugging Face cache holding a tiny random GPT-2 (GPT-2's 50,257-token
  vocabulary, 2 layers) under the id ``gpt2``, so ``?model=hub:gpt2`` works offline (``HF_HUB_OFFLINE=1``);
- ``LLMVIZ_SESSION_TIMEOUT=3``: a closed browser session loses its runs after 3 s (default 30 s);
- ``LLMVIZ_TIMINGS`` logs every script run and section run (:func:`script_runs` reads it), which is
  how the fragment tests see what a widget change reran;
- ``LLMVIZ_RUNS_DIR`` and ``LLMVIZ_CACHE_DIR`` are empty temporary folders (nothing of the developer's);
- ``LLMVIZ_WATCH_BUDGET=4``: live sections refresh every 2 s whatever earlier tests on this server watched.

Every wait is on the app's state (a text, an element, the script-run state), never a fixed sleep.
"""

import json
import os
import time
from pathlib import Path

import pytest

from tests.support.app_server import AppDidNotStart, start_app
from tests.support.paths import ROOT

CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "screenshots"
IN_CI = os.environ.get("CI", "").lower() == "true"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """The streamlit server of this test process: ``(url, timings_log)``."""
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail("CI=true: chromium must be installed (.ci/run installs it with apt)")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    from tests.support.gpt2 import make_hf_gpt2, save_as_cached_repo

    folder = tmp_path_factory.mktemp("app-server")
    hub = folder / "hub"
    save_as_cached_repo(
        make_hf_gpt2(vocab_size=50257, n_layer=2, n_embd=32, n_head=2, n_positions=64, seed=7), hub, "gpt2"
    )
    timings = folder / "timings.jsonl"
    (folder / "runs").mkdir()
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(hub),
        "LLMVIZ_SESSION_TIMEOUT": "3",
        "LLMVIZ_TIMINGS": str(timings),
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
        # one server serves every browser test of a worker, one after another: other tests' watching must not
        # slow this test's refreshes (the adaptive interval itself is tested in tests/app/test_watch.py)
        "LLMVIZ_WATCH_BUDGET": "4",
        # every browser test's window is a new student from 127.0.0.1: not the hostile client the limit is for
        # (tests/browser/test_identity_limits.py tests it on a server of its own)
        "LLMVIZ_NEW_STUDENTS_PER_MINUTE": "0",
    }
    try:
        server = start_app("app.py", env=env, log=folder / "server.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))
    yield server.url, timings
    server.stop()


@pytest.fixture(scope="session")
def app_url(app_server):
    return app_server[0]


@pytest.fixture(scope="session")
def timings_log(app_server) -> Path:
    return app_server[1]


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """Headless chromium with one profile for this test process; every test opens its pages in new windows.

    A window is a new session of the app, as fresh as a new browser for it: Streamlit keeps a session per tab (its
    websocket), and llmviz keeps nothing in the browser (no cookie or web storage of its own: :func:`open_page`
    checks). What the windows share is the browser's disk caches, so Streamlit's JavaScript is compiled once per
    test process, not once per page opened: about 1 s of chromium's CPU less per page on 2 cores, ~40 CPU-s over
    the browser tests. Clipboard access and downloads are allowed. ``benchmarks/class_load.py`` measures what fresh
    browsers cost the server (their static files), as a class would open them."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if IN_CI:
            pytest.fail("CI=true: playwright must be installed")
        pytest.skip("playwright is not installed")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        _PLAYWRIGHT.append(playwright)  # for :func:`people`: one Playwright per thread
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            accept_downloads=True,
            permissions=["clipboard-read", "clipboard-write"],
        )
        yield context
        context.close()
        _PLAYWRIGHT.clear()


_PLAYWRIGHT: list = []  # the ``browser`` fixture's Playwright while it runs


@pytest.fixture
def people(browser):
    """``people()`` → a new person's browser: a context of its own (its own cookies, so its own student however many
    times it navigates), in a second chromium that ends with the test. The ``browser`` fixture's windows share one
    cookie jar: a student's window that follows the teacher (a navigation) would load as the last student opened.
    :func:`person_page` opens a person's window."""
    chromium = _PLAYWRIGHT[0].chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        yield lambda: chromium.new_context(viewport={"width": 1400, "height": 1000})
    finally:
        chromium.close()


@pytest.fixture(autouse=True)
def _windows_close_with_their_test(request):
    """A browser test's windows close when it ends, whether or not it closed them: an open window is a live session
    (its sections may refresh, its runs train) and chromium goes on drawing it beside the next tests."""
    yield
    if "browser" in request.fixturenames:
        for page in request.getfixturevalue("browser").pages[1:]:  # pages[0]: the blank page new_window asks
            page.close()


# ---------------------------------------------------------------------------- waiting on the app

# 'drawing': the script run has ended but elements are still Streamlit's placeholders (a gray bar: each element is
# drawn inside React's Suspense, whose fallback shows until the code of its kind has loaded, and a custom component
# until it says it is ready). On a loaded machine a page's widgets stayed placeholders for seconds after its run
# ended (CI: the widget walk of Tuning found no widget to operate; 2.7 s seen here on a warm browser).
SCRIPT_STATE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return 'none';
  if (app.getAttribute('data-test-connection-state') !== 'CONNECTED') return 'connecting';
  const state = app.getAttribute('data-test-script-state') || 'none';
  if (state === 'notRunning' && document.querySelector('[data-testid="stSkeleton"]')) return 'drawing';
  return state;
}"""


RUN_STATES = {"running", "rerunRequested", "stopRequested"}  # a script (or section) run asked for or going on


def wait_until_idle(page, timeout_s: float = 120, quiet_s: float = 1.0, settle_s: float = 0.4) -> None:
    """Wait until the app is connected and its script has ended.

    Streamlit marks its root element with the script-run state (``initial`` → ``running`` →
    ``notRunning``; ``rerunRequested`` from the moment a widget change is sent); a page whose run has ended but
    whose elements are still placeholders reads ``drawing`` (:data:`SCRIPT_STATE`). The page is idle once
    it reads ``notRunning`` for ``quiet_s`` (the change may not have reached the app yet: a slider
    sends its value after a short debounce), or for ``settle_s`` once a run was seen and has ended
    (a chained ``st.rerun`` starts within milliseconds), or, on a page with a live section that reruns
    every second or two (a run training), once the last 3 s were mostly ``notRunning`` (only those
    short reruns)."""
    start = time.time()
    deadline = start + timeout_s
    samples: list[tuple[float, bool]] = []
    seen_run = False
    while time.time() < deadline:
        now = time.time()
        state = page.evaluate(SCRIPT_STATE)
        seen_run = seen_run or state in RUN_STATES
        samples.append((now, state == "notRunning"))
        samples = [(t, idle) for t, idle in samples if now - t <= 3.0]
        needed = settle_s if seen_run else quiet_s
        recent = [idle for t, idle in samples if now - t <= needed]
        if now - start >= needed and recent and all(recent) and samples[0][0] <= now - needed:
            return
        if now - start >= 3.0 and sum(idle for _, idle in samples) >= 0.75 * len(samples):
            return
        time.sleep(0.1)
    raise AssertionError(f"the page kept running for {timeout_s} s")


def eventually(check, timeout_s: float = 120, what: str = "the expected state"):
    """Poll ``check()`` until it returns something true (a page with a live section is never idle for long)."""
    deadline = time.time() + timeout_s
    while True:
        try:
            found = check()
        except AssertionError:
            found = None
        if found:
            return found
        if time.time() > deadline:
            raise AssertionError(f"never reached {what} in {timeout_s} s")
        time.sleep(0.25)


# What the browser keeps for the app besides Streamlit's own (its theme and sidebar state in localStorage, its XSRF
# cookie): nothing, so two tabs of one profile are two independent sessions.
NOT_STREAMLITS = """() => Object.keys(localStorage).concat(Object.keys(sessionStorage))
  .filter((key) => !key.startsWith('st'))
  .concat(document.cookie.split(';').map((c) => c.trim().split('=')[0])
    .filter((n) => n && n !== '_streamlit_xsrf' && n !== 'llmviz_student'))"""
STUDENT_COOKIE = "llmviz_student"  # ui.identity.COOKIE: who the student is (a random secret)


def new_window(browser):
    """A new page of ``browser`` (the persistent context of the ``browser`` fixture) in a window of its own.

    Playwright's ``new_page`` opens a tab beside the others in one window, and chromium draws only a window's front
    tab: in an earlier tab (Alice's, once Bob's opened) every click, scroll and screenshot waited about 1.5 s for a
    frame, with the CPU idle. A window of its own is drawn like any window, as each student's browser is. Playwright
    has no option for it: chromium's DevTools protocol opens the window (``Target.createTarget``), and Playwright
    hands the new page over as usual."""
    opener = browser.pages[0] if browser.pages else browser.new_page()  # any open page can ask for a window
    launcher = browser.new_cdp_session(opener)
    try:
        with browser.expect_page() as opened:
            launcher.send("Target.createTarget", {"url": "about:blank", "newWindow": True})
    finally:
        launcher.detach()
    return opened.value


def open_page(browser, url: str, viewport=(1400, 1200), before=None, same_student: bool = False):
    """A new window at ``url`` (a new session of the app, as a student opening a link), once its first script run
    has ended. ``before(page)`` runs before the address loads (say, ``page.add_init_script``).

    Every window is a new student (as a new browser would be): the student cookie of the windows before is cleared
    first (their open tabs keep their student: a session reads it once). ``same_student=True``: the window is
    another tab of the last window's student (the cookie is kept)."""
    if not same_student:
        browser.clear_cookies(name=STUDENT_COOKIE)
    page = new_window(browser)
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    page.set_default_timeout(120_000)  # a loaded 2-core machine can take a while to draw a page
    if before is not None:
        before(page)
    page.goto(url, timeout=120_000)
    wait_until_idle(page)
    assert page.evaluate(NOT_STREAMLITS) == [], "llmviz keeps nothing else in the browser"
    return page


def person_page(person, url: str, idle: bool = True):
    """The one window of a person (a context of :func:`people`) at ``url``, once its first script run has ended
    (``idle=False``: once it has loaded; a page that a follower's script moves on at once is never idle there)."""
    page = person.new_page()
    page.set_default_timeout(120_000)  # a loaded 2-core machine can take a while to draw a page
    page.goto(url, timeout=120_000)
    if idle:
        wait_until_idle(page)
    return page


def press(page, button, shown, timeout_s: float = 30, tries: int = 3) -> None:
    """Press ``button`` (a locator) until ``shown`` (a locator) is visible, as a person presses a button again when
    nothing happened.

    CI once saw a press change nothing: *Delete it* pressed as a finished run's live section reran the whole page
    (what is below it moves), and *Yes, delete it* never came. Our reading, not reproduced here: the page redrew
    under the pointer between Playwright's check of what is under it and the mouse's down and up, and the press
    never reached the app. ``button`` is pressed again only once the page is idle with ``shown`` still not drawn and
    ``button`` still there: a press that reached the app has changed the page by then, so no press counts twice."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # installed where a browser test runs

    for _ in range(tries):
        button.click()
        try:
            shown.first.wait_for(timeout=timeout_s * 1000)
            return
        except PlaywrightTimeout:  # look again once the page has ended its runs
            wait_until_idle(page)
            if shown.first.is_visible() or not button.is_visible():
                break
    shown.first.wait_for(timeout=timeout_s * 1000)


def no_error_box(page) -> None:
    """Neither a traceback nor an st.error box anywhere on the page."""
    boxes = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']")
    assert boxes.count() == 0, boxes.first.inner_text()


def main_area(page):
    return page.get_by_test_id("stMainBlockContainer")


def sidebar(page):
    return page.get_by_test_id("stSidebar")


def go(page, title: str, idle: bool = True) -> None:
    """Navigate inside the app, like a student clicking the sidebar (the browser session stays).

    ``idle=False`` for a page that redraws a live section every 2 s (a run training): it never stays
    idle for long, so wait on the text you expect instead."""
    page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text=title).first.click()
    if idle:
        wait_until_idle(page)


def open_lazy(page, label: str) -> None:
    """Open a lazy section (ui.sections.lazy: an expander whose content runs only once opened) and wait for it."""
    summary = main_area(page).get_by_test_id("stExpander").filter(has_text=label).first.locator("summary")
    try:
        summary.scroll_into_view_if_needed(timeout=60_000)
    except Exception as error:
        shot(page, "lazy-missing", full_page=True)
        raise AssertionError(f"no lazy section {label!r} on the page: {main_area(page).inner_text()[:2000]}") from error
    summary.click()
    wait_until_idle(page)


def slider(page, label: str, index: int = 0):
    return page.locator("[data-testid='stSlider']").filter(has_text=label).get_by_role("slider").nth(index)


def choose(page, label: str, option: str, where=None) -> None:
    """Open the selectbox labelled ``label`` and pick ``option``. A rerun that redraws the box while it opens
    closes its list again (a page that has just finished a job reruns once more): then it is opened again."""
    box = (where or page).get_by_role("combobox", name=label, exact=True).first
    wanted = page.get_by_role("option", name=option, exact=True).first
    for _ in range(3):
        box.click()
        try:
            wanted.wait_for(timeout=15_000)
            break
        except Exception:  # noqa: BLE001 - playwright's timeout: the list closed before it showed
            page.keyboard.press("Escape")
            wait_until_idle(page)
    wanted.click()
    wait_until_idle(page)


def shot(page, name: str, full_page: bool = False) -> Path:
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def script_runs(log: Path) -> list[dict]:
    """The lines of the server's timing log: one per page run (``page:<name>``) and section run."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


BUSY = """() => document.querySelectorAll('[data-stale="true"], [data-testid="stSkeleton"], [data-testid="stSpinner"]')
  .length"""
PAGE_SHAPE = """() => [document.querySelector('[data-testid="stMain"]').scrollHeight,
  document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg, .katex-display').length]"""


def settled(page, measure: str = PAGE_SHAPE, timeout_s: float = 120):
    """``page.evaluate(measure)`` once the page has stopped changing (charts and formulas draw after the script run):
    the same for a second, with nothing stale, loading or spinning. The default measure is the page's height and how
    many charts and formulas it has drawn."""
    deadline = time.time() + timeout_s
    last, since = None, time.time()
    while time.time() < deadline:
        now = page.evaluate(measure)
        if page.evaluate(BUSY) or now != last:
            last, since = now, time.time()
        elif time.time() - since >= 1.0:
            return now
        page.wait_for_timeout(200)
    raise AssertionError("the page kept changing")
