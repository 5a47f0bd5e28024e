"""Re-take docs/classroom.md's "Teaching live" pictures: a poll's answers on the projector and a student's screen.

    python scripts/screenshot_class_poll.py [--out docs/screenshots]

Starts the app with a lab of its own (a temporary folder, the tests' teacher key), opens Sampling as the teacher in
presenter mode at 1280×720, asks the class the page's first Predict-then-reveal question, lets three students (three
browser identities) answer it, and saves the teacher's projector (``class-poll-projector.png``) and, after Reveal,
one student's screen at 1400×1000 (``class-poll-student.png``). Needs Debian's chromium (/usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.app_server import TEACHER_KEY, free_port, lab_server  # noqa: E402
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, main_area, open_page, wait_until_idle  # noqa: E402

LAST_SLIDE = "() => { const P = window.__llmvizPresent; P.goto(P.count() - 1); }"


def take(out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    saved = []
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        server = lab_server(Path(folder), free_port())
        browser = playwright.chromium.launch_persistent_context(
            Path(folder) / "profile", executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            teacher = open_page(browser, f"{server.url}/sampling?teacher={TEACHER_KEY}&present=1", viewport=(1280, 720))
            teacher.evaluate(LAST_SLIDE)  # the questions are presenter mode's last slide
            main = main_area(teacher)
            main.get_by_text("Predict, then reveal: guess before you look").first.click()
            main.get_by_role("button", name="Ask me").first.click()
            main.get_by_role("button", name="Ask the class").first.click()
            teacher.get_by_text("No student has answered yet.").first.wait_for()
            students = [open_page(browser, f"{server.url}/sampling", viewport=(1400, 1000)) for _ in range(3)]
            for number, student in enumerate(students):
                box = student.locator(".st-key-live_poll")
                box.get_by_text("The teacher asks the class").wait_for()
                box.locator('[role="radiogroup"] label').nth(min(number, 1)).click()
                box.get_by_text("” is in: change it until").wait_for()
            teacher.get_by_text("3 students answered").first.wait_for()
            wait_until_idle(teacher)
            teacher.evaluate(LAST_SLIDE)
            teacher.evaluate("document.activeElement && document.activeElement.blur()")  # no tooltip over it
            teacher.mouse.move(5, 715)
            asked = main.get_by_text("Asked the class").first
            asked.evaluate("node => node.scrollIntoView({block: 'start'})")  # the chart and its sentence in view
            teacher.evaluate("() => document.querySelector('[data-testid=stMain]').scrollBy(0, -80)")  # the bar
            saved.append(out / "class-poll-projector.png")
            teacher.screenshot(path=str(saved[-1]))
            teacher.locator(".st-key-live_reveal button").first.click()
            student = students[0]
            student.locator(".st-key-live_poll").get_by_text("The model's answer").first.wait_for()
            wait_until_idle(student)
            saved.append(out / "class-poll-student.png")
            student.screenshot(path=str(saved[-1]))
        finally:
            browser.close()
            server.stop()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = parser.parse_args(argv)
    for path in take(Path(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
