"""A student with a keyboard alone, and on any screen (issue 70, items 4 and 5), in chromium.

Keyboard: the first Tab of every page reaches the skip link, shown while focused; Enter moves the focus to the page's
key picture. On the Model page the flow's controls, its columns and its tokens are reached in that order (one Tab
stop each for the columns and the tokens, the arrow keys inside), each with a visible focus; the arrow keys, Enter
and Space light and keep tokens, open a block and press Play. (The sidebar's step slider moved with the arrow keys:
tests/browser/test_flow.py.)

Screens: every page at a Chromebook's 1366×768, a tablet's 820×1180 with touch, and a phone's 390×844: no sideways
scrolling of the page, nothing of the main column wider than the screen, and at 1366×768 the page's key picture starts
within the first screen. A tap on the flow's token shows what a hover shows. A screenshot of each page at each size is
saved in ``screenshots/screens/``.
"""

import pytest

from tests.support.browser import SHOTS, main_area, open_page, settled, wait_until_idle
from tests.support.widget_walk import PAGES

pytestmark = pytest.mark.browser

FLOW = ".lvf[data-ready='1']"
FOCUSED = """() => { const e = document.activeElement; if (!e) return null;
  const box = e.getBoundingClientRect();
  return {tag: e.tagName, id: e.id, cls: String(e.className.baseVal ?? e.className), text: e.textContent.slice(0, 60),
          act: e.dataset.act ?? null, token: e.dataset.token ?? null, stage: e.dataset.stage ?? null,
          control: e.dataset.control ?? null, top: box.top, bottom: box.bottom, left: box.left,
          inView: box.bottom > 0 && box.top < innerHeight && box.width > 0,
          outline: getComputedStyle(e).outlineStyle, decoration: getComputedStyle(e).textDecorationLine,
          stroke: e.querySelector('.lvf-colbg') ? getComputedStyle(e.querySelector('.lvf-colbg')).strokeWidth : null};
}"""


def focused(page) -> dict:
    return page.evaluate(FOCUSED)


def test_the_skip_link_and_the_flow_by_keyboard(app_url, browser):
    page = open_page(browser, f"{app_url}/model", viewport=(1400, 1000))
    page.wait_for_selector(FLOW)
    page.keyboard.press("Tab")
    link = focused(page)
    assert link["id"] == "llmviz-skip" and link["text"] == "Skip to the picture", link
    assert link["inView"] and link["top"] >= 0, "the skip link is shown while it has the focus"
    page.keyboard.press("Enter")
    picture = focused(page)
    assert "st-key-picture_model" in picture["cls"] and picture["outline"] != "none", picture

    # from the picture, Tab walks the flow: its controls, one column, one token, then the sampling sliders
    walk = []
    for _ in range(14):
        page.keyboard.press("Tab")
        walk.append(focused(page))
    kinds = [
        f"button:{f['act']}"
        if f["act"]
        else "column"
        if f["stage"] is not None and "lvf-col" in f["cls"]
        else "token"
        if f["token"] is not None
        else f"input:{f['control']}"
        if f["control"]
        else f["tag"]
        for f in walk
    ]
    start = kinds.index("button:play")
    assert kinds[start : start + 4] == ["button:play", "button:back", "button:step", "button:all"], kinds
    assert kinds[start + 5 : start + 8] == ["column", "token", "input:Temperature"], kinds
    assert all(f["inView"] for f in walk[start : start + 8]), "every stop is scrolled into view"
    play, column, token = walk[start], walk[start + 5], walk[start + 6]
    assert play["outline"] != "none", "a visible focus on Play"
    assert float(column["stroke"].removesuffix("px")) >= 2, "a visible focus on the column"
    assert "underline" in token["decoration"], "a visible focus on the token"

    # the tokens: the arrow keys move and light, Enter keeps one lit, Space lets it go
    hot = "() => document.querySelector('.lvf').dataset.hot"
    for _ in range(len(walk) - 1 - (start + 6)):
        page.keyboard.press("Shift+Tab")  # back to the token
    assert focused(page)["token"] == "0"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page)["token"] == "2" and page.evaluate(hot) == "2"
    assert page.locator(".lvf-bartitle").inner_text() == "What position 2 predicts"
    page.keyboard.press("Enter")
    assert page.locator(".lvf-token[data-token='2']").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Space")
    assert page.locator(".lvf-token[data-token='2']").get_attribute("aria-pressed") == "false"
    page.keyboard.press("Shift+Tab")  # back to the columns, on the one focused last: the first
    assert focused(page)["stage"] == "0"
    stages = page.evaluate("() => document.querySelector('.lvf').lvf.data.stages.map((s) => s.kind)")
    first_block = stages.index("attn")
    for _ in range(first_block):
        page.keyboard.press("ArrowRight")
    assert focused(page)["stage"] == str(first_block)
    page.keyboard.press("Enter")  # the block opens into its heads
    page.locator(".lvf-headgrid[data-block='0']").wait_for()
    wait_until_idle(page)
    # Play by keyboard: Space on it, then the stages advance
    page.locator(".lvf-btn[data-act='play']").focus()
    page.keyboard.press("Space")
    page.wait_for_function("() => document.querySelector('.lvf').dataset.stage !== ''")
    page.keyboard.press("Space")  # and it pauses
    assert page.evaluate("() => document.querySelector('.lvf').lvf.playing") is False
    page.close()


