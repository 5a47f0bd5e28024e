"""The class view's figures and tables (the numbers come from :mod:`llmviz.lab.classroom`).

Every name a student typed is drawn as text: Plotly draws a legend entry or a hover text as HTML (an ``<a>`` there
is a link, a ``<span style>`` can cover the chart), so each is escaped (:func:`ui.charts.plotly_text`); a table cell is
plain text already.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from llmviz.lab.classroom import ClassRow
from ui.charts import plotly_text
from ui.text import csv_text, spreadsheet_safe

COLUMNS = ("student", "run", "model", "state", "step", "best validation loss", "last training loss")
NOT_YET = "–"  # a loss not measured yet (a table cell, never a raw "None")
MODELS = {"gpt": "GPT", "char": "character-level"}  # a run's model family, as the teacher reads it


def middle_cut(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters, cut in its middle (its start and its end stay: a run's "#3").

    >>> middle_cut("GPT micro · AdamW · lr 0.003 · Python manual #3", 24)
    'GPT micro · …n manual #3'
    >>> middle_cut("short", 24)
    'short'
    """
    if len(text) <= most:
        return text
    tail = (most - 1) // 2
    return text[: most - 1 - tail] + "…" + text[len(text) - tail :]


def model_text(model: str | None) -> str:
    """A run's model as the teacher reads it.

    >>> model_text("gpt"), model_text(""), model_text(None)
    ('GPT', '–', '–')
    """
    return MODELS.get(model or "", model or NOT_YET)


def legend_names(rows: list[ClassRow]) -> list[str]:
    """Each run's name on the class chart: student · run · model, each part cut in its middle so that two runs of one
    student never read the same (a repeat gets " (2)", " (3)"), escaped for Plotly.

    >>> rows = [ClassRow(f"r{n}", "s1", "Ada", "GPT micro · AdamW · lr 0.003 · Python manual" + (f" #{n}" if n else ""),
    ...                  "gpt", "finished", 60, 60, None, None, 0.0) for n in range(3)]
    >>> legend_names(rows)[2]
    'Ada · GPT micro · AdamW ·…· Python manual #2 · GPT'
    >>> len(set(legend_names(rows))), legend_names([rows[0], rows[0]])[1].endswith("GPT (2)")
    (3, True)
    """
    names: list[str] = []
    seen: dict[str, int] = {}
    for row in rows:
        text = f"{middle_cut(row.name, 20)} · {middle_cut(row.label, 38)} · {model_text(row.model)}"
        seen[text] = seen.get(text, 0) + 1
        names.append(plotly_text(text if seen[text] == 1 else f"{text} ({seen[text]})"))
    return names


def _loss(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else NOT_YET


TABLE_ROWS = 12  # a class table longer than this scrolls inside its own box, so that the chart stays near
TABLE_HEIGHT = 520  # pixels: about twelve rows of wrapped labels


def table_height(rows: int) -> int | str:
    """The class table's height: its content up to :data:`TABLE_ROWS` rows, then a box of :data:`TABLE_HEIGHT`
    pixels that scrolls.

    >>> table_height(3), table_height(80)
    ('content', 520)
    """
    return "content" if rows <= TABLE_ROWS else TABLE_HEIGHT


def class_table(rows: list[ClassRow]) -> pd.DataFrame:
    """One line per run, in the order given; a loss not measured yet is "–", never a raw None.

    >>> row = ClassRow("r1", "s1", "Ada", "GPT micro", "gpt", "running", 120, 300, 2.4567, None, 0.0)
    >>> class_table([row]).iloc[0].tolist()
    ['Ada', 'GPT micro', 'GPT', 'running', '120 of 300', '2.457', '–']
    """
    return pd.DataFrame(
        [
            (
                row.name,
                row.label,
                model_text(row.model),
                row.state,
                f"{row.step} of {row.total}",
                _loss(row.best_val_loss),
                _loss(row.last_loss),
            )
            for row in rows
        ],
        columns=list(COLUMNS),
    )


def class_csv(rows: list[ClassRow]) -> str:
    """The class table as CSV for the teacher's download; what students typed (names, run labels) cannot run as a
    spreadsheet formula (:func:`ui.text.spreadsheet_safe`).

    >>> row = ClassRow("r1", "s1", "=1+1", "GPT micro", "gpt", "finished", 300, 300, 2.4567, 2.5, 0.0)
    >>> class_csv([row]).splitlines()[1]
    "'=1+1,GPT micro,GPT,finished,300 of 300,2.457,2.500"
    """
    table = class_table(rows)
    for column in ("student", "run"):
        table[column] = [spreadsheet_safe(str(text)) for text in table[column]]
    return csv_text(table)


def curves_figure(rows: list[ClassRow], curves: dict[str, list[tuple]], log_x: bool, validation: bool) -> go.Figure:
    """Every run's training loss (or validation loss) against its step, one line per run, named student · run ·
    model (:func:`legend_names`)."""
    figure = go.Figure()
    for row, name in zip(rows, legend_names(rows), strict=True):
        points = curves.get(row.run_id, [])
        column = 2 if validation else 1
        shown = [(step, values[column - 1]) for step, *values in points if values[column - 1] is not None]
        if log_x:
            shown = [(step, value) for step, value in shown if step > 0]
        if not shown:
            continue
        steps, losses = zip(*shown, strict=True)
        figure.add_trace(go.Scattergl(x=steps, y=losses, mode="lines", name=name, hovertemplate=None))
    figure.update_layout(
        height=460,
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis_title="step" + (" (log scale)" if log_x else ""),
        yaxis_title="validation loss" if validation else "training loss",
        legend=dict(font=dict(size=11)),
    )
    figure.update_xaxes(type="log" if log_x else "linear")
    return figure
