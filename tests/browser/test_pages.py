"""Every page in headless chromium, as a teacher uses it: it opens with no error box, a setting changes what it
shows, a widget inside a section reruns that section alone (issue 12: sections are st.fragments), and the link
copied with "Copy link to this view" holds the settings and opens the same numbers in a new session (a new window,
which shares nothing with the first but the link; issue 16; see REOPENED_IN_EVERY_RUN for which pages reopen their
link in every run).

Which runs a change caused is read from the test server's log of every whole page run (``page:<name>``) and
section run (``LLMVIZ_TIMINGS``, see tests/support/browser.py). Every wait is on the app's state (the log, the
script-run state, a text), never a sleep. Each page's default view is saved to ``screenshots/<page>.png``, and
measured as it opens: its picture within the first screen, at most 60 words before it, at most three screens tall
(tests/support/page_size.py).
"""

import re
import time
import urllib.parse
from collections.abc import Callable
from typing import NamedTuple

import pytest

from tests.support import page_size
from tests.support.browser import (
    SCRIPT_STATE,
    choose,
    main_area,
    no_error_box,
    open_page,
    script_runs,
    shot,
    slider,
    wait_until_idle,
)
from ui.stages import PIPELINE

pytestmark = pytest.mark.browser
#: in README's suite, where every other browser test is in CI's lane (-m ci): every page drawn once by a real browser
IN_THE_SUITE = True

# Everything a student reads: metrics, captions, text, equations, code, token chips, and the charts' text
# (tick labels, cell values, titles).
NUMBERS_JS = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const parts = [];
  main.querySelectorAll('[data-testid="stMetricValue"], [data-testid="stCaptionContainer"], '
                        + '[data-testid="stMarkdownContainer"], .katex-mathml annotation, [data-testid="stCode"] code, '
                        + '.js-plotly-plot .main-svg text, .lvf-token, .lvf-pred')  // .lvf: the flow (Model, Home)
      .forEach(e => { if (!e.closest('[data-testid="stAlert"]') && !e.closest('[data-testid="stExpanderDetails"]'))
                        parts.push(e.textContent.trim()); });
  return parts.filter(t => t.length > 0);
}"""
BUSY_JS = (
    '() => document.querySelectorAll(\'[data-stale="true"], [data-testid="stSkeleton"], '
    '[data-testid="stSpinner"]\').length'
)


def numbers(page, settle_s: float = 1.0, timeout_s: float = 120) -> list[str]:
    """What the page shows once it has stopped changing (charts draw after the script run ends).

    Callers have just waited for the script run to end (open_page, take); a run still going, a
    stale element, a skeleton or a spinner restarts the ``settle_s`` clock."""
    deadline = time.time() + timeout_s
    last, since = None, time.time()
    while time.time() < deadline:
        now = page.evaluate(NUMBERS_JS)
        if page.evaluate(BUSY_JS) or page.evaluate(SCRIPT_STATE) != "notRunning":
            last, since = None, time.time()
        elif now != last:
            last, since = now, time.time()
        elif time.time() - since >= settle_s and now:
            return now
        time.sleep(0.2)
    raise AssertionError("the page kept changing")


def fill(page, selector, text, commit="Enter"):
    field = page.locator(selector).first
    field.fill(text)
    field.press(commit)


def nudge(page, label, presses=2, index=0):
    handle = slider(page, label, index)
    handle.focus()
    for _ in range(presses):
        page.keyboard.press("ArrowRight")


def tab(page, name):
    """Open one of the page's tabs (its lessons: ui.sections.parts)."""
    main_area(page).get_by_role("tab", name=name, exact=True).click()


def click(page, text):
    main_area(page).get_by_text(text, exact=True).first.click()


def open_tab(page, label):
    """A lesson's tab under the page's key picture (a whole page run: only the chosen tab's content runs)."""
    main_area(page).get_by_role("tab", name=label, exact=True).click()


def copied_link(page) -> str:
    page.get_by_role("button", name="Copy link to this view").first.click()
    page.wait_for_function("() => !!window.__llmvizCopiedLink")
    return page.evaluate("() => window.__llmvizCopiedLink")


class Step(NamedTuple):
    """One thing a teacher does on a page. ``alone``: the only section it may rerun (a widget inside a section);
    ``within``: a section it reruns, with no whole page run; neither: a page-level setting (a whole run)."""

    do: Callable
    alone: str | None = None
    within: str | None = None


def take(page, log, step: Step) -> None:
    """Do one step and wait until the runs it caused have ended; check which runs they were."""
    before = len(script_runs(log))
    step.do(page)
    deadline = time.time() + 120
    while len(script_runs(log)) == before:
        assert time.time() < deadline, "the change ran nothing"
        page.wait_for_timeout(50)  # polling the log file, not waiting for a fixed time
    wait_until_idle(page)
    names = {line["section"] for line in script_runs(log)[before:]}
    if step.alone:  # the section, and what is drawn inside it (a live part named "<section>.runs")
        assert {name for name in names if not name.startswith(step.alone + ".")} == {step.alone}, (
            f"expected only {step.alone} to rerun, got {names}"
        )
    if step.within:
        assert step.within in names, names
        assert not any(name.startswith("page:") for name in names), f"a section's widget reran the page: {names}"


