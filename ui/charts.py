"""Plotly figure builders shared by the pages (rendering only; the numbers come from llmviz)."""

from __future__ import annotations

import functools
import html
import json
import math

import plotly.graph_objects as go

from ui import chart_text
from ui.colours import MUTED_TEXT, NUMBER_TEXT, PALETTE
from ui.equations import display_math
from ui.projector import for_projector
from ui.streamlit_private import SVG_BUTTON_SCRIPT, chart_text_style, unchecked_figure
from ui.text import literal_html


def margins(top: int = 40, bottom: int = 10, side: int = 10) -> dict:
    """The tight margins every chart uses (a title needs ``top`` ≈ 40; none: 10).

    >>> margins(10)
    {'l': 10, 'r': 10, 't': 10, 'b': 10}
    """
    return {"l": side, "r": side, "t": top, "b": bottom}


def heatmap(
    matrix,
    x_labels=None,
    y_labels=None,
    title: str = "",
    colorscale: str = "Blues",
    zmid: float | None = None,
    text_format: str | None = ".2f",
    height: int | None = None,
    x_title: str = "",
    y_title: str = "",
    zmin=None,
    zmax=None,
) -> go.Figure:
    """A heatmap with every token label readable (rows top to bottom, the values printed in small matrices).

    Built in one constructor call from plain dicts: Plotly validates each ``update_layout`` / ``update_xaxes``
    call on its own, which made this ten times slower (6 ms against 0.6 ms a figure; a page draws dozens)."""
    values = _matrix_values(matrix)
    rows = len(values)
    columns = len(values[0]) if rows else 0
    show_text = text_format is not None and rows * columns <= 400
    trace = dict(
        type="heatmap",
        z=values,
        colorscale=_colorscale(colorscale),
        zmid=zmid,
        zmin=zmin,
        zmax=zmax,
        texttemplate=f"%{{z:{text_format}}}" if show_text else None,
        hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>",
    )
    if x_labels is not None:
        trace["x"] = [_label(s) for s in x_labels]
    if y_labels is not None:
        trace["y"] = [_label(s) for s in y_labels]
    layout = dict(
        title=dict(text=title),
        height=height or max(260, min(700, 40 * rows + 120)),
        margin=margins(40 if title else 10),
        xaxis=_token_axis(x_labels, title=x_title, vertical_past=16),
        yaxis=_token_axis(y_labels, title=y_title, autorange="reversed"),
    )
    return unchecked_figure([{k: v for k, v in trace.items() if v is not None}], layout)


def _token_axis(labels, title: str, vertical_past: int | None = None, **extra) -> dict:
    """A heatmap axis of categories on which every token label stays readable: Plotly hides every other category
    label when they crowd, so up to 64 labels each get a tick (an index range — dimensions, positions — may be
    thinned: 64 labels forced onto one axis overlapped), turned upright past ``vertical_past`` of them.

    >>> _token_axis(["The", "cat"], "keys")["dtick"], "dtick" in _token_axis(range(64), "dimension")
    (1, False)
    """
    axis: dict = dict(title=dict(text=title), type="category", **extra)
    if labels is None or len(labels) > 64 or index_range(labels):
        return axis
    axis.update(dtick=1, tickfont=dict(size=11 if len(labels) <= 24 else 9))
    if vertical_past is not None and len(labels) > vertical_past:
        axis["tickangle"] = -90
    return axis


@functools.lru_cache(maxsize=32)
def _named_colorscale(name: str) -> tuple:
    import plotly.colors

    return tuple(tuple(stop) for stop in plotly.colors.get_colorscale(name))


def _colorscale(value):
    """A colorscale as Plotly's check would leave it: a name ("Blues") becomes its list of colour stops (plotly.js
    has colorscales of the same names that look different); a list stays as it is.

    >>> _colorscale("Blues")[0], _colorscale([[0, "white"], [1, "black"]])
    ([0.0, 'rgb(247,251,255)'], [[0, 'white'], [1, 'black']])
    """
    return [list(stop) for stop in _named_colorscale(value)] if isinstance(value, str) else value


