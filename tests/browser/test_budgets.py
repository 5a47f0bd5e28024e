"""The server's memory budget in a real browser: a lab run that does not fit is refused beside its button, and the
reason survives the page's rerun (the Adapt page's Start buttons live in a fragment that reruns the whole page at
once: the reason used to be lost). Its own server, with a 100 MB share per student (less than one worker needs).

Every wait is on the app's state (a text), never a fixed sleep."""

import pytest

from tests.support.app_server import AppDidNotStart, start_app
from tests.support.browser import main_area, no_error_box, open_page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def small_share(tmp_path_factory):
    """A server whose students each have 100 MB to train in."""
    folder = tmp_path_factory.mktemp("small-share")
    env = {
        "LLMVIZ_STUDENT_MEMORY_MB": "100",
        "LLMVIZ_SESSION_TIMEOUT": "3",
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
    }
    (folder / "runs").mkdir()
    try:
        server = start_app("app.py", env=env, log=folder / "server.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))
    yield server.url
    server.stop()


def test_a_refused_lab_run_says_why_beside_its_button_after_the_rerun(small_share, browser):
    page = open_page(browser, f"{small_share}/adapt")
    main = main_area(page)
    start = main.get_by_role("button", name="Start both runs")
    start.scroll_into_view_if_needed()
    start.click()
    said = main.get_by_text("your share has 100 MB left").first
    said.wait_for()
    text = said.inner_text()
    assert text.startswith("A race of 2 runs on the picked model (") and "needs about" in text
    assert text.endswith("stop one of your runs, or wait until one ends.")
    no_error_box(page)
    page.close()
