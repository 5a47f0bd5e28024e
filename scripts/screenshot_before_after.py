"""Re-take README's "step 0 vs step N" picture (docs/screenshots/before-after.png) from a real run.

    python scripts/screenshot_before_after.py [--steps 600] [--port 8531]

Starts ``streamlit run app.py`` on 127.0.0.1, trains GPT micro on the Python manual through the Training page
(as a student would: the Train button), waits until the run finishes, opens Attention with the run picked at its
last step and saves the "Step 0 vs step N" section with headless Debian chromium (``/usr/bin/chromium``).
"""

import argparse
import shutil
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.app_server import running_app  # noqa: E402
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, go, main_area, open_page  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--port", type=int, default=8531)
    parser.add_argument("--out", default=str(ROOT / "docs/screenshots/before-after.png"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp())
    env = {"HF_HUB_OFFLINE": "1", "LLMVIZ_RUNS_DIR": str(folder / "runs"), "LLMVIZ_CACHE_DIR": str(folder / "cache")}
    try:
        with running_app("app.py", port=args.port, env=env, timeout_s=90) as server:
            url = server.url
            link = "training?" + urllib.parse.urlencode(
                {"train_model": "GPT micro (2 layers, d 64)", "steps": args.steps}
            )
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = open_page(browser, f"{url}/{link}", viewport=(1400, 1200))
                main_area(page).get_by_role("button", name="Train", exact=True).click()
                main_area(page).get_by_text(f"finished · step {args.steps}/{args.steps}", exact=False).first.wait_for(
                    timeout=900_000
                )
                go(page, "Attention")
                section = main_area(page).get_by_text("Step 0 vs step N", exact=True).first
                section.scroll_into_view_if_needed()
                main_area(page).get_by_text(f"Step {args.steps}", exact=True).first.wait_for()
                time.sleep(2)  # the two heatmaps draw after the script run
                section.evaluate("element => element.scrollIntoView({block: 'start'})")
                time.sleep(0.5)
                page.screenshot(path=args.out)
                browser.close()
            print(f"saved {args.out}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
