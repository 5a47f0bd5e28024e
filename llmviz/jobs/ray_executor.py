"""Workers on a Ray cluster: the same worker loop (:func:`~llmviz.jobs.worker.worker_main`) in a Ray actor, for a
lecture hall that trains on more machines than the one serving its pages.

With ``LLMVIZ_RAY_ADDRESS`` set (``host:port`` of a Ray head), :func:`llmviz.jobs.default.default_manager` makes a
``JobManager(workers="ray")``: every group's worker (a run, a race, a task) is then one actor of the cluster, started
with the resources its job needs (``num_cpus``: its torch threads; ``memory``: the job's footprint estimate,
:mod:`llmviz.training.footprint`; ``num_gpus=1`` for a run on the GPU), so Ray places it on a node that has them
and no node is promised more than it has. Everything else is the supervisor's (:mod:`llmviz.jobs.supervisor`), the
same as for a local worker process:

- :class:`RayChannel` is the supervisor's end of the worker's :class:`~llmviz.jobs.channels.Channel`: controls go to
  the actor's ``push`` (numbered, so they are obeyed in the order sent), events come back in batches from a
  long-polling ``pull``; the worker's heartbeats travel the same way, so a worker that stops answering is killed
  after ``worker_timeout`` as a local one is;
- :class:`RayWorkerHandle` stands where a ``multiprocessing.Process`` stands (``is_alive``, ``exitcode``, ``kill``,
  ``join``, ``pid``): an actor that dies (its node went away, it was killed, it ran out of memory) fails its runs
  with their snapshots kept, and the others go on;
- a parked run's actor exits; Resume starts a new actor from the parked state, wherever Ray finds room.

What a worker asks of the cluster and what the cluster offers are :mod:`llmviz.jobs.ray_cluster`'s.
"""

from __future__ import annotations

import collections
import gc
import importlib
import logging
import os
import pickle
import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from llmviz import settings
from llmviz.errors import log_failure
from llmviz.jobs import processes
from llmviz.jobs.channels import Channel, WorkerGone, thread_channel_pair
from llmviz.jobs.events import Done, Failed, Parked
from llmviz.jobs.ray_cluster import RayUnavailable, bundle_of, nodes_for_pages, ray_module
from llmviz.jobs.worker import WorkerOptions, claim_process, send_start_failure, serve
from llmviz.lab.live_status import JobState

log = logging.getLogger(__name__)

PULL_S = 0.5  # one pull waits at most this long in the actor for an event
ACTOR_CONCURRENCY = 6  # run (the whole life), begun, pull, push and pid may be served at once (and a late pull)
BEGIN_S = 60.0  # a job's worker counts as starting until its loop has begun, or for at most this long
_connect_lock = threading.Lock()
_pool_lock = threading.Lock()


