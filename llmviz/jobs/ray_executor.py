"""Workers on a Ray cluster: the same worker loop (:func:`~llmviz.jobs.worker.worker_main`) in a Ray actor, for a
lecture hall that trains on more machines than the one serving its pages.

With ``LLMVIZ_RAY_ADDRESS`` set (``host:port`` of a Ray head), :func:`llmviz.jobs.manager.default_manager` makes a
``JobManager(workers="ray")``: every group's worker (a run, a race, a task) is then one actor of the cluster, started
with the resources its job needs (``num_cpus``: its torch threads; ``memory``: the job's footprint estimate,
:mod:`llmviz.training.footprint`; ``num_gpus=1`` for a run on the GPU), so Ray places it on a node that has them
and no node is promised more than it has. Everything else is the supervisor's (:mod:`llmviz.jobs.supervisor`), the
same as for a local worker process:

- :class:`RayChannel` is the supervisor's end of the worker's :class:`~llmviz.jobs.worker.Channel`: controls go to
  the actor's ``push`` (numbered, so they are obeyed in the order sent), events come back in batches from a
  long-polling ``pull``; the worker's heartbeats travel the same way, so a worker that stops answering is killed
  after ``worker_timeout`` as a local one is;
- :class:`RayWorkerHandle` stands where a ``multiprocessing.Process`` stands (``is_alive``, ``exitcode``, ``kill``,
  ``join``, ``pid``): an actor that dies (its node went away, it was killed, it ran out of memory) fails its runs
  with their snapshots kept, and the others go on;
- a parked run's actor exits; Resume starts a new actor from the parked state, wherever Ray finds room.

:func:`resource_refusal` refuses, before anything is sent, a job the cluster could never place (a GPU run on a
cluster with no GPU, more memory than its largest node has), with the reason.

>>> ray_resources(cpus=2, memory_bytes=300 * 2**20, gpu=False)
{'num_cpus': 2, 'memory': 314572800}
>>> ray_resources(cpus=0, memory_bytes=0, gpu=True)
{'num_cpus': 1, 'num_gpus': 1}
"""

from __future__ import annotations

import collections
import logging
import os
import pickle
import threading
from typing import Any

from llmviz.errors import LlmvizError, log_failure
from llmviz.jobs.worker import (
    Channel,
    WorkerGone,
    WorkerOptions,
    claim_process,
    send_start_failure,
    serve,
    thread_channel_pair,
)

log = logging.getLogger(__name__)

PULL_S = 0.5  # one pull waits at most this long in the actor for an event
ACTOR_CONCURRENCY = 4  # run (the whole life), pull, push and pid may be served at once
_connect_lock = threading.Lock()


class RayUnavailable(LlmvizError):
    """The Ray cluster named by ``LLMVIZ_RAY_ADDRESS`` cannot be used (ray missing, or the head unreachable)."""


def ray_module() -> Any:
    """The ``ray`` package (an optional extra: ``pip install -r requirements-hall.txt``)."""
    try:
        import ray
    except ImportError as error:
        raise RayUnavailable(
            "LLMVIZ_RAY_ADDRESS is set but Ray is not installed: pip install -r requirements-hall.txt"
        ) from error
    return ray


