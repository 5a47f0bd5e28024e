"""ui.charts: the chart helpers the pages share (no browser needed; what the browser draws is in tests/browser)."""

import doctest
import json

import numpy as np
import pytest

from tests.support.pages import run_page
from tests.support.plotly_spec import drawn
from ui import chart_text, charts, scatter_labels


def test_doctests():
    assert doctest.testmod(charts).failed == 0
    assert doctest.testmod(scatter_labels).failed == 0


def test_a_log_axis_is_labelled_at_the_powers_of_ten_only():
    """Before: Plotly labelled a rank axis "1 2 5 10 2 5 100 2"."""
    axis = charts.log_axis(4277, "rank")
    assert axis["type"] == "log" and axis["tickvals"] == [1, 10, 100, 1000, 10000]
    assert axis["ticktext"] == ["1", "10", "100", "1,000", "10,000"]


def test_labels_never_overlap_whatever_the_points():
    """Labels placed by spread_labels, measured as the boxes it assumes, never cover each other or another point."""
    import random

    generator = random.Random(0)
    xs = [generator.uniform(0, 1) for _ in range(60)]
    ys = [generator.uniform(0, 1) for _ in range(60)]
    labels = [generator.choice(["the", "function", "is", "tuple"]) for _ in range(60)]
    places = scatter_labels.spread_labels(
        xs, ys, labels, width_px=500, height_px=300, x_range=(-0.1, 1.1), y_range=(-0.1, 1.2)
    )
    boxes = []
    for x, y, label, place in zip(xs, ys, labels, places):
        if place is None:
            continue
        px, py, wide = (x + 0.1) / 1.2 * 500, (y + 0.1) / 1.3 * 300, len(label) * 7.0 + 4
        boxes.append(
            {
                "top center": (px - wide / 2, px + wide / 2, py + 6, py + 22),
                "bottom center": (px - wide / 2, px + wide / 2, py - 22, py - 6),
                "middle right": (px + 6, px + 6 + wide, py - 8, py + 8),
                "middle left": (px - 6 - wide, px - 6, py - 8, py + 8),
            }[place]
        )
    assert len(boxes) > 20  # most points keep a label
    for n, a in enumerate(boxes):
        for b in boxes[n + 1 :]:
            assert a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2], (a, b)


def said(value: float) -> str:
    """How the sentence writes a number (the wording, not the number, comes from ui.chart_text)."""
    return chart_text.number(float(value))


def said_numbers(trace: dict) -> list[str]:
    """What a trace's text alternative must say, recomputed from the drawn data: a bar chart's highest bar and its
    value, a line's first and last value, a heatmap's largest and smallest cell."""
    if trace["type"] == "bar":
        horizontal = trace.get("orientation") == "h"
        labels, values = (trace["y"], trace["x"]) if horizontal else (trace["x"], trace["y"])
        numbers = drawn(values)
        top = int(np.nanargmax(numbers))
        return [f"highest {str(labels[top]).strip() or repr(str(labels[top]))} ({said(numbers[top])})"]
    if trace["type"] in ("scatter", "scattergl"):
        ys = drawn(trace["y"])
        kept = ys[np.isfinite(ys)]
        return [f"from {said(kept[0])}", f"to {said(kept[-1])}"]
    if trace["type"] == "heatmap":
        z = drawn(trace["z"])
        return [f"from {said(np.nanmin(z))}", f"to {said(np.nanmax(z))}"]
    return []


@pytest.mark.parametrize(
    "page",
    ["stages/sampling.py", "stages/attention.py", "stages/embeddings.py", "stages/model.py", "stages/serving.py"],
)
def test_every_chart_says_its_key_numbers(page):
    """Each chart's text alternative (ui.chart_text, in layout.meta: ui/static/reachable.js writes it for a screen
    reader) names its title and the numbers the chart draws: checked against the figure the browser receives."""
    at = run_page(page)
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert specs, "the page draws charts"
    for spec in specs:
        sentence = spec["layout"].get("meta", "")
        title = (spec["layout"].get("title") or {}).get("text")
        assert sentence.startswith(f"Chart: {title}." if title else "Chart."), sentence
        traces = spec["data"][: chart_text.MOST_SERIES]
        for index, trace in enumerate(traces):
            after = traces[index + 1].get("name") if index + 1 < len(traces) else None
            if sentence.endswith("…") and not (after and f"{after}: " in sentence):
                continue  # cut here, as ui.chart_text.describe documents: a page's own words come first, never cut
            for expected in said_numbers(trace):
                assert expected in sentence, (expected, sentence)