def index_range(labels) -> bool:
    """Are the labels consecutive whole numbers (dimensions, positions), which an axis may thin out?

    >>> index_range(range(64)), index_range(["0", "1", "2"]), index_range(["The", "cat"]), index_range([0, 2])
    (True, True, False, False)
    """
    try:
        numbers = [int(str(label)) for label in labels]
    except ValueError:
        return False
    return bool(numbers) and numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _matrix_values(matrix):
    """A heatmap's z: a tensor or array as a float64 numpy array (Plotly checks and sends it as one typed array,
    much faster than a nested list of a large matrix); a list stays a list."""
    import numpy as np

    if hasattr(matrix, "detach"):
        return matrix.detach().to("cpu").double().numpy()
    if isinstance(matrix, np.ndarray):
        return matrix.astype(np.float64)
    return matrix


def heatmap_panels(panels: list[dict], columns: int, row_height: int = 300, colorscale: str = "Blues") -> go.Figure:
    """Several small heatmaps in ONE figure, ``columns`` to a row: each panel a dict with ``matrix``,
    ``x_labels``, ``y_labels``, ``title`` and optional ``text_format`` (".3f" unless given; None: no numbers),
    ``zmin``, ``zmax``. A browser draws one Plotly figure of four panels far faster than four figures (each
    figure has its own toolbar, layers and resize watcher), which matters when a class opens a page at once.
    Each panel keeps its own colour range; the numbers are printed in the cells, so no colour bar is drawn.

    >>> figure = heatmap_panels([dict(matrix=[[1, 0], [0, 1]], x_labels=["a", "b"], y_labels=["a", "b"],
    ...                               title="first"), dict(matrix=[[0.5]], x_labels=["c"], y_labels=["d"],
    ...                               title="second")], columns=2)
    >>> len(figure.data), figure.layout.xaxis2.type, figure.layout.yaxis.autorange
    (2, 'category', 'reversed')
    """
    rows = -(-len(panels) // columns)
    layout = _panels_layout(rows, columns, tuple(panel.get("title", "") for panel in panels))
    traces = []
    for number, panel in enumerate(panels):
        text_format = panel.get("text_format", ".3f")
        suffix = "" if number == 0 else str(number + 1)
        trace = dict(
            type="heatmap",
            z=_matrix_values(panel["matrix"]),
            x=[_label(s) for s in panel["x_labels"]],
            y=[_label(s) for s in panel["y_labels"]],
            colorscale=_colorscale(colorscale),
            zmin=panel.get("zmin"),
            zmax=panel.get("zmax"),
            showscale=False,
            texttemplate=f"%{{z:{text_format}}}" if text_format else None,
            hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>",
            xaxis=f"x{suffix}",
            yaxis=f"y{suffix}",
        )
        traces.append({key: value for key, value in trace.items() if value is not None})
        layout[f"xaxis{suffix}"] = {
            **layout[f"xaxis{suffix}"],
            "type": "category",
            "dtick": 1,
            "tickfont": {"size": 11},
        }
        layout[f"yaxis{suffix}"] = {
            **layout[f"yaxis{suffix}"],
            "type": "category",
            "dtick": 1,
            "tickfont": {"size": 11},
            "autorange": "reversed",
        }
    layout.update(height=row_height * rows, margin=margins(40))
    # one constructor call from plain dicts, not checked property by property again: make_subplots + add_traces +
    # update_layout validated every property at each step (76 ms against 1 ms for four panels, built once a student
    # when a class opens a page); the tests compare it with Plotly's own checked figure
    return unchecked_figure(traces, layout)


@functools.lru_cache(maxsize=64)
def _panels_layout_json(rows: int, columns: int, titles: tuple[str, ...]) -> str:
    from plotly.subplots import make_subplots

    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=list(titles),
        horizontal_spacing=0.12 if columns <= 2 else 0.06,
        vertical_spacing=0.3 / rows,
    )
    layout = figure.layout.to_plotly_json()
    layout.pop("template", None)  # Plotly's default template: every new figure gets it again without validating it
    return json.dumps(layout)


def _panels_layout(rows: int, columns: int, titles: tuple[str, ...]) -> dict:
    """The grid of a panels figure as Plotly's ``make_subplots`` lays it out (axis domains and anchors, the titles
    as annotations), made once per shape and titles: a fresh dict each call, for the caller to fill in."""
    return json.loads(_panels_layout_json(rows, columns, titles))


