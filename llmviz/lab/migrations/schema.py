"""Upgrading the registry's database to the newest revision of :mod:`llmviz.lab.migrations` (Alembic), at open."""

from __future__ import annotations

import logging
import os

import sqlalchemy as sa

log = logging.getLogger(__name__)
HERE = os.path.dirname(os.path.abspath(__file__))
FIRST = "0001"  # the schema before revisions were kept (main up to the one-record round)
VERSION_TABLE = "lab_alembic_version"


def config(connection: sa.Connection | None = None):
    """An Alembic config for these migrations (``connection``: run them on it)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", HERE)
    cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    from alembic.script import ScriptDirectory

    return str(ScriptDirectory.from_config(config()).get_current_head())


def current(connection: sa.Connection) -> str | None:
    """The revision ``connection``'s database is at (None: never stamped)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE}).get_current_revision()


def upgrade(engine: sa.Engine) -> str:
    """Bring ``engine``'s database to the newest revision (a new database gets every table; one made before
    revisions were kept, with the tables but no version, is stamped with the first revision first). Safe when
    several processes open the database at once: the upgrade runs in one transaction, and a process that finds
    the work done by another goes on. Returns the revision the database is at."""
    from alembic import command

    target = head()
    for attempt in range(3):
        try:
            with engine.begin() as connection:
                _lock(connection)
                at = current(connection)
                if at == target:
                    return target
                if at is None and sa.inspect(connection).has_table("lab_runs"):
                    _complete_first(connection)
                    command.stamp(config(connection), FIRST)
                    log.info("the lab's database had no schema version: stamped as revision %s", FIRST)
                command.upgrade(config(connection), "head")
                return target
        except (sa.exc.OperationalError, sa.exc.IntegrityError, sa.exc.ProgrammingError):
            if attempt == 2:
                raise
            log.info("another process was upgrading the lab's database: trying again")
    return target


def _complete_first(connection: sa.Connection) -> None:
    """A database made before revisions were kept, by a registry older than some of the first revision's tables
    (``lab_resumes``, ``lab_uploads``): it gains them as they were (the tables it has are left alone)."""
    from llmviz.lab.records import metadata

    have = set(sa.inspect(connection).get_table_names())
    missing = [table for name, table in metadata.tables.items() if name not in have and name != "lab_runs"]
    metadata.create_all(connection, tables=missing)


def _lock(connection: sa.Connection) -> None:
    """Hold the database's write lock for the upgrade (one process upgrades at a time)."""
    if connection.dialect.name == "postgresql":
        connection.execute(sa.text("SELECT pg_advisory_xact_lock(560056)"))
    elif connection.dialect.name == "sqlite":
        connection.exec_driver_sql("CREATE TABLE IF NOT EXISTS lab_upgrade_lock (id INTEGER)")
