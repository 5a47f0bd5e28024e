"""The Model page's numbers: docs/models.md's preset table is the one llmviz computes, and its counts are the modules'
(built on the meta device here, apart from the table's own count)."""

from __future__ import annotations

from pathlib import Path

import torch

from llmviz.lessons.anatomy import memory_bytes, preset_table
from llmviz.models.gpt import GPT, PRESETS

DOCS = Path(__file__).resolve().parents[3] / "docs" / "models.md"


def test_docs_hold_the_preset_table():
    assert preset_table() in DOCS.read_text(encoding="utf-8")


def test_the_table_counts_what_the_modules_hold():
    lines = preset_table().splitlines()[2:]
    for (name, config), line in zip(PRESETS.items(), lines, strict=True):
        with torch.device("meta"):
            built = GPT(config, initialise=False)
        assert line.startswith(f"| `{name}` |") and line.endswith(f"| {built.num_parameters():,} |")


def test_memory_is_bytes_per_number_times_numbers():
    assert memory_bytes(1_000, "fp32") == 4_000 and memory_bytes(1_000, "bf16") == 2_000
