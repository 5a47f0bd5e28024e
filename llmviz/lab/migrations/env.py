"""Alembic's environment for the lab's registry: runs on the connection :func:`llmviz.lab.migrations.upgrade`
hands it (``config.attributes["connection"]``), else on ``LLMVIZ_DATABASE_URL`` (the command line)."""

from __future__ import annotations

from alembic import context

from llmviz.lab.migrations.schema import VERSION_TABLE
from llmviz.lab.records import metadata


def run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        from llmviz import settings
        from llmviz.lab.registry import default_url, make_engine
        from llmviz.paths import runs_folder

        engine = make_engine(settings.get("LLMVIZ_DATABASE_URL") or default_url(runs_folder()))
        with engine.begin() as connection:
            _migrate(connection)
        return
    _migrate(connection)


def _migrate(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


if hasattr(context, "config"):  # imported by Alembic (not by a doctest run that walks the package)
    run()
