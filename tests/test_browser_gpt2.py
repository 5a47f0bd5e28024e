"""GPT-2 in the real browser (issue 17): every page on a tiny GPT-2 placed in the Hugging Face cache, no error box.

The server is started with ``HF_HUB_CACHE`` pointing at a temporary cache where transformers'
``save_pretrained`` wrote a tiny random GPT-2 (GPT-2's 50,257-token vocabulary, 2 layers) under
the id ``gpt2``; each page is opened with ``?model=hub:gpt2`` as a shared link would.
"""

import pytest

import ui
from tests.browser_support import wait_until_idle
from tests.gpt2_support import make_hf_gpt2, save_as_cached_repo

pytestmark = pytest.mark.browser

PAGES = [stage for stage in ui.PIPELINE if stage.exists]


@pytest.fixture(scope="module", autouse=True)
def gpt2_in_cache(tmp_path_factory):
    """Before the module's server starts: a cache holding the tiny GPT-2, used by that server."""
    root = tmp_path_factory.mktemp("hub")
    save_as_cached_repo(make_hf_gpt2(vocab_size=50257, n_layer=2, n_embd=32, n_head=2, n_positions=64, seed=7),
                        root, "gpt2")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_CACHE", str(root))
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield root


@pytest.fixture(scope="module")
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("stage", PAGES, ids=[s.key for s in PAGES])
def test_page_on_gpt2_has_no_error_box(gpt2_in_cache, app_url, page, stage):
    slug = "" if stage.path.endswith("home.py") else stage.path.removeprefix("pages/").removesuffix(".py")
    page.goto(f"{app_url}/{slug}?model=hub:gpt2", timeout=120_000)
    wait_until_idle(page, timeout_s=240)
    exceptions = page.locator("[data-testid='stException']")
    assert exceptions.count() == 0, exceptions.first.inner_text()
    errors = page.locator("[data-testid='stAlertContentError']")
    assert errors.count() == 0, errors.first.inner_text()
    sidebar = page.locator("[data-testid='stSidebar']")
    assert "GPT-2 small (124M), from the Hugging Face cache" in sidebar.inner_text(), "the picker shows GPT-2"
    if stage.key == "text":
        page.screenshot(path="/tmp/llmviz-gpt2-home.png")
