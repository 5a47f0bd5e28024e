"""A copied link carries the architecture sections' settings: the Model page's preset, RoPE's head_dim and base θ on
Embeddings, and the query heads of the grouped-query calculator on Attention."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import ui
from tests.test_app_pages import TIMEOUT, assert_clean
from tests.test_page_interactions import by_label


def open_with_link(path: str, query: dict, **state) -> AppTest:
    at = AppTest.from_file(str(ui.ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(str(ui.ROOT / path)).run()
    assert_clean(at)
    return at


def test_the_model_page_opens_on_the_linked_preset():
    at = open_with_link("stages/model.py", {"preset": "smollm2-135m-shapes"})
    assert by_label(at.selectbox, "Preset").value == "smollm2-135m-shapes"
    assert any(m.value == "134,515,008" for m in at.metric)


def test_the_rope_section_opens_on_the_linked_head_dim_and_theta():
    at = open_with_link("stages/embeddings.py", {"head_dim": "16", "rope_theta": "1,000,000"})  # as the slider shows it
    assert by_label(at.select_slider, "head_dim").value == 16
    assert by_label(at.select_slider, "Base θ").value == 1_000_000.0


@pytest.mark.parametrize("heads", ["8", "32"])
def test_the_grouped_query_calculator_opens_on_the_linked_query_heads(heads):
    at = open_with_link("stages/attention.py", {"query_heads": heads}, lazy_attention_gqa=True)
    assert by_label(at.select_slider, "Query heads").value == int(heads)
    assert not [w.value for w in at.warning if "link" in w.value]
