"""A classroom on one server: many browser sessions at once, with and without training runs.

Starts ``streamlit run app.py`` on 127.0.0.1 (a free port), then with headless chromium:

1. idle: one session on the Attention page flips the "Causal mask" toggle (its idle render time);
2. classroom: ``--sessions`` (20) sessions open Attention at once and each flips the toggle;
3. training: ``--trainers`` (5) sessions start a run on the Training page, and one more session
   browses Attention (flips the toggle) while they train.

Render time = from the click until Streamlit's "running" indicator has gone (as a student sees it).
Prints p50/p95 and the error count per phase. Bounded: at most 30 sessions, ``--budget`` seconds in all,
127.0.0.1 only. Usage: ``python benchmarks/load.py [--sessions 20] [--trainers 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
MAX_SESSIONS = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
                                "--server.port", str(port), "--server.headless", "true"],
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


async def idle(page, timeout: float = 120.0) -> float:
    """Wait until the script run is over; returns when it was first seen over (monotonic seconds)."""
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        running = await page.locator("[data-testid='stStatusWidget']").count() > 0
        now = time.monotonic()
        if running:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since > 1.0:
            return quiet_since
        await asyncio.sleep(0.05)
    raise TimeoutError("the page kept running")


async def open_attention(context, url: str):
    page = await context.new_page()
    await page.goto(f"{url}/attention", timeout=180_000)
    await page.wait_for_selector("[data-testid='stApp']", timeout=180_000)
    await page.get_by_text("Causal mask").first.wait_for(timeout=180_000)
    await idle(page, 180)
    return page


async def flip(page) -> float:
    """Flip the causal-mask toggle; seconds until the page has re-rendered."""
    start = time.monotonic()
    await page.get_by_text("Causal mask").first.click()
    # wait until the run has started (or already ended), then until it is over
    for _ in range(40):
        if await page.locator("[data-testid='stStatusWidget']").count() > 0:
            break
        await asyncio.sleep(0.05)
    end = await idle(page, 180)
    errors = await page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count()
    if errors:
        raise RuntimeError(f"{errors} error box(es) on the page")
    return end - start


async def session(browser, url: str) -> float:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = await open_attention(context, url)
        return await flip(page)
    finally:
        await context.close()


async def start_training(browser, url: str):
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    await page.goto(f"{url}/training", timeout=180_000)
    await idle(page, 180)
    main = page.get_by_test_id("stMainBlockContainer")
    steps = main.get_by_role("slider").nth(4)
    await steps.focus()
    await page.keyboard.press("End")  # 2000 steps: they keep training through the measurement
    await idle(page, 180)
    await main.get_by_role("button", name="Train", exact=True).click()
    # started, or waiting its turn in the queue (the server trains at most LLMVIZ_MAX_JOBS at once)
    await main.get_by_text(re.compile(r"running · step|waiting: number \d+ in the queue")).first.wait_for(timeout=300_000)
    return context


def summary(name: str, times: list[float], errors: int) -> list[str]:
    """One row of the table; printed at once, so a benchmark cut short by its budget still reports."""
    if not times:
        row = [name, "-", "-", "-", str(errors)]
    else:
        p95 = statistics.quantiles(times, n=20)[-1] if len(times) >= 2 else times[0]
        row = [name, str(len(times)), f"{statistics.median(times):.2f}", f"{p95:.2f}", str(errors)]
    print("row: " + " | ".join(row), flush=True)
    return row


async def main_async(args) -> list[list[str]]:
    from playwright.async_api import async_playwright

    port = free_port()
    server = start_server(port)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            # warm the caches (first model load), then the idle time of one session
            await session(browser, url)
            idle_times = [await session(browser, url) for _ in range(3)]
            rows.append(summary("1 session alone (idle)", idle_times, 0))

            results = await asyncio.gather(*[session(browser, url) for _ in range(args.sessions)],
                                           return_exceptions=True)
            times = [r for r in results if isinstance(r, float)]
            errors = [r for r in results if not isinstance(r, float)]
            for error in errors[:3]:
                print(f"error: {type(error).__name__}: {str(error)[:200]}", file=sys.stderr)
            rows.append(summary(f"{args.sessions} sessions at once", times, len(errors)))

            trainers = await asyncio.gather(*[start_training(browser, url) for _ in range(args.trainers)],
                                            return_exceptions=True)
            started = [t for t in trainers if not isinstance(t, BaseException)]
            for error in [t for t in trainers if isinstance(t, BaseException)][:3]:
                print(f"training error: {type(error).__name__}: {str(error)[:200]}", file=sys.stderr)
            busy, busy_errors = [], 0
            for _ in range(3):
                try:
                    busy.append(await session(browser, url))
                except Exception as error:  # noqa: BLE001 - counted and reported
                    busy_errors += 1
                    print(f"error: {type(error).__name__}: {str(error)[:200]}", file=sys.stderr)
            rows.append(summary(f"1 session while {len(started)} train", busy, busy_errors))
            for context in started:
                await context.close()
            await browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--trainers", type=int, default=5)
    parser.add_argument("--budget", type=float, default=900, help="seconds for the whole benchmark")
    args = parser.parse_args()
    if args.sessions + args.trainers + 1 > MAX_SESSIONS:
        raise SystemExit(f"at most {MAX_SESSIONS} sessions")
    started = time.time()
    rows = asyncio.run(asyncio.wait_for(main_async(args), timeout=args.budget))
    header = ["phase (Attention page, flip a toggle)", "renders", "p50 s", "p95 s", "errors"]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))
    print(f"(server and browser on this machine: {os.cpu_count()} CPUs; training cap "
          f"{os.environ.get('LLMVIZ_MAX_JOBS', 'CPU cores')}; total {time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
