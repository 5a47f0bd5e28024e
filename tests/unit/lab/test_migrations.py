"""The registry's schema is versioned (Alembic, llmviz/lab/migrations): a database made by main before revisions
were kept (its tables copied in tests/unit/lab/fixtures/main_schema.sql) is upgraded as the registry opens it, and
every run is found, on SQLite and on PostgreSQL (the ``database_url`` fixture, tests/support/postgres.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import sqlalchemy as sa

from llmviz.lab.migrations import schema
from llmviz.lab.records import TRAINING
from llmviz.lab.registry import Registry
from llmviz.lab.service import Lab
from llmviz.lab.storage import Storage

MAIN_SCHEMA = Path(__file__).parent / "fixtures" / "main_schema.sql"


def _make_main_database(url: str, students: int = 3, runs_each: int = 2) -> dict[str, list[str]]:
    """A database as main made it: its DDL run as it is, rows written in its shape (kind "train", no version)."""
    engine = sa.create_engine(url)
    made: dict[str, list[str]] = {}
    now = time.time()
    with engine.begin() as db:
        for statement in MAIN_SCHEMA.read_text().split(";"):
            if statement.strip():
                db.exec_driver_sql(statement)
        for s in range(students):
            student = f"s{s}"
            db.exec_driver_sql(
                "INSERT INTO lab_students (id, name, teacher, created, seen) VALUES (%s, %s, %s, %s, %s)"
                if url.startswith("postgresql")
                else "INSERT INTO lab_students (id, name, teacher, created, seen) VALUES (?, ?, ?, ?, ?)",
                (student, f"Student {s}", False, now, now),
            )
            for r in range(runs_each):
                run_id = f"r{s}x{r}"
                made.setdefault(student, []).append(run_id)
                _insert(db, url, "lab_runs", {
                    "id": run_id, "student": student, "kind": "train", "label": f"Run {r}", "model": "gpt",
                    "config": json.dumps({"steps": 60}), "state": "parked" if r else "finished", "step": 30 + r,
                    "total": 60, "best_val_loss": 2.5, "last_loss": 2.4, "error": None, "created": now + r,
                    "updated": now, "holder": None, "heartbeat": None, "training": False, "memory": 0, "wanted": None,
                })  # fmt: skip
                for step in range(0, 31 + r):
                    _insert(db, url, "lab_points", {"run": run_id, "step": step, "loss": 3.0 - step / 100,
                                                    "val_loss": None})  # fmt: skip
    engine.dispose()
    return made


def _insert(db, url: str, table: str, values: dict) -> None:
    marks = ", ".join(["%s" if url.startswith("postgresql") else "?"] * len(values))
    db.exec_driver_sql(f"INSERT INTO {table} ({', '.join(values)}) VALUES ({marks})", tuple(values.values()))


def test_a_database_made_by_main_is_upgraded_and_every_run_is_found(database_url, tmp_path):
    made = _make_main_database(database_url)
    registry = Registry(database_url)
    assert registry.revision == schema.head()
    lab = Lab(registry, Storage(tmp_path / "lab"))
    for student, run_ids in made.items():
        views = lab.runs(student)
        assert sorted(view.id for view in views) == sorted(run_ids)
        assert all(view.kind == TRAINING and view.resumes == () for view in views)
        for view in views:
            curve = lab.curve(student, view.id)
            assert curve.steps == list(range(0, view.step + 1))  # every point the old database held
            assert curve.series == {}  # its points keep no measures of a kind's own (revision 0003's column)
    registry.records.add_points("r0x1", [(10_000, 1.0, None)], measures={10_000: {"margin": 0.5}})
    assert registry.records.series("r0x1") == {"margin": [(10_000, 0.5)]}  # the upgraded table takes them
    parked = lab.run("s0", "r0x1")
    assert parked is not None and parked.state == "parked" and parked.state_by is None
    again = Registry(database_url)  # a second open finds it at the head and changes nothing
    assert again.revision == schema.head() and len(again.records.all_runs()) == 6
    registry.dispose()
    again.dispose()


def test_a_new_database_gets_every_table_at_the_head(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    registry = Registry(url)
    with registry.engine.connect() as db:
        assert schema.current(db) == schema.head()
        columns = {column["name"] for column in sa.inspect(db).get_columns("lab_runs")}
    assert {"state_by", "state_step", "resumes", "wanted_by"} <= columns
    registry.dispose()
