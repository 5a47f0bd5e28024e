"""Pretrained models from the Hub in the app (ui/hub.py): the picker offers GPT-2 small and SmolLM2-135M, a
pick downloads in the background (a fake Hub on 127.0.0.1: tests/support/fake_hub.py) while pages show the shipped
GPT, and the Inside page's offer of a bigger model shows, downloads, or says how to get it offline."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from llmviz.hub import download
from llmviz.hub.download import MODELS, running_download
from tests.support.fake_hub import FakeHub
from tests.support.hub_models import gpt2_folder, llama_folder
from tests.support.pages import open_tab
from ui import picker
from ui.stages import PIPELINE, ROOT

TIMEOUT = 240
SMOLLM2 = MODELS["smollm2-135m"]


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("repos")
    gpt2_folder(root / "gpt2")
    llama_folder(root / "smollm2")
    return {"gpt2": root / "gpt2", SMOLLM2.repo_id: root / "smollm2"}


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """An empty huggingface_hub cache, offline (HF_HUB_OFFLINE=1), nothing remembered."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(download, "_REACHABLE", {})
    monkeypatch.setattr(download, "_DOWNLOADS", {})
    return tmp_path / "cache"


@pytest.fixture
def online(empty_cache, repos, monkeypatch):
    """The same, online: a fake Hub serving both models."""
    with FakeHub(repos) as hub:
        hub.point(monkeypatch)
        yield hub


def run(path: str, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(str(ROOT / path)).run()
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def wait_for_download(model) -> None:
    deadline = time.monotonic() + 180
    while (under_way := running_download(model)) is None or not under_way.status().finished:
        assert time.monotonic() < deadline, "the download did not end"
        time.sleep(0.05)
    assert under_way.status().state == "done", under_way.status().message


def picker_options(at: AppTest) -> list[str]:
    return next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page").options


def test_offline_the_picker_lists_both_with_how_to_get_them(empty_cache):
    at = open_tab(run("stages/inside.py"), "look", "Head detectors")  # the tab that offers a bigger model
    assert_clean(at)
    options = picker_options(at)
    assert any("GPT-2 small" in o for o in options) and any("SmolLM2 135M" in o for o in options)
    notes = {entry.label: entry.note for entry in picker.entries()}
    assert any("python -m llmviz gpt2 download gpt2" in note for note in notes.values())
    assert any("python -m llmviz hf download HuggingFaceTB/SmolLM2-135M" in note for note in notes.values())
    # the Inside page's offer says how to get them, with no button that could not work
    captions = " ".join(c.value for c in at.caption)
    assert "SmolLM2 135M: not downloaded, and this server is offline" in captions
    assert not [b for b in at.button if b.label.startswith(("Download", "Show"))]


def test_picking_smollm2_downloads_it_in_the_background_and_then_shows_it(online):
    at = run("stages/inside.py", _picker_selected="hub:smollm2-135m")  # a page whose sections each draw the model
    assert_clean(at)
    waiting = [i.value for i in at.info if "The shipped GPT is shown until then" in i.value]  # the page does not wait
    assert waiting == [
        "SmolLM2 135M is downloading (269 MB, once): the sidebar shows its progress. The shipped GPT is "
        "shown until then."
    ]  # said once, not by every section
    wait_for_download(SMOLLM2)
    at.run()
    assert_clean(at)
    assert any("Hugging Face SmolLM2 135M" in c.value for c in at.caption)
    assert at.session_state["_picker_selected"] == "hub:smollm2-135m"


def test_the_inside_pages_offer_downloads_gpt2_and_picks_it(online):
    at = open_tab(run("stages/inside.py"), "look", "Head detectors")
    assert_clean(at)
    button = next(b for b in at.button if b.label == "Download GPT-2 small (124M) (548 MB)")
    button.click().run()
    assert_clean(at)
    assert at.session_state["_picker_selected"] == "hub:gpt2"
    wait_for_download(MODELS["gpt2"])
    at.run()
    assert_clean(at)
    assert not [b for b in at.button if b.label.startswith(("Download", "Show"))]  # a pretrained model is shown


def test_a_cached_model_is_shown_in_one_click(online):
    from llmviz.hub import llama

    llama.FILES.download(SMOLLM2.repo_id)
    at = open_tab(run("stages/inside.py"), "look", "Head detectors")
    next(b for b in at.button if b.label == "Show SmolLM2 135M").click().run()
    assert_clean(at)
    assert at.session_state["_picker_selected"] == "hub:smollm2-135m"


STAGES = [stage for stage in PIPELINE if stage.exists and stage.key != "text"]


@pytest.mark.parametrize("stage", STAGES, ids=[stage.key for stage in STAGES])
def test_every_page_renders_on_smollm2(online, stage):
    """SmolLM2 (a Llama-family model with its own tokenizer.json) on every page, as test_gpt2_app.py does GPT-2."""
    from llmviz.hub import llama

    llama.FILES.download(SMOLLM2.repo_id)
    at = run(stage.path, _picker_selected="hub:smollm2-135m")
    assert_clean(at)
    assert at.title and at.session_state["_picker_selected"] == "hub:smollm2-135m"  # still on SmolLM2


def test_a_link_to_a_larger_model_never_downloads_it(online):
    """Only the two offered models download from the app; a larger one (6.4 GB) is fetched from the command line."""
    at = run("stages/sampling.py", _picker_selected="hub:gpt2-xl")
    assert_clean(at)
    assert running_download(MODELS["gpt2-xl"]) is None
    assert at.session_state["_picker_selected"] == "shipped:gpt-python-docs"
    from llmviz.errors import LlmvizError
    from ui.hub import HubSource

    with pytest.raises(LlmvizError, match="python -m llmviz gpt2 download gpt2-xl"):
        HubSource().load("hub:gpt2-xl", None)  # asked for directly, too
    assert running_download(MODELS["gpt2-xl"]) is None


@pytest.mark.parametrize("path", ["stages/attention.py", "stages/sampling.py"])
def test_attention_and_sampling_offer_the_bigger_models_too(online, path):
    """Where a model trained on web text shows the lesson better (named heads, fluent text), the page offers it in
    one click with its download size; once one is picked the offer goes."""
    at = run(path)
    assert_clean(at)
    labels = [b.label for b in at.button]
    assert "Download GPT-2 small (124M) (548 MB)" in labels and "Download SmolLM2 135M (269 MB)" in labels, labels
