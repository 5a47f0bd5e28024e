"""Every ``LLMVIZ_*`` environment variable, declared once: its type, default, unit and meaning.

The app, the CLI and the library read a variable only through :func:`get`, which parses and validates it. A value
that cannot be used (``LLMVIZ_RUNS_PER_SESSION=one``) is never a crash: :func:`get` returns the default and
:func:`problems` says, in one line per variable, what was wrong and what is used instead (the app logs it once; the
CLI prints it on stderr). ``docs/configuration.md`` is checked against :data:`SETTINGS` by a test.

>>> SETTINGS["LLMVIZ_SNAPSHOT_MB"].parse("64")
64.0
>>> get("LLMVIZ_RUNS_PER_SESSION", environ={"LLMVIZ_RUNS_PER_SESSION": "one"})
1
>>> problems(environ={"LLMVIZ_RUNS_PER_SESSION": "one"})
["LLMVIZ_RUNS_PER_SESSION='one' is not a whole number of at least 0; using the default (1)."]
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One environment variable: how to read it, its default (``None``: computed where it is used), and its doc."""

    name: str
    kind: str  # "int", "float", "path", "choice", "addresses" or "text": what parse() accepts
    default: Any
    unit: str
    help: str
    minimum: float | None = None  # for int and float: the smallest value that works; for text: the fewest characters
    choices: tuple[str, ...] = ()  # for "choice"

    def parse(self, raw: str) -> Any:
        """The value of ``raw`` for this setting; ``ValueError`` with a one-line reason when it cannot be used."""
        text = raw.strip()
        if self.kind in ("int", "float"):
            return self._number(text)
        if self.kind == "addresses":
            return parse_addresses(text)
        if self.kind == "choice":
            if text not in self.choices:
                raise ValueError(f"is not one of {', '.join(self.choices)}")
            return text
        if not text:
            raise ValueError("is empty")
        if self.minimum is not None and len(text) < self.minimum:
            raise ValueError(f"is shorter than {self.minimum:g} characters")
        return text

    def _number(self, text: str) -> int | float:
        """An int or float setting's value, at least its minimum; ``ValueError`` with the reason."""
        if self.kind == "int":
            if not text.lstrip("-").isdigit() or (self.minimum is not None and int(text) < self.minimum):
                raise ValueError(f"is not a whole number of at least {self.minimum:g}")
            return int(text)
        try:
            value = float(text)
        except ValueError:
            raise ValueError("is not a number") from None
        if not math.isfinite(value) or (self.minimum is not None and value < self.minimum):
            raise ValueError(f"is not a number of at least {self.minimum:g}")
        return value


def parse_addresses(text: str) -> tuple[str, ...]:
    """IP addresses and networks, separated by commas or spaces; ``ValueError`` names the first that is neither.

    >>> parse_addresses("127.0.0.1, ::1 10.0.0.0/8")
    ('127.0.0.1', '::1', '10.0.0.0/8')
    >>> parse_addresses("caddy")
    Traceback (most recent call last):
    ValueError: 'caddy' is not an IP address or network
    """
    import ipaddress

    found = tuple(item for item in text.replace(",", " ").split() if item)
    for item in found:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network") from None
    return found


def _declare(*settings: Setting) -> dict[str, Setting]:
    return {setting.name: setting for setting in settings}