# What a teacher changes on each page (each leaves at least one setting away from its default; every one of them
# is in the link) ...
CHANGES = {
    "text": [
        Step(lambda p: choose(p, "Corpus", "US census first names")),
        Step(lambda p: fill(p, '[data-testid="stSidebar"] input[type="number"]', "7")),
    ],
    "tokens": [
        Step(
            lambda p: fill(
                p,
                '[data-testid="stTextArea"] textarea',
                "Hello classroom: 12 tokens, maybe 13?",
                commit="Control+Enter",
            )
        ),
        Step(lambda p: open_tab(p, "Input–target pairs")),
        Step(lambda p: nudge(p, "Context size", 1), alone="tokens.pairs"),
    ],
    "embeddings": [
        Step(
            lambda p: fill(p, 'input[aria-label^="Tokens to compare"]', " print range len"), within="embeddings.tokens"
        )
    ],
    "attention": [
        Step(lambda p: open_tab(p, "Step by step")),
        Step(lambda p: click(p, "Causal mask"), alone="attention.toy"),
        Step(lambda p: nudge(p, "Layer", 1), alone="attention.head"),
        Step(
            lambda p: fill(p, 'input[aria-label="Sentence"]', "The function returns a list of values"),
            within="attention.sentence",
        ),
    ],
    "model": [
        Step(lambda p: fill(p, 'input[aria-label="Your sentence"]', "A class defines new objects"), within="model.flow")
    ],
    "inside": [
        Step(
            lambda p: fill(p, 'input[aria-label="A sentence"]', "The while loop repeats a block of code"),
            alone="inside.lens",
        )
    ],
    "training": [Step(lambda p: tab(p, "The loss by hand")), Step(lambda p: nudge(p, "Positions per sequence", 2))],
    "sampling": [
        Step(lambda p: fill(p, 'input[aria-label="Prompt"]', PROMPT)),
        Step(lambda p: nudge(p, "Temperature", 3)),
    ],
    "adapting": [
        Step(lambda p: nudge(p, "Rank r", 1), alone="adapting.lora"),
        Step(lambda p: tab(p, "Quantization")),
        # int4 is computed in a worker, and its report redraws the page when it is ready: no "alone" here
        Step(
            lambda p: (
                main_area(p)
                .locator("[data-testid='stRadio']")
                .filter(has_text="Bits")
                .first.get_by_text("4", exact=True)
                .click()
            ),
        ),
    ],
    "serving": [Step(lambda p: tab(p, "Paged attention")), Step(lambda p: nudge(p, "Block size (tokens)", 1))],
    "tuning": [Step(lambda p: tab(p, "The response mask")), Step(lambda p: nudge(p, "Example", 2))],
}
# ... which the copied link holds (the parameters ui/share.py declares)
IN_THE_LINK = {
    "text": {"corpus", "seed"},
    "tokens": {"text", "context", "tokens_tab"},
    "embeddings": {"words"},
    "attention": {"mask", "layer", "sentence", "attention_tab"},
    "model": {"flow_sentence"},
    "inside": {"lens_text"},
    "training": {"positions", "training_part"},
    "sampling": {"prompt", "temperature"},
    # the link holds the open tab's settings (LoRA's rank is kept in the session while the Quantization tab is open,
    # and an old /adapt?lora_rank= link is tested in tests/browser/test_key_pictures.py)
    "adapting": {"quant_bits", "adapting_part"},
    "serving": {"serving_part"},
    "tuning": {"tuning_tab", "tuning_example"},
}
# Markdown, HTML, $…$ and quotes in a prompt appear as typed, in the page and in the generated text (issue 19; the
# shipped
# GPT's byte-level BPE keeps every character), and the link carries it to the student unchanged.
PROMPT = "class Foo: __dict__ **x** $y$ it's </span><b>z</b>"
# ... and what only this browser session keeps (not in the link), done after copying it.
SESSION_ONLY = {
    "embeddings": [
        Step(lambda p: click(p, "3D PCA"), alone="embeddings.projection"),
        Step(lambda p: open_tab(p, "Positions")),
        Step(lambda p: nudge(p, "Positions", 1), alone="embeddings.sinusoidal"),
    ],
    "adapting": [
        Step(lambda p: tab(p, "LoRA")),
        Step(lambda p: shortest_lora_runs(p), alone="adapting.lora"),
        Step(lambda p: main_area(p).get_by_role("button", name="Start both runs").click()),
    ],
    "sampling": [
        Step(
            lambda p: main_area(p).get_by_role("button", name=re.compile("^Take the sampled token")).click(),
            alone="sampling.step_mode",
        ),
        Step(lambda p: tab(p, "Generate"), within="sampling.distribution"),  # its tabs are inside its section
        Step(
            lambda p: main_area(p).get_by_role("button", name="Generate", exact=True).click(), alone="sampling.generate"
        ),
    ],
}


