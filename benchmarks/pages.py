"""Server time of each page's first render and of each section's widget rerun, in a real browser.

    python benchmarks/pages.py [--pages attention,tokens] [--model KEY] [--port 8520] [--repeats 3]

How it measures: the app runs under ``streamlit run app.py`` with ``LLMVIZ_TIMINGS=<file>``; app.py
then logs the server time of every whole script run (``page:<name>``) and ``ui.sections`` logs every
``st.fragment`` section's run. Headless chromium opens each page (first render: models load once per
server, so the first page pays for them) and changes one widget per section, like a student; each
change's server time is read from the log: a fragment rerun when the section reran alone, or
``(full)`` when the whole page reran (the page's shared inputs, such as the Sampling prompt).

Reference: a bare Streamlit page that imports torch and draws one 48 × 48 Plotly heatmap, with one
slider, measured the same way (its first render and a slider rerun) on the same machine.

Hook for other models (e.g. GPT-2, issue 17): ``--model hub:gpt2`` opens every page with ``?model=``
set, so the shared picker shows that model; ``extra_actions`` takes per-page actions to add.
Timings on a shared, busy CPU are inflated: say so when quoting them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
TARGET_MS = 150

REFERENCE_PAGE = '''
import json, os, time
_start = time.perf_counter()
import plotly.graph_objects as go
import streamlit as st
import torch

size = st.slider("Size", 8, 64, 48)
torch.manual_seed(0)
st.plotly_chart(go.Figure(go.Heatmap(z=torch.rand(size, size).tolist())))
with open(os.environ["LLMVIZ_TIMINGS"], "a") as out:
    out.write(json.dumps({"section": "page:reference", "seconds": time.perf_counter() - _start, "rerun": False}) + "\\n")
'''


@dataclass
class Action:
    """One widget change: what a student does, and the section (fragment) expected to rerun."""

    section: str
    what: str
    do: object  # callable(page) -> None
    setup: object = None  # callable(page) -> None, run (and not timed) before ``do``


def slider_step(label: str, index: int = 0, key: str = "ArrowRight"):
    def do(page):
        thumb = page.locator("[data-testid='stSlider']").filter(has_text=label).get_by_role("slider").nth(index)
        thumb.focus()
        page.keyboard.press(key)
    return do


def click_text(text: str):
    def do(page):
        page.get_by_test_id("stMainBlockContainer").get_by_text(text, exact=True).first.click()
    return do


def fill(label: str, value: str):
    def do(page):
        box = page.get_by_test_id("stMainBlockContainer").get_by_label(label, exact=True).first
        box.fill(value)
        box.press("Enter")
    return do


def click_button(prefix: str):
    def do(page):
        import re

        pattern = re.compile("^" + re.escape(prefix))
        page.get_by_test_id("stMainBlockContainer").get_by_role("button", name=pattern).first.click()
    return do


def train_small_bpe(page):
    main = page.get_by_test_id("stMainBlockContainer")
    main.get_by_role("button", name="Train BPE").click()
    main.get_by_text("Merge table").first.wait_for(timeout=300_000)


ACTIONS: dict[str, list[Action]] = {
    "attention": [
        Action("attention.toy", "toggle the causal mask", click_text("Causal mask")),
        Action("attention.head", "layer slider (picked GPT)", slider_step("Layer", 0)),
        Action("attention.before_after", "layer slider (step 0 vs N)", slider_step("Layer", 1)),
        Action("attention.head", "layer slider (MiniLM)", slider_step("Layer", 2)),
        Action("attention.sentence", "a new sentence", fill("Sentence", "The cat sat on the mat because it was tired")),
    ],
    "tokens": [
        Action("tokens.side_by_side", "ids under the tokens on/off", click_text("Show the ids under the tokens")),
        Action("tokens.pairs", "context size slider", slider_step("Context size")),
        Action("tokens.replay", "replay slider (after training a BPE)", slider_step("Merges applied"),
               setup=train_small_bpe),
    ],
    "embeddings": [
        Action("embeddings.cosine", "compare another pair", click_text("v₁ and v₃")),
        Action("embeddings.projection", "3D PCA", click_text("3D PCA")),
        Action("embeddings.tokens", "nearest neighbours of a new token", fill("Nearest neighbours of", " class")),
        Action("embeddings.sinusoidal", "positions slider", slider_step("Positions")),
        Action("embeddings.token_plus_position", "a new sentence", fill("Sentence", "while True: pass")),
    ],
    "sampling": [
        Action("sampling.generate", "tokens-to-generate slider", slider_step("Tokens to generate", 0)),
        Action("sampling.step_mode", "take the sampled token", click_button("Take the sampled token")),
        Action("sampling.kv_cache", "KV tokens slider", slider_step("Tokens to generate", 1)),
        Action("page:sampling", "temperature (shared by every section)", slider_step("Temperature")),
    ],
    "model": [
        Action("model.inside", "a new sentence", fill("A sentence", "The while statement repeats a block")),
    ],
}
extra_actions: dict[str, list[Action]] = {}  # hook: e.g. extra_actions["attention"].append(Action(...))


def free_port(preferred: int) -> int:
    for port in range(preferred, preferred + 10):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise SystemExit(f"no free port in {preferred}-{preferred + 9}")


def start_server(script: str, port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "LLMVIZ_TIMINGS": str(log), "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
           "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.address", "127.0.0.1", "--server.port",
         str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return process
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("streamlit did not start")


def read_log(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def wait_idle(page, timeout_s: float = 300) -> None:
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_s * 1000)
    deadline, quiet_since = time.time() + timeout_s, None
    while time.time() < deadline:
        if page.locator("[data-testid='stStatusWidget']").count() > 0:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.time()
        elif time.time() - quiet_since > 1.0:
            return
        time.sleep(0.1)
    raise RuntimeError("the page kept running")


def timed(page, log: Path, do) -> list[dict]:
    """Run ``do(page)``, wait for the app to settle, return the log lines it produced."""
    before = len(read_log(log))
    do(page)
    deadline = time.time() + 30  # a change that reruns nothing is reported as "no rerun"
    while len(read_log(log)) == before and time.time() < deadline:
        time.sleep(0.05)
    wait_idle(page)
    return read_log(log)[before:]


def describe(lines: list[dict], section: str) -> tuple[float | None, str]:
    """Server time of what reran: the section's fragment alone, or the whole page."""
    pages = [line for line in lines if line["section"].startswith("page:")]
    if pages:
        return sum(line["seconds"] for line in pages), "full"
    own = [line for line in lines if line["section"] == section and line["rerun"]]
    if own:
        return sum(line["seconds"] for line in own), "fragment"
    if lines:
        return sum(line["seconds"] for line in lines if line["rerun"]), "+".join(sorted({x["section"] for x in lines}))
    return None, "no rerun"


