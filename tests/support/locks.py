"""Another process holding the lab's database locked against writes, for the lock tests
(``tests/unit/lab/test_one_record.py``, ``tests/unit/lab/test_long_lock.py``): the SQLite file in an ``EXCLUSIVE``
transaction, or every PostgreSQL table of the lab ``IN EXCLUSIVE MODE``; reads go on in both."""

from __future__ import annotations

import subprocess
import sys
import textwrap

LOCKER = textwrap.dedent(
    """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    sys.stdin.readline()  # held until the test says
    db.execute("ROLLBACK")
    """
)


#: PostgreSQL's: every table of the lab locked against writes (EXCLUSIVE: reads go on, as under SQLite's lock in WAL
#: mode), in a transaction held open until the test says. LOCK TABLE takes the tables one after another, so a write
#: of the app's that holds one and wants another can deadlock with it, and PostgreSQL then cancels one of the two
#: (40P01; in README's suite once it cancelled the locker): the locker lets go and takes them again
PG_LOCKER = textwrap.dedent(
    """
    import sys, time
    import sqlalchemy as sa
    engine = sa.create_engine(sys.argv[1])
    with engine.connect() as db:
        names = db.execute(sa.text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars().all()
        for attempt in range(100):
            try:
                db.execute(sa.text("LOCK TABLE " + ", ".join(f'"{n}"' for n in names) + " IN EXCLUSIVE MODE"))
                break
            except sa.exc.OperationalError as error:
                if getattr(error.orig, "sqlstate", None) != "40P01":  # a deadlock with the app's write: again
                    raise
                db.rollback()
                time.sleep(0.05)
        else:
            raise SystemExit("could not lock the lab's tables (100 deadlocks)")
        print("locked", flush=True)
        sys.stdin.readline()  # held until the test says
        db.rollback()
    """
)


def locked_by_another_process(url: str, folder):
    """Another process holds the lab's database locked against writes (the SQLite file, or every PostgreSQL table)."""
    if url.startswith("sqlite"):
        command = [sys.executable, "-c", LOCKER, str(folder / "lab.db")]
    else:
        command = [sys.executable, "-c", PG_LOCKER, url]
    locker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert locker.stdout.readline().strip() == "locked"
    return locker


def release(locker: subprocess.Popen) -> None:
    locker.stdin.write("\n")
    locker.stdin.flush()
    locker.wait(30)
