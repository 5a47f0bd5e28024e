"""The order tests/conftest.py gives pytest-xdist's workers: every worker starts with its share of the browser tests."""

import types

from tests.support.ordering import deal_browser_tests


class Item:
    def __init__(self, module: str, browser: bool):
        self.module = types.SimpleNamespace(__name__=f"tests.{module}")
        self.browser = browser

    def get_closest_marker(self, name):
        return name == "browser" and self.browser or None


def order(items, workers: int):
    deal_browser_tests(items, workers)
    return items


def test_each_worker_slice_starts_with_its_browser_tests_longest_first():
    browser = [Item("browser.test_classroom", True), Item("browser.test_lab", True), Item("browser.test_pages", True)]
    rest = [Item("unit.models.test_gpt", False) for _ in range(7)]
    ordered = order(rest[:3] + browser + rest[3:], workers=2)
    first, second = ordered[:5], ordered[5:]  # worksteal's first slices: 5 and 5 of 10
    assert [i.module.__name__ for i in first[:2]] == ["tests.browser.test_lab", "tests.browser.test_classroom"]
    assert second[0].module.__name__ == "tests.browser.test_pages"
    assert sorted(map(id, ordered)) == sorted(map(id, rest + browser))


def test_only_browser_tests_selected():
    """`pytest tests/browser/test_pages.py` with -n: no other test to fill the slices (this used to crash xdist)."""
    browser = [Item("browser.test_pages", True) for _ in range(5)]
    assert sorted(map(id, order(list(browser), workers=2))) == sorted(map(id, browser))
    assert sorted(map(id, order(list(browser), workers=3))) == sorted(map(id, browser))
