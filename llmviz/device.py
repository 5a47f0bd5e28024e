"""Pick the compute device (CUDA, MPS or CPU); random seeds that never touch another session's randomness."""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import threading
from collections.abc import Iterator

import psutil
import torch

from llmviz.errors import ConfigError


def available_devices() -> list[str]:
    """Devices usable on this machine, best first; ``"cpu"`` is always last.

    >>> available_devices()[-1]
    'cpu'
    """
    devices = []
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    devices.append("cpu")
    return devices


def pick_device(override: str | None = None) -> str:
    """The device to run on: ``override``, or the best one for ``None``/``"auto"``.

    An unavailable or unknown device is an error that names the available ones: falling back to the CPU in
    silence turned a GPU-sized run into hours. ``"cuda:N"`` picks one GPU.

    >>> pick_device("cpu")
    'cpu'
    >>> pick_device("gpu")
    Traceback (most recent call last):
    ...
    llmviz.errors.ConfigError: Unknown device 'gpu': use auto, cpu, cuda or mps. On this machine: ...
    """
    devices = available_devices()
    if override in (None, "", "auto"):
        return devices[0]
    on_this_machine = f"On this machine: auto (= {devices[0]}), {', '.join(devices)}."
    kind, _, index = override.partition(":")
    if kind not in ("cpu", "cuda", "mps") or (index and (kind != "cuda" or not index.isdigit())):
        raise ConfigError(f"Unknown device {override!r}: use auto, cpu, cuda or mps. {on_this_machine}")
    if kind not in devices:
        raise ConfigError(
            f"The device {override!r} is not available here"
            f"{' (no CUDA GPU, or a CPU-only build of torch)' if kind == 'cuda' else ''}. "
            f"{on_this_machine}"
        )
    if index and int(index) >= torch.cuda.device_count():
        raise ConfigError(
            f"There is no GPU {override!r}: this machine has {torch.cuda.device_count()} "
            f"(cuda:0 to cuda:{torch.cuda.device_count() - 1})."
        )
    return override


def describe_device(device: str, threads: int | None = None) -> str:
    """A one-line description for the home page and the command line, e.g. ``"CUDA (NVIDIA H100)"``; ``"cuda:1"``
    names its own GPU (``"CUDA:1 (…)"``); on the CPU, its torch threads (``threads``, else
    :func:`torch.get_num_threads`), counted in words that agree with the number.

    >>> describe_device("cpu", threads=1)
    'CPU (1 thread)'
    >>> describe_device("cpu", threads=8)
    'CPU (8 threads)'
    """
    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index
        return f"{'CUDA' if index is None else f'CUDA:{index}'} ({torch.cuda.get_device_name(index or 0)})"
    if device == "mps":
        return "MPS (Apple GPU)"
    count = torch.get_num_threads() if threads is None else threads
    return f"CPU ({count} thread{'' if count == 1 else 's'})"


#: the largest random seed llmviz takes: torch's generators take 64 bits, and a run draws from seed, seed + 1, seed + 2
MAX_SEED = 2**63 - 1


def seed_problem(seed) -> str | None:
    """Why ``seed`` cannot seed a run (None: it can).

    >>> seed_problem(1337), seed_problem(2**70)
    (None, 'the seed must be a whole number from 0 to 9,223,372,036,854,775,807 (got 1180591620717411303424)')
    """
    if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= MAX_SEED:
        return None
    return f"the seed must be a whole number from 0 to {MAX_SEED:,} (got {seed!r})"


@functools.lru_cache(maxsize=1)
def machine_memory_bytes() -> int | None:
    """The memory this process may use: the machine's RAM (psutil), or less when a cgroup (a container) caps it;
    None when neither can be read. The one answer for every part of llmviz (the models' size checks and the job
    manager's memory budget, :func:`llmviz.jobs.default.default_memory_mb`)."""
    found = []
    try:
        found.append(int(psutil.virtual_memory().total))
    except (OSError, RuntimeError):  # the OS does not say: the page count, then the cgroup
        try:
            found.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, OSError, ValueError):
            pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as handle:
                text = handle.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # "max", or a huge number: no cap
            found.append(int(text))
    return min(found) if found else None


_GLOBAL_RNG_LOCK = threading.RLock()


@contextlib.contextmanager
def isolated_rng(seed: int) -> Iterator[None]:
    """Run a block that draws from torch's global CPU generator — the default initialisation in module
    constructors (``nn.Linear``, ``nn.Embedding``) has no ``generator=`` — as if it had just been seeded with
    ``seed``, and leave that generator as it was.

    One server process serves every session, so nothing in llmviz seeds the global generator for good: one
    student's rerun would reseed another's run. Here, under a process-wide lock, the state is saved, seeded and
    put back, so the block's draws depend only on ``seed`` and nobody else's stream moves. Everything drawn
    after construction (batches, dropout, sampling) uses ``torch.Generator`` objects owned by the run or view.

    >>> with isolated_rng(0):
    ...     a = torch.rand(2)
    >>> with isolated_rng(0):
    ...     b = torch.rand(2)
    >>> torch.equal(a, b)
    True
    """
    with _GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)  # the CPU generator only: torch.manual_seed would reseed CUDA's
        yield


def default_generator(device: torch.device) -> torch.Generator:
    """The generator PyTorch's own random kernels draw from on ``device`` (CPU or CUDA)."""
    if device.type == "cuda":
        return torch.cuda.default_generators[device.index if device.index is not None else torch.cuda.current_device()]
    return torch.default_generator


@contextlib.contextmanager
def playing(shared: torch.Generator, own: torch.Generator) -> Iterator[None]:
    """Inside the block, ``shared`` continues ``own``'s stream; afterwards ``own`` holds where the stream got to and
    ``shared`` is as it was. (A generator's state is a few bytes on CUDA, 5 KB on the CPU: copied, never waited for.)

    >>> own = torch.Generator().manual_seed(7)
    >>> with playing(torch.default_generator, own):
    ...     first = torch.rand(2)
    >>> torch.equal(first, torch.rand(2, generator=torch.Generator().manual_seed(7)))
    True
    >>> torch.equal(torch.rand(2, generator=own), torch.rand(4, generator=torch.Generator().manual_seed(7))[2:])
    True
    """
    saved = shared.get_state()
    shared.set_state(own.get_state())
    try:
        yield
    finally:
        own.set_state(shared.get_state())
        shared.set_state(saved)


def fresh_seed() -> int:
    """A seed drawn from the operating system's entropy: for runs that should not repeat.

    >>> 0 <= fresh_seed() < 2**31
    True
    """
    return secrets.randbits(31)
