"""The live lab in real chromium: background runs, the shared model picker and its step slider, sessions.

Every wait is on the app's state (a text or an element), never a fixed sleep.
"""

import os
import re

import pytest

from tests.browser_support import SHOTS, wait_until_idle

pytestmark = pytest.mark.browser

PAGES = ["Home", "Tokens", "Embeddings", "Attention", "Model", "Sampling"]
SHOT_DIR = SHOTS / "lab-core"


@pytest.fixture(scope="module", autouse=True)
def short_session_timeout():
    """The server of this module forgets a closed browser session after 3 s (default 30 s)."""
    before = os.environ.get("LLMVIZ_SESSION_TIMEOUT")
    os.environ["LLMVIZ_SESSION_TIMEOUT"] = "3"
    yield
    if before is None:
        os.environ.pop("LLMVIZ_SESSION_TIMEOUT", None)
    else:
        os.environ["LLMVIZ_SESSION_TIMEOUT"] = before


def start_run(page, app_url, model="char · MLP (Bengio et al.)", steps_to_end=True):
    page.goto(f"{app_url}/training", timeout=120_000)
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    if model:
        main.get_by_test_id("stSelectbox").first.click()
        page.get_by_role("option", name=model).click()
        wait_until_idle(page)
    if steps_to_end:
        steps = main.get_by_role("slider").nth(4)  # Steps: to the maximum (2000)
        steps.focus()
        page.keyboard.press("End")
        wait_until_idle(page)
    main.get_by_role("button", name="Train", exact=True).click()
    total = 2000 if steps_to_end else 300
    main.get_by_text(re.compile(rf"(running|finished) · step \d+/{total}")).first.wait_for(timeout=120_000)
    return main


def current_step(main) -> int:
    text = main.get_by_text(re.compile(r"running · step \d+/2000")).first.inner_text()
    return int(re.search(r"step (\d+)/2000", text).group(1))


def sidebar_options(page) -> list[str]:
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").first.click()
    options = [o.inner_text() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return options


def test_background_run_survives_every_page_with_one_loop(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    main = start_run(page, app_url)
    first = current_step(main)
    for name in PAGES:  # the run trains on while the student looks around
        # in-app navigation (page.goto would open a new browser session)
        page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text=name).first.click()
        wait_until_idle(page)
        # the sidebar shows the run's progress on every page
        page.get_by_test_id("stSidebar").get_by_text(re.compile(r"step \d+/2000")).first.wait_for(timeout=60_000)
        assert page.locator("[data-testid='stException']").count() == 0, name
    page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Loss & training").first.click()
    main = page.get_by_test_id("stMainBlockContainer")
    main.get_by_text(re.compile(r"running · step \d+/2000")).first.wait_for(timeout=60_000)
    assert current_step(main) > first  # it kept training while we were away
    # one run, one loop: the server trains exactly one run for this session
    main.get_by_text("On this server: 1 run(s) training").first.wait_for(timeout=30_000)
    table = main.get_by_test_id("stDataFrame").first
    table.wait_for()
    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOT_DIR / "training-running.png"), full_page=False)
    main.get_by_role("button", name="Stop", exact=True).first.click()
    main.get_by_text("stopped at step", exact=False).first.wait_for(timeout=60_000)
    main.get_by_text("On this server: 0 run(s) training").first.wait_for(timeout=30_000)
    page.close()


def samples(main) -> tuple[str, str]:
    """The two generated texts of "Your model at step 0 and at step N"."""
    section = main.get_by_test_id("stHorizontalBlock").filter(has_text="Step 0 (initial weights)").last
    codes = section.get_by_test_id("stCode")
    return codes.nth(0).inner_text(), codes.nth(1).inner_text()


def test_step_slider_shows_the_run_at_each_step(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(f"{app_url}/training", timeout=120_000)
    wait_until_idle(page)
    main = page.get_by_test_id("stMainBlockContainer")
    main.get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name="char · MLP (Bengio et al.)").click()
    wait_until_idle(page)
    main.get_by_role("radio", name="char").check(force=True)
    wait_until_idle(page)
    main.get_by_role("button", name="Train", exact=True).click()
    main.get_by_text(re.compile(r"finished · step 300/300")).first.wait_for(timeout=240_000)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Step (snapshot of the run)").wait_for(timeout=60_000)  # the run stays picked
    main.get_by_text("Step 300", exact=True).wait_for(timeout=60_000)
    wait_until_idle(page)
    step0, step300 = samples(main)
    assert step0 != step300  # the same prompt and seed, different weights: different text
    sidebar.get_by_role("slider").first.focus()
    page.keyboard.press("Home")  # the step slider to step 0
    main.get_by_text("Step 0", exact=True).nth(1).wait_for(timeout=60_000)  # both columns now at step 0
    wait_until_idle(page)
    left, right = samples(main)
    assert left == right == step0  # the slider's step 0 is the run's initial weights
    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOT_DIR / "step-slider.png"), full_page=False)
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()


def test_a_closed_session_stops_its_run_and_others_never_see_it(app_url, browser):
    alice = browser.new_context(viewport={"width": 1400, "height": 1400})
    bob = browser.new_context(viewport={"width": 1400, "height": 1400})
    a = alice.new_page()
    start_run(a, app_url)
    b = bob.new_page()
    b.goto(f"{app_url}/training", timeout=120_000)
    wait_until_idle(b)
    b_main = b.get_by_test_id("stMainBlockContainer")
    b_main.get_by_text("On this server: 1 run(s) training").first.wait_for(timeout=30_000)
    assert not any("Your run" in o for o in sidebar_options(b))  # bob never sees alice's run
    assert any("Your run" in o for o in sidebar_options(a))
    alice.close()  # alice closes her tab: her run must end by itself
    for _ in range(30):  # bob's page is static: load it again until the server reports no run (≤ ~60 s)
        b.reload()
        wait_until_idle(b)
        if b.get_by_text("On this server: 0 run(s) training").count():
            break
    assert b.get_by_text("On this server: 0 run(s) training").count() == 1
    bob.close()
