"""The lab: a registry (:mod:`llmviz.lab.registry`) and a storage (:mod:`llmviz.lab.storage`) together, with the
per-student disk quota and the retention time (:meth:`Lab.thin`, :meth:`Lab.expire`), and the process's default lab.

>>> import tempfile
>>> lab = Lab.at(tempfile.mkdtemp())
>>> lab.registry.url.endswith("lab.db"), lab.storage.root.endswith("lab")
(True, True)
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from llmviz import settings
from llmviz.errors import UploadError
from llmviz.lab.registry import Registry, default_url
from llmviz.lab.storage import Storage, content_hash, thinning_order

ROOT = Path(__file__).resolve().parent.parent.parent  # the repository


def runs_folder() -> Path:
    """``LLMVIZ_RUNS_DIR``, else ``runs/`` in the repository."""
    return Path(settings.get("LLMVIZ_RUNS_DIR") or ROOT / "runs")


class Lab:
    """A registry and a storage, with the per-student quota (bytes) and retention (seconds)."""

    def __init__(self, registry: Registry, storage: Storage, quota: int | None = None, keep_s: float | None = None):
        self.registry = registry
        self.storage = storage
        self.quota = quota if quota is not None else int(settings.get("LLMVIZ_STUDENT_DISK_MB") * 2**20)
        self.keep_s = keep_s if keep_s is not None else float(settings.get("LLMVIZ_KEEP_DAYS")) * 86400

    @classmethod
    def at(cls, folder: str | os.PathLike, url: str | None = None, **limits) -> Lab:
        """The lab of runs folder ``folder``: its database ``url`` (default ``<folder>/lab.db``), files in
        ``<folder>/lab``."""
        return cls(Registry(url or default_url(folder)), Storage(os.path.join(os.fspath(folder), "lab")), **limits)

    def thin(self, student: str, room: int = 0) -> list[tuple[str, int]]:
        """Delete ``student``'s oldest snapshots (:func:`thinning_order`) until their files fit the quota with
        ``room`` bytes to spare, then, if still over, their oldest runs' resume states (such a run then resumes with
        its weights only: the optimizer starts afresh); returns the ``(run, step)`` of the snapshots deleted."""
        used = self.registry.disk_bytes(student) + room
        if used <= self.quota:
            return []
        kept = self.registry.student_snapshots(student)
        last: dict[str, int] = {}
        for run, step, *_ in kept:
            last[run] = max(step, last.get(run, step))
        held = self.registry.student_resumes(student)
        sizes = {(run, step): (path, nbytes) for run, step, path, nbytes, _ in kept}
        dropped = []
        order = thinning_order(
            [(run, step, nbytes) for run, step, _, nbytes, _ in kept], last, {r: s for r, s, *_ in held}
        )
        for run, step in order:
            if used <= self.quota:
                break
            path, nbytes = sizes[(run, step)]
            self.storage.delete_file(path)
            self.registry.drop_snapshot(run, step)
            used -= nbytes
            dropped.append((run, step))
        for run, _, _, nbytes in held:
            if used <= self.quota:
                break
            self.drop_resume(run)
            used -= nbytes
        return dropped

    def drop_resume(self, run_id: str) -> None:
        """Delete ``run_id``'s resume state (a finished run needs none; a thinned one resumes with weights only)."""
        path = self.registry.drop_resume(run_id)
        if path:
            self.storage.delete_file(path)

    def keep_upload(self, student: str, name: str, data: bytes) -> str:
        """Keep an uploaded file of ``student`` once per content, when it is uploaded (so a later run on it can be
        resumed, and a restarted server still has it): its SHA-256. Within the student's quota: their oldest
        snapshots are thinned to make room (:meth:`thin`), and a file that still does not fit is refused
        (:class:`~llmviz.errors.UploadError`, one line; nothing is written)."""
        digest = content_hash(data)
        if any(have == digest for have, _, _ in self.registry.uploads(student)):
            return digest  # kept already: once per content
        self.registry.ensure_student(student)
        self.thin(student, room=len(data))
        used = self.registry.disk_bytes(student)
        if used + len(data) > self.quota:
            raise UploadError(
                f"{name} ({len(data) / 2**20:.1f} MB) is not kept: your kept runs and files already take "
                f"{used / 2**20:.1f} of your {self.quota / 2**20:.0f} MB. It is used until you leave; delete a kept "
                "run to keep it."
            )
        self.storage.write_upload(student, data)
        self.registry.add_upload(student, digest, name, len(data))
        return digest

    def delete_run(self, student: str, run_id: str) -> bool:
        """Delete ``student``'s run with its files; False when it is not theirs."""
        if self.registry.run(student, run_id) is None:
            return False
        self.registry.delete_run(student, run_id)
        self.storage.delete_run(student, run_id)
        return True

    def expire(self) -> list[str]:
        """Delete runs nobody has touched for the retention time; returns their ids."""
        gone = []
        for record in self.registry.stale_runs(self.keep_s):
            if self.delete_run(record.student, record.id):
                gone.append(record.id)
        return gone


_default: Lab | None = None
_default_lock = threading.Lock()


def default_lab() -> Lab:
    """The process's lab, from the settings (``LLMVIZ_DATABASE_URL``, ``LLMVIZ_RUNS_DIR``, the quota and retention)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Lab.at(runs_folder(), settings.get("LLMVIZ_DATABASE_URL"))
        return _default
