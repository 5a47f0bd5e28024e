"""The table and figure builders a class's page opens spend most of the server's time in are fast and unchanged:
``tidy_floats`` (numpy, all columns at once) gives what the per-value rule gives, and ``heatmap_panels`` (one
constructor from plain dicts) gives the figure Plotly's own ``make_subplots`` + ``add_traces`` + ``update_layout``
build."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from ui import charts
from ui.text import shortest_number, tidy_floats


def per_value(frame: pd.DataFrame) -> pd.DataFrame:
    """The rule, one value at a time: a float becomes the number its shortest digits give back."""
    shown = frame.copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = [v if math.isnan(v) else float(shortest_number(v)) for v in shown[column].astype(float)]
    return shown


@pytest.mark.parametrize("seed", range(4))
def test_tidy_floats_is_the_per_value_rule(seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.standard_normal((12, 20)).astype(np.float32), columns=[f"d{i}" for i in range(20)])
    frame["f64"] = rng.standard_normal(12)
    frame["edge"] = [0.1 + 0.2, 3e-4, float("nan"), 1e-20, 1e30, 0.43, 0.5, -0.0, float("inf"), 1e9, 1e-8, 7.0]
    frame["token"] = [f"t{i}" for i in range(12)]
    frame["id"] = np.arange(12)
    tidied, expected = tidy_floats(frame), per_value(frame)
    assert list(tidied.columns) == list(frame.columns)
    pd.testing.assert_frame_equal(tidied, expected)
    assert tidy_floats(pd.DataFrame({"x": np.array([0.43], dtype=np.float32)}))["x"][0] == 0.43


def plotly_panels(panels: list[dict], columns: int) -> go.Figure:
    """The reference: the same panels through Plotly's make_subplots, add_traces and update_layout."""
    rows = -(-len(panels) // columns)
    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[panel.get("title", "") for panel in panels],
        horizontal_spacing=0.12 if columns <= 2 else 0.06,
        vertical_spacing=0.3 / rows,
    )
    layout = {}
    for number, panel in enumerate(panels):
        text_format = panel.get("text_format", ".3f")
        figure.add_trace(
            go.Heatmap(
                z=np.asarray(panel["matrix"], dtype=np.float64),
                x=[str(s) for s in panel["x_labels"]],
                y=[str(s) for s in panel["y_labels"]],
                colorscale="Blues",
                zmin=panel.get("zmin"),
                zmax=panel.get("zmax"),
                showscale=False,
                texttemplate=f"%{{z:{text_format}}}" if text_format else None,
                hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>",
            ),
            row=1 + number // columns,
            col=1 + number % columns,
        )
        suffix = "" if number == 0 else str(number + 1)
        layout[f"xaxis{suffix}"] = dict(type="category", dtick=1, tickfont=dict(size=11))
        layout[f"yaxis{suffix}"] = dict(type="category", dtick=1, tickfont=dict(size=11), autorange="reversed")
    figure.update_layout(height=300 * rows, margin=charts.margins(40), **layout)
    return figure


@pytest.mark.parametrize("count, columns", [(1, 1), (2, 2), (4, 2), (3, 4), (6, 4)])
def test_heatmap_panels_is_plotlys_subplot_figure(count, columns):
    rng = np.random.default_rng(count)
    panels = [
        dict(
            matrix=rng.random((5, 6)),
            x_labels=[f"k{i}" for i in range(6)],
            y_labels=[f"q{i}" for i in range(5)],
            title=f"head {number}",
            **({"text_format": None} if number == 1 else {}),
            **({"zmin": 0.0, "zmax": 1.0} if number == 2 else {}),
        )
        for number in range(count)
    ]
    ours = json.loads(pio.to_json(charts.heatmap_panels(panels, columns), validate=False))
    reference = json.loads(pio.to_json(plotly_panels(panels, columns), validate=False))
    assert ours == reference


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(colorscale="RdBu", zmid=0.0, text_format=None),
        dict(colorscale="Twilight", title="angles", x_title="position", y_title="pair"),
        dict(zmin=0.0, zmax=1.0, height=400, labels=[str(i) for i in range(30)]),
        dict(labels=[f"token {i}" for i in range(20)]),
    ],
)
def test_heatmap_is_plotlys_checked_figure(options):
    """``charts.heatmap`` skips Plotly's check: its figure is the one Plotly's checked constructor makes of the same
    data and layout (a colorscale's name, say, must become its colour stops: plotly.js has others of that name)."""
    labels = options.pop("labels", ["The", "cat", "sat"])
    matrix = np.random.default_rng(0).random((len(labels), len(labels)))
    ours = charts.heatmap(matrix, labels, labels, **options)
    plain = ours.to_plotly_json()
    checked = go.Figure(data=plain["data"], layout=plain["layout"])  # the reference: Plotly's own check
    assert json.loads(pio.to_json(ours, validate=False)) == json.loads(pio.to_json(checked, validate=False))


def test_a_dpo_charts_title_draws_a_students_upload_name_as_text():
    """A DPO run's label names the student's upload: the chart's title escapes Plotly's tags (a link, a style)."""
    from ui.panels.tuning import dpo_figure

    figure = dpo_figure({"margin": [(1, 0.1)]}, 'DPO β=0.1 10 steps (<a href="https://evil.example">x</a>.jsonl)')
    assert figure.layout.title.text == 'DPO β=0.1 10 steps (&lt;a href="https://evil.example"&gt;x&lt;/a&gt;.jsonl)'
    # the right axis ticks its own round numbers (it once carried the left axis's grid over: 0.215, 0.967, 1.72)
    assert (figure.layout.yaxis2.tickmode, figure.layout.yaxis2.showgrid) == ("auto", False)


def test_a_loss_charts_legend_draws_a_run_label_as_text():
    """A run's label may name the student's upload (a Tuning run's "SFT 60 steps (<file>)"): the legend escapes
    Plotly's tags."""
    from ui.panels.runs import loss_figure

    frame = pd.DataFrame({"step": [1, 2], "train_loss": [2.0, 1.5], "val_loss": [None, 1.6]})
    figure = loss_figure([('SFT (<span style="font-size:99px">X</span>)', frame, 4096)])
    names = {trace.name for trace in figure.data if trace.name}
    assert names and all("<span" not in name for name in names), names
    assert any("&lt;span" in name for name in names), names