def errors_on(page) -> int:
    return page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count()


def machine() -> str:
    cores = os.cpu_count()
    try:
        load = f", load average {os.getloadavg()[0]:.1f}"
    except OSError:
        load = ""
    import torch

    return (f"{platform.machine()} {platform.system()}, {cores} CPU cores{load}, Python {platform.python_version()}, "
            f"torch {torch.__version__}, {'CUDA' if torch.cuda.is_available() else 'CPU only'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default=",".join(ACTIONS))
    parser.add_argument("--model", default="", help="a picker key for every page, e.g. hub:gpt2")
    parser.add_argument("--port", type=int, default=int(os.environ.get("LLMVIZ_BENCH_PORT", 8520)))
    parser.add_argument("--repeats", type=int, default=3, help="widget changes per section (median reported)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="llmviz-pages-bench-"))
    rows: list[tuple[str, str, str, float | None, str]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"])
        try:
            # the reference: a bare page
            (work / "reference.py").write_text(REFERENCE_PAGE)
            log = work / "reference.jsonl"
            port = free_port(args.port)
            server = start_server(str(work / "reference.py"), port, log)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                first = timed(page, log, lambda p: p.goto(f"http://127.0.0.1:{port}/"))
                rows.append(("reference", "first render", "bare page: import torch + one heatmap",
                             first[-1]["seconds"] if first else None, "full"))
                reruns = [timed(page, log, slider_step("Size"))[-1]["seconds"] for _ in range(args.repeats)]
                rows.append(("reference", "widget rerun", "slider", statistics.median(reruns), "full"))
                page.close()
            finally:
                server.terminate()
                server.wait(timeout=20)

            log = work / "app.jsonl"
            port = free_port(args.port)
            server = start_server("app.py", port, log)
            query = f"?model={args.model}" if args.model else ""
            try:
                for name in [p for p in args.pages.split(",") if p]:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    lines = timed(page, log, lambda p, n=name: p.goto(f"http://127.0.0.1:{port}/{n}{query}"))
                    first = [x for x in lines if x["section"].startswith("page:")]
                    rows.append((name, "first render", "open the page (cold: loads its models)",
                                 first[-1]["seconds"] if first else None, "full"))
                    lines = timed(page, log, lambda p: p.reload())
                    again = [x for x in lines if x["section"].startswith("page:")]
                    rows.append((name, "render", "open it again (models cached)",
                                 again[-1]["seconds"] if again else None, "full"))
                    for action in ACTIONS.get(name, []) + extra_actions.get(name, []):
                        try:
                            if action.setup:
                                action.setup(page)
                                wait_idle(page)
                            samples, kinds = [], set()
                            for _ in range(args.repeats):
                                seconds, kind = describe(timed(page, log, action.do), action.section)
                                if seconds is not None:
                                    samples.append(seconds)
                                kinds.add(kind)
                            rows.append((name, action.section, action.what,
                                         statistics.median(samples) if samples else None, "/".join(sorted(kinds))))
                            print("measured:", *rows[-1], flush=True)
                        except Exception as error:  # a missing widget must not end the whole table
                            rows.append((name, action.section, f"{action.what} (failed: {type(error).__name__})",
                                         None, "-"))
                    if errors_on(page):
                        rows.append((name, "errors", f"{errors_on(page)} error box(es) on the page", None, "-"))
                    page.close()
            finally:
                server.terminate()
                server.wait(timeout=20)
        finally:
            browser.close()

    print(f"Server time per page and per widget change, headless chromium, median of {args.repeats}.")
    print(f"Machine: {machine()}.")
    print(f"Model: {args.model or 'the default (shipped GPT)'}. Target for a section's widget change: "
          f"<= {TARGET_MS} ms.\n")
    print(f"| page | what | change | server ms | reran | ≤ {TARGET_MS} ms |")
    print("|---|---|---|---:|---|---|")
    for page_name, section, what, seconds, kind in rows:
        ms = "-" if seconds is None else f"{seconds * 1000:.0f}"
        verdict = "" if seconds is None or section in ("first render", "render") or page_name == "reference" else (
            "yes" if seconds * 1000 <= TARGET_MS else "no")
        print(f"| {page_name} | {section} | {what} | {ms} | {kind} | {verdict} |")


if __name__ == "__main__":
    main()
