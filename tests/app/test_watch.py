"""ui.watch: the refresh interval keeps all watching tabs within the server-time budget (no browser needed)."""

import doctest

from ui import watch


def test_doctests():
    assert doctest.testmod(watch).failed == 0


def test_more_watchers_refresh_less_often_and_the_total_stays_in_budget():
    watch.reset()
    try:
        now = 1000.0
        for tab in range(20):  # 20 tabs, each refresh of each costing 60 ms over its two live sections
            for section in ("chart", "progress"):
                watch.record(f"tab{tab}", section, 0.03, now=now)
        tabs, cost = watch.load(now=now)
        assert tabs == 20 and abs(cost - 0.06) < 1e-9
        interval = watch.interval(tabs, cost)
        assert interval > watch.FASTEST
        assert tabs * cost / interval <= watch.BUDGET + 1e-9  # server seconds per second, all tabs together
        # one tab alone refreshes as fast as allowed; old timings are forgotten after the window
        assert watch.load(now=now + watch.WINDOW + 1) == (0, 0.0)
        assert watch.interval(1, 0.06) == watch.FASTEST
    finally:
        watch.reset()
