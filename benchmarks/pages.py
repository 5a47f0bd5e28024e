"""Server time of each page's open and of each section's widget rerun, in a real browser, against issue 26's budgets.

    python benchmarks/pages.py [--pages attention,inside,training] [--model KEY] [--port 8520] [--repeats 3]

Budgets (issue 26, shipped GPT): a page open ≤ 300 ms of server time with warm caches; a section rerun (a widget
that belongs to a section) ≤ 150 ms. The verdict is on the median of ``--repeats`` samples; the max is shown too.

How it measures: the app runs under ``streamlit run app.py`` with ``LLMVIZ_TIMINGS=<file>``; app.py then logs the
server time of every whole script run (``page:<name>``) and ``ui.sections`` logs every ``st.fragment`` section's
run. Headless chromium opens each page:

- **open (cold)**: the first visit, which loads the page's models (once per server): no budget;
- **open (warm)**: the page opened again in a new session, ``--repeats`` times: budget 300 ms;
- **each widget**, ``--repeats`` times, each time to a NEW value (a slider steps right then left, a toggle flips,
  a radio moves to another option, a text box gets another sentence), so that every repeat reruns something;
  its server time is read from the log: the section's own rerun (``fragment``), or ``full`` when the whole page
  reran — for a widget that belongs to a section that is itself a miss, whatever the time.

Inside the model and Training are included; Training is measured without a run (its whole-page widgets), with a
finished short run (the comparison chart's smoothing slider and validation toggle, and the page open with a run)
and while a run trains (the same slider, and what each live refresh costs). While a run trains its sections
refresh by themselves: the first run of the section after the change is counted (a refresh and a change run the
same code). Every wait is on the app's script state (``benchmarks/_app.py``), never a fixed sleep.

Reference: a bare Streamlit page that imports torch and draws one 48 × 48 Plotly heatmap, with one slider,
measured the same way on the same machine.

Hook for other models (e.g. GPT-2, issue 17): ``--model hub:gpt2`` opens every page with ``?model=`` set, so the
shared picker shows that model; ``extra_actions`` takes per-page actions to add. Timings on a shared, busy CPU are
inflated: the table says the load average before and after.

Not in rounds: the verdicts are absolute budgets (server ms per open and per rerun), and the bare page is the
floor printed beside them, never a side it is divided by.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _app  # noqa: E402

PAGE_MS = 300  # a page open, warm caches, shipped GPT
SECTION_MS = 150  # a section rerun


@dataclass
class Action:
    """One widget change: what a student does (``do(page, repeat)``: a new value each repeat) and the section
    (fragment) expected to rerun — ``page:<name>`` for a widget that reruns the whole page by design."""

    section: str
    what: str
    do: object  # callable(page, repeat: int) -> None
    setup: object = None  # callable(page) -> None, run (and not timed) before the first ``do``
    live: bool = False  # the page has a section that refreshes by itself (a run training)


def main_area(page):
    return page.get_by_test_id("stMainBlockContainer")


def slider_step(label: str, index: int = 0):
    """Step the slider right on even repeats and left on odd ones (left first when it is at its maximum)."""

    def do(page, repeat: int):
        thumb = (
            page.locator("[data-testid='stSlider']")
            .filter(has=page.get_by_text(label, exact=True))
            .get_by_role("slider")
            .nth(index)
        )
        value, top = thumb.get_attribute("aria-valuenow"), thumb.get_attribute("aria-valuemax")
        at_max = value is not None and top is not None and float(value) >= float(top)
        thumb.focus()
        page.keyboard.press("ArrowLeft" if (repeat % 2 == 0) == at_max else "ArrowRight")

    return do


def click_text(text: str):
    """Click a toggle's (or checkbox's) label: it flips every time."""

    def do(page, repeat: int):
        main_area(page).get_by_text(text, exact=True).first.click()

    return do


def choose_radio(*options: str):
    """Click ``options[repeat % len(options)]``: list them so that each differs from the one before (the first
    from the default)."""

    def do(page, repeat: int):
        main_area(page).get_by_text(options[repeat % len(options)], exact=True).first.click()

    return do


def fill(label: str, *values: str, area: bool = False):
    """Type ``values[repeat % len(values)]`` into the text box ``label`` and submit it (Ctrl+Enter in a text area)."""

    def do(page, repeat: int):
        box = main_area(page).get_by_label(label, exact=True).first
        box.fill(values[repeat % len(values)])
        box.press("Control+Enter" if area else "Enter")

    return do


def click_button(prefix: str):
    """A button whose every press changes the state (e.g. take one more sampled token)."""

    def do(page, repeat: int):
        main_area(page).get_by_role("button", name=re.compile("^" + re.escape(prefix))).first.click()

    return do


def open_tab(name: str):
    """Setup: open one of the page's tabs (ui.sections.parts: only the open tab's part runs)."""

    def do(page):
        main_area(page).get_by_role("tab", name=name, exact=True).click()
        settle(page)

    return do


def train_small_bpe(page):
    main = main_area(page)
    main.get_by_role("button", name="Train BPE").click()
    main.get_by_text("Merge table").first.wait_for(timeout=300_000)


def _set_slider(page, label: str, key: str) -> None:
    thumb = (
        page.locator("[data-testid='stSlider']")
        .filter(has=page.get_by_text(label, exact=True))
        .get_by_role("slider")
        .first
    )
    thumb.focus()
    page.keyboard.press(key)
    settle(page)


def train_short_run(page):
    """A 10-step run on the Training page, waited for until it has finished."""
    _set_slider(page, "Steps", "Home")
    main_area(page).get_by_role("button", name="Train", exact=True).click()
    main_area(page).get_by_text(re.compile(r"finished after \d+ steps")).first.wait_for(timeout=300_000)
    settle(page, live=True)


def start_long_run(page):
    """The longest run the Steps slider allows, left training (it is stopped at the end of the page)."""
    _set_slider(page, "Steps", "End")
    main_area(page).get_by_role("button", name="Train", exact=True).click()
    main_area(page).get_by_text(re.compile(r"running · step")).first.wait_for(timeout=300_000)
    settle(page, live=True)


def reopen_training(page):
    """Leave for Home, then open Training again from the sidebar (the same session: its runs are kept)."""
    page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Home").first.click()
    settle(page)


def click_training_link(page, repeat: int):
    if repeat:
        reopen_training(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Loss & training").first.click()


ACTIONS: dict[str, list[Action]] = {
    "attention": [
        Action("attention.toy", "toggle the causal mask", click_text("Causal mask")),
        Action("attention.head", "layer slider (picked GPT)", slider_step("Layer", 0)),
        # step 0 vs N follows the layer slider above it, and MiniLM runs only once its lazy section is opened
        Action(
            "attention.sentence",
            "a new sentence",
            fill(
                "Sentence",
                "The cat sat on the mat because it was tired",
                "A class is a blueprint for objects",
                "The loop ends when the condition is false",
            ),
        ),
    ],
    "tokens": [
        Action("tokens.side_by_side", "ids under the tokens on/off", click_text("Show the ids under the tokens")),
        Action("tokens.pairs", "context size slider", slider_step("Context size")),
        Action(
            "tokens.replay",
            "replay slider (after training a BPE)",
            slider_step("Merges applied"),
            setup=train_small_bpe,
        ),
    ],
    "embeddings": [
        Action("embeddings.cosine", "compare another pair", choose_radio("v₁ and v₃", "v₁ and v₂")),
        Action("embeddings.projection", "2D/3D PCA", choose_radio("3D PCA", "2D PCA")),
        Action(
            "embeddings.tokens",
            "nearest neighbours of a new token",
            fill("Nearest neighbours of", " class", " def", " import"),
        ),
        Action("embeddings.sinusoidal", "positions slider", slider_step("Positions")),
        Action(
            "embeddings.token_plus_position",
            "a new sentence",
            fill("Sentence", "while True: pass", "x = [i for i in range(3)]", "import os"),
        ),
    ],
    "sampling": [
        Action(
            "sampling.generate",
            "tokens-to-generate slider",
            slider_step("Tokens to generate", 0),
            setup=open_tab("Generate"),
        ),
        Action(
            "sampling.step_mode",
            "take the sampled token",
            click_button("Take the sampled token"),
            setup=open_tab("Step mode"),
        ),
        Action(
            "sampling.kv_cache",
            "KV tokens slider",
            slider_step("Tokens to generate", 0),
            setup=open_tab("The KV cache"),
        ),
        Action("sampling.distribution", "temperature", slider_step("Temperature")),
    ],
    "model": [
        Action(
            "model.inside",
            "a new sentence",
            fill(
                "A sentence",
                "The while statement repeats a block",
                "Every object has an identity",
                "A function returns a value",
            ),
        ),
    ],
    "inside": [
        Action(
            "inside.lens",
            "logit lens: a new sentence",
            fill(
                "A sentence",
                "The for statement iterates over a list",
                "Every object has a type",
                "The return statement leaves the function",
            ),
        ),
        Action("inside.heads", "head detector: another detector", choose_radio("previous token", "induction")),
        Action(
            "inside.loss",
            "loss on every token: new text",
            fill(
                "Any text",
                "Every object has an identity, a type and a value.",
                "The if statement is used for conditional execution.",
                "A module can contain executable statements.",
                area=True,
            ),
        ),
    ],
    "training": [
        Action(
            "page:training",
            "no run: positions per sequence (a whole-page widget)",
            slider_step("Positions per sequence"),
            setup=open_tab("The loss by hand"),
        ),
        Action(
            "page:training",
            "a finished run: open Training from the sidebar",
            click_training_link,
            setup=lambda page: (open_tab("Your runs")(page), train_short_run(page), reopen_training(page)),
        ),
        Action(
            "training.all_runs", "a finished run: smooth the training curves", slider_step("Smooth the training curves")
        ),
        Action("training.all_runs", "a finished run: validation loss on/off", click_text("Show validation loss")),
        Action(
            "training.all_runs",
            "a run training: smooth the training curves",
            slider_step("Smooth the training curves"),
            setup=start_long_run,
            live=True,
        ),
    ],
}
extra_actions: dict[str, list[Action]] = {}  # hook: e.g. extra_actions["attention"].append(Action(...))

# ---------------------------------------------------------------------------- waiting and reading the log

_STATE: dict[int, _app.StateLog] = {}  # one state log per page object


def state_of(page) -> _app.StateLog:
    return _STATE.setdefault(id(page), _app.StateLog())


def settle(page, live: bool = False, started: float | None = None, after: int | None = None) -> float:
    return _app.wait_settled(
        page,
        _app.read_state(page, state_of(page)),
        started=started or time.monotonic(),
        after=after,
        live=live,
        timeout_s=300,
    )


def read_log(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def timed(page, log: Path, do, expect: str | None = None, live: bool = False) -> list[dict]:
    """Run ``do(page)``, wait until the app has run (the ``expect`` section or a page run is logged) and settled;
    the log lines it produced."""
    before = len(read_log(log))
    state = _app.read_state(page, state_of(page))
    count, start = state.count, time.monotonic()
    do(page)

    def arrived(lines: list[dict]) -> bool:
        if expect and expect.startswith("page:"):
            return any(x["section"] == expect for x in lines)
        return any(x["section"] == expect or x["section"].startswith("page:") for x in lines) if expect else bool(lines)

    deadline = time.monotonic() + 30  # a change that reruns nothing is reported as "no rerun"
    while not arrived(read_log(log)[before:]) and time.monotonic() < deadline:
        time.sleep(0.05)
    settle(page, live=live, started=start, after=count)
    return read_log(log)[before:]


def describe(lines: list[dict], section: str, live: bool = False) -> tuple[float | None, str]:
    """Server time of what reran: the section's fragment alone (``fragment``), or the whole page (``full``)."""
    pages = [line for line in lines if line["section"].startswith("page:")]
    own = [line for line in lines if line["section"] == section and line["rerun"]]
    if section.startswith("page:"):
        wanted = [line for line in pages if line["section"] == section]
        if wanted:
            return wanted[-1]["seconds"], "page"
    if own and (live or not pages):  # on a live page, a page run may be a run following its training run
        return own[0]["seconds"], "fragment"
    if pages:
        return sum(line["seconds"] for line in pages), "full"
    if lines:
        return sum(line["seconds"] for line in lines if line["rerun"]), "+".join(sorted({x["section"] for x in lines}))
    return None, "no rerun"


