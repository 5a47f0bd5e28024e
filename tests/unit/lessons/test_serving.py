"""llmviz.lessons.serving: the numbers the Serving page shows, checked by hand (block tables, bytes per token) and
against the model's own KV-cache tensors (the page's AppTest is tests/app/test_serving.py)."""

from __future__ import annotations

import math

import pytest
import torch

from llmviz.lessons import serving
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.tokenizers.char_word import CharTokenizer


def test_parse_lengths_takes_whole_numbers_and_refuses_the_rest():
    assert serving.parse_lengths(" 13, 5,22 ,") == [13, 5, 22]
    for bad in ("", "a, 2", "0", "4097", ",".join(["1"] * 13), "1.5"):
        with pytest.raises(ValueError, match="Give 1 to 12 whole numbers from 1 to 4096"):
            serving.parse_lengths(bad)


def test_block_tables_by_hand():
    lengths, block_size = [13, 5, 22, 9], 4
    cache = serving.paged(lengths, block_size)
    rows = serving.table_rows(cache)
    assert [row["tokens"] for row in rows] == lengths
    assert [len(row["block table"]) for row in rows] == [math.ceil(n / block_size) for n in lengths]
    assert [row["unused slots"] for row in rows] == [-n % block_size for n in lengths]  # only the last block's
    assert sorted(b for row in rows for b in row["block table"]) == list(range(cache.num_blocks))  # each block once


def test_block_grid_marks_every_block_with_its_owner():
    cache = serving.paged([13, 5, 22, 9], 4)
    grid, labels = serving.block_grid(cache)
    assert len(grid) == math.ceil(cache.num_blocks / serving.BLOCKS_PER_ROW)
    for number, table in enumerate(cache.tables.values(), start=1):
        for block in table:
            row, column = divmod(block, serving.BLOCKS_PER_ROW)
            assert grid[row][column] == number and labels[row][column] == str(number)
    assert sum(cell is None for row in grid for cell in row) == len(grid) * serving.BLOCKS_PER_ROW - cache.num_blocks


def test_growth_is_the_formula_times_the_tokens_and_starts_from_the_prompts_last_half_context():
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=8, context_length=16, d_model=16, n_layers=2, n_heads=2)
    gpt = GPT(config).eval()
    tokenizer = CharTokenizer.train("abcdefgh")
    found = serving.growth(gpt, tokenizer, "abcdefghabcd", new_tokens=5)
    assert found.tokens[0] == config.context_length // 2  # the prompt's last 8 of its 12 characters
    per_token = 2 * config.n_layers * config.d_model * 4  # key and value, every layer, d_model float32 numbers
    assert serving.bytes_per_token(gpt) == per_token and serving.bytes_per_value(gpt) == 4
    assert found.cache_bytes == [per_token * n for n in found.tokens]
