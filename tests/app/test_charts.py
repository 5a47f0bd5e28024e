"""ui.charts: the chart helpers the pages share (no browser needed; what the browser draws is in tests/browser)."""

import doctest

from ui import charts


def test_doctests():
    assert doctest.testmod(charts).failed == 0


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
    places = charts.spread_labels(xs, ys, labels, width_px=500, height_px=300, x_range=(-0.1, 1.1), y_range=(-0.1, 1.2))
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
