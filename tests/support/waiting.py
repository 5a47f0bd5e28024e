"""Waiting on a state, never on a sleep."""

import time


def wait_for(predicate, timeout=120.0):
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds (a bound only a hang reaches:
    on a loaded 2-core machine a worker process takes many seconds to start its first step)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    raise AssertionError("condition not reached in time")
