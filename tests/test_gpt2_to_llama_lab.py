"""GPT-2 → Llama as lab runs: each step of the Model page's comparison trains a short run on the same text, and the
table gives its parameter count, KV cache and validation loss (issue 29, item 3)."""

from __future__ import annotations

import pyarrow as pa
import pytest
import torch

from llmviz.lessons import architectures
from llmviz.models.gpt import PRESETS, SWITCHES
from llmviz.training.trainer import TrainConfig, Trainer
from tests.test_app_pages import assert_clean, finish_jobs, run_page
from tests.test_page_interactions import by_label

TEXT = "the quick brown fox jumps over the lazy dog\n" * 30


def test_lab_steps_flip_one_switch_at_a_time_and_build_what_the_table_counts():
    steps = architectures.gpt2_to_llama_lab()
    assert len(steps) == 7
    expected_changes = [
        set(),
        {"positions"},
        {"norm"},
        {"mlp_kind", "d_mlp"},
        {"bias", "qkv_bias"},
        {"n_kv_heads"},
        {"tie_weights"},
    ]
    for previous, step, expected in zip([None] + steps[:-1], steps, expected_changes):
        if previous is not None:
            assert {name for name in SWITCHES if previous.switches[name] != step.switches[name]} == expected
        config = TrainConfig(
            model=step.model, tokenizer="char", context_length=16, batch_size=2, steps=1, architecture=step.switches
        )
        model = Trainer.from_text(TEXT, config).model
        built = model.config
        assert all(getattr(built, name) == value for name, value in step.switches.items())
        assert (built.d_model, built.n_layers, built.n_heads) == (64, 2, 4)  # GPT micro's size
        # the cache the model keeps for one token: K and V of every layer, (1, H_kv, 1, hd) each, in bf16
        with torch.no_grad():
            _, past = model.forward_with_kv_cache(torch.zeros(1, 1, dtype=torch.long))
        kept = sum(tensor.numel() for pair in past for tensor in pair[:2]) * 2
        assert kept == step.kv_cache_bytes_per_token
    assert steps[0].switches["positions"] == "learned" and steps[-1].switches["n_kv_heads"] == 2
    assert PRESETS["gpt-micro"].n_heads == 4


@pytest.fixture
def page_with_lab():
    at = run_page("stages/model.py", corpus="names", model_tab="From GPT-2 to Llama")  # the lesson's tab
    by_label(at.select_slider, "Steps per run").set_value(50)
    by_label(at.button, "Train the seven steps").click().run()
    assert_clean(at)
    return finish_jobs(at)


def test_the_model_page_trains_the_seven_steps_and_shows_their_losses(page_with_lab):
    at = page_with_lab
    assert_clean(at)
    tables = [frame.value for frame in at.dataframe if "validation loss" in getattr(frame.value, "columns", [])]
    assert tables, "the lab table"
    table = tables[-1]
    assert len(table) == 7 and table["validation loss"].notna().all(), table
    assert (table["steps trained"] == 50).all()
    assert table["validation loss"].between(0.5, 5.0).all()  # names: 27 characters, ln 27 ≈ 3.3 at the start
    assert table["KV cache per token (bf16)"].tolist() == [512] * 5 + [256] * 2
    # untying adds a second vocabulary × 64 table; dropping the biases removes some
    assert table["parameters"].iloc[6] > table["parameters"].iloc[5]
    assert table["parameters"].iloc[4] < table["parameters"].iloc[3]


def test_the_comparison_table_marks_the_first_row_without_a_change():
    """The first row has no change from the row above: a dash, not 'None' (seen in chromium: the browser draws an empty
    cell with the dataframe's placeholder, whatever the Styler's na_rep says)."""
    at = run_page("stages/model.py", model_tab="From GPT-2 to Llama")  # the lesson's tab
    [table] = [frame for frame in at.dataframe if "change" in frame.value.columns]
    shown = pa.ipc.open_stream(table.proto.arrow_data.styler.display_values).read_all().to_pandas()
    assert shown["change"].iloc[0] == "—" and shown["change"].iloc[1] == "-786,432", shown["change"].tolist()
    assert table.proto.placeholder == "—"
