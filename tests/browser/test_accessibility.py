"""Every page, tab, the sidebar, presenter mode and the class view checked by axe-core in chromium (issue 70).

axe-core (the engine browsers' accessibility audits use; pinned through ``axe-playwright-python``) runs its WCAG 2.1
A and AA rules (tags ``wcag2a``, ``wcag2aa``, ``wcag21a``, ``wcag21aa``) on the page as a student sees it: a page and
each of its tabs at 1400×1000 with every expander of the main area opened, the sidebar open, every page in presenter
mode at 1280×720, and the teacher's class view. A test fails on any violation axe rates critical or serious, naming
the rule, how many elements and the first few of them. The rules switched off, and why, are in
docs/accessibility.md (:data:`DISABLED`). Each case's findings (every impact) are written to
``screenshots/accessibility/<case>.json``; docs/benchmarks/accessibility.md counts them before and after the fixes.

All of it is CI's lane (``-m ci``): it draws every tab and opens every expander, which the suite leaves to CI
(docs/testing.md, "Lanes and markers").
"""

import json

import pytest

from tests.support.app_server import start_app
from tests.support.browser import SHOTS, main_area, open_page, settled, shot, wait_until_idle
from tests.support.widget_walk import CASES, PAGES, Case

pytestmark = pytest.mark.browser

TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
#: rules switched off, each with its reason in docs/accessibility.md
DISABLED: dict[str, str] = {}
FAILING = {"critical", "serious"}
REPORTS = SHOTS / "accessibility"


def audit(page, name: str) -> list[dict]:
    """axe-core's WCAG 2.1 A/AA violations on ``page`` as it is drawn now, saved to ``screenshots/accessibility``."""
    from axe_playwright_python.sync_playwright import Axe

    settled(page)
    options = {
        "runOnly": {"type": "tag", "values": TAGS},
        "resultTypes": ["violations"],
        "rules": {rule: {"enabled": False} for rule in DISABLED},
    }
    found = Axe().run(page, options=options).response["violations"]
    violations = [
        {
            "rule": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [
                {"target": n["target"], "html": n["html"][:300], "summary": n.get("failureSummary", "")[:400]}
                for n in v["nodes"]
            ],
        }
        for v in found
    ]
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{name}.json").write_text(json.dumps(violations, indent=1))
    shot(page, f"accessibility-{name}")
    return violations


def assert_accessible(violations: list[dict]) -> None:
    serious = [v for v in violations if v["impact"] in FAILING]
    lines = [
        f"{v['rule']} ({v['impact']}, {len(v['nodes'])} elements): {v['help']}\n"
        + "\n".join(f"    {n['target']} {n['html'][:160]}\n      {n['summary'][:240]}" for n in v["nodes"][:4])
        for v in serious
    ]
    assert not serious, "axe-core's WCAG 2.1 A/AA violations:\n" + "\n".join(lines)


def open_expanders(page) -> None:
    """Open every closed expander of the main area, as they come (a lazy section draws more once opened)."""
    for _ in range(30):
        closed = main_area(page).locator("[data-testid='stExpander'] details:not([open]) > summary")
        if closed.count() == 0:
            return
        closed.first.scroll_into_view_if_needed()
        closed.first.click()
        wait_until_idle(page)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_page_and_tab(app_url, browser, case: Case):
    page = open_page(browser, f"{app_url}/{case.path}{case.query}", viewport=(1400, 1000))
    open_expanders(page)
    assert_accessible(audit(page, case.name))
    page.close()


@pytest.mark.parametrize("path", list(PAGES), ids=[path or "home" for path in PAGES])
def test_presenter_mode(app_url, browser, path: str):
    """Every page in presenter mode at 1280×720 (its larger type and its Back/Next bar), Home at ``/`` (its
    ``/start`` is not an address: Streamlit serves the default page at ``/`` and answers "Page not found")."""
    page = open_page(browser, f"{app_url}/{path}?present=1", viewport=(1280, 720))
    assert page.get_by_text("Page not found").count() == 0
    assert_accessible(audit(page, f"presenter-{path or 'home'}"))
    page.close()


TEACHER_KEY = "a-long-random-teacher-key-for-the-accessibility-check"


def test_the_class_view_and_the_teachers_home(browser, tmp_path):
    """The teacher's class view and Home as the teacher sees it (the address students open), on a server with a
    teacher key."""
    env = {
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(tmp_path / "runs"),
        "LLMVIZ_CACHE_DIR": str(tmp_path / "cache"),
        "LLMVIZ_TEACHER_KEY": TEACHER_KEY,
        # the test server listens on 127.0.0.1: the proxy's address makes the card show its QR code
        "LLMVIZ_PUBLIC_URL": "http://llm.school.example:8080",
    }
    server = start_app("app.py", env=env, log=tmp_path / "server.log")
    try:
        page = open_page(browser, f"{server.url}/classroom?teacher={TEACHER_KEY}", viewport=(1400, 1000))
        open_expanders(page)
        class_view = audit(page, "classroom")
        page.goto(f"{server.url}/")
        wait_until_idle(page)
        assert page.get_by_role("img", name="QR code of http://llm.school.example:8080", exact=True).count() == 1
        home = audit(page, "teacher-home")
        assert_accessible(class_view + home)
        page.close()
    finally:
        server.stop()
