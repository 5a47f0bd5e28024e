"""The class view's numbers: every student's runs, live, from the lab's registry (no worker is asked anything).

>>> from llmviz.lab.records import RunRecord
>>> from llmviz.lab.registry import Registry
>>> registry = Registry("sqlite://")
>>> records = registry.records
>>> for student, name in (("s1", "Ada"), ("s2", "")):
...     records.ensure_student(student, name=name)
>>> records.add_run(RunRecord("r1", "s1", "training", "GPT micro", "running", total=300, step=120, best_val_loss=2.5))
>>> records.add_run(RunRecord("r2", "s2", "training", "GPT mini", "finished", total=300, step=300, best_val_loss=2.1))
>>> [(row.name, row.run_id, row.best_val_loss) for row in class_rows(registry)]
[('student 2', 'r2', 2.1), ('Ada', 'r1', 2.5)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmviz.lab.records import MODEL_KINDS
from llmviz.lab.registry import Registry

SORTS = ("best validation loss", "newest", "student")


@dataclass(frozen=True)
class ClassRow:
    """One run of the class, as the teacher sees it."""

    run_id: str
    student: str
    name: str  # the name the student typed, else "student N" (N: the order they first came in)
    label: str
    model: str
    state: str
    step: int
    total: int
    best_val_loss: float | None
    last_loss: float | None
    created: float


def class_rows(
    registry: Registry, sort: str = "best validation loss", kinds: tuple[str, ...] = MODEL_KINDS
) -> list[ClassRow]:
    """Every student's runs of ``kinds`` (language models, by default), sorted by ``sort`` (one of
    :data:`SORTS`; runs with no validation loss yet last when sorting by it). Two queries, whatever the class's
    size."""
    names = {}
    for number, student in enumerate(registry.records.students(), start=1):
        names[student["id"]] = student["name"] or f"student {number}"
    rows = [
        ClassRow(
            run.id,
            run.student,
            names.get(run.student, run.student),
            run.label,
            run.model,
            run.state,
            run.step,
            run.total,
            run.best_val_loss,
            run.last_loss,
            run.created,
        )
        for run in registry.records.all_runs()
        if run.kind in kinds
    ]
    if sort == "newest":
        return sorted(rows, key=lambda row: -row.created)
    if sort == "student":
        return sorted(rows, key=lambda row: (row.name.lower(), row.created))
    return sorted(rows, key=lambda row: (row.best_val_loss is None, row.best_val_loss or math.inf, row.created))


def thin_curve(points: list[tuple[int, float | None, float | None]], most: int = 300) -> list[tuple]:
    """At most ``most`` points of a curve, evenly spaced, always with its last one (the class chart stays light).

    >>> [p[0] for p in thin_curve([(s, 1.0, None) for s in range(10)], most=4)]
    [0, 3, 6, 9]
    """
    if len(points) <= most:
        return points
    stride = math.ceil(len(points) / most)
    kept = points[::stride]
    return kept if kept[-1] == points[-1] else [*kept[:-1], points[-1]] if len(kept) >= most else [*kept, points[-1]]