def log_axis(high: float, title: str = "") -> dict:
    """A log axis labelled at the powers of ten only, written out (1, 10, 100, 1,000): Plotly's own labels on a log
    axis name the 2s and 5s between them too, which read "1 2 5 10 2 5 100 2" on a rank axis.

    >>> log_axis(2345)["tickvals"], log_axis(2345)["ticktext"]
    ([1, 10, 100, 1000, 10000], ['1', '10', '100', '1,000', '10,000'])
    >>> log_axis(1)["tickvals"]
    [1, 10]
    """
    powers = [10**k for k in range(max(1, math.ceil(math.log10(max(high, 1))) + 1))]
    if len(powers) < 2:
        powers.append(10)
    return dict(type="log", title=dict(text=title), tickvals=powers, ticktext=[f"{p:,}" for p in powers])


def tex_int(value: float) -> str:
    """A whole number with thousands separators for a LaTeX formula: ``{,}`` keeps math mode from putting a
    space after each comma (``8, 192``).

    >>> tex_int(65536), tex_int(999), tex_int(1070336.0)
    ('65{,}536', '999', '1{,}070{,}336')
    """
    return f"{round(value):,}".replace(",", "{,}")


def tex_number(value: float, spec: str = "g") -> str:
    """A number for a LaTeX formula: negatives in parentheses, so ``1^2 + (-2)^2`` never reads ``1^2 + -2^2``.

    >>> tex_number(-2.0), tex_number(0.5), tex_number(-0.25, ".3f")
    ('(-2)', '0.5', '(-0.250)')
    """
    text = format(value, spec)
    return f"({text})" if text.startswith("-") else text


def _label(value) -> str:
    return str(value)


def unique_labels(tokens: list[str]) -> list[str]:
    """Plotly merges equal category labels; number repeated tokens so each keeps its row."""
    seen: dict[str, int] = {}
    out = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        out.append(token if seen[token] == 1 else f"{token} ({seen[token]})")
    return out


def bar(
    labels,
    values,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    color: str = "#4c6ef5",
    text_format: str = ",.0f",
    horizontal: bool = False,
    height: int = 320,
    texts: list[str] | None = None,
) -> go.Figure:
    """Bars with their numbers. ``texts``: a text per bar instead of the number, drawn beside the bar, so that a bar of
    zero (an empty bar) still says what it is."""
    shown = dict(text=texts, textposition="outside", cliponaxis=False) if texts is not None else {}
    if horizontal:
        trace = go.Bar(
            y=list(labels), x=list(values), orientation="h", marker_color=color, texttemplate=f"%{{x:{text_format}}}"
        )
    else:
        trace = go.Bar(x=list(labels), y=list(values), marker_color=color, texttemplate=f"%{{y:{text_format}}}")
    if shown:
        trace.update(texttemplate=None, **shown)
    figure = go.Figure(trace)
    figure.update_layout(
        title=title,
        xaxis_title=x_title,
        yaxis_title=y_title,
        height=height,
        margin=margins(40 if title else 10),
    )
    if texts is not None:  # room beside the longest bar for its text
        room = [0, 1.5 * max([float(v) for v in values] + [1.0])]
        figure.update_layout(**{"xaxis_range" if horizontal else "yaxis_range": room})
    return figure


def token_chips(pieces: list[str], ids: list[int], tooltips: list[str] | None = None, show_ids: bool = False) -> str:
    """HTML: each token a coloured chip, its id under it (``show_ids``, as Tiktokenizer shows them) and on hover."""
    chips = []
    for number, (piece, token_id) in enumerate(zip(pieces, ids)):
        tip = literal_html(tooltips[number] if tooltips else f"id {token_id}")
        chip = (
            f'<span style="background:{PALETTE[number % len(PALETTE)]};border-radius:4px;padding:1px 3px;'
            f'font-family:monospace;white-space:pre">{literal_html(piece)}</span>'
        )
        label = (
            f'<span style="font-size:0.7rem;color:#495057;font-family:monospace">{token_id}</span>' if show_ids else ""
        )
        chips.append(
            f'<span title="{tip}" style="display:inline-flex;flex-direction:column;align-items:center;'
            f'margin:1px;vertical-align:top">{chip}{label}</span>'
        )
    return f'<div style="line-height:{2.6 if show_ids else 1.9}">' + "".join(chips) + "</div>"


