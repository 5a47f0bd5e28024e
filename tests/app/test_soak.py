"""benchmarks/soak.py checks what it says: its student id is the app's, its checks catch a lost run, a ghost and a
curve with a gap (its doctests); with ``-m extended`` a short soak runs end to end (4 students, 2 minutes, two real
app processes, one killed and restarted, the database locked twice) and passes: nothing lost, no ghost, every curve
complete, no page error, and the lab rebuilt from the run folders alone holds every run (issue 56 §7)."""

from __future__ import annotations

import doctest
import importlib.util
import subprocess
import sys

import pytest

from tests.support.app_server import free_port
from tests.support.paths import ROOT


def _soak():
    spec = importlib.util.spec_from_file_location("soak_under_test", ROOT / "benchmarks" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are made
    spec.loader.exec_module(module)
    return module


def test_the_soaks_student_is_the_apps_student_and_its_checks_hold():
    from ui.identity import new_secret, student_from_secret

    soak = _soak()
    assert doctest.testmod(soak).failed == 0
    secret = new_secret()
    assert soak.student_of(secret) == student_from_secret(secret)


@pytest.mark.extended
@pytest.mark.slow
def test_a_short_soak_passes(tmp_path):
    port = free_port()  # and the next one (a rare clash: the soak's start says so)
    done = subprocess.run(
        [sys.executable, "benchmarks/soak.py", "--students", "4", "--minutes", "2", "--steps", "40",
         "--port", str(port), "--lock-s", "8", "--finish-s", "240", "--folder", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "checks: **PASS**" in done.stdout
