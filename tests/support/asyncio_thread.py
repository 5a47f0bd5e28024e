"""Running a coroutine from a test whose thread may already run an event loop (playwright's sync API keeps one
running in the test process once a browser test has used it, and ``asyncio.run`` refuses to start a second)."""

import asyncio
import threading


def run_coroutine(coroutine):
    """``asyncio.run(coroutine)`` in a thread of its own; its result, or its exception raised here."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread below
            outcome["error"] = error

    thread = threading.Thread(target=target, name="protocol-client")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