def generated_literally(page, log) -> bool:
    main = main_area(page)
    main.get_by_text(PROMPT, exact=False).first.wait_for()  # the generated text starts with the prompt, as typed
    assert main.locator("b", has_text="z").count() == 0  # no HTML was interpreted
    assert "&#" not in main.inner_text()  # and no character was escaped twice (it's, not it&#x27;s)
    assert main.locator(".katex").count() == 0 or "y" not in main.locator(".katex").all_inner_texts()
    tab(page, "Step mode")
    return main.get_by_role("button", name="Undo").is_enabled()  # and a token was taken in step mode


def shortest_lora_runs(page) -> None:
    """LoRA's Steps slider (the first one on the Adapt page) to its minimum, 20 steps a run."""
    handle = main_area(page).locator("[data-testid='stSlider']").filter(has_text="Steps").get_by_role("slider").first
    handle.focus()
    page.keyboard.press("Home")


def runs_followed_live(page, log) -> bool:
    """The two LoRA runs' progress and curves redraw by themselves (a live section: its own reruns in the server's
    log, no click) until both have ended."""
    main = main_area(page)
    main.get_by_text("Each run is in the sidebar's picker", exact=False).first.wait_for()  # the curves are drawn
    progress = main.locator('[data-testid="stProgress"]').filter(has_text=re.compile(r"LoRA r\d|full fine-tuning"))
    deadline = time.time() + 600  # two short runs: minutes on a loaded 2-core machine, seconds on a quiet one
    while progress.count():  # without a live refresh, the bars drawn at the click would stay forever
        assert time.time() < deadline, "the runs' progress did not move on by itself"
        page.wait_for_timeout(250)
    main.get_by_text("Each run is in the sidebar's picker", exact=False).first.wait_for()  # curves still there
    # (the section refreshes itself only while a run trains: no refresh before the click)
    refreshes = [run for run in script_runs(log) if run["section"] == "adapting.lora.runs" and run["rerun"]]
    assert refreshes, "the runs' section never refreshed on its own"
    return True


AFTERWARDS = {  # what the session-only steps must leave on the page
    "sampling": generated_literally,
    "adapting": runs_followed_live,
}
STAGES = [stage for stage in PIPELINE if stage.exists]


def test_every_page_is_covered():
    assert set(CHANGES) == set(IN_THE_LINK) == {stage.key for stage in STAGES}
    assert set(SESSION_ONLY) | set(AFTERWARDS) <= set(CHANGES)


# Every run opens the copied link in a new session for the pages whose links carry what a student typed (a text, a
# prompt with Markdown, HTML, $…$ and quotes, a sentence beside a toggle and a slider): the browser's own encoding of
# the address is what could break. The other pages' links hold choices and numbers; every run still checks that
# their links are copied with the settings in them, and ``python -m pytest -m extended`` opens them too (a new
# session costs chromium 4–7 CPU-seconds, drawing the page again).
REOPENED_IN_EVERY_RUN = {"tokens", "attention", "sampling"}
LESSONS_IN_TABS = {"training", "sampling", "adapting", "serving"}  # under the picture, one click away


def link_cases():
    for stage in STAGES:
        yield (
            pytest.param(stage, True, id=stage.key)
            if stage.key in REOPENED_IN_EVERY_RUN
            else pytest.param(stage, False, id=stage.key)
        )
    for stage in STAGES:
        if stage.key not in REOPENED_IN_EVERY_RUN:
            yield pytest.param(stage, True, id=f"{stage.key}-reopened", marks=pytest.mark.extended)


@pytest.mark.parametrize(("stage", "reopen"), link_cases())
def test_page_opens_and_its_link_reproduces_the_view(app_url, browser, timings_log, stage, reopen):
    path = "" if stage.key == "text" else stage.key
    page = open_page(browser, f"{app_url}/{path}", viewport=page_size.SCREEN)  # the teacher's tab
    title = page.locator("h1").first
    assert title.inner_text().strip(), "every page has a title"
    page_size.check_first_screen(page, stage.key)  # it opens on its picture (tests/support/page_size.py)
    if stage.key in LESSONS_IN_TABS:
        assert main_area(page).get_by_role("tab").count() >= 3  # the lessons, one click away
    no_error_box(page)
    default_numbers = numbers(page)
    shot(page, stage.key)

    for step in CHANGES[stage.key]:
        take(page, timings_log, step)
    shown = numbers(page)
    assert shown != default_numbers, "the change shows on the page"
    no_error_box(page)
    link = copied_link(page)
    assert "?" in link and link.startswith(f"{app_url}/{path}"), link
    assert IN_THE_LINK[stage.key] <= set(urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)), link
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    for step in SESSION_ONLY.get(stage.key, []):
        take(page, timings_log, step)
    assert AFTERWARDS.get(stage.key, lambda _page, _log: True)(page, timings_log)
    no_error_box(page)
    page.close()
    if not reopen:
        return

    view = open_page(browser, link, viewport=(1400, 1000))  # a student's new session: only the link is shared
    assert numbers(view) == shown
    no_error_box(view)
    assert main_area(view).get_by_text("This link's settings were partly used").count() == 0
    view.close()
