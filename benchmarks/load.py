"""A classroom on one server: many browser sessions at once, with and without training runs, against issue 26's budgets.

    python benchmarks/load.py [--sessions 20] [--toggles 2] [--phases a,b,c,d] [--from embeddings] [--budget 1500]
                              [--port 8530]

Starts ``streamlit run app.py`` on 127.0.0.1 (the app as a teacher runs it, plus ``LLMVIZ_TIMINGS`` so the
server's own time is known), then drives ONE headless chromium with one browser context per session (a
session = a student's tab; contexts share the browser's processes, so 20 of them fit on 2 cores), viewport
1280 × 800:

(a) one session alone opens Attention and flips its "Causal mask" toggle (after one cold open that loads the
    models, reported apart), and what one flip costs chromium in CPU seconds, drawing included;
(b) ``--sessions`` (20) sessions open ``--from`` (Embeddings, the stage before Attention; at once, untimed: the
    class is on the previous page), then all click Attention in the sidebar at the same moment (timed), then each
    flips the toggle ``--toggles`` times as soon as its own page has opened (the other tabs still drawing theirs);
    then, once every tab has finished drawing (its main thread idle), all flip the toggle at the same moment,
    ``--toggles`` times. Budget: open p95 ≤ 15 s, toggle p95 ≤ 3 s, 0 errors. Then the same number of fresh
    browser contexts open ``/attention`` at once by its address: each first loads and compiles Streamlit's and
    Plotly's JavaScript, which a classroom pays on the students' laptops, not the server. The reference row: as
    many fresh browsers open a bare Streamlit page (``_app.REFERENCE_PAGE``: import torch, one heatmap) served by
    a second server, at once: what any Streamlit app costs browsers that share the server's cores;
(c) 2 sessions press Train on the Training page (a long run: 2,000 steps, batch 64, context 128) and stay there
    watching it, 4 more sessions watch the Training page, then ``--fresh`` (3) new sessions open Attention one
    after the other from the sidebar (``--from`` open first), and as many by its address in a fresh browser; budget:
    each opens in ≤ 8 s;
(d) one session presses Train three times quickly: the third is refused with a message that says why
    ("each browser session trains …").

How it times (``benchmarks/_app.py``): every page records each change of the app's script state
(``data-test-script-state`` of ``[data-testid="stApp"]``) with the page's own clock, so a run that ends between
two polls is still seen and its end is known to the millisecond.

- time to open = from ``goto`` until the app is connected, its script run has ended (no run for 1 s after) and
  the page's main element (the toggle) is visible;
- toggle time = from the click until a new script run has been seen (bounded: 10 s) and has ended, and the
  toggle's visible effect (the note under the causal mask comes or goes) is on the page.

Errors: a wait that timed out, an error box or traceback on the page (the refusal in (d) excepted), counted on
the open row when the page never opened, else on the toggle row. p95 is
``statistics.quantiles(method="inclusive")``: never beyond the largest sample. Bounded: at most 30 sessions,
``--budget`` seconds in all (the table so far is printed if it runs out), 127.0.0.1 only; the server is
stopped at the end whatever happens. Run it on a quiet machine: other work on the CPU inflates every number.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _app  # noqa: E402

MAX_SESSIONS = 30
VIEWPORT = {"width": 1280, "height": 800}
START_PAGES = {  # where the class is before the teacher says "open Attention": path, sidebar label, main text
    "embeddings": ("embeddings", "Embeddings", "Embeddings: tokens become vectors"),  # the stage before it
    "tokens": ("tokens", "Tokens", "Tokens: from text to integers"),
    "home": ("", "Home", "llmviz — watch a language model work"),
}
MAIN_ATTENTION = "Causal mask"  # the Attention page's main element: the toy example's toggle
MASK_NOTE = "Under the causal mask"  # shown while the mask is on: the toggle's visible effect
NOTE_SHOWN = """(text) => [...document.querySelectorAll('[data-testid="stAlert"]')].some(
    (box) => box.textContent.includes(text))"""
NOTE_SHOWN_IS = """([text, shown]) => [...document.querySelectorAll('[data-testid="stAlert"]')].some(
    (box) => box.textContent.includes(text)) === shown"""
NOTE_FLIPPED = """([text, had]) => {
    const shown = [...document.querySelectorAll('[data-testid="stAlert"]')].some((box) =>
    box.textContent.includes(text));
    const app = document.querySelector('[data-testid="stApp"]');
    return shown !== had && app !== null && app.getAttribute('data-test-script-state') === 'notRunning';
}"""
TAB_DRAWN = """() => new Promise((resolve) => {
    // five idle periods of at least 40 ms in a row: nothing left to draw or lay out in this tab
    let quiet = 0;
    const check = (deadline) => {
        quiet = !deadline.didTimeout && deadline.timeRemaining() >= 40 ? quiet + 1 : 0;
        if (quiet >= 5) resolve(true); else requestIdleCallback(check, {timeout: 1000});
    };
    requestIdleCallback(check, {timeout: 1000});
})"""
TRAINING_MAIN = "1. Train a model"
RUN_STARTED = re.compile(r"running · step|waiting: number \d+ in the queue|waiting: it starts when")
REFUSED = "each browser session trains"


@dataclass
class Row:
    """One line of the table: a phase, what was timed, its samples, errors and budget."""

    phase: str
    what: str
    samples: list[float] = field(default_factory=list)
    errors: int = 0
    budget: str = ""
    check: object = None  # callable(row) -> bool, or None: no budget
    note: str = ""

    def cells(self) -> list[str]:
        s = sorted(self.samples)
        stats = (
            [_app.fmt_s(_app.quantile(s, 0.5)), _app.fmt_s(_app.quantile(s, 0.95)), _app.fmt_s(s[-1])]
            if s
            else ["-", "-", "-"]
        )
        met = "" if self.check is None else ("yes" if self.check(self) else "**no**")
        return [
            self.phase,
            self.what + (f" ({self.note})" if self.note else ""),
            str(len(s)),
            *stats,
            str(self.errors),
            self.budget or "-",
            met,
        ]


HEADER = ["phase", "what (seconds)", "n", "p50", "p95", "max", "errors", "budget", "met"]


def p95_within(limit: float, errors_too: bool = False):
    def check(row: Row) -> bool:
        return (
            bool(row.samples) and _app.quantile(sorted(row.samples), 0.95) <= limit and not (errors_too and row.errors)
        )

    return check


def each_within(limit: float):
    return lambda row: bool(row.samples) and max(row.samples) <= limit and not row.errors


class Session:
    """One student's browser session (a browser context and its tab), with the app's state log."""

    def __init__(self, browser, url: str, wait_s: float):
        self.browser, self.url, self.wait_s = browser, url, wait_s
        self.context = self.page = None
        self.log = _app.StateLog()
        self.ok = False  # opened Attention and flipped its toggle without an error

    async def open(self, path: str, main_text: str) -> float:
        """Open ``path`` in a new session; seconds until it is connected, its first run over, ``main_text`` shown."""
        self.context = await self.browser.new_context(viewport=VIEWPORT)
        await self.context.add_init_script(_app.INIT_SCRIPT)
        self.page = await self.context.new_page()
        self.page.set_default_timeout(self.wait_s * 1000)
        main = self.page.get_by_text(main_text).first
        start = time.monotonic()
        await self.page.goto(f"{self.url}/{path}", wait_until="commit", timeout=self.wait_s * 1000)

        async def shown(page) -> bool:
            return await main.is_visible()

        end = await _app.wait_settled_async(self.page, self.log, started=start, timeout_s=self.wait_s, ready=shown)
        return end - start

    async def navigate(self, label: str, main_text: str) -> float:
        """In a session already open (on Home), click ``label`` in the sidebar's page list; seconds until that
        page's script run has ended and ``main_text`` is shown. The browser keeps the JavaScript it has loaded
        (Streamlit's and Plotly's), as a student's tab does when they move from page to page."""
        main = self.page.get_by_text(main_text).first
        link = self.page.get_by_test_id("stSidebarNav").get_by_role("link", name=label, exact=True)

        async def shown(page) -> bool:
            return await main.is_visible()

        return await self.act(lambda: link.click(), ready=shown)

    async def settle(self, live: bool = False) -> None:
        """Wait (untimed) until the app has run what the last action asked for."""
        await _app.read_state_async(self.page, self.log)
        await _app.wait_settled_async(self.page, self.log, started=time.monotonic(), timeout_s=self.wait_s, live=live)

    async def act(self, action, ready=None, live: bool = False) -> float:
        """Do ``action()``; seconds until a new script run has ended (and ``ready(page)``)."""
        await _app.read_state_async(self.page, self.log)
        before = self.log.count
        start = time.monotonic()
        await action()
        # every action timed here starts a script run: wait for it however late it is seen (a page that settled
        # before the click is not its answer; with 20 tabs on 2 cores the run can show up after 10 s)
        end = await _app.wait_settled_async(
            self.page,
            self.log,
            started=start,
            after=before,
            timeout_s=self.wait_s,
            live=live,
            ready=ready,
            start_bound_s=self.wait_s,
        )
        return end - start

    async def toggle_mask(self) -> float:
        """Flip Attention's "Causal mask"; seconds from the click until the note under the mask has come or gone
        and the app is not running. The browser itself checks (every 100 ms, ``wait_for_function``): twenty
        sessions polling through one playwright connection would load the CPU they are measuring."""
        # the note's state before the click is the switch's (the note may not be drawn yet on a page still drawing)
        switch = self.page.get_by_role("switch", name=MAIN_ATTENTION)
        had_note = await switch.is_checked()
        await self.page.wait_for_function(
            NOTE_SHOWN_IS, arg=[MASK_NOTE, had_note], polling=100, timeout=self.wait_s * 1000
        )  # untimed: the page shows its current state
        start = time.monotonic()
        # a click event on the switch itself: a click at its position could land elsewhere while charts above it
        # are still being laid out (the page moves under the pointer)
        await switch.dispatch_event("click")
        try:
            await self.page.wait_for_function(
                NOTE_FLIPPED, arg=[MASK_NOTE, had_note], polling=100, timeout=self.wait_s * 1000
            )
        except Exception:  # noqa: BLE001 - playwright's timeout, said in our words
            raise _app.BenchmarkError(
                f"the causal-mask note did not {'go' if had_note else 'come'} within {self.wait_s:.0f} s of the click"
            ) from None
        return time.monotonic() - start

    async def drawn(self) -> None:
        """Wait (untimed) until the app is not running and this tab has drawn everything: its main thread idle."""
        await self.page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state') "
            "=== 'notRunning'",
            polling=200,
            timeout=self.wait_s * 1000,
        )
        await asyncio.wait_for(self.page.evaluate(TAB_DRAWN), timeout=self.wait_s)

    async def error_boxes(self, allowed: str | None = None) -> list[str]:
        boxes = self.page.locator(_app.ERROR_BOXES)
        texts = [await boxes.nth(i).inner_text() for i in range(await boxes.count())]
        return [text for text in texts if not (allowed and allowed in text)]

    async def slider_to_end(self, label: str) -> None:
        """Move the slider ``label`` to its largest value with the End key and wait for the run it starts. A key
        press that lands while the page is still drawing the slider is lost (no run at all: seen with six sessions
        opening the Training page at once), so a press that starts no run within 20 s is made again, up to three
        times; a late run of an earlier press counts as the answer."""
        slider = (
            self.page.locator("[data-testid='stSlider']")
            .filter(has=self.page.get_by_text(label, exact=True))
            .get_by_role("slider")
            .first
        )
        await _app.read_state_async(self.page, self.log)
        before = self.log.count
        for _ in range(3):
            await slider.focus()
            start = time.monotonic()
            await self.page.keyboard.press("End")
            await _app.wait_settled_async(
                self.page, self.log, started=start, after=before, timeout_s=self.wait_s, start_bound_s=20
            )
            if any(state != "notRunning" for state in self.log.changed_since(before)):
                return
        raise _app.BenchmarkError(f"the {label!r} slider did not move after three presses of End")

    async def close(self) -> None:
        if self.context is not None:
            await self.context.close()
            self.context = None


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"