def token_with_number(piece: str, style: str, number: str, title_html: str = "", css_class: str = "") -> str:
    """HTML: a token (escaped, a line break shown as ↵) in a chip of ``style``, with ``number`` written small under
    it, so that what the chip's colour says (a probability, a loss) is said in figures too (issue 70: colour is
    never the only signal). ``title_html``: the hover text, escaped already (:func:`ui.text.literal_html`);
    ``css_class``: the token's class (a page's tests find its tokens by it).

    >>> chip = token_with_number("a<b\\n", "background:#eee", "0.42")
    >>> "a&lt;b↵</span>" in chip, chip.endswith('color:#495057">0.42</span></span>')
    (True, True)
    """
    tip = (f' title="{title_html}"' if title_html else "") + (f' class="{css_class}"' if css_class else "")
    shown = literal_html(piece.replace("\n", "↵"))
    return (
        f'<span{tip} style="display:inline-flex;flex-direction:column;align-items:center;margin:1px 0;'
        f'vertical-align:top"><span style="{style};font-family:monospace;white-space:pre">{shown}</span>'
        f'<span style="font-size:0.65rem;padding:0 2px;color:{NUMBER_TEXT}">{number}</span></span>'
    )


def flow(steps: list[tuple[str, str, str]], direction: str = "column") -> str:
    """HTML boxes joined by arrows: (title, shape, detail) per step."""
    arrow = "↓" if direction == "column" else "→"
    boxes = []
    for title, shape, detail in steps:
        boxes.append(
            '<div style="border:2px solid #4c6ef5;border-radius:8px;padding:6px 10px;background:#eef3ff;">'
            f'<b>{html.escape(title)}</b> <code style="float:right">{html.escape(shape)}</code>'
            f'<div style="font-size:0.8rem;color:#495057">{html.escape(detail)}</div></div>'
        )
    joiner = f'<div style="text-align:center;color:{MUTED_TEXT}">{arrow}</div>'
    return f'<div style="display:flex;flex-direction:{direction};gap:2px">' + joiner.join(boxes) + "</div>"


# ------------------------------------------------------------------ figures to take away
EXPORT_SCALE = 2  #: PNG downloads are drawn at twice the size on screen (sharp on slides)


def export_config(filename: str = "llmviz-chart") -> dict:
    """Plotly's config for every chart: the camera button saves a PNG at 2×; an SVG button sits beside it.

    >>> export_config("loss")["toImageButtonOptions"]
    {'format': 'png', 'scale': 2, 'filename': 'loss'}
    """
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "scale": EXPORT_SCALE, "filename": filename},
    }


