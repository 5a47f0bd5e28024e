"""A run a page section started, read from the lab's record when this process does not hold it (it ended before a
restart, or another app process trains it): :class:`KeptRun` has the read-only shape of
:class:`llmviz.lab.live.LiveRun` that a section's drawing reads (id, label, kind, :meth:`KeptRun.status`), built from
the lab's :class:`~llmviz.lab.views.RunView`, its curve and its kept snapshot steps. It holds no job and no control:
Pause/Resume/Stop go through the lab's one control path, as for any run.

>>> from llmviz.lab.records import RunRecord
>>> from llmviz.lab.views import RunView, Curve
>>> view = RunView.of(RunRecord("r1", "s1", "race", "rank 4", "parked", total=60, step=40))
>>> run = KeptRun(view, Curve("r1", ((0, 3.0, None), (20, 2.5, 2.6), (40, None, 2.4))), (0, 40))
>>> status = run.status()
>>> status.state, status.done, status.losses, status.snapshot_steps, run.ended
(<JobState.STOPPED: 'stopped'>, True, ((0, 3.0), (20, 2.5)), (0, 40), True)
"""

from __future__ import annotations

from typing import Any

from llmviz.lab.live_status import JobState, JobStatus
from llmviz.lab.views import Curve, RunView

# a record's state as a job's: a parked or interrupted run has ended here (Resume in Kept runs goes on with it)
RECORD_STATES = {
    "queued": JobState.QUEUED,
    "running": JobState.RUNNING,
    "paused": JobState.PAUSED,
    "finished": JobState.FINISHED,
    "stopped": JobState.STOPPED,
    "failed": JobState.FAILED,
    "parked": JobState.STOPPED,
    "interrupted": JobState.STOPPED,
}


class KeptRun:
    """A run as the lab keeps it, read-only, in the shape a section draws (see the module's docstring)."""

    info: Any = None  # the model and data a worker reported: only a run of this process has it
    result: Any = None
    checkpoint: Any = None
    snapshots: Any = None  # its kept snapshots open from the lab (the picker's "run:<id>@<step>")

    def __init__(self, view: RunView, curve: Curve, snapshot_steps: tuple[int, ...] = ()):
        self.view = view
        self._curve = curve
        self._snapshot_steps = tuple(snapshot_steps)

    def __repr__(self) -> str:
        return f"KeptRun({self.id!r}, {self.label!r}, {self.view.state!r})"

    @property
    def id(self) -> str:
        return self.view.id

    @property
    def label(self) -> str:
        return self.view.label

    @property
    def kind(self) -> str:
        return "train"

    @property
    def created(self) -> float:
        return self.view.created

    @property
    def changing(self) -> bool:
        """Queued or training in another app process: the section redraws it from the lab every few seconds."""
        return self.view.state in ("queued", "running")

    @property
    def paused(self) -> bool:
        return self.view.state == "paused"

    @property
    def ended(self) -> bool:
        return self.status().done

    def status(self) -> JobStatus:
        """The run's state, step, total, training and validation losses, error and kept snapshot steps, from the lab's
        record."""
        losses = tuple((int(step), float(loss)) for step, loss, _ in self._curve.points if loss is not None)
        val_losses = tuple((int(step), float(val)) for step, _, val in self._curve.points if val is not None)
        return JobStatus(
            job_id=self.view.id,
            label=self.view.label,
            kind="train",
            state=RECORD_STATES.get(self.view.state, JobState.STOPPED),
            step=self.view.step,
            total=self.view.total,
            losses=losses,
            metrics=(),
            samples=(),
            queue_position=None,
            error=self.view.error,
            snapshot_steps=self._snapshot_steps,
            elapsed_s=max(0.0, self.view.updated - self.view.created),
            val_losses=val_losses,
            series=tuple((name, tuple(values)) for name, values in self._curve.series.items()),
        )
