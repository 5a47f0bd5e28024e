"""The class that follows the teacher, measured at the server (issue 69 §2 and §6): ``benchmarks/class_load.py
--scenario follow``.

Every student is a browser of its own (``_class_client.ClassTab``: an identity cookie, its page's live box refreshed
every second as the browser's timer does, ``Student.live``); the teacher is another, given the teacher key once.
Rounds alternate two classes on the same server, ``follows nobody`` (the teacher's Lead off) and ``follows the
teacher`` (Lead on), so that a drift of the machine falls on both alike. In each round:

- **open** and **toggle**: the N students open the Tokens page at once, then each flips "Show the ids under the
  tokens" at once (the class benchmark's open and toggle, with the class's live box on every page);
- **follow** (Lead on only): the teacher changes the view ``moves`` times (a new text in the Tokens page's link, a
  page run of the teacher's, whose live box moves the lead); for each student, the time from the teacher's change
  sent to the script that moves their page drawn (``lead seen``), and to their page drawn at the teacher's view
  (``page shown``: the browser's navigation, a new page run, as ``location.replace`` makes it). The issue's budget:
  the teacher's view on every follower's page within 2 s p95 (80 students, two processes behind Caddy);
- **answers**: the teacher asks the class the Tokens page's token-count question; every student answers at once
  (their choice sent from their live box); the time of each answer (its section's run), and the time from the
  first answer sent to the teacher's chart saying that all N answered (its own section refreshes every second).

>>> summary([0.5, 1.0, 2.0])
(1.0, 1.9, 2.0)
"""

from __future__ import annotations

import asyncio
import secrets
import time

from _app import quantile
from _class_client import ClassTab

TOGGLE = "show_ids"  # the Tokens page's "Show the ids under the tokens" (bound to the link: share.bind)
FOLLOW_BUDGET_S = 2.0  # issue 69 §2: within 2 s p95 of the teacher's change


def summary(values: list[float]) -> tuple[float, float, float]:
    """p50, p95 and max (NaN each when empty)."""
    if not values:
        return float("nan"), float("nan"), float("nan")
    return quantile(values, 0.5), quantile(values, 0.95), max(values)


