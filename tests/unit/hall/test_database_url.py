"""The ``database_url`` fixture (tests/support/postgres.py) gives a real, empty database on both backends the lab's
registry runs on: a SQLite file and a PostgreSQL server (Debian's, started for the session or CI's)."""

import sqlalchemy as sa


def test_a_table_made_with_sqlalchemy_keeps_its_rows_on_both_databases(database_url):
    engine = sa.create_engine(database_url)
    metadata = sa.MetaData()
    runs = sa.Table(
        "runs",
        metadata,
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("student", sa.String(64), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
    )
    try:
        metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(
                runs.insert(), [{"id": "r1", "student": "ann", "step": 300}, {"id": "r2", "student": "bob", "step": 5}]
            )
        with engine.connect() as connection:
            rows = connection.execute(sa.select(runs.c.student, runs.c.step).order_by(runs.c.id)).all()
            assert [tuple(row) for row in rows] == [("ann", 300), ("bob", 5)]
            assert engine.dialect.name == ("postgresql" if database_url.startswith("postgresql") else "sqlite")
            assert sa.inspect(connection).get_table_names() == ["runs"]  # a fresh database: nothing else in it
    finally:
        engine.dispose()
