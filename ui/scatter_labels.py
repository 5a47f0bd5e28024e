"""Where a scatter chart draws its points' labels: each above, below, right or left of its point, wherever it covers
no other label or point and stays inside the plot, else none (the point keeps its marker and hover text). Measured in
pixels of the smallest size the chart is drawn at, as Plotly places a ``textposition``.
"""

from __future__ import annotations

Box = tuple[float, float, float, float]  #: a label's or a marker's box in pixels: (left, right, bottom, top)


def _apart(a: Box, b: Box) -> bool:
    """Do two boxes not overlap? (touching is apart)

    >>> _apart((0, 1, 0, 1), (1, 2, 0, 1)), _apart((0, 2, 0, 2), (1, 3, 1, 3))
    (True, False)
    """
    return a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2]


def _inside(box: Box, width_px: float, height_px: float) -> bool:
    """Is the box inside the plot? (Plotly cuts a label at its edge)"""
    return 0 <= box[0] <= box[1] <= width_px and 0 <= box[2] <= box[3] <= height_px


def _label_boxes(x: float, y: float, wide: float, marker_px: float, line_px: float) -> dict[str, Box]:
    """The four places a label ``wide`` pixels wide can take around the point (x, y), by Plotly's names."""
    m, half = marker_px, wide / 2
    return {
        "top center": (x - half, x + half, y + m, y + m + line_px),
        "bottom center": (x - half, x + half, y - m - line_px, y - m),
        "middle right": (x + m, x + m + wide, y - line_px / 2, y + line_px / 2),
        "middle left": (x - m - wide, x - m, y - line_px / 2, y + line_px / 2),
    }


def _free_place(boxes: dict[str, Box], taken: list[Box], width_px: float, height_px: float) -> tuple[str, Box] | None:
    """The first of ``boxes`` inside the plot that overlaps none of ``taken``: its name and box (None: none)."""
    return next(
        (
            (name, box)
            for name, box in boxes.items()
            if _inside(box, width_px, height_px) and all(_apart(box, other) for other in taken)
        ),
        None,
    )


def spread_labels(
    xs: list[float],
    ys: list[float],
    labels: list[str],
    width_px: float = 560,
    height_px: float = 400,
    char_px: float = 7.0,
    line_px: float = 16.0,
    marker_px: float = 6.0,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
) -> list[str | None]:
    """Where a scatter chart draws each point's label so that no label covers another label or another point, nor
    crosses the plot's edge: above
    the point, else below it, else to its right, else to its left (Plotly's ``textposition``), or None, no label (the
    point keeps its marker and its hover text). Measured in the pixels of a plot ``width_px`` × ``height_px``, the
    smallest the chart is drawn at (drawn wider, the labels only move apart); ``x_range``, ``y_range``: the axes'
    ranges (default: the points' own), when the chart holds other points too. The points are taken in order, the most
    important first.

    >>> room = dict(x_range=(-1.0, 2.0), y_range=(-1.0, 2.0))  # the points in the middle of the plot
    >>> spread_labels([0.0, 1.0], [0.0, 1.0], ["one", "two"], **room)  # far apart: both above their point
    ['top center', 'top center']
    >>> spread_labels([0.0, 0.0, 1.0], [0.0, 0.1, 1.0], ["low", "high", "far"], **room)  # "low" would cover "high"
    ['bottom center', 'top center', 'top center']
    >>> spread_labels([0.0, 0.0], [0.0, 0.0], ["one", "two"], **room)  # on one spot: above and below
    ['top center', 'bottom center']
    >>> spread_labels([0.0] * 5, [0.0] * 5, ["a", "b", "c", "d", "e"], **room)  # four places around a spot, no fifth
    ['top center', 'bottom center', 'middle right', 'middle left', None]
    >>> spread_labels([0.0], [0.0], ["edge"])  # at the plot's corner a label would be cut: none
    [None]
    """
    if not xs:
        return []
    x_low, x_high = x_range or (min(xs), max(xs))
    y_low, y_high = y_range or (min(ys), max(ys))
    x_span, y_span = (x_high - x_low) or 1.0, (y_high - y_low) or 1.0
    points = [((x - x_low) / x_span * width_px, (y - y_low) / y_span * height_px) for x, y in zip(xs, ys)]

    markers = [(x - marker_px, x + marker_px, y - marker_px, y + marker_px) for x, y in points]
    kept: list[Box] = []
    places: list[str | None] = []
    for number, ((x, y), label) in enumerate(zip(points, labels)):
        others = [marker for other, marker in enumerate(markers) if other != number]
        boxes = _label_boxes(x, y, len(label) * char_px + 4, marker_px, line_px)
        place = _free_place(boxes, kept + others, width_px, height_px)
        places.append(place[0] if place else None)
        if place:
            kept.append(place[1])
    return places