def connect(address: str) -> Any:
    """Join the Ray cluster at ``address`` once per process (a driver that logs only warnings); the ``ray`` module."""
    ray = ray_module()
    with _connect_lock:
        if not ray.is_initialized():
            try:
                ray.init(address=address, logging_level=logging.WARNING, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise RayUnavailable(f"The Ray cluster at {address} cannot be reached: {error}") from error
            global _pool
            _pool = None  # the actors of an earlier connection are gone with it
    return ray


# ---------------------------------------------------------------------------- the actor (in the cluster)


@dataclass(frozen=True)
class Baseline:
    """What a fresh worker process starts with, taken when a (warm) actor is made, before any job: every job the
    actor serves starts from it (:func:`fresh_job`), so nothing of one job reaches the next."""

    threads: int  # torch's intra-op threads
    dtype: torch.dtype
    matmul: str  # torch.get_float32_matmul_precision()
    deterministic: bool
    nice: int

    @classmethod
    def now(cls) -> Baseline:
        return cls(
            threads=torch.get_num_threads(),
            dtype=torch.get_default_dtype(),
            matmul=torch.get_float32_matmul_precision(),
            deterministic=torch.are_deterministic_algorithms_enabled(),
            nice=niceness(),
        )


def niceness() -> int:
    return os.nice(0) if hasattr(os, "nice") else 0


def fresh_job(baseline: Baseline, options: WorkerOptions) -> None:
    """Put this process back where a fresh worker process starts (torch's threads, dtype, matmul precision and grad
    mode; torch's, Python's and NumPy's default generators reseeded from the OS), then claim it for a job
    (:func:`~llmviz.jobs.worker.claim_process`). Niceness can only rise: it is raised to the baseline's plus the
    job's (an app process gives every job the same)."""
    torch.set_num_threads(baseline.threads)
    torch.seed()  # a new seed from the OS, as a fresh process gets
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    torch.set_default_dtype(baseline.dtype)
    torch.set_float32_matmul_precision(baseline.matmul)
    torch.use_deterministic_algorithms(baseline.deterministic)
    torch.set_grad_enabled(True)  # grad mode is per thread; the job runs in this one
    rise = baseline.nice + options.nice - niceness()
    claim_process(replace(options, nice=max(0, rise)))


class _Watched(Channel):
    """The worker's end of a job's channel, noting whether the job ended as a warm actor may be reused after: a
    runner that parked (its memory must go back to the node: the process ends) or failed (the process's state is
    not trusted: a GPU out of memory, a crash in a library) makes the actor end with its job."""

    def __init__(self, inner: Channel):
        self.inner = inner
        self.spent = False

    def send(self, message) -> None:
        if isinstance(message, Parked | Failed) or (isinstance(message, Done) and message.state == JobState.FAILED):
            self.spent = True
        self.inner.send(message)

    def poll(self, timeout: float = 0.0) -> bool:
        return self.inner.poll(timeout)

    def recv(self):
        return self.inner.recv()

    def close(self) -> None:
        self.inner.close()


@dataclass
class _Ends:
    """Both ends of one job's thread channel in an actor, and the order of the controls it has been sent."""

    ours: Channel
    theirs: Channel
    order: threading.Lock = field(default_factory=threading.Lock)
    next_push: int = 0
    early: dict[int, bytes] = field(default_factory=dict)  # controls that arrived before an earlier one
    begun: threading.Event = field(default_factory=threading.Event)  # the job's worker loop has begun


class RayWorker:
    """One worker in a Ray actor: :meth:`run` runs the worker loop for one job (a *lease*: a run, a race, a task), on
    one end of a thread channel of that lease's own; :meth:`push` and :meth:`pull` are the other end, for the
    supervisor (a threaded actor serves them while :meth:`run` trains). A warm actor (:class:`WarmPool`) serves one
    lease after another, each from the process's :class:`Baseline`; calls for a lease that has ended answer
    'closed' and are otherwise ignored."""

    def __init__(self) -> None:
        for name in processes.PRELOAD:  # what a local worker's forkserver has imported (the trainer, torch._dynamo)
            importlib.import_module(name)
        self.baseline = Baseline.now()
        self.lock = threading.Lock()
        self.leases: dict[str, _Ends] = {}
        self.retired: set[str] = set()

    def pid(self) -> int:
        return os.getpid()

    def begun(self, lease: str, timeout: float) -> int:
        """The process id, once the lease's worker loop has begun (its heartbeats count from then on), or after
        ``timeout`` s."""
        ends = self._ends(lease)
        if ends is not None:
            ends.begun.wait(timeout)
        return os.getpid()

    def warm(self) -> tuple[int, str]:
        """The actor's process id and node (answered once the actor has started: torch is imported by then)."""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def _ends(self, lease: str) -> _Ends | None:
        with self.lock:
            if lease in self.retired:
                return None
            if lease not in self.leases:
                self.leases[lease] = _Ends(*thread_channel_pair())
            return self.leases[lease]

    def run(self, lease: str, payload_bytes: bytes, options: WorkerOptions) -> tuple[int, bool]:
        """One job's whole life, as in a worker process (:func:`llmviz.jobs.worker.process_entry`); its exit code,
        and whether the actor may serve another job (every runner finished or stopped: see :class:`_Watched`)."""
        with self.lock:  # the leases before this one have ended: their calls are answered 'closed' from now on
            for old in [key for key in self.leases if key != lease]:
                self.retired.add(old)
                del self.leases[old]
        ends = self._ends(lease)
        assert ends is not None
        fresh_job(self.baseline, options)
        try:
            payloads = pickle.loads(payload_bytes)
        except Exception as error:  # noqa: BLE001 - cannot even start: say so once for every runner
            log_failure("a Ray worker's start", error)
            send_start_failure(ends.theirs, error)
            ends.begun.set()
            ends.theirs.close()
            return 1, False
        del payload_bytes
        ends.begun.set()
        watched = _Watched(ends.theirs)
        serve(watched, payloads, options)
        del payloads
        gc.collect()
        return 0, not watched.spent

    def push(self, lease: str, number: int, control: bytes) -> None:
        """A control from the supervisor, passed on in the order they were sent (``number`` counts from 0)."""
        ends = self._ends(lease)
        if ends is None:
            return
        with ends.order:
            ends.early[number] = control
            while ends.next_push in ends.early:
                ends.ours.send(pickle.loads(ends.early.pop(ends.next_push)))
                ends.next_push += 1

    def pull(self, lease: str, timeout: float) -> bytes:
        """The events the job's worker has sent (waiting up to ``timeout`` for the first), pickled, and whether its
        end of the channel has closed (the worker has returned)."""
        ends = self._ends(lease)
        if ends is None:
            return pickle.dumps(([], True), protocol=pickle.HIGHEST_PROTOCOL)
        events: list = []
        closed = False
        if ends.ours.poll(timeout):
            while ends.ours.poll(0):
                try:
                    events.append(ends.ours.recv())
                except WorkerGone:
                    closed = True
                    break
        return pickle.dumps((events, closed), protocol=pickle.HIGHEST_PROTOCOL)


_remote_class: Any = None


def remote_worker_class() -> Any:
    """:class:`RayWorker` as a Ray actor class (made once: ``ray`` is imported only where it is used)."""
    global _remote_class
    if _remote_class is None:
        _remote_class = ray_module().remote(RayWorker)
    return _remote_class


# ---------------------------------------------------------------------------- warm actors (in the app process)


@dataclass
class _Warm:
    actor: Any
    ready: Any  # the actor's warm() call: (pid, node) once it has started
    node: str | None = None
    jobs: int = 0


class WarmPool:
    """Actors of this app process that have started and imported torch and llmviz, waiting for a job.

    A warm actor holds no resources of the cluster (``num_cpus=0``): a job's resources are reserved by a placement
    group (:func:`start_actor`), and a warm actor on the node Ray reserved them on runs the job, so Ray's ledger of
    CPUs, memory and GPUs is what admits it, as for a fresh actor. The pool keeps ``size`` actors, at most one per
    CPU of the cluster, and makes a new one for each it hands out; an actor comes back only from a job whose
    runners all finished or stopped (a parked job's actor ends, so its memory goes back to the node, as does a
    failed, killed or hung job's), and retires after ``MAX_JOBS`` jobs."""

    MAX_JOBS = 50

    def __init__(self, size: int):
        self.size = max(0, int(size))
        self.idle: list[_Warm] = []
        self.lock = threading.Lock()
        self._target: int | None = None

    def target(self) -> int:
        if self._target is None:
            cpus = int(ray_module().cluster_resources().get("CPU", 0))
            self._target = min(self.size, max(0, cpus))
        return self._target

    def fill(self) -> None:
        """Start actors until the pool holds :meth:`target` (they warm up in the cluster: this returns at once)."""
        with self.lock:
            while len(self.idle) < self.target():
                actor = remote_worker_class().options(num_cpus=0, max_concurrency=ACTOR_CONCURRENCY, max_restarts=0)
                actor = actor.remote()
                self.idle.append(_Warm(actor, actor.warm.remote()))

    def _ready(self, warm: _Warm) -> bool:
        """Whether ``warm`` has started (its node then known); an actor that died before it was used leaves."""
        ray = ray_module()
        if warm.node is None and ray.wait([warm.ready], timeout=0)[0]:
            try:
                warm.node = ray.get(warm.ready)[1]
            except ray.exceptions.RayError:
                self.idle.remove(warm)
                return False
        return warm.node is not None

    def _pick(self, node: str, one_node: bool) -> _Warm | None:
        """A started actor on ``node``; else, on a one-node cluster, one still starting (it is further on than a
        new one would be). Under the lock."""
        started = [warm for warm in list(self.idle) if self._ready(warm)]
        picked = next((warm for warm in started if warm.node == node), None)
        if picked is None and one_node:
            picked = next((warm for warm in self.idle if warm.node is None), None)
        if picked is not None:
            self.idle.remove(picked)
        return picked

    def claim(self, node: str, one_node: bool = False) -> _Warm | None:
        """A warm actor for a job whose resources Ray reserved on ``node`` (None when there is none: the caller
        starts a fresh one); the pool then makes a new one in its place."""
        ray = ray_module()
        with self.lock:
            warm = self._pick(node, one_node)
        if warm is not None and warm.node is not None:
            try:  # it may have died while it waited (its node went away)
                ray.get(warm.actor.pid.remote(), timeout=5)
            except (ray.exceptions.RayError, TimeoutError):
                warm = None
        self.fill()
        return warm

    def give_back(self, warm: _Warm, clean: bool) -> None:
        """An actor whose job has ended: kept for the next job when its job ended ``clean`` (in place of an actor
        still starting, when the pool is full: this one has started)."""
        warm.jobs += 1
        ending = [warm]
        with self.lock:
            if clean and warm.jobs < self.MAX_JOBS and self.target() > 0:
                starting = [other for other in self.idle if other.node is None]
                if len(self.idle) < self.target():
                    ending = []
                elif starting:
                    ending = starting[:1]
                    self.idle.remove(starting[0])
                if warm not in ending:
                    self.idle.append(warm)
        for ended in ending:
            end_actor(ended.actor)

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for warm in idle:
            end_actor(warm.actor)


_pool: WarmPool | None = None


def warm_pool() -> WarmPool:
    """This app process's :class:`WarmPool` (``LLMVIZ_RAY_WARM_WORKERS`` actors)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WarmPool(settings.get("LLMVIZ_RAY_WARM_WORKERS"))
    return _pool


def end_actor(actor: Any) -> None:
    ray = ray_module()
    try:
        ray.kill(actor, no_restart=True)
    except (ValueError, ray.exceptions.RayError):
        pass  # gone already


# ---------------------------------------------------------------------------- the supervisor's side


class RayWorkerHandle:
    """A job's worker on the cluster, seen as a ``multiprocessing.Process`` is by the supervisor: first a placement
    group reserving the job's resources (``starting``), then an actor (warm, or fresh inside the group) running it."""

    def __init__(self, payload_bytes: bytes, options: WorkerOptions, wanted: dict[str, int], pool: WarmPool | None):
        ray = ray_module()
        self.payload_bytes: bytes | None = payload_bytes
        self.options = options
        self.wanted = wanted
        self.pool = pool if not wanted.get("num_gpus") else None  # a GPU actor is fresh: Ray gives it its GPU
        self.lease = uuid.uuid4().hex
        self.group = ray.util.placement_group([bundle_of(wanted)])
        self.reserved = self.group.ready()
        self.channel = RayChannel(self)
        self.actor: Any = None
        self.warm: _Warm | None = None
        self.run_ref: Any = None
        self.pid_ref: Any = None
        self._pid: int | None = None
        self._outcome: tuple[int | None] | None = None  # (exit code,) once the job has ended
        self._released = False
        self.reusable = False  # the job ended so that its warm actor may serve the next (RayWorker.run)

    def advance(self) -> None:
        """Once the cluster has reserved the job's resources: a warm actor on that node (or a fresh one in the
        reservation) runs it, and the controls sent so far follow."""
        if self.actor is not None or self._outcome is not None:
            return
        ray = ray_module()
        if not ray.wait([self.reserved], timeout=0)[0]:
            return
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        node = ray.util.placement_group_table(self.group).get("bundles_to_node_id", {}).get(0)
        one_node = len(nodes_for_pages()) == 1
        self.warm = self.pool.claim(node, one_node) if self.pool is not None and node else None
        if self.warm is not None:
            self.actor = self.warm.actor
        else:
            inside = PlacementGroupSchedulingStrategy(self.group, placement_group_bundle_index=0)
            options = dict(max_concurrency=ACTOR_CONCURRENCY, max_restarts=0, scheduling_strategy=inside, **self.wanted)
            self.actor = remote_worker_class().options(**options).remote()
        self.run_ref = self.actor.run.remote(self.lease, self.payload_bytes, self.options)
        self.pid_ref = self.actor.begun.remote(self.lease, BEGIN_S)
        self.payload_bytes = None
        self.channel.attach(self.actor, self.lease)
        log.info("a Ray worker (%s actor) runs lease %s", "warm" if self.warm else "fresh", self.lease)

    @property
    def pid(self) -> int | None:
        """The actor's process id (on its node) once it has started; None before."""
        self.advance()
        if self._pid is None and self.pid_ref is not None:
            ray = ray_module()
            ready, _ = ray.wait([self.pid_ref], timeout=0)
            if ready:
                try:
                    self._pid = int(ray.get(ready[0]))
                except ray.exceptions.RayError:
                    return None
        return self._pid

    @property
    def starting(self) -> bool:
        """The job waits for its resources, or its actor is still starting (it cannot have said anything yet)."""
        return self.pid is None and not self._ended()

    def _ended(self, timeout: float | None = 0.0) -> bool:
        self.advance()
        if self._outcome is None:
            if self.run_ref is None:
                return False
            ray = ray_module()
            ready, _ = ray.wait([self.run_ref], timeout=timeout)
            if not ready:
                return False
            try:
                code, self.reusable = ray.get(ready[0])
                self._outcome = (int(code),)
            except ray.exceptions.RayError as error:  # the actor died: killed, its node gone, out of memory
                log.warning("the Ray worker actor ended: %s", str(error).split("\n", 1)[0])
                self._outcome = (None,)
        return True

    @property
    def exitcode(self) -> int | None:
        return self._outcome[0] if self._ended() and self._outcome is not None else None

    def is_alive(self) -> bool:
        """Alive until the actor has died, or its run has returned and every event it sent has been read (as a
        process's pipe is read to its end after the process exits)."""
        if not self._ended():
            return True
        assert self._outcome is not None
        return self._outcome[0] is not None and not self.channel.gone

    def join(self, timeout: float | None = None) -> None:
        """Wait for the job to return (at most ``timeout`` s), then give its actor back (warm, to the pool) and its
        reservation back to the cluster."""
        if self._ended(timeout):
            self.release(clean=self._outcome == (0,) and self.reusable)

    def kill(self) -> None:
        if self._outcome is None and self.run_ref is None:
            self._outcome = (None,)  # ended while it waited for its resources
        self.release(clean=False)
        self.channel.gone = self.channel.gone or "the worker actor was ended"

    def release(self, clean: bool) -> None:
        if self._released:
            return
        self._released = True
        if self.warm is not None and self.pool is not None:
            self.pool.give_back(self.warm, clean)
        elif self.actor is not None:
            end_actor(self.actor)
        ray = ray_module()
        try:
            ray.util.remove_placement_group(self.group)
        except (ValueError, ray.exceptions.RayError) as error:  # a group already removed (its node gone)
            log.info("the reservation of lease %s was gone already: %s", self.lease, error)


class RayChannel(Channel):
    """The supervisor's end of a job's channel on the cluster (see the module's docstring): controls sent before the
    actor runs wait here, numbered, and follow once it does."""

    def __init__(self, handle: RayWorkerHandle):
        self.handle = handle
        self.actor: Any = None
        self.lease = ""
        self.buffer: collections.deque = collections.deque()
        self.outbox: list[tuple[int, bytes]] = []
        self.pending: Any = None  # the pull under way
        self.gone: str | None = None  # why the other end has gone (the worker returned, or the actor died)
        self.sent = 0
        self._sending = threading.Lock()

    def attach(self, actor: Any, lease: str) -> None:
        with self._sending:
            self.actor, self.lease = actor, lease
            for number, data in self.outbox:
                actor.push.remote(lease, number, data)
            self.outbox = []

    def send(self, message) -> None:
        if self.gone:
            raise WorkerGone(self.gone)
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with self._sending:
            if self.actor is None:
                self.outbox.append((self.sent, data))
            else:
                self.actor.push.remote(self.lease, self.sent, data)
            self.sent += 1

    def poll(self, timeout: float = 0.0) -> bool:
        if self.buffer or self.gone:
            return True
        if self.actor is None:
            self.handle.advance()
            if self.actor is None:
                time.sleep(min(max(0.0, timeout), 0.05))
                return bool(self.gone)
        ray = ray_module()
        if self.pending is None:
            self.pending = self.actor.pull.remote(self.lease, PULL_S)
        ready, _ = ray.wait([self.pending], timeout=max(0.0, timeout))
        if not ready:
            return False
        self.pending = None
        try:
            events, closed = pickle.loads(ray.get(ready[0]))
        except ray.exceptions.RayError as error:
            self.gone = f"the worker actor has gone ({str(error).splitlines()[0]})"
            return True
        self.buffer.extend(events)
        if closed:
            self.gone = "the worker has returned"
        return bool(self.buffer) or bool(self.gone)

    def recv(self):
        while not self.poll(1.0):
            pass
        if self.buffer:
            return self.buffer.popleft()
        raise WorkerGone(self.gone or "the worker has gone")

    def close(self) -> None:
        self.gone = self.gone or "closed"


def start_actor(
    payload_bytes: bytes, options: WorkerOptions, name: str, wanted: dict[str, int]
) -> tuple[RayWorkerHandle, Channel]:
    """A worker on the cluster for ``payload_bytes`` (a pickled list of payloads) with the resources ``wanted``
    (:func:`ray_resources`), and the supervisor's end of its channel. Returns at once: the job starts when the
    cluster has reserved its resources (until then it sends nothing, and its ``pid`` is None), in a warm actor of
    :func:`warm_pool` when one is on that node (a CPU job), else in a fresh actor."""
    pool = warm_pool()
    handle = RayWorkerHandle(payload_bytes, options, wanted, pool if pool.size else None)
    log.info("reserving %s on the Ray cluster for %s", wanted, name)
    return handle, handle.channel
