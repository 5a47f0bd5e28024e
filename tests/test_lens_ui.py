"""The logit lens's charts (ui/panels/lens.py): a readable window of positions, a legend, one position in colour."""

import pytest
import torch

from llmviz.interpret import lens as lenses
from llmviz.training.checkpoint import load_checkpoint
from tests.test_shipped import DATA
from ui import charts
from ui.panels import lens as lens_ui

SENTENCE = "The for statement is used to iterate over the elements of a sequence such as a string tuple or list"


@pytest.fixture(scope="module")
def shipped_lens():
    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")
    ids = tokenizer.encode(SENTENCE)[:32]
    lens = lenses.sequence_logit_lens(model.eval(), ids, k=5)
    tokens = [tokenizer.printable(i) for i in ids]
    return lens, tokens, charts.unique_labels(tokens), tokenizer.printable


def test_the_window_stays_inside_the_sentence():
    assert lens_ui.window(32, 0) == range(0, 10)
    assert lens_ui.window(32, 40) == range(22, 32)
    assert lens_ui.window(4, 2) == range(0, 4)
    assert lens_ui.window(32, -3) == range(0, 10)


def test_the_grid_shows_a_window_in_14_px_type(shipped_lens):
    lens, tokens, columns, name = shipped_lens
    assert len(tokens) > lens_ui.WINDOW  # before: every one of the 32 positions in one chart, text about 6 px
    figure = lens_ui.grid_figure(lens, tokens, columns, name, lens_ui.window(len(tokens), 12))
    heat = figure.data[0]
    assert list(heat.x) == columns[12:22] and list(heat.y) == lens.layer_names
    assert heat.textfont.size >= 14 and figure.layout.xaxis.tickfont.size >= 13
    # each cell: the top token after that layer at that position, and its probability as the colour
    top = lens.top_probs[:, 12:22, 0]
    assert torch.tensor(heat.z).allclose(top)
    last = [name(int(i)) for i in lens.top_ids[-1, 12:22, 0]]
    assert list(heat.text[-1]) == last


def test_the_per_layer_chart_has_a_legend_and_one_position_in_colour(shipped_lens):
    lens, tokens, columns, _ = shipped_lens
    positions = lens_ui.window(len(tokens), 0)
    figure = lens_ui.true_token_figure(lens, tokens, columns, positions, picked=3)
    assert figure.layout.showlegend is True
    named = [trace for trace in figure.data if trace.showlegend is not False]
    assert len(named) == 3  # the other positions (one entry), the mean, the picked one
    picked = figure.data[-1]
    assert picked.name == f"{columns[3]} → {tokens[4]}" and picked.line.width >= 4
    assert torch.tensor(picked.y).allclose(lens.true_probs[:, 3])
    mean = next(trace for trace in figure.data if trace.name.startswith("mean"))
    expected = [sum(row) / len(row) for row in lens.true_probs.tolist()]  # over every position, not only the window
    assert list(mean.y) == pytest.approx(expected)
    assert len(figure.data) == len(positions) + 1  # the window's positions and the mean: not ~20 lines
