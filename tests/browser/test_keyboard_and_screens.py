"""A student with a keyboard alone (issue 70, item 4), in chromium.

Keyboard: the first Tab of every page reaches the skip link, shown while focused; Enter moves the focus to the page's
key picture. On the Model page the flow's controls, its columns and its tokens are reached in that order (one Tab
stop each for the columns and the tokens, the arrow keys inside), each with a visible focus; the arrow keys, Enter
and Space light and keep tokens, open a block and press Play. (The sidebar's step slider moved with the arrow keys:
tests/browser/test_flow.py.)

(The screen-size tests of item 5 are not written here yet.)
"""

import pytest

from tests.support.browser import open_page, wait_until_idle

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