def connect(address: str) -> Any:
    """Join the Ray cluster at ``address`` once per process (a driver that logs only warnings); the ``ray`` module."""
    ray = ray_module()
    with _connect_lock:
        if not ray.is_initialized():
            try:
                ray.init(address=address, logging_level=logging.WARNING, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise RayUnavailable(f"The Ray cluster at {address} cannot be reached: {error}") from error
    return ray


# ---------------------------------------------------------------------------- what a worker asks of the cluster


def ray_resources(cpus: int, memory_bytes: int, gpu: bool) -> dict[str, int]:
    """The resources one worker actor asks for: its torch threads as CPUs (at least 1), its estimated peak memory
    (when known) and one GPU for a run on the GPU."""
    wanted: dict[str, int] = {"num_cpus": max(1, int(cpus))}
    if memory_bytes > 0:
        wanted["memory"] = int(memory_bytes)
    if gpu:
        wanted["num_gpus"] = 1
    return wanted


def refusal_for(wanted: dict[str, int], nodes: list[dict[str, float]], address: str) -> str | None:
    """Why no node of the cluster (each node's total resources, as ``ray.nodes()`` gives them) can ever run a worker
    that wants ``wanted``; None when one can.

    >>> refusal_for({"num_cpus": 1, "num_gpus": 1}, [{"CPU": 2.0, "memory": 4e9}], "127.0.0.1:6390")
    'This run asks for a GPU, but the Ray cluster at 127.0.0.1:6390 has none (2 CPUs on 1 node): train it on the CPU.'
    >>> refusal_for({"num_cpus": 1, "memory": 8 * 2**30}, [{"CPU": 2.0, "memory": 4 * 2**30}], "head")[:60]
    'This job needs 8.0 GiB of memory, but the largest node of th'
    >>> refusal_for({"num_cpus": 1}, [{"CPU": 2.0, "memory": 4e9}], "head") is None
    True
    """
    cpus = sum(node.get("CPU", 0.0) for node in nodes)
    where = f"the Ray cluster at {address}"
    if wanted.get("num_gpus") and not any(node.get("GPU", 0.0) >= wanted["num_gpus"] for node in nodes):
        return (
            f"This run asks for a GPU, but {where} has none ({cpus:g} CPUs on {len(nodes)} node"
            f"{'s' if len(nodes) != 1 else ''}): train it on the CPU."
        )
    largest = max((node.get("memory", 0.0) for node in nodes), default=0.0)
    memory = wanted.get("memory", 0)
    if memory and memory > largest:
        return (
            f"This job needs {memory / 2**30:.1f} GiB of memory, but the largest node of {where} offers "
            f"{largest / 2**30:.1f} GiB: choose a smaller model, batch or context."
        )
    if not any(node.get("CPU", 0.0) >= wanted["num_cpus"] for node in nodes):
        return f"This job asks for {wanted['num_cpus']} CPUs, but no node of {where} has that many."
    return None


def resource_refusal(wanted: dict[str, int], address: str) -> str | None:
    """:func:`refusal_for` on the nodes of the connected cluster that are alive now."""
    ray = ray_module()
    nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
    return refusal_for(wanted, nodes, address)


# ---------------------------------------------------------------------------- the actor (in the cluster)


class RayWorker:
    """One worker in a Ray actor: :meth:`run` runs the worker loop for the actor's whole life, on one end of a
    thread channel; :meth:`push` and :meth:`pull` are the other end, for the supervisor (a threaded actor serves them
    while :meth:`run` trains)."""

    def __init__(self) -> None:
        self.ours, self.theirs = thread_channel_pair()
        self.order = threading.Lock()
        self.next_push = 0
        self.early: dict[int, bytes] = {}  # controls that arrived before an earlier one (a threaded actor reorders)

    def pid(self) -> int:
        return os.getpid()

    def run(self, payload_bytes: bytes, options: WorkerOptions) -> int:
        """The worker's whole life, as in a worker process (:func:`llmviz.jobs.worker.process_entry`)."""
        claim_process(options)
        try:
            payloads = pickle.loads(payload_bytes)
        except Exception as error:  # noqa: BLE001 - cannot even start: say so once for every runner
            log_failure("a Ray worker's start", error)
            send_start_failure(self.theirs, error)
            self.theirs.close()
            return 1
        del payload_bytes
        serve(self.theirs, payloads, options)
        return 0

    def push(self, number: int, control: bytes) -> None:
        """A control from the supervisor, passed on in the order they were sent (``number`` counts from 0)."""
        with self.order:
            self.early[number] = control
            while self.next_push in self.early:
                self.ours.send(pickle.loads(self.early.pop(self.next_push)))
                self.next_push += 1

    def pull(self, timeout: float) -> bytes:
        """The events the worker has sent (waiting up to ``timeout`` for the first), pickled, and whether its end of
        the channel has closed (the worker has returned)."""
        events: list = []
        closed = False
        if self.ours.poll(timeout):
            while self.ours.poll(0):
                try:
                    events.append(self.ours.recv())
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


# ---------------------------------------------------------------------------- the supervisor's side


class RayWorkerHandle:
    """A worker actor, seen as a ``multiprocessing.Process`` is by the supervisor."""

    def __init__(self, actor: Any, run_ref: Any, pid_ref: Any, channel: RayChannel):
        self.actor = actor
        self.run_ref = run_ref
        self.pid_ref = pid_ref
        self.channel = channel
        self._pid: int | None = None
        self._outcome: tuple[int | None] | None = None  # (exit code,) once the actor's run has ended

    @property
    def pid(self) -> int | None:
        """The actor's process id (on its node) once it has started; None before."""
        if self._pid is None:
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
        """The actor is still being placed or started (its worker cannot have said anything yet)."""
        return self.pid is None and not self._ended()

    def _ended(self, timeout: float | None = 0.0) -> bool:
        if self._outcome is None:
            ray = ray_module()
            ready, _ = ray.wait([self.run_ref], timeout=timeout)
            if not ready:
                return False
            try:
                self._outcome = (int(ray.get(ready[0])),)
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
        """Wait for the worker loop to return (at most ``timeout`` s), then end the actor: its resources go back."""
        if self._ended(timeout):
            self.kill()

    def kill(self) -> None:
        ray = ray_module()
        try:
            ray.kill(self.actor, no_restart=True)
        except (ValueError, ray.exceptions.RayError):
            pass  # gone already
        self.channel.gone = self.channel.gone or "the worker actor was ended"


class RayChannel(Channel):
    """The supervisor's end of a worker actor's channel (see the module's docstring)."""

    def __init__(self, actor: Any):
        self.actor = actor
        self.buffer: collections.deque = collections.deque()
        self.pending: Any = None  # the pull under way
        self.gone: str | None = None  # why the other end has gone (the worker returned, or the actor died)
        self.sent = 0
        self._sending = threading.Lock()

    def send(self, message) -> None:
        if self.gone:
            raise WorkerGone(self.gone)
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with self._sending:
            self.actor.push.remote(self.sent, data)
            self.sent += 1

    def poll(self, timeout: float = 0.0) -> bool:
        if self.buffer or self.gone:
            return True
        ray = ray_module()
        if self.pending is None:
            self.pending = self.actor.pull.remote(PULL_S)
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
    """A worker actor running ``payload_bytes`` (a pickled list of payloads) with the resources ``wanted``
    (:func:`ray_resources`), and the supervisor's end of its channel. Returns at once: the actor starts when the
    cluster has room (until then it sends nothing, and its ``pid`` is None)."""
    actor = (
        remote_worker_class().options(name=None, max_concurrency=ACTOR_CONCURRENCY, max_restarts=0, **wanted).remote()
    )
    channel = RayChannel(actor)
    run_ref = actor.run.remote(payload_bytes, options)
    handle = RayWorkerHandle(actor, run_ref, actor.pid.remote(), channel)
    log.info("started Ray worker %s with %s", name, wanted)
    return handle, channel
