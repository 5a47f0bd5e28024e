"""A real full disk for the lab's tests: a 3 MB tmpfs mounted in the test's folder (root only; the test skips where it
cannot mount one), and :func:`fill` to fill it as another program would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a 3 MB tmpfs of its own, unmounted after the test."""
    folder = tmp_path / "small"
    folder.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(folder)], check=True, capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to its last byte with one file (another program's), whose path is returned: remove it to free
    the space again."""
    filler = disk / "filler"
    handle = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for chunk in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(handle, b"\0" * chunk)
            except OSError:
                pass
    finally:
        os.close(handle)
    return filler