class Follow:
    """One run of the scenario: the server's address, the teacher key, the class's size, its timeouts."""

    def __init__(self, url: str, teacher_key: str, students: int, timeout_s: float, enrol) -> None:
        self.url, self.key, self.count, self.timeout_s = url, teacher_key, students, timeout_s
        self.enrol = enrol  # class_load.enrol's cookies: (url, path, count) → the students' cookie headers
        self.rows: list[tuple[str, str, list[float], list[str]]] = []  # (class, what, seconds, errors)

    async def tabs(self, count: int) -> list[ClassTab]:
        students, _ = await self.enrol(self.url, "tokens", count)
        return [ClassTab(self.url, s.headers.get("Cookie", ""), timeout_s=self.timeout_s) for s in students]

    def row(self, kind: str, what: str, seconds: list[float], errors: list[str]) -> None:
        self.rows.append((kind, what, seconds, errors))
        p50, p95, top = summary(seconds)
        print(f"  {kind}, {what}: p50 {p50:.2f}, p95 {p95:.2f}, max {top:.2f}, {len(errors)} errors", flush=True)
        for error in sorted(set(errors))[:3]:  # what went wrong, in a line each (the table counts them)
            print(f"    {error}", flush=True)

    async def teacher(self) -> ClassTab:
        [tab] = await self.tabs(1)
        opened = await tab.open("tokens", f"teacher={self.key}")
        if opened.errors or not any(w.id.endswith("-live_lead") for w in tab.widgets.values()):
            raise RuntimeError(f"the teacher's Tokens page has no Lead switch: {opened.errors[:1]}")
        return tab

    async def round(self, teacher: ClassTab, leads: bool, moves: int) -> None:
        kind = "follows the teacher" if leads else "follows nobody"
        lead = teacher.widget("live_lead")
        if bool(teacher.values.get(lead.id)) != leads:
            await teacher.choose("live_lead", leads)
        tabs = await self.tabs(self.count)
        opened = await asyncio.gather(*(tab.open("tokens") for tab in tabs), return_exceptions=True)
        self.row(kind, "open", *_times(opened))
        await self.settle(tabs)  # a student whose first page was not the teacher's view goes there first
        flipped = await asyncio.gather(
            *(tab.choose(TOGGLE, not tab.values[tab.widget(TOGGLE).id]) for tab in tabs), return_exceptions=True
        )
        self.row(kind, "toggle", *_times(flipped))
        lives = {tab: asyncio.ensure_future(tab.live()) for tab in tabs}  # every page's live box refreshing
        try:
            if leads:
                await self.moves(teacher, tabs, lives, moves)
            await self.answers(teacher, tabs, lives)
        finally:
            await stop(lives.values())
            await asyncio.gather(*(tab.close() for tab in tabs), return_exceptions=True)

    async def settle(self, tabs: list[ClassTab]) -> None:
        for tab in tabs:
            if tab.leads:
                tab.leads.clear()
                await tab.follow()

    async def moves(self, teacher: ClassTab, tabs: list[ClassTab], lives: dict, moves: int) -> None:
        seen, shown, errors = [], [], []
        for move in range(moves):
            for tab in tabs:
                tab.leads.clear()
            text = f"Move {move + 1} {secrets.token_hex(3)}: the class follows."
            began = time.perf_counter()
            await teacher.open("tokens", f"text={text.replace(' ', '+')}")  # the teacher's page at a new view
            outcomes = await asyncio.gather(*(self.follower(tab, lives, began) for tab in tabs), return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    errors.append(f"{type(outcome).__name__}: {outcome}"[:200])
                else:
                    seen.append(outcome[0])
                    shown.append(outcome[1])
        self.row("follows the teacher", "lead seen", seen, errors)
        self.row("follows the teacher", "page shown", shown, errors)

    async def follower(self, tab: ClassTab, lives: dict, began: float) -> tuple[float, float]:
        """Wait for ``tab``'s live box to draw the move; then go there as the browser does. (seen, shown) seconds."""
        deadline = began + self.timeout_s
        while not tab.leads:
            if time.perf_counter() > deadline:
                raise TimeoutError(
                    f"no move drawn in {self.timeout_s:.0f} s ({tab.refreshes} refreshes of the page's live box)"
                )
            await asyncio.sleep(0.01)
        seen = tab.leads[-1][2] - began
        await stop([lives[tab]])  # one reader of the socket at a time
        run = await tab.follow()
        shown = time.perf_counter() - began
        if run.errors:
            raise RuntimeError(run.errors[0])
        lives[tab] = asyncio.ensure_future(tab.live())
        return seen, shown

    async def answers(self, teacher: ClassTab, tabs: list[ClassTab], lives: dict) -> None:
        kind = "follows nobody" if not teacher.values.get(teacher.widget("live_lead").id) else "follows the teacher"
        before = max((max(polls(tab), default=0) for tab in tabs), default=0)  # the poll on the screens before
        await teacher.press("quiz_ask_tokens")
        ask = next(b for b in teacher.buttons.values() if "-live_ask_token-count-" in b.id)
        await teacher.press_button(ask, either=True)
        deadline = time.perf_counter() + self.timeout_s
        while not all(max(polls(tab), default=0) > before for tab in tabs):
            if time.perf_counter() > deadline:
                missed = sum(max(polls(tab), default=0) <= before for tab in tabs)
                raise RuntimeError(f"the question reached {len(tabs) - missed} of {len(tabs)} pages")
            await asyncio.sleep(0.05)  # each student's live box draws the question within its second
        await stop(lives.values())
        chart = asyncio.ensure_future(teacher.live())  # the teacher's chart refreshes every second
        teacher.chart_titles.clear()
        began = time.perf_counter()
        sent = await asyncio.gather(*(self.answer(tab) for tab in tabs), return_exceptions=True)
        self.row(kind, "answer", *_times(sent))
        counted, errors = [], []
        while not any(t.endswith(f": {self.count} answered") for t in teacher.chart_titles):
            if time.perf_counter() - began > self.timeout_s:
                errors.append(
                    f"the chart never counted {self.count}: {teacher.chart_titles[-3:]} after {teacher.refreshes}"
                    f" refreshes of {len(teacher.auto_reruns)} sections; said {teacher.texts[-3:]}"
                )
                break
            await asyncio.sleep(0.01)
        else:
            counted.append(time.perf_counter() - began)
        await stop([chart])
        self.row(kind, "answers on the chart", counted, errors)
        await teacher.press("live_end")  # the poll off the class's screens (a new class would draw it, unasked)
        await teacher.open("tokens")  # the teacher's page again, its questions closed (the next round asks anew)

    async def answer(self, tab: ClassTab):
        widget = tab.widget(f"live_answer_{max(polls(tab))}")  # the newest poll's (an earlier one was drawn first)
        options = tab.radios.get("Your answer") or []
        if not options:
            raise RuntimeError("the question never reached this student's page")
        return await tab.set_value(widget, options[0], either=True)


def polls(tab: ClassTab) -> set[int]:
    """The ids of the polls whose answer a tab's page has drawn (its ``live_answer_<id>`` radios).

    >>> class Tab:
    ...     widgets = {"$$ID-1-live_answer_3": None, "$$ID-2-show_ids": None}
    >>> polls(Tab())
    {3}
    """
    return {int(key.rsplit("_", 1)[1]) for key in tab.widgets if "-live_answer_" in key}


async def stop(tasks) -> None:
    """Stop pages' live readers (:meth:`Student.live`) and wait until they have let go of their sockets."""
    tasks = list(tasks)
    while pending := [task for task in tasks if not task.done()]:
        for task in pending:  # again until it ends: Python 3.11's wait_for can swallow one cancel (gh-86296)
            task.cancel()
        await asyncio.wait(pending, timeout=0.5)


def _times(outcomes) -> tuple[list[float], list[str]]:
    seconds, errors = [], []
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            errors.append(f"{type(outcome).__name__}: {outcome}"[:200])
        else:
            seconds.append(outcome.seconds)
            errors += outcome.errors
    return seconds, errors
