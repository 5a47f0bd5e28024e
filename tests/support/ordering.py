"""The order tests/conftest.py gives pytest-xdist's workers, and the lanes it marks."""

import itertools

# The browser tests, longest first (measured with --durations on a 2-core machine); modules not named here follow.
BROWSER_LONGEST_FIRST = (
    "tests.browser.test_lab",
    "tests.browser.test_stop_buttons",
    "tests.browser.test_pages",
    "tests.browser.test_gpt2",
    "tests.browser.test_inside",
    "tests.browser.test_uploads",
    "tests.browser.test_classroom",
)


def _browser_rank(item) -> int:
    module = item.module.__name__
    return BROWSER_LONGEST_FIRST.index(module) if module in BROWSER_LONGEST_FIRST else len(BROWSER_LONGEST_FIRST)


def worksteal_slices(count: int, workers: int) -> list[int]:
    """How many tests pytest-xdist's ``worksteal`` scheduler first sends each worker: contiguous slices of the
    collection, ``pending // workers_left`` each.

    >>> worksteal_slices(783, 2)
    [391, 392]
    >>> worksteal_slices(10, 3)
    [3, 3, 4]
    """
    sizes, left = [], count
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    return sizes


def deal_browser_tests(items: list, workers: int) -> None:
    """Share the browser tests out among the test processes (in place).

    ``--dist worksteal`` gives each worker a contiguous slice of the collection, and all browser tests sit next to
    each other (tests/browser/), so one worker got all of them and ran them back to back (~4 minutes) while
    the other ran out of work. Instead every slice starts with its share of the browser tests, dealt round-robin
    longest first; the rest keep their order (so module-scoped fixtures are still built once), and stealing evens
    out the end. Workers only read the order, so every worker must compute the same one: it depends on the
    collection and the worker count alone."""
    browser = sorted((item for item in items if item.get_closest_marker("browser")), key=_browser_rank)
    if workers < 2 or not browser:
        return
    chosen = set(map(id, browser))
    rest = iter([item for item in items if id(item) not in chosen])
    ordered = []
    for worker, size in enumerate(worksteal_slices(len(items), workers)):
        share = browser[worker::workers]
        ordered += share + list(itertools.islice(rest, max(0, size - len(share))))  # rest may run out first
    ordered += list(rest)
    assert len(ordered) == len(items)
    items[:] = ordered
