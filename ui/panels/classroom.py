"""The class view's figures and tables (the numbers come from :mod:`llmviz.lab.classroom`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from llmviz.lab.classroom import ClassRow

COLUMNS = ("student", "run", "model", "state", "step", "best validation loss", "last training loss")


def class_table(rows: list[ClassRow]) -> pd.DataFrame:
    """One line per run, in the order given.

    >>> row = ClassRow("r1", "s1", "Ada", "GPT micro", "gpt", "running", 120, 300, 2.4567, 2.61, 0.0)
    >>> class_table([row]).iloc[0].tolist()
    ['Ada', 'GPT micro', 'gpt', 'running', '120 of 300', 2.457, 2.61]
    """
    return pd.DataFrame(
        [
            (
                row.name,
                row.label,
                row.model,
                row.state,
                f"{row.step} of {row.total}",
                round(row.best_val_loss, 3) if row.best_val_loss is not None else None,
                round(row.last_loss, 3) if row.last_loss is not None else None,
            )
            for row in rows
        ],
        columns=list(COLUMNS),
    )


def curves_figure(rows: list[ClassRow], curves: dict[str, list[tuple]], log_x: bool, validation: bool) -> go.Figure:
    """Every run's training loss (or validation loss) against its step, one line per run, named by student and run."""
    figure = go.Figure()
    for row in rows:
        points = curves.get(row.run_id, [])
        column = 2 if validation else 1
        shown = [(step, values[column - 1]) for step, *values in points if values[column - 1] is not None]
        if log_x:
            shown = [(step, value) for step, value in shown if step > 0]
        if not shown:
            continue
        steps, losses = zip(*shown, strict=True)
        figure.add_trace(
            go.Scattergl(x=steps, y=losses, mode="lines", name=f"{row.name} · {row.label}"[:60], hovertemplate=None)
        )
    figure.update_layout(
        height=460,
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis_title="step" + (" (log scale)" if log_x else ""),
        yaxis_title="validation loss" if validation else "training loss",
        legend=dict(font=dict(size=11)),
    )
    figure.update_xaxes(type="log" if log_x else "linear")
    return figure
