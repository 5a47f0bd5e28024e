"""The live lab in real chromium (issue 12): a run trains in the background while its student looks around.

One story, as in class: Alice trains a GPT on the Python manual; while it trains she visits another page, which
shows her run (step 0 beside step N) and the run keeps training; Bob, in another session (his own tab), never sees
her run; she pauses it, and the paused run is still picked on every page (a raw websocket client clearing the
server's caches, issue 19, breaks nothing); the step slider in the sidebar shows her run's initial weights at step 0;
Resume and Stop act; a run whose tab closes ends by itself. The run trains only while the story needs it to: on 2
cores its
training loop would take one core from the rest of the suite."""

import re
import urllib.parse

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from websockets.sync.client import connect

from tests.support.browser import (
    eventually,
    go,
    main_area,
    no_error_box,
    open_lazy,
    open_page,
    shot,
    sidebar,
    wait_until_idle,
)

pytestmark = pytest.mark.browser

# gpt-mini trains ~10 steps/s on one CPU thread: 2000 steps outlast the tour below with a wide margin
# a link sets the Training page's widgets: GPT mini on the Python manual (a BPE of 512 tokens), 2000 steps
TRAINING = "training?" + urllib.parse.urlencode({"train_model": "GPT mini (4 layers, d 128)", "steps": 2000})
RUNNING = re.compile(r"running · step (\d+)/2000")
PAUSED = re.compile(r"paused · step \d+/2000")
YOUR_RUN = re.compile(r"Run \d+ · \d\d:\d\d · ")  # how the picker names a run of this session (ui.labels.run_label)


def step_of(locator) -> int:
    return int(re.search(r"step (\d+)/2000", locator.inner_text()).group(1))


def picked(page) -> str:
    """What the sidebar's model picker shows."""
    return sidebar(page).get_by_role("combobox", name="Model shown on every page").input_value()