def errors_on(page) -> list[str]:
    boxes = page.locator(_app.ERROR_BOXES)
    return [boxes.nth(i).inner_text()[:200] for i in range(boxes.count())]


# ---------------------------------------------------------------------------- the table


@dataclass
class Row:
    page: str
    what: str
    change: str
    samples: list[float]
    kind: str
    budget_ms: int | None = None  # None: no budget
    note: str = ""

    def cells(self) -> list[str]:
        if not self.samples:
            median = top = "-"
        else:
            median, top = f"{statistics.median(self.samples) * 1000:.0f}", f"{max(self.samples) * 1000:.0f}"
        if self.budget_ms is None:
            verdict = ""
        elif not self.samples:
            verdict = "**no** (not measured)"
        elif self.budget_ms == SECTION_MS and self.kind not in ("fragment",):
            verdict = f"**no** ({'the whole page reran' if self.kind == 'full' else self.kind})"
        else:
            verdict = "yes" if statistics.median(self.samples) * 1000 <= self.budget_ms else "**no**"
        return [
            self.page,
            self.what,
            self.change + (f" ({self.note})" if self.note else ""),
            median,
            top,
            str(len(self.samples)),
            self.kind,
            f"≤ {self.budget_ms} ms" if self.budget_ms else "-",
            verdict,
        ]


