"""Training jobs: runs that train outside any page's script run, in worker processes on a server.

A :class:`JobManager` owns every job of a process (the Streamlit server has one, see :func:`default_manager`; the
CLI and notebooks make their own or use :func:`~llmviz.jobs.blocking.train_blocking`). Its parts, one module each
and the first four objects it holds on its one lock: :mod:`~llmviz.jobs.admission` (``manager.ledger``: who may train
and who goes next, pure logic), :mod:`~llmviz.jobs.sessions` (``manager.sessions``: each owner's jobs, its client, the
reaper of sessions that have gone), :mod:`~llmviz.jobs.shares` (``manager.shares``: reading the shares and keeping
snapshots within the cap), :mod:`~llmviz.jobs.lab_side` (``manager.lab_side``, the lab's controller: slots shared by
every process, controls from any process, Resume of a kept run), :mod:`~llmviz.jobs.supervisor` (a thread per job
group),
:mod:`~llmviz.jobs.worker` (the loop in the worker, over :mod:`~llmviz.jobs.runners`' interface),
:mod:`~llmviz.jobs.events` (what the two say), :mod:`~llmviz.jobs.processes` (starting worker processes) and
:mod:`~llmviz.jobs.keeping` (writing every run through the lab).

What the manager promises (docs/architecture.md says more):

- **Where the work runs.** ``workers="process"`` (the server's default): each job trains in a worker process of its
  own, at a lower OS priority than page rendering; a worker that dies or stops answering for ``worker_timeout``
  seconds gives its run a clear *failed* state. ``workers="thread"`` (notebooks, the CLI, tests) runs the same loop in
  a thread; ``workers="ray"`` on a Ray cluster (:mod:`~llmviz.jobs.ray_executor`).
- **Owners and clients.** A job belongs to one owner (a student id, or ``"cli"``) and only it sees its jobs; shares
  count per *client* (:meth:`JobManager.bind`).
- **Fair share and memory.** At most ``max_running`` jobs train at once; a client trains at most
  ``runs_per_session`` at once and keeps as many waiting; with ``memory_mb`` every run is estimated before anything
  is built (:mod:`llmviz.training.footprint`) and refused (:class:`JobRefused`, one line) when it cannot fit.
- **One record.** With a lab, a run is recorded before it is queued (a fault refuses it in one sentence, leaving no
  ghost), its steps are written through the lab, and Resume continues the same run (``manager.lab_side``).
- **Control.** Pause, Resume and Stop act between two steps; a paused run gives its worker back and resumes exactly.
- **Sessions that end.** A job whose owner has gone stops by itself (parked in the lab).

>>> from llmviz.training.config import TrainConfig
>>> from llmviz.training.trainer import Trainer
>>> config = TrainConfig(model="bigram-neural", tokenizer="char", context_length=8, batch_size=4, steps=5,
... eval_interval=5)
>>> manager = JobManager(max_running=1)
>>> job = manager.submit_training("notebook", Trainer.from_text("hello world\\n" * 20, config), label="demo")
>>> job.wait(timeout=60), job.status().state.value, job.status().step, job.snapshots.steps()
(True, 'finished', 5, [0, 1, 2, 5])
>>> manager.shutdown()
"""

from __future__ import annotations

import logging
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from llmviz import settings
from llmviz.device import available_devices
from llmviz.errors import LlmvizError
from llmviz.jobs import processes, ray_cluster, ray_executor
from llmviz.jobs.admission import Budget, Claim, Ledger, device_refusal
from llmviz.jobs.fair_queue import FairQueue
from llmviz.jobs.job import Group, Job
from llmviz.jobs.keeping import Keeper
from llmviz.jobs.kept_rows import kept_bytes
from llmviz.jobs.lab_side import LabSide
from llmviz.jobs.resuming import recipe_text
from llmviz.jobs.runners import facts as runner_facts
from llmviz.jobs.sessions import Session, Sessions
from llmviz.jobs.shares import Shares
from llmviz.jobs.supervisor import Supervisor
from llmviz.jobs.worker import TaskPayload, TrainPayload, WorkerOptions
from llmviz.lab.identity import student_key
from llmviz.lab.live_status import JobRefused, JobState, KeptResult, Planned
from llmviz.lab.records import RACE
from llmviz.lab.service import Lab
from llmviz.lab.views import section_of
from llmviz.training.footprint import MB, Footprint, describe, device_free_bytes, of_trainer, suggestion, worker_peak
from llmviz.training.footprint import task as task_footprint
from llmviz.training.footprint import unknown as unknown_footprint
from llmviz.training.snapshots import SnapshotStore, session_cap_bytes, state_of

