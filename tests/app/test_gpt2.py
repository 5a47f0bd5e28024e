"""GPT-2 in the app (issue 17): the picker entry online, offline and cached, and every page on it.

The weights are a tiny random GPT-2 with GPT-2's 50,257-token vocabulary, written by
transformers' ``save_pretrained`` into a temporary huggingface_hub cache under the id ``gpt2``
— exactly where the app looks for the real one.
"""

import re

import pytest
from streamlit.testing.v1 import AppTest

from llmviz.hub import download
from tests.support.gpt2 import make_hf_gpt2, save_as_cached_repo
from ui.hub import HubSource
from ui.stages import PIPELINE, ROOT

TIMEOUT = 240
STAGES = [stage for stage in PIPELINE if stage.exists and stage.key != "text"]


@pytest.fixture(scope="module")
def tiny_cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    save_as_cached_repo(
        make_hf_gpt2(vocab_size=50257, n_layer=2, n_embd=32, n_head=2, n_positions=64, seed=5), root, "gpt2"
    )
    return root


@pytest.fixture
def cached(tiny_cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tiny_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tiny_cache


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def entry(key="hub:gpt2"):
    return next(e for e in HubSource().entries() if e.key == key)


def test_entry_offline_says_so_and_how_to_get_it(empty_cache):
    offline = entry()
    assert not offline.available
    assert "offline" in offline.note and "python -m llmviz gpt2 download" in offline.note
    # GPT-2 small and SmolLM2-135M are offered; the larger ones are listed only once cached
    assert [e.key for e in HubSource().entries()] == ["hub:gpt2", "hub:smollm2-135m"]


def test_entry_online_offers_the_download(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(download, "hub_reachable", lambda **_: True)
    online = entry()
    assert online.available and online.label == "GPT-2 small: get 548 MB" and "548 MB once" in online.note


def test_entry_when_cached(cached):
    ready = entry()
    assert ready.available and "download" not in ready.label and ready.family == "gpt"


def run(path: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if path is not None:
        at.switch_page(str(ROOT / path)).run()
    return at


def assert_no_error(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_offline_pick_keeps_the_shipped_gpt_and_explains(empty_cache):
    at = run(_picker_selected="hub:gpt2")  # e.g. from a link, on a server without the weights
    assert_no_error(at)
    assert any("offline" in i.value and "python -m llmviz gpt2 download" in i.value for i in at.sidebar.info)
    assert at.session_state["_picker_selected"] == "shipped:gpt-python-docs"
    at.switch_page(str(ROOT / "stages" / "model.py")).run()
    assert_no_error(at)


def test_picking_it_in_the_sidebar_offline_explains(empty_cache):
    at = run()
    picker = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page")
    label = next(o for o in picker.options if "GPT-2" in o)
    # listed as unavailable in an option that fits the sidebar; why (offline, the download command) is said on picking
    assert label.startswith("OpenAI GPT-2") and ("(unavailable)" in label or label.endswith("…")), label
    picker.set_value("hub:gpt2").run()
    assert_no_error(at)
    assert any("not available here" in i.value and "gpt2 download" in i.value for i in at.sidebar.info)
    picker = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page")
    assert picker.value == "shipped:gpt-python-docs"


@pytest.mark.parametrize("stage", STAGES, ids=[s.key for s in STAGES])
def test_every_page_renders_on_gpt2_without_an_error(cached, stage):
    at = run(stage.path, _picker_selected="hub:gpt2")
    assert_no_error(at)
    assert at.title


def test_sampling_follows_the_picker_onto_gpt2(cached):
    at = run("stages/sampling.py", _picker_selected="hub:gpt2")
    assert_no_error(at)
    shown = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]  # Markdown source: the label is escaped
    assert any("OpenAI GPT-2 small (124M)" in c for c in shown)