def _filename(figure: go.Figure) -> str:
    title = figure.layout.title.text or ""
    slug = "".join(ch if ch.isalnum() else "-" for ch in title.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return f"llmviz-{slug[:40]}" if slug else "llmviz-chart"


def plotly_text(text: str) -> str:
    """``text`` as Plotly draws it, tags and all: ``&``, ``<`` and ``>`` escaped (Plotly reads ``&lt;`` back as
    ``<``; it shows ``&quot;`` as typed, and a quote outside a tag is harmless, so quotes stay).

    >>> plotly_text('<a href="https://evil.example/x">Ada</a>')
    '&lt;a href="https://evil.example/x"&gt;Ada&lt;/a&gt;'
    """
    return html.escape(str(text), quote=False)


def show_in(where, figure: go.Figure, width="stretch", words: str = "", **kwargs):
    """Draw a Plotly figure in ``where`` (``st``, a column, a container) the way every llmviz chart is drawn:
    downloadable as PNG at 2× and as SVG, and with bigger type in presenter mode (:func:`ui.projector.for_projector`:
    every label 14 px or more, a slide keeps its chart and controls on one 1280×720 screen). ``words``: what the
    chart teaches, with its key numbers (a sentence from ``llmviz.lessons``), said to a screen reader before the
    series' extremes (:func:`ui.chart_text.describe`)."""
    from ui import present

    scale = present.chart_scale()
    if scale != 1.0:
        figure = for_projector(figure, scale)
    figure.layout.meta = chart_text.describe(
        figure, words
    )  # its text alternative (ui/static/reachable.js writes it out)
    return where.plotly_chart(figure, width=width, config=export_config(_filename(figure)), **kwargs)


def show(figure: go.Figure, width="stretch", words: str = "", **kwargs):
    """``st.plotly_chart`` for llmviz pages: see :func:`show_in`."""
    import streamlit as st

    return show_in(st, figure, width=width, words=words, **kwargs)


# Streamlit draws a display formula in a box that scrolls sideways and clips what rises above or hangs below its line
# (overflow: auto hidden): the numerator of a fraction lost its top pixels. The box gets room above and below.
FORMULA_STYLE = "<style>.katex-display { padding: 0.5em 0.1em; }</style>"


def _light_theme() -> bool:
    """Whether the browser shows the app's light theme (Streamlit's dark one, picked in its menu, keeps its own
    light chart text); light when it cannot be told (AppTest, a first run)."""
    import streamlit as st

    return getattr(getattr(st.context, "theme", None), "type", None) != "dark"


def install_export() -> None:
    """Once per run (app.py): the SVG download button on every chart, the room every formula needs, a keyboard stop
    on every formula or code block wider than its column (ui/static/reachable.js), and charts' text that meets AA's
    contrast (:func:`ui.streamlit_private.chart_text_style`)."""
    import streamlit as st

    scripts = SVG_BUTTON_SCRIPT + chart_text.REACHABLE_SCRIPT  # (after an element: a first script is dropped)
    style = FORMULA_STYLE + (chart_text_style(MUTED_TEXT) if _light_theme() else "")  # (dark: the theme's own)
    st.html('<span data-llmviz-export="1"></span>' + scripts + style, unsafe_allow_javascript=True)


def equation(line: str, where=None) -> None:
    """One display equation (:func:`ui.equations.display_math`)."""
    import streamlit as st

    (where or st).latex(display_math(line))


def latex(*lines: str, where=None, label: str = "Copy as LaTeX") -> None:
    """A worked example: each line as an equation (broken into aligned lines when wider than the page), and its
    LaTeX source one click away (to copy)."""
    import streamlit as st

    where = where or st
    for line in lines:
        where.latex(display_math(line))
    with where.popover(label, icon=":material/content_copy:"):
        source = (
            "\\begin{align*}\n" + " \\\\\n".join(f"  & {line}" for line in lines) + "\n\\end{align*}"
            if len(lines) > 1
            else f"\\[ {lines[0]} \\]"
        )
        st.code(source, language="latex", wrap_lines=True)


def head_grid(patterns, height_per_layer: int | None = None) -> go.Figure:
    """Every layer × head attention pattern as thumbnails in ONE heatmap (fast for GPT-2's 12 × 12).

    ``patterns`` is (layers, heads, T, T). The thumbnails are tiled into one matrix with a
    blank row/column between them, so Plotly draws one trace instead of layers × heads
    subplots (144 subplots take seconds to build; one tiled heatmap, milliseconds).
    """
    import torch

    patterns = torch.as_tensor(patterns, dtype=torch.float32)
    n_layers, n_heads, tokens, _ = patterns.shape
    gap = max(1, tokens // 8)
    cell = tokens + gap
    grid = torch.full((n_layers * cell - gap, n_heads * cell - gap), float("nan"))
    for layer in range(n_layers):
        for head in range(n_heads):
            grid[layer * cell : layer * cell + tokens, head * cell : head * cell + tokens] = patterns[layer, head]
    figure = go.Figure(
        go.Heatmap(
            z=grid.numpy(),
            colorscale="Blues",
            zmin=0,
            zmax=1,
            showscale=False,
            hoverongaps=False,
            hovertemplate="weight %{z:.2f}<extra></extra>",
        )
    )
    centres = [i * cell + (tokens - 1) / 2 for i in range(max(n_layers, n_heads))]
    figure.update_xaxes(
        tickvals=centres[:n_heads],
        ticktext=[f"H{h}" for h in range(n_heads)],
        side="top",
        showgrid=False,
        zeroline=False,
    )
    figure.update_yaxes(
        tickvals=centres[:n_layers],
        ticktext=[f"L{i}" for i in range(n_layers)],
        autorange="reversed",
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
    )
    per_layer = height_per_layer or max(60, min(120, 1100 // n_heads))
    figure.update_layout(height=per_layer * n_layers + 60, margin=margins(30), plot_bgcolor="rgba(0,0,0,0)")
    return figure