class Benchmark:
    """The phases; every row is printed as soon as it is known (a run cut short by its budget still reports)."""

    def __init__(self, args, app: _app.App):
        self.args, self.app = args, app
        self.rows: list[Row] = []
        self.problems: list[str] = []
        self.shots = 0
        self.watching = ""

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        print("row: " + " | ".join(row.cells()), flush=True)
        return row

    def problem(self, text: str) -> None:
        self.problems.append(text)
        print("problem: " + text, flush=True)

    async def snap(self, session: Session, phase: str) -> str:
        """With ``--shots DIR``: a screenshot of a session that went wrong; returns " (screenshot: path)"."""
        if not self.args.shots or session.page is None:
            return ""
        self.shots += 1
        path = Path(self.args.shots) / f"load-{phase}-{self.shots}.png"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            await session.page.screenshot(path=str(path), timeout=30_000)
        except Exception:  # noqa: BLE001 - a screenshot is a bonus
            return ""
        return f" (screenshot: {path})"

    def session(self, browser) -> Session:
        return Session(browser, self.app.url, self.args.wait)

    def timing_lines(self) -> int:
        return len(self.app.timings.read_text().splitlines()) if self.app.timings.exists() else 0

    async def attention_visit(
        self,
        browser,
        toggles: int,
        opens: Row,
        flips: Row,
        keep: list | None = None,
        via: str = "url",
        ready: asyncio.Event | None = None,
        home: list | None = None,
    ):
        """A session opens Attention and flips the toggle; errors are counted, not raised.

        ``via="url"``: a fresh browser context goes to /attention (it loads all of Streamlit's and Plotly's
        JavaScript first). ``via="sidebar"``: the session opens Home (untimed; ``home`` collects its seconds), waits
        for ``ready`` (the whole class has the app open), then clicks Attention in the sidebar (timed)."""
        session = self.session(browser)
        doing = opens
        try:
            if via == "sidebar":
                path, _label, main_text = START_PAGES[self.args.start]
                seconds = await session.open(path, main_text)
                if home is not None:
                    home.append(seconds)
                if ready is not None:
                    await ready.wait()
                opens.samples.append(await session.navigate("Attention", MAIN_ATTENTION))
            else:
                opens.samples.append(await session.open("attention", MAIN_ATTENTION))
            doing = flips
            for _ in range(toggles):
                flips.samples.append(await session.toggle_mask())
                await asyncio.sleep(self.args.think)
            boxes = await session.error_boxes()
            if boxes:
                doing.errors += 1
                self.problem(f"{opens.phase}: error box on Attention: {boxes[0][:200]}")
            else:
                session.ok = True
        except Exception as error:  # noqa: BLE001 - a timeout is one error of the phase, not the end of it
            doing.errors += 1
            what = "opening Attention" if doing is opens else "toggling the mask"
            self.problem(f"{opens.phase}: {what}: {describe(error)}{await self.snap(session, opens.phase)}")
        finally:
            if keep is not None:
                keep.append(session)
            else:
                await session.close()

    async def phase_alone(self, browser) -> None:
        cold = Row("a", "first open after the server started (cold: loads the models)")
        await self.attention_visit(browser, 0, cold, Row("a", ""))
        self.add(cold)
        opens = Row("a", "1 session alone: open Attention")
        flips = Row("a", "1 session alone: toggle the causal mask")
        for _ in range(3):
            await self.attention_visit(browser, self.args.toggles, opens, flips)
        self.add(opens)
        self.add(flips)
        self.add(await self.browser_cpu_per_flip(browser))

    async def browser_cpu_per_flip(self, browser) -> Row:
        """What one flip costs the browser: a session opens Attention, waits until its tab has drawn everything,
        then flips the toggle 6 times, each time until the tab has drawn the change; a sample is the CPU seconds
        that all of chromium's processes spent on that flip (``SystemInfo.getProcessInfo``). Twenty tabs on the
        server's cores pay it twenty times: it is what the class rows of (b) are made of."""
        row = Row("a", "1 session alone: chromium's CPU per flip, drawing included (CPU seconds)")
        cdp = await browser.new_browser_cdp_session()

        async def cpu() -> float:
            return sum(process["cpuTime"] for process in (await cdp.send("SystemInfo.getProcessInfo"))["processInfo"])

        session = self.session(browser)
        try:
            await session.open("attention", MAIN_ATTENTION)
            await session.drawn()
            for _ in range(6):
                before = await cpu()
                await session.toggle_mask()
                await session.drawn()
                row.samples.append(await cpu() - before)
        except Exception as error:  # noqa: BLE001 - one error of the row, not the end of the benchmark
            row.errors += 1
            self.problem(f"a: browser CPU per flip: {describe(error)}")
        finally:
            await session.close()
            await cdp.detach()
        return row

    async def phase_class(self, browser) -> None:
        n = self.args.sessions
        start_label = START_PAGES[self.args.start][1]
        opens = Row(
            "b",
            f"{n} sessions open Attention at once from the sidebar (the class on {start_label})",
            budget="p95 ≤ 15 s, 0 errors",
            check=p95_within(15, errors_too=True),
        )
        flips = Row(
            "b",
            f"{n} sessions: toggle the causal mask",
            budget="p95 ≤ 3 s, 0 errors",
            check=p95_within(3, errors_too=True),
        )
        home: list[float] = []
        everyone_home = asyncio.Event()
        open_sessions: list[Session] = []

        async def class_ready() -> None:  # the teacher says "open Attention" once every tab shows Home
            while len(home) + opens.errors < n:
                await asyncio.sleep(0.2)
            await asyncio.sleep(2.0)
            everyone_home.set()

        on_page = Row(
            "b",
            f"{n} sessions on Attention, every tab done drawing: all flip the toggle at once",
            budget="p95 ≤ 3 s, 0 errors",
            check=p95_within(3, errors_too=True),
        )
        try:  # every tab stays open until the whole class is done, as in a classroom
            await asyncio.gather(
                class_ready(),
                *[
                    self.attention_visit(
                        browser,
                        self.args.toggles,
                        opens,
                        flips,
                        keep=open_sessions,
                        via="sidebar",
                        ready=everyone_home,
                        home=home,
                    )
                    for _ in range(n)
                ],
            )
            await self.flip_together([session for session in open_sessions if session.ok], on_page)
        finally:
            for session in open_sessions:
                await session.close()
        opens.note = (
            f"{start_label} opened first, at once too: p50 {_app.fmt_s(_app.quantile(sorted(home), 0.5))}"
            if home
            else ""
        )
        flips.note = "each as soon as its own page opened, while the other tabs still draw theirs"
        self.add(opens)
        self.add(flips)
        self.add(on_page)
        by_url = Row(
            "b",
            f"{n} sessions open /attention at once in fresh browsers (each loads Streamlit's and Plotly's JavaScript)",
            budget="p95 ≤ 15 s, 0 errors",
            check=p95_within(15, errors_too=True),
        )
        open_sessions = []
        try:
            await asyncio.gather(
                *[self.attention_visit(browser, 0, by_url, Row("b", ""), keep=open_sessions) for _ in range(n)]
            )
        finally:
            for session in open_sessions:
                await session.close()
        self.add(by_url)
        await self.fresh_reference(browser, n)

    async def flip_together(self, sessions: list[Session], row: Row) -> None:
        """The class is on Attention and every tab has drawn it; then all flip the causal mask at the same moment,
        ``--toggles`` times (waiting, untimed, for every tab to be drawn again between two rounds)."""
        for _ in range(self.args.toggles):
            try:
                await asyncio.gather(*[session.drawn() for session in sessions])
            except Exception as error:  # noqa: BLE001 - the class never settled: one error, no samples
                row.errors += 1
                self.problem(f"b: the tabs did not finish drawing Attention: {describe(error)}")
                return
            await asyncio.sleep(self.args.think)
            await self.all_at_once(
                row, [session.toggle_mask() for session in sessions], "b: toggling the mask with the class on the page"
            )

    async def all_at_once(self, row: Row, actions: list, what: str) -> None:
        """Run the sessions' ``actions`` at the same moment: each one's seconds is a sample of ``row``, each
        failure one error (said in the problems, as ``what``)."""
        for result in await asyncio.gather(*actions, return_exceptions=True):
            if isinstance(result, BaseException):
                row.errors += 1
                self.problem(f"{what}: {describe(result)}")
            else:
                row.samples.append(result)

    async def fresh_reference(self, browser, n: int) -> None:
        """The floor of the fresh-browser row: ``n`` fresh browsers open a bare Streamlit page (import torch, one
        heatmap; ``_app.REFERENCE_PAGE``) at once, served by a second server on this machine. No budget: what any
        Streamlit app costs 20 browsers that share two cores with it."""
        row = Row("b", f"reference: {n} fresh browsers open a bare Streamlit page at once (import torch + one heatmap)")
        work = Path(tempfile.mkdtemp(prefix="llmviz-load-reference-"))
        (work / "reference.py").write_text(_app.REFERENCE_PAGE)
        with _app.App(str(work / "reference.py"), _app.free_port(self.args.port + 10)) as reference:
            sessions = [Session(browser, reference.url, self.args.wait) for _ in range(n)]
            try:
                await self.all_at_once(
                    row, [session.open("", "Size") for session in sessions], "b: the bare reference page"
                )
            finally:
                for session in sessions:
                    await session.close()
        self.add(row)

    async def start_long_run(self, session: Session) -> str:
        """On the Training page: the longest run the sliders allow, then Train; the run's first status line."""
        for label in ("Steps", "Batch size", "Context (tokens)"):
            await session.slider_to_end(label)
        main = session.page.get_by_test_id("stMainBlockContainer")
        await main.get_by_role("button", name="Train", exact=True).click()
        status = main.get_by_text(RUN_STARTED).first
        await status.wait_for(timeout=self.args.wait * 1000)
        return await status.inner_text()

    async def phase_training(self, browser) -> None:
        trainer_open = Row("c", "Training page open (the 2 trainers, 4 watchers)")
        fresh = Row(
            "c",
            f"a new student opens Attention from the sidebar ({START_PAGES[self.args.start][1]} open) "
            "while 2 runs train and 6 tabs watch",
            budget="each ≤ 8 s",
            check=each_within(8),
        )
        fresh_url = Row("c", "… or opens /attention in a fresh browser", budget="each ≤ 8 s", check=each_within(8))
        fresh_flips = Row("c", "fresh session: toggle the causal mask")
        trainers = [self.session(browser) for _ in range(2)]
        watchers = [self.session(browser) for _ in range(4)]
        try:

            async def trainer(session: Session) -> str:
                trainer_open.samples.append(await session.open("training", TRAINING_MAIN))
                return await self.start_long_run(session)

            started = await asyncio.gather(*[trainer(s) for s in trainers], return_exceptions=True)
            for result in started:
                if isinstance(result, BaseException):
                    trainer_open.errors += 1
                    self.problem(f"c: a trainer could not start its run: {describe(result)}")
                elif "waiting" in result:
                    self.problem(
                        f"c: a run waits instead of training ({result[:120]}): the server trains fewer "
                        "than 2 runs at once (LLMVIZ_MAX_JOBS)"
                    )
            for session in watchers:
                try:
                    trainer_open.samples.append(await session.open("training", TRAINING_MAIN))
                except Exception as error:  # noqa: BLE001
                    trainer_open.errors += 1
                    self.problem(f"c: a watcher could not open Training: {describe(error)}")
            self.add(trainer_open)
            lines_before, window_start = self.timing_lines(), time.monotonic()
            for _ in range(self.args.fresh):
                await self.attention_visit(browser, 1, fresh, fresh_flips, via="sidebar")
            for _ in range(self.args.fresh):
                await self.attention_visit(browser, 0, fresh_url, Row("c", ""))
            window = time.monotonic() - window_start
            still = 0
            for session in trainers:
                if session.page is not None and await session.page.get_by_text(re.compile("running · step")).count():
                    still += 1
            fresh.note = f"{still} of 2 runs still training at the end"
            if still < 2:
                self.problem(f"c: only {still} of the 2 runs were still training when the fresh sessions were done")
            fresh_url.note = fresh.note
            self.add(fresh)
            self.add(fresh_url)
            self.add(fresh_flips)
            self.watching_cost(lines_before, window)
            for session in trainers + watchers:
                if session.page is not None:
                    for box in await session.error_boxes():
                        self.problem(f"c: error box on the Training page: {box[:200]}")
        finally:
            for session in trainers + watchers:
                await session.close()

    def watching_cost(self, first_line: int, window_s: float) -> None:
        """What the server spent on the watching tabs (live sections and page reruns that follow a run)."""
        if not self.app.timings.exists():
            return
        lines = [json.loads(line) for line in self.app.timings.read_text().splitlines()[first_line:] if line.strip()]
        live = [
            x for x in lines if x["rerun"] and (x["section"].startswith("training.") or x["section"] == "sidebar.jobs")
        ]
        pages = [x for x in lines if x["section"] == "page:training"]
        seconds = sum(x["seconds"] for x in live + pages)
        parts = {}
        for x in live + pages:
            count, total = parts.get(x["section"], (0, 0.0))
            parts[x["section"]] = (count + 1, total + x["seconds"])
        self.watching = (
            f"While (c)'s fresh sessions opened Attention ({window_s:.0f} s), the watching tabs cost "
            f"{seconds:.1f} s of server time ({seconds / max(window_s, 1e-9):.2f} s per second; wall "
            "time inside the script runs, so it includes waiting for the CPU): "
            + ", ".join(f"{name} ×{count} ({total:.1f} s)" for name, (count, total) in sorted(parts.items()))
        )
        print(self.watching, flush=True)

    async def phase_share(self, browser) -> None:
        row = Row(
            "d",
            "one session presses Train 3 times: the third is refused with a reason (seconds: the first two "
            "presses, until the page settled)",
            budget="refused, says why",
            check=lambda r: r.note.startswith("refused"),
        )
        session = self.session(browser)
        try:
            await session.open("training", TRAINING_MAIN)
            await session.slider_to_end("Steps")
            main = session.page.get_by_test_id("stMainBlockContainer")
            refusal = main.get_by_text(REFUSED).first
            for press in range(3):
                start = time.monotonic()
                await main.get_by_role("button", name="Train", exact=True).click()
                if press < 2:
                    await session.settle(live=True)
                    row.samples.append(time.monotonic() - start)
            try:
                await refusal.wait_for(timeout=60_000)
                message = await refusal.inner_text()
                await asyncio.sleep(3)
                lasting = "stayed on the page for 3 s" if await refusal.count() else "**gone within 3 s**"
                row.note = f"refused; the message {lasting}: “{message[:110]}…”"
            except Exception:  # noqa: BLE001 - reported as the budget not met
                row.note = "NOT refused (no message within 60 s)"
            boxes = await session.error_boxes(allowed=REFUSED)
            row.errors = len(boxes)
            for box in boxes:
                self.problem(f"d: error box: {box[:200]}")
        except Exception as error:  # noqa: BLE001
            row.errors += 1
            row.note = row.note or f"failed: {describe(error)}"
            self.problem(f"d: {describe(error)}")
        finally:
            await session.close()
        self.add(row)

    async def run(self) -> None:
        from playwright.async_api import async_playwright

        async with async_playwright() as playwright:
            try:
                browser = await playwright.chromium.launch(
                    executable_path=_app.CHROMIUM, headless=True, args=_app.CHROMIUM_ARGS
                )
            except Exception as error:  # noqa: BLE001
                raise _app.launch_failed(error) from None
            try:
                phases = {"a": self.phase_alone, "b": self.phase_class, "c": self.phase_training, "d": self.phase_share}
                for name in self.args.phases:
                    print(f"phase ({name})…", flush=True)
                    await phases[name](browser)
            finally:
                await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20, help="sessions opening Attention at once in (b)")
    parser.add_argument("--toggles", type=int, default=2, help="toggle clicks per session in (a) and (b)")
    parser.add_argument(
        "--from",
        dest="start",
        choices=sorted(START_PAGES),
        default="embeddings",
        help="the page the class has open before it opens Attention from the sidebar in (b) and (c)",
    )
    parser.add_argument("--fresh", type=int, default=3, help="fresh sessions opening Attention in (c)")
    parser.add_argument("--think", type=float, default=1.0, help="seconds between two clicks of one student")
    parser.add_argument("--phases", default="abcd", help="which phases, e.g. ab or a,c")
    parser.add_argument("--wait", type=float, default=240, help="seconds one wait may take before it is an error")
    parser.add_argument("--budget", type=float, default=1500, help="seconds for the whole benchmark")
    parser.add_argument("--port", type=int, default=8530)
    parser.add_argument("--shots", default="", help="folder for screenshots of sessions that went wrong")
    args = parser.parse_args()
    args.phases = [p for p in args.phases.replace(",", "") if p.strip()]
    if unknown := [p for p in args.phases if p not in "abcd"]:
        parser.error(f"unknown phase(s) {', '.join(unknown)}: use a, b, c, d")
    if not 1 <= args.sessions <= MAX_SESSIONS or not 1 <= args.fresh <= 10:
        parser.error(f"--sessions 1 to {MAX_SESSIONS}, --fresh 1 to 10")
    _app.require_browser()

    load_before = _app.load_average()
    started = time.monotonic()
    cut_short = ""
    with _app.App("app.py", _app.free_port(args.port)) as app:
        benchmark = Benchmark(args, app)
        try:
            asyncio.run(asyncio.wait_for(benchmark.run(), timeout=args.budget))
        except TimeoutError:
            cut_short = f" — CUT SHORT by the {args.budget:.0f} s budget"
        except KeyboardInterrupt:
            cut_short = " — interrupted"
        tracebacks = app.server_errors()
    print()
    print(
        f"A classroom on one server: server and headless chromium on this machine, one browser context per "
        f"session{cut_short}."
    )
    for line in _app.machine(load_before):
        print(line)
    print(
        f"Settings: LLMVIZ_MAX_JOBS={_env('LLMVIZ_MAX_JOBS', 'CPU cores')}, "
        f"LLMVIZ_RUNS_PER_SESSION={_env('LLMVIZ_RUNS_PER_SESSION', '1')}; {args.toggles} toggle(s) per session, "
        f"{args.think:g} s apart; total {time.monotonic() - started:.0f} s.\n"
    )
    print(_app.table(HEADER, [row.cells() for row in benchmark.rows]))
    if benchmark.watching:
        print("\n" + benchmark.watching)
    if benchmark.problems or tracebacks:
        print("\nProblems seen:")
        for text in benchmark.problems:
            print(f"- {text}")
        if tracebacks:
            print(f"- the server printed {len(tracebacks)} traceback(s), e.g. {'; '.join(tracebacks[:3])[:400]}")


def _env(name: str, default: str) -> str:
    import os

    return os.environ.get(name) or default


if __name__ == "__main__":
    main()