def sidebar_options(page) -> list[str]:
    sidebar(page).get_by_role("combobox", name="Model shown on every page").click()
    options = [o.inner_text() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return options


def samples(page) -> tuple[str, str]:
    """The two generated texts of the Training page's "Your model at step 0 and at step N"."""
    section = main_area(page).get_by_test_id("stHorizontalBlock").filter(has_text="Step 0").last
    codes = section.get_by_test_id("stCode")
    return codes.nth(0).inner_text(), codes.nth(1).inner_text()


def server_says(page, runs: int) -> bool:
    """Rerun Bob's Training page (no run of his own: it is static) until it reports ``runs`` runs training on the
    server (≤ ~60 s). "r" is Streamlit's rerun key: the script runs again without reloading the whole page."""
    for _ in range(60):
        if main_area(page).get_by_text(f"On this server: {runs} run(s) training").count():
            return True
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # not typed into a field
        page.keyboard.press("r")
        wait_until_idle(page, quiet_s=0.5)
    return False


def clear_cache_from_a_raw_client(app_url: str) -> None:
    """What any websocket client can send (no Origin, no XSRF token): clear every st.cache_* of the server."""
    message = BackMsg()
    message.clear_cache = True
    with connect(app_url.replace("http://", "ws://") + "/_stcore/stream", open_timeout=30) as socket:
        socket.send(message.SerializeToString())


def test_a_run_trains_in_the_background_while_the_student_looks_around(app_url, browser):
    page = open_page(browser, f"{app_url}/{TRAINING}")  # Alice's tab
    main_area(page).get_by_role("button", name="Train", exact=True).click()
    progress = main_area(page).get_by_text(RUNNING).first
    progress.wait_for(timeout=120_000)
    first = step_of(progress)

    # the run is picked on every page at once, and trains on while Alice looks at another page
    go(page, "Attention")
    look_at_her_run(page, RUNNING, "Attention")
    main_area(page).get_by_text("Step 0 (initial weights)", exact=False).first.scroll_into_view_if_needed()
    shot(page, "lab-attention-before-after")
    go(page, "Loss & training", idle=False)
    progress = main_area(page).get_by_text(RUNNING).first
    progress.wait_for()
    assert step_of(progress) > first, "it kept training while Alice was away"
    main_area(page).get_by_text("On this server: 1 run(s) training").first.wait_for()  # one run, one loop
    shot(page, "lab-training-running")

    # Bob, in another session, shares the server but never sees Alice's run
    other = open_page(browser, f"{app_url}/training")  # Bob's tab: another session of the app
    main_area(other).get_by_text("On this server: 1 run(s) training").first.wait_for()
    assert not any(YOUR_RUN.match(option) for option in sidebar_options(other))
    no_error_box(other)

    # Pause: a paused run gives its place on the server back (Bob's page says so, and the suite's two cores go to
    # the other tests), and its page stops redrawing
    main_area(page).get_by_role("button", name="Pause", exact=True).first.click()
    main_area(page).get_by_text(PAUSED).first.wait_for()
    assert server_says(other, 0)
    wait_until_idle(page)

    # the paused run is still picked on every page, with its step 0 beside step N; a raw client clearing the
    # server's caches changes nothing (every page is also rendered with a run training in
    # tests/app/test_pages.py::test_every_page_shows_a_run_while_it_trains, headless)
    for title in ("Sampling", "Embeddings"):
        go(page, title)
        look_at_her_run(page, PAUSED, title)
    clear_cache_from_a_raw_client(app_url)  # any client can do this: the run and its snapshots must survive it
    go(page, "Model")
    look_at_her_run(page, PAUSED, "Model", compares=False)
    go(page, "Loss & training")

    # the step slider: step 0 is the run's initial weights (the same text on both sides), a later step differs
    main_area(page).get_by_text("Your model at step 0 and at step N").first.scroll_into_view_if_needed()
    open_lazy(page, "Generate with both sets of weights")  # generating twice runs only when opened
    step_slider = sidebar(page).get_by_role("slider").first
    step_slider.focus()
    page.keyboard.press("Home")
    main_area(page).get_by_text("Step 0", exact=True).nth(1).wait_for()  # both columns at step 0
    left = eventually(lambda: samples(page)[0] == samples(page)[1] and samples(page)[0], what="equal samples at step 0")
    step_slider = sidebar(page).get_by_role("slider").first
    step_slider.focus()
    page.keyboard.press("End")  # the newest step: the weights have moved
    main_area(page).get_by_text(re.compile(r"^Step [1-9]\d*$")).first.wait_for()
    eventually(lambda: samples(page)[0] == left and samples(page)[1] != left, what="step 0 beside a later step")
    shot(page, "lab-step-slider")

    # Resume, Stop
    main_area(page).get_by_role("button", name="Resume", exact=True).first.click()
    main_area(page).get_by_text(RUNNING).first.wait_for()
    assert server_says(other, 1)
    main_area(page).get_by_role("button", name="Stop", exact=True).first.click()
    main_area(page).get_by_text("stopped at step", exact=False).first.wait_for()
    assert server_says(other, 0)
    no_error_box(page)

    # a second run, then Alice closes her tab: the run ends by itself
    main_area(page).get_by_role("button", name="Train", exact=True).click()
    main_area(page).get_by_text(RUNNING).first.wait_for()
    assert server_says(other, 1)
    page.close()  # Alice closes her tab
    assert server_says(other, 0), "a closed session's run stops by itself"
    other.close()


def look_at_her_run(page, state: re.Pattern, title: str, compares: bool = True) -> None:
    """Alice's run is picked on this page, its progress shows in the sidebar, and (``compares``) the page shows
    step 0 beside step N."""
    assert YOUR_RUN.match(picked(page)), picked(page)
    sidebar(page).get_by_text(state).first.wait_for()
    if compares:
        open_lazy(page, "Compare step 0 with the picked step")  # the comparison runs only once opened
        comparison = main_area(page).get_by_text("Step 0 (initial weights)", exact=False).first
        try:
            comparison.wait_for()
        except Exception as error:
            shot(page, f"lab-failed-{title}")
            raise AssertionError(f"no step 0 vs step N on {title}: {main_area(page).inner_text()[:3000]}") from error
    no_error_box(page)
