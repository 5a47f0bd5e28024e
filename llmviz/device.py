"""Pick the compute device (CUDA, MPS or CPU) and seed every random generator."""

from __future__ import annotations

import random
import secrets

import numpy as np
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
        raise ConfigError(f"The device {override!r} is not available here"
                          f"{' (no CUDA GPU, or a CPU-only build of torch)' if kind == 'cuda' else ''}. "
                          f"{on_this_machine}")
    if index and int(index) >= torch.cuda.device_count():
        raise ConfigError(f"There is no GPU {override!r}: this machine has {torch.cuda.device_count()} "
                          f"(cuda:0 to cuda:{torch.cuda.device_count() - 1}).")
    return override


def describe_device(device: str) -> str:
    """A one-line description for the home page, e.g. ``"CUDA (NVIDIA H100)"``."""
    if device == "cuda" and torch.cuda.is_available():
        return f"CUDA ({torch.cuda.get_device_name(0)})"
    if device == "mps":
        return "MPS (Apple GPU)"
    return f"CPU ({torch.get_num_threads()} threads)"


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's generators so a run repeats exactly on CPU."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def fresh_seed() -> int:
    """A seed drawn from the operating system's entropy: for runs that should not repeat.

    >>> 0 <= fresh_seed() < 2**31
    True
    """
    return secrets.randbits(31)
