"""Training, Sampling, Adapting and Serving in chromium at 1400×1000, as a student meets them: nothing is cut off (the
sidebar picker's options, a button, the notes under the quantization metrics), one click on Pause, Resume or Stop is
enough while the section redraws itself, and an old /adapt link opens Adapting with its settings. (That every page
opens on its key picture within three screens is measured in tests/browser/test_pages.py.)"""

import re

import pytest

from tests.support.browser import eventually, main_area, no_error_box, open_page, shot, sidebar, wait_until_idle

pytestmark = pytest.mark.browser

SCREEN = (1400, 1000)

# Elements whose text is wider than their box (cut off, or hidden behind an ellipsis).
CUT_OFF = """(selector) => Array.from(document.querySelectorAll(selector))
  .filter((e) => e.getBoundingClientRect().width > 0 && e.scrollWidth > e.clientWidth + 1)
  .map((e) => (e.innerText || e.value || '').slice(0, 80))"""


def open_tab(page, name: str) -> None:
    main_area(page).get_by_role("tab", name=name, exact=True).click()
    wait_until_idle(page)


def test_nothing_is_cut_off(app_url, browser):
    """The sidebar picker's value and every option (they were all cut: "Shipped char-level · names-bigram-co"),
    the KV-cache button ("Generate with and without the c…") and the notes under the quantization metrics ("same top
    token at 98.8% of positi…") show whole."""
    page = open_page(browser, f"{app_url}/sampling?sampling_part=The+KV+cache", viewport=SCREEN)
    box = sidebar(page).get_by_role("combobox", name="Model shown on every page")
    assert box.evaluate("(e) => e.scrollWidth <= e.clientWidth"), box.input_value()
    box.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    assert options.count() >= 8  # the shipped GPT and the seven names models at least
    assert page.evaluate(CUT_OFF, '[role="option"] > div') == []
    page.keyboard.press("Escape")
    assert page.evaluate(CUT_OFF, '[data-testid="stMainBlockContainer"] button p') == []
    assert main_area(page).get_by_role("button", name="Generate both ways").count() == 1
    page.goto(f"{app_url}/adapting?adapting_part=Quantization")
    main_area(page).get_by_text("same top token", exact=True).first.wait_for(timeout=120_000)  # (in a worker)
    wait_until_idle(page)
    metrics = '[data-testid="stMetricDelta"] div, [data-testid="stMetricValue"] div, [data-testid="stMetricLabel"] p'
    assert page.evaluate(CUT_OFF, metrics) == []
    no_error_box(page)
    page.close()


def test_one_click_pauses_resumes_and_stops_a_lab_run_while_it_redraws(app_url, browser):
    """A click that landed while a live section redrew its button could be lost (the tests pressed twice): each
    button here is clicked once, while the LoRA and full fine-tuning runs redraw every 2 s; the sidebar leaves their
    progress to the section (it reported it at other moments)."""
    page = open_page(browser, f"{app_url}/adapting", viewport=SCREEN)
    main = main_area(page)
    steps = page.locator("[data-testid='stSlider']").filter(has_text="Steps").get_by_role("slider").first
    steps.focus()
    page.keyboard.press("End")  # 400 steps each: they train through every click below
    wait_until_idle(page)
    main.get_by_role("button", name="Start both runs").click()
    running = re.compile(r"running · step (\d+)/400")
    main.get_by_text(running).first.wait_for(timeout=120_000)
    sidebar(page).get_by_text("its progress is on this page", exact=False).first.wait_for()
    assert sidebar(page).locator('[data-testid="stProgress"]').count() == 0  # one report of the runs: the section's

    def once(button: str, shows: re.Pattern) -> None:
        main.get_by_role("button", name=button, exact=True).first.click()  # one click, whatever is redrawing
        main.get_by_text(shows).first.wait_for(timeout=60_000)

    once("Pause", re.compile(r"paused · step \d+/400"))
    once("Resume", running)
    once("Stop", re.compile(r"stopped at step \d+ of 400"))
    main.get_by_role("button", name="Stop", exact=True).first.click()  # the other run
    main.get_by_text(re.compile(r"stopped at step \d+ of 400")).nth(1).wait_for(timeout=60_000)
    # the page's rerun that follows the runs' end takes the last Stop away (until then it is drawn, stale)
    eventually(lambda: main.get_by_role("button", name="Stop", exact=True).count() == 0, what="no Stop left")
    # each run ends with its result: steps, final training and validation loss, validation perplexity
    assert main.get_by_text(re.compile(r"stopped at step \d+ of 400 · training loss \d+\.\d{3}")).count() == 2
    shot(page, "lab-runs-stopped", full_page=True)
    no_error_box(page)
    page.close()


def test_an_old_adapt_link_opens_adapting_with_its_settings(app_url, browser):
    page = open_page(browser, f"{app_url}/adapt?lora_rank=8&quant_bits=4", viewport=SCREEN)
    eventually(lambda: "/adapting" in page.evaluate("window.location.href"), what="the address of the Adapting page")
    main_area(page).get_by_text("Adapting a model", exact=False).first.wait_for()
    rank = page.locator("[data-testid='stSlider']").filter(has_text="Rank r").get_by_test_id("stSliderThumbValue")
    assert rank.first.inner_text().strip() == "8"
    assert "lora_rank=8" in page.url and "quant_bits=4" in page.url
    open_tab(page, "Quantization")
    assert main_area(page).get_by_role("radio", name="4", exact=True).is_checked()
    no_error_box(page)
    page.close()
