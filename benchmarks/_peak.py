"""A process's peak resident memory since a moment of its choosing (Linux): what a benchmark's child process reports
as its side's peak. Writing 5 to /proc/self/clear_refs resets the peak (``VmHWM``) to the resident size now, so that
the imports' and the inputs' own peak is left out; elsewhere nothing is reset and the sizes read 0."""

from __future__ import annotations

from pathlib import Path


def status(field: str) -> int:
    """A size from /proc/self/status, in bytes (``VmRSS``: resident now; ``VmHWM``: the peak); 0 where there is
    none."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> int:
    """Reset this process's peak resident memory to its size now, and return that size (bytes)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return status("VmRSS")


def peak_since(before: int) -> int:
    """The peak resident memory above ``before`` (:func:`reset_peak`'s answer), in bytes."""
    return status("VmHWM") - before
