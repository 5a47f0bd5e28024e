"""The fast lane (``-m unit``) holds no test that starts a process: the watch in tests/support/processes.py sees
every process a test starts, and the fixtures of real servers mark their tests."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys

from tests.support import processes


def test_the_watch_sees_a_subprocess_and_a_multiprocessing_process():
    before = len(processes._started)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    child = multiprocessing.get_context("spawn").Process(target=print, args=("",))
    child.start()
    child.join()
    seen = processes._started[before:]
    assert len(seen) == 2 and "multiprocessing" in seen[1], seen


def test_a_test_on_a_real_server_is_out_of_the_fast_lane_and_marked_services():
    class Item:
        fixturenames = ["postgres_url"]
        callspec = None
        markers: list = []

        def add_marker(self, marker):
            self.markers.append(marker.name)

    item = Item()
    processes.mark_service_tests(item)
    assert item.markers == ["processes", "services"]
