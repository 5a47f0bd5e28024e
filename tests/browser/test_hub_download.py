"""A pretrained model downloaded from the picker, in a real browser (the sidebar's progress bar is an st.fragment that
refreshes on its own, which AppTest does not run): the bar moves while the weights arrive, Cancel stops the download
and the pages go back to the shipped GPT, and a download that ends shows the model. The Hub is a fake one on
127.0.0.1 (tests/support/fake_hub.py) serving a small random GPT-2 slowly; the server has a cache of its own."""

from __future__ import annotations

import re

import pytest

from tests.support.app_server import AppDidNotStart, start_app
from tests.support.browser import choose, eventually, no_error_box, open_page, shot, sidebar, wait_until_idle
from tests.support.fake_hub import FakeHub
from tests.support.hub_models import gpt2_folder

pytestmark = pytest.mark.browser

PICKER = "Model shown on every page"
OFFER = "GPT-2 small: get 548 MB"  # fits the picker's box, with what it costs
PROGRESS = re.compile(r"Downloading GPT-2 small \(124M\): [\d.]+ MB of (\d+) MB \((\d+)%\)")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    folder = tmp_path_factory.mktemp("repo")
    gpt2_folder(folder, n_embd=160)  # ~33 MB of weights: four of huggingface_hub's 10 MB chunks
    with FakeHub({"gpt2": folder}, bytes_per_s=2e6) as fake:
        yield fake


@pytest.fixture(scope="module")
def online_app(hub, tmp_path_factory):
    """An app server that can download (from the fake Hub) into an empty cache of its own."""
    folder = tmp_path_factory.mktemp("online-app")
    env = {
        "HF_HUB_OFFLINE": "0",
        "HF_ENDPOINT": hub.endpoint,
        "HF_HUB_CACHE": str(folder / "hub"),
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
    }
    try:
        server = start_app("app.py", env=env, log=folder / "server.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))
    yield server.url
    server.stop()


def progress(page) -> tuple[int, int] | None:
    """(total MB, percent) of the sidebar's progress bar, if it shows one."""
    found = PROGRESS.search(sidebar(page).inner_text())
    return (int(found.group(1)), int(found.group(2))) if found else None


def test_the_bar_moves_cancel_stops_and_a_finished_download_shows_the_model(online_app, hub, browser):
    page = open_page(browser, f"{online_app}/sampling")
    choose(page, PICKER, OFFER, where=sidebar(page))
    first = eventually(lambda: progress(page), what="the progress bar")
    eventually(lambda: (now := progress(page)) and now[1] > first[1], what="the bar to move on its own")
    shot(page, "hub-download-progress")
    assert "The shipped GPT is shown until then" in page.inner_text("body")  # the page did not wait
    no_error_box(page)

    sidebar(page).get_by_role("button", name="Cancel the download").click()
    eventually(lambda: "Cancelled" in sidebar(page).inner_text(), what="the cancellation notice")
    wait_until_idle(page)
    assert "Shipped GPT" in sidebar(page).get_by_role("combobox", name=PICKER).first.input_value()
    assert progress(page) is None

    hub.bytes_per_s = None  # this time it arrives at once
    choose(page, PICKER, OFFER, where=sidebar(page))
    eventually(
        lambda: "OpenAI's pretrained GPT-2 small (124M), from the Hugging Face cache." in sidebar(page).inner_text(),
        what="GPT-2 in the picker once downloaded",
    )
    wait_until_idle(page)
    no_error_box(page)
    assert "OpenAI GPT-2 small (124M)" in page.inner_text("body")
    page.close()
