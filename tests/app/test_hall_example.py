"""examples/hall/start.sh starts the whole lecture hall on loopback as docs/classroom.md says (a PostgreSQL server, a
Ray head, two app processes, Caddy in front): both app processes answer through Caddy, the database and the Ray head
answer, and a SIGTERM stops every part it started. Needs Debian's postgresql, caddy and the hall's extras (skipped
without them, except in CI); starts two app servers, so it runs with ``-m extended``."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from http.cookies import SimpleCookie

import pytest

from tests.support.app_server import free_port
from tests.support.paths import ROOT
from tests.support.postgres import postgres_bin
from tests.support.ray_cluster import ray_installed

pytestmark = [pytest.mark.slow, pytest.mark.extended]


def answering(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def backend_cookie(url: str) -> str:
    """The sticky cookie Caddy sets for a fresh browser: it names the app process that answered."""
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200 and answer.read().strip() == b"ok"
        return SimpleCookie(answer.headers["Set-Cookie"])["llmviz_backend"].value


@pytest.fixture
def hall():
    missing = [
        name
        for name, ok in [("caddy", shutil.which("caddy")), ("postgresql", postgres_bin()), ("ray", ray_installed())]
        if not ok
    ]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the hall's example: install {', '.join(missing)}")
        pytest.skip(f"not installed: {', '.join(missing)}")
    folder = tempfile.mkdtemp(prefix="llmviz-hall-", dir="/tmp")  # one the postgres user may enter (pytest's: not)
    ports = {name: free_port() for name in ("listen", "app1", "app2", "pg", "ray")}
    env = {
        **os.environ,
        "HALL_DIR": str(folder),
        "HALL_LISTEN": f"127.0.0.1:{ports['listen']}",
        "HALL_APP_PORTS": f"{ports['app1']} {ports['app2']}",
        "HALL_PG_PORT": str(ports["pg"]),
        "HALL_RAY_PORT": str(ports["ray"]),
        "HALL_RAY_CPUS": "1",
        "PYTHON": sys.executable,
    }
    script = subprocess.Popen(
        [str(ROOT / "examples/hall/start.sh")], env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    line = script.stdout.readline()  # the script says so once every part answers
    try:
        assert line.startswith("The hall answers on"), f"start.sh: {line!r} (logs: {folder}/logs)"
        yield script, ports
    finally:
        if script.poll() is None:
            script.send_signal(signal.SIGTERM)
            script.wait(120)
        shutil.rmtree(folder, ignore_errors=True)


def test_the_hall_starts_answers_through_caddy_from_both_app_processes_and_stops(hall):
    script, ports = hall
    url = f"http://127.0.0.1:{ports['listen']}/_stcore/health"
    seen = set()
    deadline = time.monotonic() + 60
    while len(seen) < 2 and time.monotonic() < deadline:  # each fresh browser goes to either process
        seen.add(backend_cookie(url))
    assert len(seen) == 2, "Caddy sent every fresh browser to the same app process"
    assert answering(ports["pg"]) and answering(ports["ray"])
    script.send_signal(signal.SIGTERM)
    assert script.wait(120) == 0
    for name, port in ports.items():
        assert not answering(port), f"{name} still answers on {port} after the hall stopped"
