"""Training a run and waiting for it (the CLI and notebooks): :func:`train_blocking`, over a
:class:`~llmviz.jobs.manager.JobManager` like the app's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llmviz.errors import LlmvizError
from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobState

if TYPE_CHECKING:
    from llmviz.jobs.job import Job
    from llmviz.lab.live_status import JobStatus


def train_blocking(
    trainer,
    on_step: Callable[[JobStatus], None] | None = None,
    sample_every: int = 0,
    manager: JobManager | None = None,
    poll_s: float = 0.2,
    snapshots: bool = False,
    on_poll: Callable[[Job], None] | None = None,
) -> Job:
    """Run ``trainer`` as a job and wait for it (the CLI and notebooks): ``on_step(status)`` is called
    as steps go by (at most every ``poll_s`` seconds, and once at the end); Ctrl-C stops the job after
    the current step and keeps what it learned. ``snapshots=True`` keeps log-spaced weights as the app does;
    ``on_poll(job)`` is called every ``poll_s`` seconds and once at the end (the CLI takes the snapshots it keeps
    as they arrive)."""
    manager = manager or JobManager(max_running=1)
    job = manager.submit_training(
        "cli", trainer, label="cli", sample_every=sample_every, snapshots=snapshots, checkpoint=False
    )  # the CLI writes its own checkpoint folder
    seen = -1
    try:
        while not job.wait(poll_s):
            if on_poll is not None:
                on_poll(job)
            status = job.status()
            if on_step is not None and status.step != seen:
                seen = status.step
                on_step(status)
    except KeyboardInterrupt:
        job.stop()
        job.wait()
    if on_poll is not None:
        on_poll(job)
    status = job.status()
    if on_step is not None and status.step != seen:
        on_step(status)
    if status.state == JobState.FAILED:
        raise LlmvizError(status.error or "training failed")
    return job
