"""A real PostgreSQL server for the tests of what llmviz keeps in a database (the lab's registry, issue 49/52).

- ``LLMVIZ_TEST_DATABASE_URL`` set (``.ci/run`` starts a throwaway cluster and sets it, e.g.
  ``postgresql+psycopg://postgres@127.0.0.1:55480/postgres``): the tests use that server.
- else, where Debian's PostgreSQL is installed (``/usr/lib/postgresql/<version>/bin``): the session makes a cluster
  in a temporary folder (``initdb``; as the ``postgres`` user when this is root, which initdb refuses), starts it on
  a free loopback port with ``pg_ctl`` and stops it (that data folder's server only) when the session ends.
- else: every test that asks for PostgreSQL is skipped, with the reason, except in CI (``CI`` set), where it must
  run. So it is where the server is there but its Python driver is not (``psycopg``, one of the hall's extras,
  requirements-hall.txt, which ``python run.py test`` does not install): README's test command is green on any
  machine (issues 57, 72). The skip lives in one place, :func:`postgres_missing` called by the fixtures below, and
  those fixtures mark their tests ``services`` (tests/support/services.py), so CI runs them again with the extras.

Fixtures:

- ``postgres_url``: the server's SQLAlchemy URL (an administrator's, on its ``postgres`` database; session scope);
- ``database_url``: a fresh, empty database for one test, once as a SQLite file and once on PostgreSQL
  (``database_url.startswith("postgresql")`` says which); the PostgreSQL one is dropped after the test;
- ``postgres_server``: the bin folder of this machine's PostgreSQL (``initdb``, ``pg_ctl``), its driver importable
  (session scope): for a test that starts a server of its own (examples/hall/start.sh's test);
- ``own_postgres``: ``own_postgres()``, a context manager: a server of the test's own that the test can stop and start
  again (its URL, start, stop).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.services import require

ENV = "LLMVIZ_TEST_DATABASE_URL"


def driver_installed() -> bool:
    """Is the PostgreSQL driver SQLAlchemy's ``postgresql+psycopg://`` URLs need importable?"""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def postgres_bin() -> Path | None:
    """The newest Debian PostgreSQL's bin folder (with ``initdb`` and ``pg_ctl``), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


def postgres_missing(server: bool = True) -> str | None:
    """Why the tests cannot have PostgreSQL here (its driver, then, with ``server``, its server), or None.

    >>> postgres_missing() in (None, DRIVER_MISSING, SERVER_MISSING)
    True
    """
    if not driver_installed():
        return DRIVER_MISSING
    if server and postgres_bin() is None:
        return SERVER_MISSING
    return None


DRIVER_MISSING = "the PostgreSQL driver is not installed (pip install -r requirements-hall.txt)"
SERVER_MISSING = "PostgreSQL is not installed (apt-get install postgresql)"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def as_user() -> list[str]:
    """The prefix that runs a command as a user initdb accepts: ``postgres`` when this is root, else nothing."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def wait_until_accepting(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"PostgreSQL did not accept connections on port {port} within {timeout:g} s")


@contextlib.contextmanager
def local_cluster(bin_dir: Path, port: int | None = None) -> Iterator[str]:
    """A throwaway PostgreSQL cluster (trust authentication, loopback only) for as long as the context lasts; its
    administrator's SQLAlchemy URL."""
    port = port or free_port()
    base = Path(tempfile.mkdtemp(prefix="llmviz-pg-"))
    data, log = base / "data", base / "server.log"
    user = as_user()
    if user:
        shutil.chown(base, "postgres", "postgres")
    run = dict(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    subprocess.run([*user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"], **run)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off -c full_page_writes=off"
    subprocess.run(
        [*user, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"], **run
    )
    try:
        wait_until_accepting(port)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], check=False)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Path:
    """This machine's PostgreSQL bin folder, its driver importable; the test skipped with the reason if not."""
    require(postgres_missing(), "PostgreSQL")
    return postgres_bin()


@pytest.fixture(scope="session")
def postgres_url(request) -> Iterator[str]:
    """An administrator's URL of a real PostgreSQL server for this session (see the module's docstring)."""
    given = os.environ.get(ENV)
    if given:
        require(postgres_missing(server=False), "PostgreSQL")
        yield given
        return
    with local_cluster(request.getfixturevalue("postgres_server")) as url:
        yield url


@contextlib.contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """A new, empty database on the server of ``admin_url`` for as long as the context lasts; its URL."""
    import sqlalchemy as sa

    name = f"llmviz_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield str(sa.engine.make_url(admin_url).set(database=name).render_as_string(hide_password=False))
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> Iterator[str]:
    """A fresh database for one test: a SQLite file, then a database of its own on a real PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lab.db'}"
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        yield url


@pytest.fixture
def own_postgres(postgres_server):
    """``own_postgres(port=None)``: a PostgreSQL server of the test's own that the test can stop and start again."""
    return lambda port=None: own_cluster(postgres_server, port)


@contextlib.contextmanager
def own_cluster(found: Path, port: int | None = None):
    """A PostgreSQL server of the test's own (``found``: PostgreSQL's bin folder) on ``port`` (default: a free one)
    that the test can stop and start again: yields (its URL, start, stop)."""
    port = port or free_port()
    user = as_user()
    base = Path(tempfile.mkdtemp(prefix="llmviz-pg-"))  # a folder the postgres user reaches (pytest's are root's)
    if user:
        shutil.chown(base, "postgres", "postgres")
    quiet = dict(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    subprocess.run([*user, str(found / "initdb"), "-D", str(base / "data"), "-U", "postgres", "-A", "trust"], **quiet)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off"

    def start():
        subprocess.run(
            [*user, str(found / "pg_ctl"), "-D", str(base / "data"), "-l", str(base / "log"), "-o", options, "-w",
             "start"],
            **quiet,
        )  # fmt: skip
        wait_until_accepting(port)

    def stop():
        subprocess.run([*user, str(found / "pg_ctl"), "-D", str(base / "data"), "-m", "fast", "-w", "stop"], **quiet)

    start()
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", start, stop
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            stop()
        shutil.rmtree(base, ignore_errors=True)
