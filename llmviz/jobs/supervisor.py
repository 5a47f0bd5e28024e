"""The server's side of one worker: a thread per job group that waits for a slot, starts the worker, passes it the
controls pressed on the pages, records what it sends, and deals with its end.

A *group* is the jobs that share one worker and one slot: one run, or every runner of a race. Its supervisor:

1. waits in the manager's queue for a slot (:meth:`~llmviz.jobs.manager.JobManager.acquire`);
2. starts the worker (a process, or a thread) and reads its events (:mod:`llmviz.jobs.events`) into the jobs;
3. when every runner is paused, a worker of trainers *parks* (sends their state and exits): the slot and the memory
   go back, and a Resume waits for a slot again and starts a new worker from that state; a worker of tasks waits
   instead, giving its slot back;
4. watches a worker process: one that dies fails its runs with the reason; one that sends nothing (not even its
   heartbeat) for ``worker_timeout`` seconds is killed and its runs failed; a Stop that a silent worker does not
   act on kills it;
5. ends every job of the group, whatever happened, and gives the slot back.
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import TYPE_CHECKING, Any, Protocol

from llmviz.jobs import processes, ray_executor
from llmviz.jobs.admission import Phase
from llmviz.jobs.channels import Channel, WorkerGone
from llmviz.jobs.events import Done, Failed, Heartbeat, Idle, Info, Parked, Paused, Result, Resume, Snapshot, Step
from llmviz.jobs.job import Group
from llmviz.jobs.worker import ParkedRunner, thread_options
from llmviz.lab.live_status import JobState

if TYPE_CHECKING:
    from llmviz.jobs.fair_queue import FairQueue
    from llmviz.jobs.shares import Shares

log = logging.getLogger(__name__)

EXIT_DRAIN_S = 5.0  # how long an exited worker's last messages may take to reach the channel
STOP_GRACE_S = 10.0  # a Stop waits this long for a worker that has gone silent before killing it


class Slots(Protocol):
    """What a supervisor asks of its manager (:class:`llmviz.jobs.manager.JobManager`): its queue, its shares."""

    workers: str
    worker_timeout: float
    queue: FairQueue
    shares: Shares

    @property
    def closed(self) -> bool: ...

    def keep_now(self) -> None: ...


class Supervisor:
    """Runs one group from its first wait for a slot to its end (the body of the group's thread)."""

    def __init__(self, manager: Slots, group: Group):
        self.manager = manager
        self.group = group
        self.holding = False  # the group holds a slot
        self.channel: Channel | None = None
        self.heard = time.monotonic()  # when the worker last said anything
        self.parked = 0  # runners of the running worker that have parked
        self.handlers: dict[type, Any] = {
            Step: self.on_step,
            Snapshot: self.on_snapshot,
            Info: self.on_info,
            Paused: self.on_paused,
            Parked: self.on_parked,
            Result: self.on_result,
            Failed: self.on_failed,
            Done: self.on_done,
            Idle: self.on_idle,
            Heartbeat: lambda event: None,
        }

    # ------------------------------------------------------------------ the whole life of the group

    def run(self) -> None:
        try:
            self.live()
        except WorkerGone:
            self.worker_died()
        except Exception as error:  # noqa: BLE001 - the server lives on: the runs fail with one line each
            log.exception("job supervisor of %s failed", [job.id for job in self.group.jobs])
            for job in self.group.jobs:
                if not job.ended:
                    job.fail(f"{type(error).__name__}: {error}")
        finally:
            self.close()

    def live(self) -> None:
        if not self.acquire(give_up=lambda: self.group.stopping, otherwise=Phase.ENDED):
            for job in self.group.jobs:
                job.end(JobState.STOPPED)
            return
        while True:
            self.run_worker()
            if self.group.done or not self.parked_all():
                return
            if not self.wait_parked():
                return

    def acquire(self, give_up, otherwise: Phase) -> bool:
        self.holding = self.manager.queue.acquire(self.group, give_up, otherwise)
        return self.holding

    def release(self) -> None:
        if self.holding:
            self.holding = False
            self.manager.queue.release(self.group)

    # ------------------------------------------------------------------ one worker

    def run_worker(self) -> None:
        """Start a worker for the group's runners and read it until it ends or parks."""
        for job in self.group.jobs:
            if not job.ended:
                job.set_state(JobState.PAUSED if job.paused_in_worker else JobState.RUNNING)
                job.loops_started = max(job.loops_started, 1)
        self.parked = 0
        self.channel = self.launch()
        self.heard = time.monotonic()
        self.group.attach(self.channel)
        while not self.group.done and not self.parked_all():
            self.pump()
        self.group.attach(None)
        if self.parked_all():
            self.wait_for_exit()

    def launch(self) -> Channel:
        group = self.group
        name = f"llmviz-worker-{group.jobs[0].id}"
        if self.manager.workers in ("process", "ray"):
            payload_bytes = group.payload_bytes or pickle.dumps(group.payloads, protocol=pickle.HIGHEST_PROTOCOL)
            group.payload_bytes, group.payloads = None, []  # the worker has them now: the server keeps none
            if self.manager.workers == "ray":
                group.process, channel = ray_executor.start_actor(payload_bytes, group.options, name, group.ray_wanted)
            else:
                group.process, channel = processes.start_process(payload_bytes, group.options, name)
            return channel
        payloads, group.payloads = group.payloads, []
        return processes.start_thread(payloads, thread_options(group.options), name)

    def pump(self) -> None:
        """Pass on the controls, then read one event (or check the worker is alive when none comes)."""
        channel = self.channel
        assert channel is not None
        for job in self.group.jobs:
            if not job.ended:
                self.group.forward(job)
        self.resume_waiting()
        self.group.clear_wake()
        if not channel.poll(0.05):
            self.check_alive()
            self.group.wait_wake(0.05)
            return
        event = channel.recv()
        self.heard = time.monotonic()
        self.handlers[type(event)](event)

    def resume_waiting(self) -> None:
        """Jobs resumed while their worker waits idle (tasks): get a slot again, then tell the worker."""
        resuming = [job for job in self.group.jobs if job.wants_resume]
        if not resuming:
            return
        if self.group.idle:
            for job in resuming:
                job.set_state(JobState.QUEUED)
            if not self.acquire(give_up=lambda: not any(j.wants_resume for j in self.group.jobs), otherwise=Phase.IDLE):
                for job in resuming:
                    job.set_state(JobState.PAUSED)
                return
            self.group.idle = False
        for job in resuming:
            if job.wants_resume:
                job.mark_resumed()
                self.group.send(Resume(job.index))
                job.set_state(JobState.RUNNING)

    def parked_all(self) -> bool:
        """Every runner still going has parked (its state is in the server; the worker is exiting)."""
        going = [job for job in self.group.jobs if not job.ended]
        return bool(going) and all(job.parked_state is not None for job in going)

    def wait_for_exit(self) -> None:
        process = self.group.process
        if process is not None:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
            self.group.process = None
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    # ------------------------------------------------------------------ parked

    def wait_parked(self) -> bool:
        """The worker has gone, the state is here: give back the slot, wait for a Resume (or a Stop), then for a
        slot again. False when the group ended while parked."""
        group = self.group
        self.release()
        self.manager.queue.parked(group, sum(job.parked_bytes for job in group.jobs if not job.ended))
        while True:
            if not self.wait_for_a_press():
                return False
            for job in group.jobs:
                if job.wants_to_run and not job.stop_requested:
                    job.set_state(JobState.QUEUED)
            if self.acquire(give_up=lambda: not any(j.wants_to_run for j in group.jobs), otherwise=Phase.PARKED):
                break
            for job in group.jobs:  # paused again while it waited for the slot
                if not job.ended:
                    job.set_state(JobState.PAUSED)
        group.payloads = [
            None if job.ended else ParkedRunner(job.take_parked(), paused=job.paused, stop=job.stop_requested)
            for job in group.jobs
        ]
        for job in group.jobs:
            job.relaunched()
        return True

    def wait_for_a_press(self) -> bool:
        """Wait until a parked job is resumed or stopped (True), or the group ends while parked (False)."""
        while not any(job.wants_to_run for job in self.group.jobs):
            if self.end_discarded():
                return False
            self.group.wait_wake(0.5)
        return not self.end_discarded()

    def end_discarded(self) -> bool:
        """Parked jobs whose session has gone, or whose manager shut down, end here without a new worker."""
        group = self.group
        if not (self.manager.closed or any(job.discarded for job in group.jobs)):
            return False
        for job in group.jobs:
            if not job.ended:
                job.take_parked()
                job.end(JobState.STOPPED)
        return True

    # ------------------------------------------------------------------ events

    def on_step(self, event: Step) -> None:
        self.group.jobs[event.index].record(event.step, event.loss, event.metrics, event.sample)

    def on_snapshot(self, event: Snapshot) -> None:
        self.manager.shares.keep_snapshot(self.group.jobs[event.index], event.step, event.state, event.training)

    def on_info(self, event: Info) -> None:
        job = self.group.jobs[event.index]
        job.info = event.info
        if job.snapshots is not None:
            job.reserved_snapshot_bytes = 2 * event.info.snapshot_bytes
            refused = self.manager.shares.snapshot_refusal(job.owner, [job])
            if refused:
                job.fail(refused)
                job.stop()

    def on_paused(self, event: Paused) -> None:
        job = self.group.jobs[event.index]
        if job.paused:
            job.set_state(JobState.PAUSED)

    def on_parked(self, event: Parked) -> None:
        self.group.jobs[event.index].park(event.state, event.nbytes)
        self.parked += 1

    def on_result(self, event: Result) -> None:
        job = self.group.jobs[event.index]
        if job.kind == "train" and isinstance(event.value, bytes):
            job.checkpoint = event.value
        else:
            job.result = event.value

    def on_failed(self, event: Failed) -> None:
        job = self.group.jobs[event.index]
        log.error("job %s (%s) failed: %s\n%s", job.id, job.label, event.message, event.traceback)
        job.set_error(event.message)

    def on_done(self, event: Done) -> None:
        job = self.group.jobs[event.index]
        job.end(JobState.FAILED if event.state == JobState.FAILED or job.error else event.state)
        if job.keep is not None and job.result is not None:  # a task's result: kept now, not at the next pass
            self.manager.keep_now()

    def on_idle(self, event: Idle) -> None:
        if any(job.state == JobState.RUNNING for job in self.group.jobs):
            return  # a resume crossed this message: the worker is busy again
        self.group.idle = True
        if self.holding:
            self.holding = False
            self.manager.queue.release(self.group, idle=True)

    # ------------------------------------------------------------------ a worker that dies or hangs

    def check_alive(self) -> None:
        process, channel = self.group.process, self.channel
        if process is None or channel is None:
            return
        # a worker that has exited may have sent its last messages (a result, Done) just before: the server's reading
        # thread moves them from the pipe into the channel a moment later, then marks the pipe's end; only a channel
        # still empty after that is a worker gone without a word (under load, "stopped unexpectedly (exit code 0)"
        # ended runs that had finished or been stopped)
        if not process.is_alive() and not channel.poll(EXIT_DRAIN_S):
            raise WorkerGone(f"exit code {process.exitcode}")
        if getattr(process, "starting", False):  # a Ray actor waiting for its node: silence counts once it runs
            self.heard = time.monotonic()
            return
        silent = time.monotonic() - self.heard
        if silent > self.manager.worker_timeout:
            self.kill(
                f"The process training this run stopped answering for {self.manager.worker_timeout:g} s and was "
                "stopped."
            )
        elif silent > min(STOP_GRACE_S, self.manager.worker_timeout) and any(
            job.stop_requested for job in self.group.jobs if not job.ended
        ):
            self.kill(None)

    def kill(self, reason: str | None) -> None:
        """End a worker that does not answer: its runs fail with ``reason`` (a timeout), or end as the student asked
        (a Stop it did not act on: ``reason`` None)."""
        process = self.group.process
        if process is not None:
            process.kill()
            process.join(timeout=5)
        log.error("killed the silent worker of jobs %s (%s)", [job.id for job in self.group.jobs], reason or "stop")
        for job in self.group.jobs:
            if job.ended:
                continue
            if reason is None and job.stop_requested:
                job.end(JobState.STOPPED)
            else:
                job.fail((reason or "The process training this run stopped answering.") + job.kept_snapshots_line())

    def worker_died(self) -> None:
        process = self.group.process
        code = process.exitcode if process is not None else None
        if process is not None and code is None:
            process.join(timeout=2)
            code = process.exitcode
        how = f" (exit code {code})" if code is not None else ""
        log.error("worker of jobs %s stopped unexpectedly%s", [job.id for job in self.group.jobs], how)
        for job in self.group.jobs:
            if not job.ended:
                job.fail(
                    f"The process training this run stopped unexpectedly{how}: it may have run out of memory or "
                    f"been ended from outside.{job.kept_snapshots_line()}"
                )

    def close(self) -> None:
        self.release()
        for job in self.group.jobs:
            if not job.ended:
                job.end(JobState.STOPPED if job.stop_requested else JobState.FAILED)
        self.group.attach(None)
        if self.channel is not None:
            self.channel.close()
        process = self.group.process
        if process is not None:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        self.manager.queue.ended(self.group)