SETTINGS: dict[str, Setting] = _declare(
    Setting(
        "LLMVIZ_CACHE_DIR",
        "path",
        None,
        "folder",
        "where downloaded corpora are kept (default: $XDG_CACHE_HOME/llmviz or ~/.cache/llmviz)",
    ),
    Setting(
        "LLMVIZ_RUNS_DIR",
        "path",
        None,
        "folder",
        "checkpoints saved here (by `python -m llmviz train --out runs/NAME`) appear in the app's model picker "
        "(default: runs/ in the repository)",
    ),
    Setting(
        "LLMVIZ_MAX_JOBS",
        "int",
        None,
        "runs",
        "runs that train at once on the server (default: the CPU cores)",
        minimum=1,
    ),
    Setting(
        "LLMVIZ_RUNS_PER_SESSION",
        "int",
        1,
        "runs",
        "runs one student (see LLMVIZ_SHARE_BY) trains at a time, and as many more may wait (0: no limit)",
        minimum=0,
    ),
    Setting(
        "LLMVIZ_SNAPSHOT_MB", "float", 128.0, "MB", "weight snapshots one student's runs keep, together", minimum=1
    ),
    Setting(
        "LLMVIZ_MEMORY_MB",
        "float",
        None,
        "MB",
        "memory the server's training may hold, its workers and paused runs together; a run that does not fit "
        "waits, one that never could is refused (default: half the machine's memory, less what the server holds)",
        minimum=64,
    ),
    Setting(
        "LLMVIZ_STUDENT_MEMORY_MB",
        "float",
        None,
        "MB",
        "one student's share of LLMVIZ_MEMORY_MB, over their runs training, waiting and paused (default: half of it)",
        minimum=64,
    ),
    Setting(
        "LLMVIZ_SHARE_BY",
        "choice",
        "student",
        "",
        "`student`: a student's shares (runs, queue, memory) count every tab, reload and link of theirs (their "
        "browser's identity, or their login); `address`: every browser of one computer (by its IP address) shares "
        "one share; `session`: the old name of `student`",
        choices=("student", "address", "session"),
    ),
    Setting(
        "LLMVIZ_TRUSTED_PROXIES",
        "addresses",
        None,
        "addresses",
        "the proxies (IP addresses or networks, comma-separated: `127.0.0.1` for Caddy on the same machine) whose "
        "X-Forwarded-For header names the student's address; from any other connection the header is ignored "
        "(default: none, so no header is trusted)",
    ),
    Setting(
        "LLMVIZ_PUBLIC_URL",
        "text",
        None,
        "URL",
        "the address students open when a proxy stands in front of the app (`http://server:8080`): printed at start "
        "and shown to the teacher (Home, the class view) instead of this machine's own address and port "
        "(default: this machine's address on the local network and Streamlit's port, llmviz.address)",
    ),
    Setting(
        "LLMVIZ_WORKER_TIMEOUT",
        "float",
        120.0,
        "seconds",
        "a training worker that sends nothing, not even its heartbeat, for this long is stopped and its run failed",
        minimum=1,
    ),
    Setting(
        "LLMVIZ_SESSION_TIMEOUT",
        "float",
        30.0,
        "seconds",
        "when a student's last tab has been closed this long, their runs still training are parked (stopped, kept, "
        "resumable)",
        minimum=1,
    ),
    Setting(
        "LLMVIZ_WORKERS",
        "choice",
        "process",
        "",
        "`process`: every run trains in a worker process; `thread`: in a thread of the server (debugging)",
        choices=("process", "thread"),
    ),
    Setting(
        "LLMVIZ_RAY_ADDRESS",
        "text",
        None,
        "address",
        "a Ray cluster's head (`host:6379`): every run, race and worker task then trains as Ray work on that cluster "
        "(needs the hall extras, `pip install -r requirements-hall.txt`); unset: in worker processes of this machine",
    ),
    Setting(
        "LLMVIZ_RAY_WARM_WORKERS",
        "int",
        4,
        "actors",
        "with LLMVIZ_RAY_ADDRESS: Ray actors each app process keeps warm (torch imported, no resources held), at most "
        "one per CPU of the cluster, so a CPU run admitted on the cluster starts at once; 0: a fresh actor per run",
        minimum=0,
    ),
    Setting(
        "LLMVIZ_TORCH_THREADS",
        "int",
        None,
        "threads",
        "torch threads of each training worker (default: the cores shared out among LLMVIZ_MAX_JOBS)",
        minimum=1,
    ),
    Setting(
        "LLMVIZ_MAX_PARAMETERS",
        "int",
        2_000_000_000,
        "parameters",
        "the largest model llmviz builds, trains or loads: a bigger one is refused before anything is allocated "
        "(as is one whose weights alone would not fit in the machine's memory)",
        minimum=1,
    ),
    Setting("LLMVIZ_PAGE_TORCH_THREADS", "int", 1, "threads", "torch threads the server's page runs use", minimum=1),
    Setting(
        "LLMVIZ_WATCH_BUDGET",
        "float",
        0.25,
        "seconds per second",
        "server time that all tabs watching live runs may cost together",
        minimum=0.01,
    ),
    Setting(
        "LLMVIZ_DATABASE_URL",
        "text",
        None,
        "URL",
        "the lab's registry of students and runs, as an SQLAlchemy URL: every app process of the machine (or hall) "
        "that names the same one shares one lab (default: sqlite:///<runs folder>/lab.db)",
    ),
    Setting(
        "LLMVIZ_STUDENT_DISK_MB",
        "float",
        512.0,
        "MB",
        "disk one student's kept runs (snapshots, curves) and uploads may take; past it the oldest snapshots are "
        "thinned first",
        minimum=1,
    ),
    Setting(
        "LLMVIZ_KEEP_DAYS",
        "float",
        30.0,
        "days",
        "a kept run nobody has opened for this long is deleted with its snapshots",
        minimum=0.01,
    ),
    Setting(
        "LLMVIZ_TEACHER_KEY",
        "text",
        None,
        "secret",
        "the key that opens the class view (`/classroom?teacher=KEY` once; the browser is then the teacher's); "
        "at least 16 characters (a shorter one is refused at start); unset: there is no class view",
        minimum=16,
    ),
    Setting(
        "LLMVIZ_NEW_STUDENTS_PER_MINUTE",
        "int",
        60,
        "students",
        "new students (browser identities) one address may make a minute; behind the proxies of "
        "LLMVIZ_TRUSTED_PROXIES, the forwarded address counts (0: no limit)",
        minimum=0,
    ),
    Setting(
        "LLMVIZ_TIMINGS",
        "path",
        None,
        "file",
        "log every page and section run's server time to this file (for benchmarks/pages.py)",
    ),
)


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    if name not in SETTINGS:
        raise KeyError(f"{name} is not an llmviz setting (llmviz/settings.py declares them all)")
    return (os.environ if environ is None else environ).get(name)