log = logging.getLogger(__name__)


def _resumable(runner: Any) -> bool:
    """Can the lab resume a run of ``runner``: a :class:`Planned` run whose text is kept?"""
    return isinstance(runner, Planned) and recipe_text(runner.build) is not None


class JobManager:
    """Runs jobs in workers (processes or threads): a fair queue in front of ``max_running`` slots, per-owner
    job lists, per-client shares of runs and memory, snapshot caps, and a reaper that stops the jobs of owners that
    have gone.

    ``liveness(owner)`` returns True (alive), False (gone) or None (unknown); an owner that is not
    alive and has not sent a :meth:`heartbeat` for ``session_timeout`` seconds has its jobs stopped
    and forgotten. ``session_timeout=None`` never reaps (the CLI). ``memory_mb=None`` (and ``client_memory_mb=None``)
    sets no memory budget (the CLI, notebooks, tests); :func:`default_manager` sets one.
    """

    def __init__(
        self,
        max_running: int | None = None,
        torch_threads: int | None = None,
        session_timeout: float | None = None,
        liveness: Callable[[str], bool | None] | None = None,
        snapshot_cap_mb: float | None = None,
        latest_snapshot_s: float = 2.0,
        reap_interval: float = 2.0,
        workers: str = "thread",
        runs_per_session: int | None = None,
        nice: int = 10,
        memory_mb: float | None = None,
        client_memory_mb: float | None = None,
        worker_timeout: float | None = None,
        ray_address: str | None = None,
        lab: Lab | None = None,
    ):
        if max_running is None:
            max_running = settings.get_or("LLMVIZ_MAX_JOBS", processes.cpu_count)
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        if workers not in ("thread", "process", "ray"):
            raise ValueError("workers must be 'thread', 'process' or 'ray'")
        if runs_per_session is not None and runs_per_session < 1:
            raise ValueError("runs_per_session must be at least 1 (or None: no limit)")
        self.max_running = max_running
        self.torch_threads = torch_threads
        self.session_timeout = session_timeout
        self.liveness = liveness
        self.snapshot_cap = session_cap_bytes(snapshot_cap_mb)
        self.latest_snapshot_s = latest_snapshot_s
        self.reap_interval = reap_interval
        self.workers = workers
        self.ray_address = ray_address or settings.get("LLMVIZ_RAY_ADDRESS")
        if workers == "ray":
            ray_executor.connect(self.ray_address)
            ray_executor.warm_pool().fill()  # the first runs admitted find actors that have imported torch
        self.runs_per_session = runs_per_session
        self.nice = nice
        self.worker_timeout = float(worker_timeout or settings.get("LLMVIZ_WORKER_TIMEOUT"))
        self.ledger = Ledger(
            Budget(
                slots=max_running,
                runs_per_client=runs_per_session,
                memory=int(memory_mb * MB) if memory_mb is not None else None,
                client_memory=int(client_memory_mb * MB) if client_memory_mb is not None else None,
            )
        )
        self._lock = threading.RLock()
        self._closed = threading.Event()
        # the lab (llmviz.lab) this manager keeps its runs in, and shares the machine's slots and memory through
        self.keeper = Keeper(lab) if lab is not None else None
        self.sessions = Sessions(self._lock, self._closed, self.keeper, liveness, session_timeout, reap_interval)
        self.shares = Shares(self._lock, self.ledger, self.sessions, self.snapshot_cap, self.keeper)
        self.lab_side = LabSide(
            self._lock, self.ledger, self.sessions, self.keeper, self.submit_training, max_running, runs_per_session
        )
        # the fair queue in front of the slots (the supervisors wait there; the jobs ask it where they stand)
        self.queue = FairQueue(self._lock, self.ledger, self._closed, self.lab_side if lab is not None else None)
        if lab is not None:
            lab.attach(self.lab_side)  # the lab's controls act at once on the runs this process holds

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def lab(self) -> Lab | None:
        """The lab this manager keeps its runs in (the one door: :class:`llmviz.lab.service.Lab`), or None."""
        return self.keeper.lab if self.keeper is not None else None

    # ---------------------------------------------------------------- what the lab's door asks (llmviz.lab.trainer)

    def bind(self, owner: str, client: str) -> None:
        self.sessions.bind(owner, client)

    def get(self, owner: str, job_id: str) -> Job | None:
        return self.sessions.get(owner, job_id)

    def jobs(self, owner: str) -> list[Job]:
        return self.sessions.jobs(owner)

    def heartbeat(self, owner: str) -> None:
        self.sessions.heartbeat(owner)

    def share(self, owner: str) -> tuple[int, int]:
        return self.shares.share(owner)

    def memory_line(self, owner: str) -> tuple[int, int | None, int, int | None]:
        return self.shares.memory_line(owner)

    @property
    def running_count(self) -> int:
        return self.shares.running_count

    @property
    def waiting_count(self) -> int:
        return self.shares.waiting_count

    def resume_line(self, owner: str, run_id: str) -> str:
        return self.lab_side.resume_line(owner, run_id)

    def keep_upload(self, owner: str, name: str, data: bytes) -> str | None:
        return self.lab_side.keep_upload(owner, name, data)

    # ---------------------------------------------------------------- submitting

    def submit_training(
        self,
        owner: str,
        trainer=None,
        *,
        build: Callable[[], object] | None = None,
        footprint: Footprint | None = None,
        label: str = "run",
        total: int | None = None,
        sample_every: int = 0,
        sample_prompt: str = "",
        sample_tokens: int = 80,
        snapshots: bool = True,
        snapshot_every: int = 0,
        checkpoint: bool = True,
        kind: str | None = None,
        resuming: tuple[str, int, str] | None = None,
    ) -> Job:
        """Start training ``trainer`` (or the one ``build()`` makes in the worker, e.g. after training a BPE
        tokenizer: give its ``footprint`` so it is admitted before anything is built) for its configured number of
        steps. ``snapshots=False`` keeps no weights (the CLI: its checkpoint is the result). ``snapshot_every`` > 0
        keeps every such step too, besides the log-spaced series (for charts over training, e.g. an induction head
        forming). ``checkpoint=False``: no single-file checkpoint is made when the run ends (the CLI saves its own).
        ``kind``: what the lab keeps it as (:data:`llmviz.lab.records.KINDS`; default: what the runner says it is, else
        ``"training"``). ``resuming``: ``(run id, step, by)`` of a kept run this one goes on with (the same run:
        ``manager.lab_side.resume_kept``). With process workers ``trainer`` and ``build`` are pickled: they must not
        hold lambdas or open files."""
        if (trainer is None) == (build is None):
            raise ValueError("give either a trainer or a build function")
        options = self._options(
            sample_every=sample_every,
            sample_prompt=sample_prompt,
            sample_tokens=sample_tokens,
            snapshots=snapshots,
            snapshot_every=snapshot_every,
            checkpoint=checkpoint,
        )
        if build is not None:
            steps = total or 0
            runner: Any = Planned(build, footprint or unknown_footprint(), steps)
        else:
            runner = trainer
        [job] = self._submit(owner, [(label, runner)], options, total, kind, resuming)
        return job

    def submit_race(
        self,
        owner: str,
        runners: list[tuple[str, Any]],
        *,
        sample_every: int = 0,
        sample_prompt: str = "",
        sample_tokens: int = 80,
        snapshots: bool = True,
        kind: str | None = None,
        section: tuple[str, dict] | None = None,
    ) -> list[Job]:
        """Train ``(label, trainer)`` runners side by side in one worker (a step of each in turn): one slot and one
        share of the client for the whole race, one :class:`Job` (curve, snapshots, controls) per runner. A runner
        may be a :class:`Planned` run instead of a trainer: it is built in the worker. ``section``: ``(name, what
        was asked)`` of the page section that starts them, kept with each run in the lab
        (:func:`llmviz.lab.views.section_of`), where the section finds them again
        (:meth:`llmviz.lab.service.Lab.section_starts`)."""
        if not runners:
            raise ValueError("a race needs at least one runner")
        noted = section_of(section[0], "", section[1]) if section is not None else None  # bad notes: before anything
        options = self._options(
            sample_every=sample_every,
            sample_prompt=sample_prompt,
            sample_tokens=sample_tokens,
            snapshots=snapshots,
            snapshot_every=0,
        )
        return self._submit(owner, runners, options, None, kind, section=noted)

    def submit_task(
        self,
        owner: str,
        loop: Callable[[Callable[[], bool]], Iterator[tuple[int, float]]],
        *,
        label: str,
        total: int,
        returns_when_stopped: bool = False,
        footprint: Footprint | None = None,
        keep: KeptResult | None = None,
    ) -> Job:
        """Run any loop that yields ``(step, loss)`` (a BPE training, word2vec, a toy decoder) as a job; its
        return value becomes :attr:`Job.result`. ``loop(should_stop)`` may check ``should_stop()`` itself, and is
        stopped between yields anyway. With process workers ``loop`` must be picklable (a module-level function
        or a ``functools.partial`` of one). ``returns_when_stopped``: a Stop lets the loop return what it made so
        far (it must check ``should_stop()``; see :mod:`llmviz.training.tasks`). ``footprint``: its memory, when it is
        more than a worker's own. ``keep``: what the lab keeps of its result (:class:`KeptResult`: a BPE tokenizer,
        word vectors), written as the run's one kept file when it ends with one."""
        group = Group(owner, self.sessions.client_of(owner), self._options(snapshots=False, checkpoint=False))
        job = Job(self.queue, group, 0, label, "task", total)
        job.keep = keep
        group.jobs.append(job)
        group.payloads.append(TaskPayload(loop, returns_when_stopped))
        self._enter(group, [footprint or task_footprint(label)])
        return job

    def keep_now(self) -> None:
        """Have the lab's keeper write what changed now (a task that ended with a result the student may reload for at
        once), not at its next pass: its thread does it, so the caller (a run's supervisor, which frees the run's
        slot next) never waits on a locked database; nothing without a lab."""
        if self.keeper is not None:
            self.keeper.wake()

    def run_devices(self) -> list[str]:
        """The devices a run may train on, best first: the Ray cluster's (``LLMVIZ_RAY_ADDRESS``: a GPU only where a
        node has one) or this machine's."""
        if self.workers == "ray":
            return ray_cluster.offered_devices(ray_cluster.nodes_for_pages())
        return available_devices()

    def where_runs_train(self) -> str | None:
        """One line on the cluster that trains the runs (its CPUs, GPUs, nodes); None when runs train here."""
        if self.workers != "ray":
            return None
        return ray_cluster.offer_line(ray_cluster.nodes_for_pages(), self.ray_address or "")

    def _options(self, **values) -> WorkerOptions:
        threads = self.torch_threads or settings.get("LLMVIZ_TORCH_THREADS") or 0
        process = self.workers in ("process", "ray")  # a Ray worker is a process of the cluster's
        if process and not threads:
            threads = max(1, processes.cpu_count() // self.max_running)
        return WorkerOptions(
            snapshot_latest_s=self.latest_snapshot_s,
            torch_threads=threads if process else 0,
            nice=self.nice if process else 0,
            park_as_bytes=process,
            heartbeat_s=min(2.0, self.worker_timeout / 4) if process else 0.0,
            **values,
        )

    def _submit(
        self,
        owner: str,
        runners: list[tuple[str, Any]],
        options: WorkerOptions,
        total: int | None,
        kind: str | None = None,
        resuming: tuple[str, int, str] | None = None,
        section: dict | None = None,
    ):
        """Make a group of training jobs, one per ``(label, runner)`` (a trainer built here, or a :class:`Planned`
        run its worker builds), and enter it (:meth:`_enter`); returns its jobs. ``section``: the page section's note
        each run keeps (its start: the group's first run)."""
        if self.keeper is not None and any(_resumable(runner) for _, runner in runners):
            options = replace(options, resume_state=True)  # its worker sends what resuming exactly needs
        group = Group(owner, self.sessions.client_of(owner), options)
        run_kind = kind or (RACE if len(runners) > 1 else None)
        footprints = []
        texts: list[str | None] = []
        for index, (label, runner) in enumerate(runners):
            job, payload = self._train_job(group, index, label, runner, total, run_kind, resuming)
            group.jobs.append(job)
            group.payloads.append(payload)
            footprints.append(runner.footprint if isinstance(runner, Planned) else of_trainer(runner))
            texts.append(recipe_text(runner.build) if isinstance(runner, Planned) else None)
        if section is not None:
            for job in group.jobs:
                job.section = {**section, "start": group.jobs[0].id}
        self._enter(group, footprints, texts, resuming)
        return group.jobs

    def _train_job(
        self,
        group: Group,
        index: int,
        label: str,
        runner: Any,
        total: int | None,
        run_kind: str | None,
        resuming: tuple[str, int, str] | None,
    ) -> tuple[Job, TrainPayload]:
        """Job ``index`` of ``group``, training ``runner`` for ``total`` steps (or the runner's own), with what its
        worker is sent. ``run_kind``: the kind the group's runs say (a race's), else the trainer's own."""
        planned = runner if isinstance(runner, Planned) else None
        trainer: Any = None if planned is not None else runner
        steps = total if total is not None else (planned.steps if planned is not None else trainer.config.steps)
        job = Job(self.queue, group, index, label, "train", steps, run_id=resuming[0] if resuming else None)
        job.run_kind = run_kind or getattr(trainer, "kind", None)
        if group.options.snapshots:
            job.snapshots = SnapshotStore(every=max(0, int(group.options.snapshot_every)))
        if trainer is not None:
            job.info = runner_facts(trainer)
            job.reserved_snapshot_bytes = 2 * job.info.snapshot_bytes if job.snapshots is not None else 0
            if self.workers == "thread":
                job.trainer = trainer
        payload = TrainPayload(
            trainer=trainer,
            build=planned.build if planned else None,
            step_zero_kept=trainer is not None and job.snapshots is not None,
        )
        return job, payload

    def _enter(
        self,
        group: Group,
        footprints: list[Footprint],
        texts: list[str | None] | None = None,
        resuming: tuple[str, int, str] | None = None,
    ) -> None:
        """Admit the group (its client's share of runs and memory, the GPU, snapshot room), record it in the lab
        (a run is queued only once it is recorded: a fault refuses it in one sentence and leaves no ghost in the
        queue), keep the step 0 it already has, and start its supervisor."""
        claim = Claim(group.id, group.client, memory=worker_peak(footprints), what=describe(footprints))
        with self._lock:
            self._refuse_if_needed(group, claim, footprints)  # nothing entered yet
        self._record_group(group, footprints, texts, resuming)
        with self._lock:
            self._admit_recorded(group, claim, footprints, resuming)
        if self.workers in ("process", "ray"):
            self._pack_payloads(group, resuming)
        group.thread = threading.Thread(
            target=Supervisor(self, group).run, daemon=True, name=f"llmviz-job-{group.jobs[0].id}"
        )
        group.thread.start()

    def _record_group(
        self,
        group: Group,
        footprints: list[Footprint],
        texts: list[str | None] | None,
        resuming: tuple[str, int, str] | None,
    ) -> None:
        """Record the group's runs in the lab (each keeping at least what ``footprints`` say it needs), or refuse
        it (:class:`JobRefused`, one sentence) when the database cannot record them or they are over the quota;
        nothing without a lab."""
        if self.keeper is None:
            return
        needs = [kept_bytes(f, group.options.resume_state) for f in footprints]
        by = (resuming[1], resuming[2]) if resuming else None
        try:
            self.keeper.enter(group.jobs, texts, needs, by)
        except LlmvizError as refused:  # the database cannot record it, or the quota: nothing was queued
            raise JobRefused(str(refused)) from None

    def _admit_recorded(
        self, group: Group, claim: Claim, footprints: list[Footprint], resuming: tuple[str, int, str] | None
    ) -> None:
        """Admit the recorded group (its rows go when it is refused meanwhile), list its jobs in its owner's
        session and keep the step 0 its trainers built here have; under the lock."""
        try:
            self._admit(group, claim, footprints)
        except JobRefused:
            self._discard_unqueued(group, resuming)  # refused meanwhile (another tab's run took the share)
            raise
        session = self.sessions.by_owner.setdefault(group.owner, Session())
        for job in group.jobs:
            session.jobs[job.id] = job
        session.heartbeat = time.monotonic()
        for job, payload in zip(group.jobs, group.payloads):
            if isinstance(payload, TrainPayload) and payload.trainer is not None and job.snapshots is not None:
                # step 0 exists at once, so pages can show the run while it waits
                self.shares.keep_snapshot(job, payload.trainer.step, state_of(payload.trainer.model))
        self.sessions.ensure_reaper()

    def _pack_payloads(self, group: Group, resuming: tuple[str, int, str] | None) -> None:
        """What the group's worker process needs travels as bytes (the server keeps no trainer); a group that
        cannot be sent is forgotten and refused (:class:`JobRefused`, one sentence)."""
        try:
            group.payload_bytes = pickle.dumps(group.payloads, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError) as error:
            self._forget(group)
            self._discard_unqueued(group, resuming)  # recorded, never queued: its row goes too
            raise JobRefused(f"This job cannot be sent to a worker process ({error}).") from error
        group.payloads = []
        with self._lock:
            if group.id in self.ledger.claims:
                self.ledger.claims[group.id].held = len(group.payload_bytes)

    def _discard_unqueued(self, group: Group, resuming: tuple[str, int, str] | None) -> None:
        """Remove from the lab the runs of a group recorded but refused before it was queued; a resumed run keeps
        its row (it was kept before)."""
        if self.keeper is not None and resuming is None:
            self.keeper.discard(group.jobs)

    def _admit(self, group: Group, claim: Claim, footprints: list[Footprint]) -> None:
        """Refuse the group (:class:`JobRefused`, one line) or enter its claim; under the lock."""
        device = self._refuse_if_needed(group, claim, footprints)
        self.ledger.add(claim)
        if device:
            self.queue.device_needs[group.id] = device

    def _refuse_if_needed(self, group: Group, claim: Claim, footprints: list[Footprint]) -> int:
        """Refuse the group (:class:`JobRefused`, one line), else the GPU bytes it needs; under the lock."""
        if self._closed.is_set():
            raise JobRefused("The job manager has shut down.")
        refused = self.ledger.refusal(
            claim, tabs=group.client == group.owner, suggest=lambda left: suggestion(footprints, left)
        )
        device = sum(f.device_bytes for f in footprints)
        if self.workers == "ray":
            group.ray_wanted = ray_cluster.ray_resources(
                group.options.torch_threads, claim.memory, any(f.on_gpu for f in footprints)
            )
            refused = refused or ray_cluster.resource_refusal(group.ray_wanted, self.ray_address or "")
            device = 0  # the cluster's GPUs, not this server's: Ray places the run on a node that has one
        if not refused and device:
            reserved = sum(self.queue.device_needs.get(c.group, 0) for c in self.ledger.waiting())
            refused = device_refusal(claim.what, device, device_free_bytes(footprints[0].device), reserved)
        if not refused:
            refused = self.shares.snapshot_refusal(group.owner, group.jobs) or self.lab_side.lab_runs_refusal(group)
        if refused:
            raise JobRefused(refused)
        return device

    def _forget(self, group: Group) -> None:
        with self._lock:
            self.ledger.end(group.id)
            self.queue.device_needs.pop(group.id, None)
            session = self.sessions.by_owner.get(group.owner)
            for job in group.jobs:
                if session is not None:
                    session.jobs.pop(job.id, None)
                job.end(JobState.FAILED)

    # ---------------------------------------------------------------- deleting

    def remove(self, owner: str, job_id: str) -> None:
        """Delete a job with its snapshots: with a lab, through its one control path
        (:meth:`llmviz.lab.service.Lab.control`: the rows and folder first, then the job stops here; under a database
        fault :class:`~llmviz.lab.faults.LabUnavailable`, and nothing changes); without one, stop it and forget it."""
        if self.keeper is not None and self.keeper.lab.run(student_key(owner), job_id) is not None:
            self.keeper.lab.control(student_key(owner), job_id, "delete")
            return
        job = self.sessions.get(owner, job_id)
        self.sessions.forget(owner, [job_id])
        if job is not None:
            job.discard()

    def close_for_restart(self, timeout: float = 5.0) -> None:
        """The server is stopping in order (SIGTERM; :func:`default_manager` registers this at exit): every run that
        trains is asked to pause, so its worker sends its resume state at the step it reached (within ``timeout``
        seconds), then the lab's last rows are written. After the restart those runs are interrupted, and resume
        exactly from that step (a server killed outright resumes them from their newest resume state, at most
        ``WorkerOptions.resume_every_s`` older)."""
        if self.keeper is None:
            return
        jobs = self.sessions.every_job()
        training = [job for job in jobs if job.state == JobState.RUNNING]
        for job in training:
            job.pause()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(job.state == JobState.RUNNING for job in training):
            time.sleep(0.05)
        self.keeper.close()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every job and wait for the workers (tests, notebooks)."""
        self._closed.set()
        jobs = self.sessions.every_job()
        for job in jobs:
            job.stop()
            job.group.wake()
        self.queue.wake_all()
        for job in jobs:
            job.wait(timeout)
        if self.keeper is not None:
            self.keeper.close()
