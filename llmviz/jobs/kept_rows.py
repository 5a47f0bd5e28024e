"""What the keeper (:mod:`llmviz.jobs.keeping`) writes of a job in the lab: the job as it keeps it (:class:`Kept`:
what was written so far), the row's state and who changed it, what a run built in its worker says of itself, the
metadata of its snapshot files, the measures kept with each curve point, and which "latest" snapshots a newer one
replaced. Pure functions of a job and its status; no database.

>>> from llmviz.lab.live_status import JobState
>>> row_state(JobState.STOPPED, parked=True), who_changed("parked", None)
('parked', 'server')
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field

from llmviz.jobs.job import Job
from llmviz.jobs.resuming import TEXT_FIELD
from llmviz.lab.faults import Fault
from llmviz.lab.live_status import JobState
from llmviz.lab.records import TASK, TRAINING, config_json
from llmviz.training.snapshots import is_snapshot_step


@dataclass
class Kept:
    """A job as the keeper keeps it: what of it was written so far."""

    job: Job
    student: str
    points: int = 0  # curve rows written
    samples: int = 0
    metrics: int = 0
    version: int = -1
    on_disk: dict[int, str] = field(default_factory=dict)  # step → path
    meta: dict | None = None
    parked: bool = False  # its student had gone: it ends as "parked"
    described: bool = False  # its model and config are in the registry
    text_sha256: str | None = None  # the text it trains on, kept once per content (resuming needs it)
    resume_step: int | None = None  # the step of its resume state on disk (that step's snapshot stays with it)
    state: str = ""  # the state last written
    by: str | None = None  # who asked for its next change of state ("student", "teacher", "server")
    asked: str | None = None  # the state they asked for (written with ``by`` when the run reaches it)
    wrote: bool = False  # snapshots written since the quota was last checked
    generation: int = 0  # the lab's database file it was recorded in (Lab.generation)
    result_kept: bool = False  # a task's result was written (or could not be: it is not tried again)
    fault: Fault | None = None  # why its last flush failed (a lab fault: the disk full, the database locked), if it did

    def copy(self) -> Kept:
        """What was written so far, to :meth:`restore` when a flush is rolled back."""
        return dataclasses.replace(self, on_disk=dict(self.on_disk))

    def restore(self, before: Kept) -> None:
        """Back to ``before`` (a flush rolled back wrote none of it), except an ask made meanwhile by another thread.

        >>> entry = Kept(job=None, student="ann", points=3, state="running")
        >>> before = entry.copy()
        >>> entry.points, entry.on_disk[5], entry.by, entry.asked = 9, "s5", "teacher", "parked"
        >>> entry.restore(before); (entry.points, entry.on_disk, entry.by)
        (3, {}, 'teacher')
        """
        asked = (self.by, self.asked) if (self.by, self.asked) != (None, None) else (before.by, before.asked)
        for name in (f.name for f in dataclasses.fields(self)):
            setattr(self, name, getattr(before, name))
        self.by, self.asked = asked


@dataclass
class Written:
    """The files one flush wrote before its rows (:meth:`llmviz.jobs.keeping.Keeper._flush_one`): removed again when
    its unit of work is rolled back."""

    snapshots: list[tuple[int, str, int]] = field(default_factory=list)  # (step, path, bytes)
    resume: tuple[int, str, int] | None = None
    new_resume: bool = False  # its file is not the one the record names already

    def snapshot(self, step: int, path: str, nbytes: int) -> None:
        self.snapshots.append((step, path, nbytes))

    def steps(self) -> set[int]:
        return {step for step, _, _ in self.snapshots}

    def remove(self, storage) -> None:
        """Remove what was written (a unit rolled back, or a fault before it): no file that no row names."""
        paths = [path for _, path, _ in self.snapshots]
        if self.resume is not None and self.new_resume:
            paths.append(self.resume[1])
        for path in paths:
            with contextlib.suppress(OSError):
                storage.delete_file(path)


def kept_bytes(footprint, resumable: bool) -> int:
    """The least a run keeps on disk (the quota is checked against it before it is recorded): its last snapshot,
    and, when it can be resumed, the snapshot of its resume step with the resume state (the optimizer's moments).

    >>> from llmviz.training.footprint import Footprint
    >>> kept_bytes(Footprint("x", parameter_bytes=100, optimizer_bytes=200), True)
    400
    """
    weights = int(getattr(footprint, "parameter_bytes", 0))
    return 2 * weights + int(getattr(footprint, "optimizer_bytes", 0)) if resumable else weights


def who_changed(state: str, by: str | None) -> str | None:
    """Who changed a run to ``state``: the one who asked (``by``), else the student for a pause or a stop, the
    server for a park (their tab had gone) or an interruption, nobody for a run that finished or failed by itself.

    >>> who_changed("parked", "teacher"), who_changed("parked", None)
    ('teacher', 'server')
    >>> who_changed("paused", None), who_changed("finished", None)
    ('student', None)
    """
    if by is not None:
        return by
    return {"paused": "student", "stopped": "student", "parked": "server", "interrupted": "server"}.get(state)


def run_kind(job: Job) -> str:
    """What ``job`` is, as the lab keeps it (:data:`llmviz.lab.records.KINDS`): the kind it was submitted as, else
    the kind its runner says (:func:`llmviz.jobs.runners.kind_of`), else a training run (or a task).

    >>> from types import SimpleNamespace as Fake
    >>> run_kind(Fake(run_kind=None, kind="train", info=Fake(kind="autoencoder")))
    'autoencoder'
    >>> run_kind(Fake(run_kind=None, kind="task", info=None)), run_kind(Fake(run_kind="race", kind="train", info=None))
    ('task', 'race')
    """
    if getattr(job, "run_kind", None):
        return str(job.run_kind)
    if job.info is not None:  # what its runner said, once built (llmviz.jobs.runners.facts)
        return str(job.info.kind)
    return TRAINING if job.kind == "train" else TASK


def snapshot_meta(info, label: str) -> dict:
    """A snapshot file's metadata: the single-file checkpoint format (model, tokenizer, config), so
    :func:`llmviz.training.checkpoint.load_checkpoint` reads it too."""
    return {
        "format": "llmviz-checkpoint",
        "version": 1,
        "model": info.description,
        "tokenizer": info.tokenizer.to_dict() if hasattr(info.tokenizer, "to_dict") else None,
        "train_config": config_json(info.config),
        "label": label,
    }


def row_state(state: JobState, parked: bool) -> str:
    """The state a run's row says: its job's, except that a run stopped because its student has gone (or the teacher
    parked it) is ``parked`` — from the moment its job says it stopped, before the job has ended (its last files
    written): a flush in between wrote "stopped" by the teacher and then "parked" by nobody, which read as parked
    "when you left" (issue 68).

    >>> row_state(JobState.STOPPED, parked=True), row_state(JobState.STOPPED, parked=False)
    ('parked', 'stopped')
    >>> row_state(JobState.RUNNING, parked=True)
    'running'
    """
    if parked and state == JobState.STOPPED:
        return "parked"
    return state.value


ASKED = {"pause": "paused", "resume": "running", "stop": "stopped", "park": "parked"}  # a control → the state it asks


def ask(entry: Kept, action: str, by: str) -> None:
    """``by`` asked for ``action`` on ``entry``'s run: written as who changed its state when the run reaches the state
    that action asks for (:data:`ASKED`), whatever other change a flush writes first. A park already asked stays
    (the teacher parked it, then its student's tab went: still parked by the teacher).

    >>> from types import SimpleNamespace as Fake
    >>> entry = Fake(by=None, asked=None, parked=False)
    >>> ask(entry, "park", "teacher"); ask(entry, "park", "server"); (entry.by, entry.asked, entry.parked)
    ('teacher', 'parked', True)
    """
    if action == "park" and entry.parked and entry.asked == "parked":
        return
    entry.by, entry.asked = by, ASKED[action]
    if action == "park":
        entry.parked = True


def state_values(entry: Kept, status) -> dict:
    """The row's state, step and fault, with who changed its state and at which step where it changed since the
    last flush (``entry`` then remembers the new state). Who asked is written with the state they asked for only:
    a flush that first finds the run started (queued → running) while a park is asked leaves the park's asker for
    the park (it wrote the teacher's park as the run's start, and the park as the server's: issue 68).

    >>> from types import SimpleNamespace as Fake
    >>> entry = Fake(state="queued", by="teacher", asked="parked", parked=True)
    >>> state_values(entry, Fake(state=JobState.RUNNING, step=3, error=None))["state_by"] is None
    True
    >>> state_values(entry, Fake(state=JobState.STOPPED, step=5, error=None))["state_by"]
    'teacher'
    """
    state = row_state(status.state, entry.parked)
    values: dict = {"state": state, "step": status.step, "error": status.error}
    if state != entry.state:
        by = entry.by if entry.asked == state else None
        values.update(state_by=who_changed(state, by), state_step=status.step)
        entry.state = state
        if entry.asked == state or status.state.done:
            entry.by = entry.asked = None
    return values


def config_of(job, text_sha256: str | None) -> dict:
    """What a run's row keeps as its config: its settings (once its worker has built it), the hash of the text it
    trains on, what a task's result is kept as (its page finds it by this), and the note of the page section that
    started it (:func:`llmviz.lab.views.section_of`: the section finds it by this)."""
    config = {**(config_json(job.info.config) if job.info is not None else {}), **text_field(text_sha256)}
    if getattr(job, "keep", None) is not None:
        config = {**config, **job.keep.facts, "task": job.keep.task}
    if getattr(job, "section", None) is not None:
        config = {**config, "section": job.section}
    return config


def description_values(entry: Kept) -> dict:
    """What a run built in its worker says of itself once built (its model, kind, length and config), once; an
    empty dict before it is built and after it has said it."""
    job = entry.job
    if job.info is None or entry.described:
        return {}
    values: dict = {"model": str(job.info.description.get("kind", "")), "kind": run_kind(job)}
    if not job.total:  # a run built in its worker says its length once built
        values["total"] = int(getattr(job.info.config, "steps", 0) or 0)
    values["config"] = config_of(job, entry.text_sha256)
    entry.described = True
    return values


def replaced_latest(on_disk, steps: list[int], resume_step: int | None) -> list[int]:
    """The steps of ``on_disk`` whose "latest" snapshot a newer one replaced: not log-spaced
    (:func:`~llmviz.training.snapshots.is_snapshot_step`), not the newest of ``steps`` (those in memory up to the
    row's step) nor among them, not the step of the resume state.

    >>> replaced_latest({0: "a", 3: "b", 7: "c", 9: "d"}, steps=[0, 9], resume_step=7)
    [3]
    >>> replaced_latest({3: "b"}, steps=[], resume_step=None)
    [3]
    """
    last = steps[-1] if steps else None
    replaced = [s for s in on_disk if s not in (last, resume_step) and not is_snapshot_step(s)]
    return [s for s in replaced if s not in steps]


def text_field(digest: str | None) -> dict:
    return {TEXT_FIELD: digest} if digest else {}


def measures_of(metrics) -> dict[str, float]:
    """The measures a run kind keeps with each curve point (the names its metrics class lists in ``SERIES``: DPO's
    ratios, margin and accuracy), read from one step's ``metrics``.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Metrics:
    ...     SERIES = ("margin",)
    ...     step: int = 3
    ...     margin: float = 0.5
    ...     lr: float = 1e-3
    >>> measures_of(Metrics())
    {'margin': 0.5}
    """
    return {name: getattr(metrics, name) for name in getattr(metrics, "SERIES", ()) if hasattr(metrics, name)}
