"""A chart's text alternative: one or two sentences with its key numbers, for a screen reader (issue 70).

Plotly draws a picture; :func:`describe` reads the same figure and says what it shows: its title, and for each series
(at most :data:`MOST_SERIES`) its extremes. ``ui.charts.show_in`` puts the sentence in the figure's ``layout.meta``,
and ``ui/static/reachable.js`` writes it beside the chart as text a screen reader reads and a sighted reader does not
see.

>>> import plotly.graph_objects as go
>>> describe(go.Figure(go.Bar(x=["a", "b", "c"], y=[0.5, 2.25, 1.0], name="p"), layout=dict(title="Next token")))
'Chart: Next token. p: 3 bars, highest b (2.25), lowest a (0.5).'
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from llmviz.lessons.words import number

#: the script that writes each chart's sentence beside it (visually hidden), and makes a formula or code block wider
#: than its column reachable and scrollable with the keyboard (tabindex, a name); ui.charts installs it
REACHABLE_SCRIPT = (
    "<script>\n" + (Path(__file__).resolve().parent / "static" / "reachable.js").read_text() + "</script>\n"
)

MOST_SERIES = 6  # series described one by one; the rest are counted
MOST_CHARACTERS = 600


def _values(array) -> np.ndarray:
    """Numbers of a trace's array (``None`` and text become NaN)."""
    if array is None:
        return np.array([], dtype=float)
    try:
        return np.asarray(array, dtype=float).ravel()
    except (TypeError, ValueError):  # text or None among the numbers
        flat = np.asarray(array, dtype=object).ravel()
    out = np.full(flat.shape, np.nan)
    for i, v in enumerate(flat):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            continue
    return out


def _label(labels, index: int) -> str:
    if labels is None or index >= len(labels):
        return str(index)
    return str(labels[index]).strip() or repr(str(labels[index]))


def _bars(trace) -> str:
    horizontal = trace.orientation == "h"
    labels, values = (trace.y, trace.x) if horizontal else (trace.x, trace.y)
    numbers = _values(values)
    if not np.isfinite(numbers).any():
        return "no bars"
    top, low = int(np.nanargmax(numbers)), int(np.nanargmin(numbers))
    return (
        f"{len(numbers)} bars, highest {_label(labels, top)} ({number(numbers[top])}), "
        f"lowest {_label(labels, low)} ({number(numbers[low])})"
    )


def _points(trace) -> str:
    ys = _values(trace.y)
    xs = list(trace.x) if trace.x is not None else list(range(len(ys)))
    kept = [i for i in range(len(ys)) if math.isfinite(ys[i])]
    if not kept:
        return "no points"
    first, last = kept[0], kept[-1]
    low = min(kept, key=lambda i: ys[i])
    high = max(kept, key=lambda i: ys[i])
    return (
        f"{len(kept)} points from {number(ys[first])} at {_label(xs, first)} to {number(ys[last])} at "
        f"{_label(xs, last)}, lowest {number(ys[low])} at {_label(xs, low)}, highest {number(ys[high])} at "
        f"{_label(xs, high)}"
    )


def _cells(trace) -> str:
    z = np.asarray(_values(trace.z)).reshape(np.shape(np.asarray(trace.z, dtype=object)))
    if z.ndim != 2 or not np.isfinite(z).any():
        return "no cells"
    low = np.unravel_index(int(np.nanargmin(z)), z.shape)
    high = np.unravel_index(int(np.nanargmax(z)), z.shape)

    def where(cell) -> str:
        return f"row {_label(trace.y, int(cell[0]))}, column {_label(trace.x, int(cell[1]))}"

    return (
        f"{z.shape[0]} by {z.shape[1]} cells from {number(z[low])} ({where(low)}) to {number(z[high])} ({where(high)})"
    )


SERIES = {"bar": _bars, "scatter": _points, "scattergl": _points, "heatmap": _cells}


def describe(figure, words: str = "") -> str:
    """The chart's title, then ``words`` (what the chart teaches, with its key numbers: a page's own sentence, made
    from the same numbers it draws by a function of ``llmviz.lessons``), then for each series its size and extremes
    (where it starts and ends, for a line). ``words`` is never cut; the series' part is, past
    :data:`MOST_CHARACTERS`.

    >>> import plotly.graph_objects as go
    >>> describe(go.Figure(go.Scatter(y=[3.0, 2.0])), words="The loss fell.")
    'Chart. The loss fell. 2 points from 3 at 0 to 2 at 1, lowest 2 at 1, highest 3 at 0.'
    """
    title = figure.layout.title.text if figure.layout.title and figure.layout.title.text else ""
    head = (f"Chart: {title}." if title else "Chart.") + (f" {words.strip()}" if words.strip() else "")
    parts = [head]
    for trace in figure.data[:MOST_SERIES]:
        kind = SERIES.get(trace.type)
        try:
            said = kind(trace) if kind else f"{trace.type} data"
        except (TypeError, ValueError, IndexError):  # a shape this reader does not know: the chart still draws
            said = f"{trace.type} data"
        name = f"{trace.name}: " if getattr(trace, "name", None) else ""
        parts.append(f"{name}{said}.")
    if len(figure.data) > MOST_SERIES:
        parts.append(f"And {len(figure.data) - MOST_SERIES} more series.")
    text = " ".join(parts)
    room = max(MOST_CHARACTERS, len(head) + 80)
    return text if len(text) <= room else text[: room - 1] + "…"
