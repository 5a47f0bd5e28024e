"""README's test command is green without the hall's extras (issues 57, 72): every test that needs PostgreSQL or Ray
skips, with its reason, when the server or its Python driver is missing, through the one fixture that gives it
(tests/support/postgres.py, tests/support/ray_cluster.py), which marks it ``services``; CI (``.ci/run``) runs README's
whole test command once without the extras, then only the ``services`` tests with them."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT

CI_RUN = ROOT / ".ci" / "run"
WITHOUT = {"CI", "LLMVIZ_TEST_DATABASE_URL", "LLMVIZ_TEST_RAY_ADDRESS"}


def _commands() -> list[str]:
    """.ci/run's lines that are commands (comments and blank lines left out)."""
    lines = CI_RUN.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _index(commands: list[str], pattern: str) -> list[int]:
    return [i for i, line in enumerate(commands) if re.search(pattern, line)]


def test_ci_runs_readmes_whole_test_command_once_before_the_extras_then_the_services_tests_with_them():
    commands = _commands()
    whole = _index(commands, r"run\.py test\s*$")
    assert len(whole) == 1, f"README's whole test command must run exactly once: {[commands[i] for i in whole]}"
    assert commands[whole[0]] == "env -u CI -u LLMVIZ_TEST_DATABASE_URL -u LLMVIZ_TEST_RAY_ADDRESS python3 run.py test"
    extras = _index(commands, r"pip install .*requirements-hall\.txt")
    ci_set = _index(commands, r"^export CI=true$")
    services = _index(commands, r'^python3 run\.py test -m "services and not extended and not ci"$')
    lane = _index(commands, r"^python3 run\.py test -m ci$")
    assert len(extras) == len(ci_set) == len(services) == len(lane) == 1, (extras, ci_set, services, lane)
    assert whole[0] < extras[0] < ci_set[0] < services[0] < lane[0]
    assert not _index(commands, r"grep.*tests"), "tests are picked by their marker, never by a pattern over files"


def test_a_test_skipped_for_want_of_a_service_but_not_marked_services_fails(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = services: needs a service\n")
    (tmp_path / "test_example.py").write_text(
        "import pytest\n"
        "from tests.support.services import require\n\n"
        "def test_unmarked():\n"
        "    require('the X driver is not installed', 'X')\n\n"
        "@pytest.mark.services\n"
        "def test_marked():\n"
        "    require('the X driver is not installed', 'X')\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in WITHOUT} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.support.services", "-p", "no:cacheprovider", "-c",
         str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-rs", str(tmp_path / "test_example.py")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert "1 failed, 1 skipped" in done.stdout, done.stdout
    assert "test_unmarked skipped for want of a service (the X driver is not installed) but is not marked" in (
        done.stdout
    )
    assert re.search(r"^SKIPPED \[1\] \S+: the X driver is not installed$", done.stdout, re.M), done.stdout


def test_without_the_extras_the_postgresql_and_ray_tests_skip_with_the_reason_and_are_marked_services():
    """The two tests that ended README's command red (their own PostgreSQL server, issue 72) and the Ray backend's, in
    a pytest that cannot import psycopg or ray (whether or not this environment has them), with CI unset: all are
    picked by ``-m services`` and skipped with the reason; none fails."""
    files = ["tests/unit/lab/test_durability.py", "tests/app/test_lab_outage_pages.py"]
    files.append("tests/unit/jobs/test_ray_executor.py")
    script = (
        "import sys; sys.modules.update(psycopg=None, ray=None); import pytest; "
        f"sys.exit(pytest.main(['-n', '0', '-p', 'no:cacheprovider', '-m', 'services', '-rs', '-v', *{files!r}]))"
    )
    env = {key: value for key, value in os.environ.items() if key not in WITHOUT}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )
    assert done.returncode == 0 and re.search(r" \d+ skipped, \d+ deselected in ", done.stdout), done.stdout[-3000:]
    for name in ("test_durability.py::test_postgresql_stopped_mid_run", "test_lab_outage_pages.py::test_pages_go_on"):
        assert re.search(f"{re.escape(name)}\\S* SKIPPED", done.stdout), (name, done.stdout[-3000:])
    skipped = re.findall(r"^SKIPPED \[\d+\] (\S+?):\d+: (.*)$", done.stdout, re.M)
    assert {path for path, _ in skipped} == set(files), skipped
    assert {reason for _, reason in skipped} == {
        "the PostgreSQL driver is not installed (pip install -r requirements-hall.txt)",
        "Ray is not installed (pip install -r requirements-hall.txt)",
    }, skipped
