"""Inside the model in headless chromium: its tabs and st.fragment sections, the links to Attention, the induction
run."""

import re

import pytest

from tests.support.browser import eventually, main_area, no_error_box, open_page, sidebar, wait_until_idle

pytestmark = pytest.mark.browser


def test_inside_sections_and_the_induction_run(app_url, browser):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = open_page(browser, f"{app_url}/inside", viewport=(1400, 2400))
    main = main_area(page)
    main.get_by_text("Probability of the token that really comes next").first.wait_for()  # it opens on the lens
    main.get_by_role("tab", name="Head detectors").click()  # each section is a tab: one click away
    main.get_by_text("Highest:").first.wait_for()
    no_error_box(page)
    # the detector radio reruns its fragment: the explanation and the ranking follow the new detector
    main.get_by_text("previous token", exact=True).first.click()
    main.get_by_text("attention from each token to the token just before it").wait_for()
    # every top head links to its pattern on the Attention page (layer/head in the URL)
    link = main.locator("a[href*='attention?']").first
    assert re.search(r"layer=\d+.*head=\d+|head=\d+.*layer=\d+", link.get_attribute("href"))
    # the per-token loss follows new text (its own fragment)
    main.get_by_role("tab", name="Loss per token").click()
    box = main.get_by_label("Any text")
    box.fill("def f(x):\n    return x + 1")
    box.press("Control+Enter")
    wait_until_idle(page)
    assert main.locator(".tok").count() >= 5
    no_error_box(page)

    # the induction preset: a regular lab run, in the picker, with Stop
    main.get_by_role("tab", name="Induction run").click()
    start = main.get_by_role("button", name=re.compile("^Train it"))
    start.click()
    main.get_by_text(
        re.compile(r"(above|below) uniform guessing")
    ).first.wait_for()  # the chart, from the step-0 snapshot
    sidebar(page).get_by_text(re.compile("Induction heads")).first.wait_for()

    # sections 1-3 follow the run's newest snapshot: the sidebar's step and the page's model line advance together
    # (the issue: Inside drew step 0 while the run's progress said 567/600)
    def followed_step():
        values = sidebar(page).get_by_role("slider")
        step = values.first.get_attribute("aria-valuetext") if values.count() else None
        shown = re.search(
            r"· step (\d+) \(picked in the sidebar\)", main.get_by_text(re.compile("^Model:")).first.inner_text()
        )
        running = main.get_by_text(re.compile(r"running · step \d+/600")).count()  # not after the run: it ended
        return (
            int(step)
            if running and step and step.isdigit() and shown and shown.group(1) == step and int(step) >= 60
            else None
        )

    eventually(
        followed_step, what="the page and the sidebar at a snapshot of step 60 or later, together, while the run trains"
    )
    stop = main.get_by_role("button", name="Stop", exact=True)
    if stop.count():  # on a busy machine the run may already be over (600 steps)
        try:
            stop.click(timeout=10_000)
        except PlaywrightTimeout:  # it ended meanwhile
            pass
    main.get_by_role("button", name="Train it again").wait_for()
    no_error_box(page)
    page.close()


def test_the_logit_lens_keeps_its_window_and_followed_position_in_the_link_and_across_tabs(app_url, browser):
    """Issue 57 item 8: "Positions shown, from" and "Follow one position" are link parameters (lens_from,
    lens_follow) of the picked model's lens: a copied link opens them, and switching tabs and back keeps them."""
    import urllib.parse

    from tests.support.browser import choose, slider

    page = open_page(browser, f"{app_url}/inside", viewport=(1400, 1400))
    main = main_area(page)
    handle = slider(page, "Positions shown, from")
    handle.focus()
    for _ in range(2):
        page.keyboard.press("ArrowRight")
    wait_until_idle(page)
    eventually(lambda: "lens_from=2" in page.evaluate("window.location.href"), what="lens_from=2 in the address")
    box = main.get_by_role("combobox", name="Follow one position")
    options = []
    box.click()
    page.get_by_role("option").first.wait_for()
    options = [o.inner_text() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    wanted = next(o for o in options if o != box.input_value() and o != options[0])
    choose(page, "Follow one position", wanted, where=main)
    eventually(lambda: "lens_follow=" in page.evaluate("window.location.href"), what="lens_follow in the address")
    link = page.url
    assert urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["lens_follow"] == [wanted]

    def kept(view) -> bool:
        return (
            slider(view, "Positions shown, from").input_value() == "2"
            and main_area(view).get_by_role("combobox", name="Follow one position").input_value() == wanted
        )

    main.get_by_role("tab", name="Head detectors").click()
    main.get_by_text("Highest:").first.wait_for()
    main.get_by_role("tab", name="Logit lens").click()
    wait_until_idle(page)
    assert eventually(lambda: kept(page), what="the lens's window and position after a tab switch")
    no_error_box(page)
    again = open_page(browser, link, viewport=(1400, 1400))  # the copied link, in a new session
    assert eventually(lambda: kept(again), what="the lens's window and position from the link")
    again.close()
    page.close()