def get(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The value of setting ``name`` now: parsed from the environment, or its default when unset or unusable."""
    setting, raw = SETTINGS[name], _raw(name, environ)
    if raw is None or not raw.strip():
        return setting.default
    try:
        return setting.parse(raw)
    except ValueError:
        return setting.default


def get_or(name: str, fallback: Callable[[], Any], environ: Mapping[str, str] | None = None) -> Any:
    """:func:`get`, with ``fallback()`` standing in for a default that depends on the machine (``None`` above)."""
    value = get(name, environ)
    return fallback() if value is None else value


def problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per set variable whose value cannot be used, saying what is used instead."""
    lines = []
    for name, setting in SETTINGS.items():
        raw = _raw(name, environ)
        if raw is None or not raw.strip():
            continue
        try:
            setting.parse(raw)
        except ValueError as reason:
            instead = "the default" + (f" ({setting.default})" if setting.default is not None else "")
            shown = "(hidden)" if setting.unit == "secret" else repr(raw)  # a key never reaches a log
            lines.append(f"{name}={shown} {reason}; using {instead}.")
    return lines


def markdown_table() -> str:
    """The table of every setting that ``docs/configuration.md`` holds (a test keeps the two the same)."""
    rows = ["| variable | default | unit | what it sets |", "| --- | --- | --- | --- |"]
    for setting in SETTINGS.values():
        default = "(see text)" if setting.default is None else f"`{setting.default}`"
        rows.append(f"| `{setting.name}` | {default} | {setting.unit} | {setting.help} |")
    return "\n".join(rows)