HEADER = ["page", "what", "change", "server ms (median)", "max", "n", "reran", "budget", "met (median)"]


def record(rows: list[Row], row: Row) -> None:
    rows.append(row)
    print("measured: " + " | ".join(row.cells()), flush=True)


def new_page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(_app.INIT_SCRIPT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    return page


def close(page) -> None:
    _STATE.pop(id(page), None)
    page.context.close()


def measure_reference(browser, args, rows: list[Row], work: Path) -> None:
    (work / "reference.py").write_text(_app.REFERENCE_PAGE)
    with _app.App(str(work / "reference.py"), _app.free_port(args.port), timings=True) as app:
        page = new_page(browser)
        try:
            first = timed(page, app.timings, lambda p: p.goto(app.url + "/"))
            record(
                rows,
                Row(
                    "reference",
                    "open",
                    "bare page: import torch + one heatmap",
                    [first[-1]["seconds"]] if first else [],
                    "page",
                ),
            )
            step = slider_step("Size")
            reruns = []
            for repeat in range(args.repeats):
                lines = timed(page, app.timings, lambda p, r=repeat: step(p, r))
                if lines:
                    reruns.append(lines[-1]["seconds"])
            record(rows, Row("reference", "widget rerun", "slider", reruns, "page"))
        finally:
            close(page)


def measure_page(browser, app: _app.App, name: str, args, rows: list[Row], query: str) -> None:
    log = app.timings
    page = new_page(browser)
    try:
        lines = timed(page, log, lambda p: p.goto(f"{app.url}/{name}{query}"))
        first = [x["seconds"] for x in lines if x["section"].startswith("page:")]
        record(rows, Row(name, "open (cold)", "first visit: loads its models", first[-1:], "page"))
        warm = []
        for _ in range(args.repeats):  # a reload is a new browser session: a student opening the page
            lines = timed(page, log, lambda p: p.reload())
            warm += [x["seconds"] for x in lines if x["section"].startswith("page:")][-1:]
        record(rows, Row(name, "open (warm)", "the page opened again, a new session", warm, "page", budget_ms=PAGE_MS))
        for action in ACTIONS.get(name, []) + extra_actions.get(name, []):
            budget = PAGE_MS if action.section.startswith("page:") else SECTION_MS
            try:
                if action.setup:
                    action.setup(page)
                    settle(page, live=action.live)
                samples, kinds = [], set()
                for repeat in range(args.repeats):
                    lines = timed(
                        page, log, lambda p, r=repeat, a=action: a.do(p, r), expect=action.section, live=action.live
                    )
                    seconds, kind = describe(lines, action.section, action.live)
                    if seconds is not None:
                        samples.append(seconds)
                    kinds.add(kind)
                record(rows, Row(name, action.section, action.what, samples, "/".join(sorted(kinds)), budget))
            except Exception as error:  # noqa: BLE001 - a missing widget must not end the whole table
                record(
                    rows,
                    Row(
                        name,
                        action.section,
                        action.what,
                        [],
                        "-",
                        budget,
                        note=f"failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}",
                    ),
                )
        if name == "training":
            live_costs(page, log, rows)
        for box in errors_on(page):
            record(rows, Row(name, "error box", box, [], "-"))
    finally:
        close(page)


def live_costs(page, log: Path, rows: list[Row], watch_s: float = 20.0) -> None:
    """While a run trains: what each live refresh costs (nobody touches anything for ``watch_s`` seconds); then
    the run is stopped."""
    if not main_area(page).get_by_text(re.compile(r"running · step")).count():
        return
    before = len(read_log(log))
    time.sleep(watch_s)  # the point is to let the page refresh by itself
    lines = read_log(log)[before:]
    for section in sorted({x["section"] for x in lines}):
        runs = [x["seconds"] for x in lines if x["section"] == section and (x["rerun"] or section.startswith("page:"))]
        what = (
            "the whole page reruns to follow the run's newest snapshot"
            if section.startswith("page:")
            else "a live refresh while a run trains"
        )
        if runs:
            record(
                rows,
                Row(
                    "training",
                    section,
                    f"{what} ({len(runs)} in {watch_s:.0f} s, nothing touched)",
                    runs,
                    "page" if section.startswith("page:") else "fragment",
                    PAGE_MS if section.startswith("page:") else SECTION_MS,
                ),
            )
    for button in main_area(page).get_by_role("button", name="Stop").all():
        try:
            button.click(timeout=10_000)
        except Exception:  # noqa: BLE001 - the run may have ended meanwhile
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default=",".join(ACTIONS))
    parser.add_argument("--model", default="", help="a picker key for every page, e.g. hub:gpt2")
    parser.add_argument("--port", type=int, default=int(os.environ.get("LLMVIZ_BENCH_PORT", 8520)))
    parser.add_argument("--repeats", type=int, default=3, help="samples per row (median reported)")
    parser.add_argument("--no-reference", action="store_true", help="skip the bare reference page")
    args = parser.parse_args()
    pages = [p for p in args.pages.split(",") if p]
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    _app.require_browser()
    import tempfile

    from playwright.sync_api import sync_playwright

    load_before = _app.load_average()
    work = Path(tempfile.mkdtemp(prefix="llmviz-pages-bench-"))
    rows: list[Row] = []
    tracebacks: list[str] = []
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=_app.CHROMIUM, headless=True, args=_app.CHROMIUM_ARGS)
        except Exception as error:  # noqa: BLE001
            raise _app.launch_failed(error) from None
        try:
            if not args.no_reference:
                measure_reference(browser, args, rows, work)
            query = f"?model={args.model}" if args.model else ""
            with _app.App("app.py", _app.free_port(args.port)) as app:
                for name in pages:
                    measure_page(browser, app, name, args, rows, query)
                tracebacks = app.server_errors()
        except KeyboardInterrupt:
            print("interrupted: the table so far", flush=True)
        finally:
            browser.close()

    print(
        f"\nServer time per page open and per widget change, headless chromium, median of {args.repeats} "
        f"(each repeat sets a new value)."
    )
    for line in _app.machine(load_before):
        print(line)
    print(
        f"Model: {args.model or 'the default (shipped GPT)'}. Budgets (issue 26): a page open ≤ {PAGE_MS} ms "
        f"(warm caches, shipped GPT), a section rerun ≤ {SECTION_MS} ms.\n"
    )
    print(_app.table(HEADER, [row.cells() for row in rows]))
    if tracebacks:
        print(f"\nThe server printed {len(tracebacks)} traceback(s), e.g. {'; '.join(tracebacks[:3])[:400]}")


if __name__ == "__main__":
    main()
