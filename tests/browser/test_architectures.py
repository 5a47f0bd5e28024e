"""Issue 29's lab runs in real chromium, where sections are fragments (AppTest runs them as plain code): the Model
page's "Train the seven steps" starts the GPT-2 → Llama runs and its table fills with their validation losses, and
(``-m extended``) a finished positions race on the Training page is measured past its training context."""

import re
import urllib.parse

import pytest

from tests.support.browser import eventually, main_area, no_error_box, open_page, shot, wait_until_idle

pytestmark = pytest.mark.browser

NAMES = urllib.parse.urlencode({"corpus": "US census first names"})


def test_the_seven_gpt2_to_llama_steps_train_from_the_model_page(app_url, browser):
    lesson = urllib.parse.urlencode({"model_tab": "From GPT-2 to Llama"})  # the lesson's tab under the architecture
    page = open_page(browser, f"{app_url}/model?{NAMES}&{lesson}")
    main_area(page).get_by_text("The same steps, trained on your text").scroll_into_view_if_needed()
    main_area(page).get_by_role("slider").last.focus()
    for _ in range(3):  # 200 → 50 steps per run
        page.keyboard.press("ArrowLeft")
    wait_until_idle(page)
    main_area(page).get_by_role("button", name="Train the seven steps").click()
    # the caption under the live table names the steps and the corpus once the runs exist (before: the click was lost
    # to a whole-app rerun, and the section kept saying that no lab runs exist)
    eventually(
        lambda: main_area(page).get_by_text(re.compile(r"Each row trained 50 steps on US census")).count(),
        timeout_s=120,
        what="the lab table",
    )
    eventually(
        lambda: main_area(page).get_by_test_id("stPlotlyChart").filter(has_text="validation loss").count(),
        timeout_s=300,
        what="the validation losses",
    )
    shot(page, "gpt2-to-llama-lab")
    no_error_box(page)
    page.close()


@pytest.mark.extended  # ~14 CPU-seconds; tests/app/test_training.py measures the finished race headless in every run
def test_a_positions_race_is_measured_past_its_training_context(app_url, browser):
    # the races have a tab of their own; the switch raced is in the link (race_switch)
    page = open_page(browser, f"{app_url}/training?{NAMES}&training_part=Races&race_switch=positions")
    picked = main_area(page).get_by_role("combobox", name="Architecture race: one switch, two GPT micros")
    box = picked.locator("xpath=ancestor::*[@data-testid='stSelectbox']")
    assert "positions: learned vs RoPE" in (picked.input_value() or box.inner_text())
    runner_steps = page.locator("[data-testid='stSlider']").filter(has_text="Steps per runner").get_by_role("slider")
    runner_steps.first.focus()
    for _ in range(5):  # 300 → 50 steps per runner
        page.keyboard.press("ArrowLeft")
    wait_until_idle(page)
    main_area(page).get_by_role("button", name="Race the two").click()
    chart = main_area(page).get_by_test_id("stPlotlyChart").filter(has_text="trained up to here")
    eventually(lambda: chart.count(), timeout_s=300, what="the loss at every position")
    chart.first.scroll_into_view_if_needed()
    shot(page, "positions-race-extrapolation")
    no_error_box(page)
    page.close()
