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


def seconds_per_step(read_step, steps: int = 3, timeout: float = 120.0) -> float:
    """How long a run takes per step on this machine now (a loaded 2-core machine is many times slower than a quiet
    one, and no fixed number fits both): the window of a negative check ("it does not move") is a multiple of it.
    ``read_step()``: the run's step as the test sees it."""
    first, start = read_step(), time.monotonic()
    wait_for(lambda: read_step() >= first + steps, timeout)
    return (time.monotonic() - start) / steps
