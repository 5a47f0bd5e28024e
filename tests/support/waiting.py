"""Waiting on a state, never on a sleep."""

import time


def wait_for(predicate, timeout=30.0):
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    raise AssertionError("condition not reached in time")
