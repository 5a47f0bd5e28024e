"""A consistent copy of the lab's SQLite database while the app runs: SQLite's online backup API
(:meth:`sqlite3.Connection.backup`), which copies a database page by page as one snapshot, whatever other processes
write meanwhile (a plain ``cp`` of a database in WAL mode can miss what is still in ``lab.db-wal``, or copy half a
write). For PostgreSQL, ``pg_dump`` does the same (docs/classroom.md).

>>> import os, sqlite3, tempfile
>>> folder = tempfile.mkdtemp()
>>> with sqlite3.connect(os.path.join(folder, "lab.db")) as db:
...     _ = db.execute("create table t (x)"); _ = db.execute("insert into t values (42)")
>>> copy = backup_sqlite(f"sqlite:///{folder}/lab.db", os.path.join(folder, "runs-backup", "copy.db"))
>>> sqlite3.connect(copy).execute("select x from t").fetchall()  # runs-backup/ made for it
[(42,)]
"""

from __future__ import annotations

import os
import sqlite3

from llmviz.errors import LlmvizError
from llmviz.lab.faults import sqlite_path


class BackupError(LlmvizError):
    """The backup cannot be made (the message says why, in one line)."""


def backup_sqlite(url: str, out: str | os.PathLike) -> str:
    """Copy the SQLite database of ``url`` into the new file ``out`` (written beside it, then renamed: a copy is
    whole or absent); returns its path. Makes ``out``'s folder where it does not exist yet (``runs-backup/`` on a
    fresh install). Refuses another database, a missing one, and an existing ``out``."""
    source = sqlite_path(url)
    if source is None:
        raise BackupError(
            "lab backup copies a SQLite database; for PostgreSQL use pg_dump (see docs/classroom.md, Backups)."
        )
    if not os.path.isfile(source):
        raise BackupError(f"there is no lab database at {source}.")
    target = os.path.abspath(os.fspath(out))
    if os.path.isdir(target):
        target = os.path.join(target, "lab.db")
    if os.path.exists(target):
        raise BackupError(f"{target} exists already: name a new file.")
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise BackupError(f"the folder {folder} cannot be made: {error.strerror or error}.") from None
    partial = f"{target}.part"
    try:
        with sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30) as reader:
            with sqlite3.connect(partial) as writer:
                reader.backup(writer)
            writer.close()
        reader.close()
        os.replace(partial, target)
    except sqlite3.DatabaseError as error:
        _remove(partial)
        raise BackupError(f"the lab database {source} cannot be copied: {error}.") from None
    except OSError:
        _remove(partial)
        raise
    return target


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
