"""Pick the compute device (CUDA, MPS or CPU) and seed every random generator."""

from __future__ import annotations

import random
import secrets

import numpy as np
import torch


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
    """The device to run on: ``override`` when it is available, else the best one.

    ``override`` may be ``None`` or ``"auto"`` (pick automatically).
    """
    devices = available_devices()
    if override in (None, "", "auto"):
        return devices[0]
    if override not in devices:
        return devices[0]
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
