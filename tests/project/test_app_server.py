"""tests/support/app_server.py is the one way tests, benchmarks and scripts start the app."""

import pytest

from tests.support.app_server import AppDidNotStart, command, start_app
from tests.support.paths import ROOT

# benchmarks start the app through benchmarks/_app.py, which uses tests.support.app_server
NOT_YET_CONVERTED: set[str] = set()
#: files that only read the command line run.py builds (they start nothing)
READ_THE_COMMAND = {"tests/project/test_run_py.py"}
#: the one helper that starts ``python run.py app`` itself, as a teacher types it (tests/app/test_first_visit.py and
#: benchmarks/first_visit.py use it): what they look at is run.py's own start (its warm-up before the ready line, issue
#: 71), which tests.support.app_server's command does not do
START_RUN_PY = {"tests/support/run_py_app.py"}


def test_nothing_else_starts_streamlit_by_hand():
    starters = sorted(
        str(path.relative_to(ROOT))
        for folder in ("tests", "benchmarks", "scripts")
        for path in (ROOT / folder).rglob("*.py")
        if path.name not in ("app_server.py", "test_app_server.py")
        and "--server.port" in path.read_text(encoding="utf-8")
    )
    assert set(starters) <= NOT_YET_CONVERTED | READ_THE_COMMAND | START_RUN_PY, starters


def test_the_command_is_headless_on_this_machine_only():
    line = command("app.py", 8660)
    assert line[1:4] == ["-m", "streamlit", "run"] and line[4] == "app.py"
    options = dict(zip(line[5::2], line[6::2]))
    assert options == {
        "--server.address": "127.0.0.1",
        "--server.port": "8660",
        "--server.headless": "true",
        "--server.fileWatcherType": "none",
    }


def test_a_server_that_exits_is_reported_with_its_log(tmp_path):
    with pytest.raises(AppDidNotStart, match="exited") as failure:
        start_app("no_such_script.py", log=tmp_path / "server.log", timeout_s=60)
    assert "no_such_script.py" in str(failure.value) and "does not exist" in str(failure.value).lower()
