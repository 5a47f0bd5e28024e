"""A chart on the projector (presenter mode, 1280×720): every text 14 px or more, the height at most
:data:`PRESENTER_HEIGHT` so that a slide keeps its chart and controls on one screen, a legend off the axis title, and
a heatmap's crowded row labels and cell numbers thinned. :func:`ui.charts.show_in` calls :func:`for_projector`.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

#: a horizontal legend under a chart's x-axis title at any height: pinned to the figure's bottom edge (the paper's
#: y=-0.2 of a short chart, as in presenter mode, put it on the axis title's line)
LEGEND_BELOW = {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0}
PRESENTER_HEIGHT = 300  # px: the tallest chart in presenter mode (a 1280×720 slide holds it under its heading)


def for_projector(figure: go.Figure, scale: float) -> go.Figure:
    """A copy of ``figure`` as the projector draws it, its type ``scale`` times bigger (14 px at least); the
    caller's figure stays as built."""
    figure = go.Figure(figure)
    figure.update_layout(font_size=round(12 * scale))  # type grows; the height stays (a slide fits the screen)
    # a bar's number and a legend's entries too: Plotly shrinks a bar's text to the bar (9 px on Sampling's bars)
    figure.update_layout(
        uniformtext=dict(minsize=14, mode="show"),
        legend_font_size=max(14, round((figure.layout.legend.font.size or 12) * scale)),
    )
    if (figure.layout.height or 0) > PRESENTER_HEIGHT:  # a tall chart fits a 720-px screen under its controls
        figure.update_layout(height=PRESENTER_HEIGHT)
    _legend_off_the_axis(figure)
    # every axis label too (Streamlit's theme draws them at 0.75 rem otherwise), a heatmap's token labels included
    figure.for_each_xaxis(lambda axis: axis.update(tickfont_size=max(14, round((axis.tickfont.size or 12) * scale))))
    figure.for_each_yaxis(lambda axis: axis.update(tickfont_size=max(14, round((axis.tickfont.size or 12) * scale))))
    _trace_text_bigger(figure, scale)
    _thin_crowded_rows(figure)
    return figure


def _trace_text_bigger(figure: go.Figure, scale: float) -> None:
    """A trace's own text (a heatmap cell's number, a point's label) drawn at least 14 px in presenter mode, as every
    other text of the chart: ``uniformtext`` reaches bars and pies only, and a heatmap's 10 px weights stayed 10 px.

    >>> figure = go.Figure(go.Heatmap(z=[[1]], text=[["1.0"]], texttemplate="%{text}", textfont_size=10))
    >>> _trace_text_bigger(figure, 1.35)
    >>> figure.data[0].textfont.size
    14
    """
    for trace in figure.data:
        size = getattr(getattr(trace, "textfont", None), "size", None)
        if isinstance(size, (int, float)):
            trace.textfont.size = max(14, round(size * scale))


def _thin_crowded_rows(figure: go.Figure, line_px: int = 17) -> None:
    """A heatmap's rows labelled one by one (``dtick=1``) that no longer fit their height in presenter mode (14 px
    labels in a chart of at most :data:`PRESENTER_HEIGHT`: a 13-token pattern's labels overlapped) keep every
    second (or third…) label instead; every row keeps its cells, its hover and its place in the chart's words.

    >>> figure = go.Figure(go.Heatmap(z=[[0]] * 13, y=[f"t{i}" for i in range(13)]), layout=dict(height=300))
    >>> figure.update_yaxes(type="category", dtick=1) and None
    >>> _thin_crowded_rows(figure)
    >>> figure.layout.yaxis.dtick
    2
    """
    height = figure.layout.height or 450
    margin = figure.layout.margin
    top, bottom = (margin.t if margin.t is not None else 100), (margin.b if margin.b is not None else 80)
    for trace in figure.data:
        if getattr(trace, "type", "") != "heatmap" or trace.y is None:
            continue
        axis = figure.layout["yaxis" + (trace.yaxis or "y")[1:]]  # "y2" → layout.yaxis2: its panel's own axis
        if axis.dtick != 1:
            continue
        low, high = axis.domain or (0, 1)
        below = max(bottom, _upright_labels_px(trace.x) + 40)  # Plotly grows the margin for upright x labels
        step = math.ceil(len(trace.y) * line_px / max(1.0, (height - top - below) * (high - low)))
        if step > 1:
            axis.dtick = step
            if trace.text is not None and trace.texttemplate:  # numbers written in the cells collide the same way
                trace.text = _apart(trace.text, step)


def _apart(text, step: int) -> list[list[str]]:
    """A heatmap's cell texts with, in each column, no two written less than ``step`` rows apart (the first kept):
    a cell left blank keeps its colour, its hover and its place in the chart's words.

    >>> _apart([["1.0", ""], ["0.5", "0.5"], ["0.4", ""], ["", "0.3"]], 2)
    [['1.0', ''], ['', '0.5'], ['0.4', ''], ['', '0.3']]
    """
    rows = [list(row) for row in text]
    last: dict[int, int] = {}
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if not cell:
                continue
            if c in last and r - last[c] < step:
                row[c] = ""
            else:
                last[c] = r
    return rows


def _upright_labels_px(labels, char_px: float = 8.5) -> float:
    """How tall a row of token labels turned upright stands at 14 px (about 8.5 px a character).

    >>> _upright_labels_px(["The", "␣sequence"]), _upright_labels_px(None)
    (76.5, 0.0)
    """
    return max((len(str(label)) for label in labels), default=0) * char_px if labels is not None else 0.0


def _legend_off_the_axis(figure: go.Figure) -> None:
    """A horizontal legend placed under the plot at a fraction of its height (``y=-0.2``) moves to the figure's
    bottom edge (:data:`LEGEND_BELOW`): with presenter mode's bigger tick labels and axis title, the fraction put it
    on the axis title's line.

    >>> figure = go.Figure(layout=dict(legend=dict(orientation="h", y=-0.2)))
    >>> _legend_off_the_axis(figure)
    >>> figure.layout.legend.yref, figure.layout.legend.y
    ('container', 0)
    """
    legend = figure.layout.legend
    if legend.orientation == "h" and legend.y is not None and legend.y < 0 and legend.yref in (None, "paper"):
        figure.update_layout(legend=LEGEND_BELOW)
