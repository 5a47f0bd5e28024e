"""What llmviz.jobs.processes reads of the machine: a process's resident memory (through psutil)."""

import subprocess
import sys
from pathlib import Path

import pytest

from llmviz.jobs.processes import resident_bytes

pytestmark = pytest.mark.processes  # starts Python processes


def _vm_rss(pid: int | str) -> int:
    """The kernel's own line for a process's resident memory (``VmRSS`` in ``/proc/<pid>/status``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="the kernel's /proc is Linux's")
def test_resident_bytes_agrees_with_the_kernel():
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; b = bytearray(64 << 20); print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline() == "ready\n"  # the child holds its 64 MiB (zeroed, so touched)
        ours, kernel = resident_bytes(child.pid), _vm_rss(child.pid)
        assert abs(ours - kernel) <= 1 << 20  # the same page count, read a moment apart
        assert abs(resident_bytes() - _vm_rss("self")) <= 16 << 20  # this process, whose memory moves as it runs
    finally:
        child.communicate("")


def test_a_process_that_is_gone_has_no_resident_memory():
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert resident_bytes(int(child.stdout)) == 0  # its id is free again (reused ids aside)