# a Chromebook, a tablet in portrait (touch) and a phone (touch): (width, height, touch)
SCREENS = {"chromebook": (1366, 768, False), "tablet": (820, 1180, True), "phone": (390, 844, True)}
# What reaches past the screen's sides in the main column and is not inside a box that scrolls or clips it (a chart,
# a wide formula, a table scroll inside their own box, which the keyboard reaches: ui/static/reachable.js).
FITS = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const inBox = (e) => { for (let a = e.parentElement; a && a !== main; a = a.parentElement) {
      if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true; }
    return false; };
  const cut = [...main.querySelectorAll('*')].filter((e) => { const box = e.getBoundingClientRect();
      return box.width > 0 && box.height > 0 && (box.left < -1 || box.right > innerWidth + 1) && !inBox(e); })
    .map((e) => e.tagName + '.' + String(e.className.baseVal ?? e.className).slice(0, 50)).slice(0, 5);
  const picture = main.querySelector('[class*="st-key-picture_"], [data-testid="stPlotlyChart"]');
  return {wide: document.documentElement.scrollWidth, inner: innerWidth, cut,
          picture: picture ? picture.getBoundingClientRect().top : null};
}"""


def emulate(page, screen: str):
    """The window as ``screen``'s device, through chromium's DevTools protocol (the session must stay open): its
    size, and for a tablet or a phone a mobile layout and touch (Playwright's has_touch and is_mobile, which a
    persistent context takes only when launched)."""
    width, height, touch = SCREENS[screen]
    devtools = page.context.new_cdp_session(page)
    metrics = {"width": width, "height": height, "deviceScaleFactor": 2 if touch else 1, "mobile": touch}
    devtools.send("Emulation.setDeviceMetricsOverride", metrics)
    devtools.send("Emulation.setTouchEmulationEnabled", {"enabled": touch, "maxTouchPoints": 5})
    return devtools


def tap(devtools, page, selector: str) -> None:
    """A finger's tap on the middle of ``selector`` (a touch start and end: chromium makes the tap's click)."""
    box = page.locator(selector).bounding_box()
    point = {"x": box["x"] + box["width"] / 2, "y": box["y"] + box["height"] / 2}
    devtools.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
    devtools.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


@pytest.mark.parametrize("screen", list(SCREENS))
def test_every_page_fits_the_screen(app_url, browser, screen):
    width, height, touch = SCREENS[screen]
    held = {}
    page = open_page(
        browser, f"{app_url}/", viewport=(width, height), before=lambda p: held.update(d=emulate(p, screen))
    )
    assert page.evaluate("() => [innerWidth, navigator.maxTouchPoints > 0]") == [width, touch]
    folder = SHOTS / "screens"
    folder.mkdir(parents=True, exist_ok=True)
    problems = []
    for path in PAGES:
        if path:
            page.goto(f"{app_url}/{path}", timeout=120_000)
            wait_until_idle(page)
        main_area(page).locator('[data-testid="stPlotlyChart"], [class*="st-key-picture_"]').first.wait_for()
        measured = settled(page, FITS)
        page.screenshot(path=str(folder / f"{screen}-{path or 'home'}.png"))
        name = path or "home"
        if measured["wide"] > measured["inner"]:
            problems.append(f"{name}: the page scrolls sideways ({measured['wide']} px in {measured['inner']})")
        if measured["cut"]:
            problems.append(f"{name}: past the screen's side: {measured['cut']}")
        if screen == "chromebook" and not (measured["picture"] is not None and measured["picture"] < height):
            problems.append(f"{name}: the key picture starts at {measured['picture']} px, under the first screen")
    assert problems == [], "\n".join(problems)
    if touch:  # the flow's hover has a tap: a token tapped lights its path and shows what it predicts
        page.goto(f"{app_url}/model", timeout=120_000)
        wait_until_idle(page)
        page.wait_for_selector(FLOW)
        page.locator(".lvf-token[data-token='3']").scroll_into_view_if_needed()
        tap(held["d"], page, ".lvf-token[data-token='3']")
        assert page.evaluate("() => document.querySelector('.lvf').dataset.hot") == "3"
        assert page.locator(".lvf-bartitle").inner_text() == "What position 3 predicts"
        assert page.locator(".lvf-token[data-token='3']").get_attribute("aria-pressed") == "true"
        page.screenshot(path=str(folder / f"{screen}-model-tapped.png"))
    page.close()
