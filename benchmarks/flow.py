"""The flow (the Model page's key picture) against its budgets, for the shipped GPT and a 20-token sentence:

- the payload: its JSON size (budget 300 KB) and the time to compute it (the forward pass with its cache, then the
  payload), in this process, median of ``--rounds``;
- the first frame: from the moment the browser holds the data (the server's forward pass done) to the first
  animation frame after the picture is drawn (budget 1 s), and from opening the page to that frame;
- hover: a token lit every animation frame (the next token each frame, as a mouse sweeping down the tokens), frame
  times from ``requestAnimationFrame`` (budget ≥ 50 frames per second: a median frame ≤ 20 ms);
- Play: the animation at speed 4 through every stage, the page's frame times while the pulse moves (same budget);
- no server rerun: the script runs the server logged during hover and Play (must be 0).

    python benchmarks/flow.py [--rounds 3]

Headless chromium draws at most 60 frames per second (a frame every 16.7 ms): 60 is the ceiling. The machine's load
average is printed before and after: these are wall-clock times, inflated on a busy machine.

Not in rounds: one side only, the flow measured against fixed budgets (size, first frame, frame rate), with no
second implementation to compare it with.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _app import CHROMIUM, CHROMIUM_ARGS, ROOT, App, fmt_s, free_port, load_average, machine, require_browser, table

SENTENCE = "The result is then bound to the class name. The assigned object should be a sequence object of the"
FLOW = ".lvf[data-ready='1']"
IDLE = (
    """() => document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state') === 'notRunning'"""
)
HOVER = """async (seconds) => {
  const v = document.querySelector('.lvf').lvf;
  const labels = [...document.querySelectorAll('.lvf-token')];
  const times = [];
  let previous = performance.now(), n = 0;
  const end = previous + seconds * 1000;
  await new Promise((resolve) => {
    const frame = (now) => {
      times.push(now - previous); previous = now;
      labels[n++ % labels.length].dispatchEvent(new MouseEvent('mouseenter'));
      if (now < end) requestAnimationFrame(frame); else resolve();
    };
    requestAnimationFrame(frame);
  });
  return times.slice(1);
}"""
PLAY = """async () => {
  const v = document.querySelector('.lvf').lvf;
  window.lvfProbe.frames = [];
  document.querySelector('.lvf-btn[data-act="all"]').click();
  v.speed = 4;
  document.querySelector('.lvf-btn[data-act="play"]').click();
  await new Promise((resolve) => { const wait = () => (v.playing ? setTimeout(wait, 50) : resolve()); wait(); });
  await new Promise((resolve) => setTimeout(resolve, 400));
  return window.lvfProbe.frames.slice();
}"""
# what the page's frames and first frame were, watched from outside the flow (the browser tests' probe)
PROBE = ROOT / "tests" / "browser" / "flow_probe.js"


def payload_times(rounds: int) -> tuple[int, list[float]]:
    from llmviz.lessons import flow
    from llmviz.tokenizers.ids import encode
    from llmviz.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")[:3]
    ids = encode(tokenizer, SENTENCE)
    assert len(ids) == 20, len(ids)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        payload = flow.flow_payload(model.eval(), tokenizer, ids)
        times.append(time.perf_counter() - start)
    return flow.payload_bytes(payload), times


def frame_stats(times: list[float]) -> str:
    ordered = sorted(times)
    median = statistics.median(ordered)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    mean = statistics.fmean(ordered)
    return (
        f"median {median:.1f} ms ({1000 / median:.0f} fps); mean {mean:.1f} ms ({1000 / mean:.0f} fps); "
        f"p95 {p95:.1f} ms ({1000 / p95:.0f} fps); {len(times)} frames"
    )


def browser_round(app: App, page) -> dict:
    runs = len(app.timings.read_text().splitlines()) if app.timings.exists() else 0
    opened = time.monotonic()
    page.goto(f"{app.url}/model?" + urllib.parse.urlencode({"flow_sentence": SENTENCE}), timeout=180_000)
    page.wait_for_selector(FLOW, timeout=180_000)
    page.wait_for_function("() => window.lvfProbe.firstFrameMs !== undefined")
    open_to_frame = time.monotonic() - opened
    first_frame = page.evaluate("() => window.lvfProbe.firstFrameMs") / 1000
    tokens = page.evaluate("() => document.querySelector('.lvf').lvf.data.tokens.length")
    page.wait_for_function(IDLE, timeout=180_000)  # the page's script run has ended: then count what hover and Play run
    time.sleep(1)
    runs = len(app.timings.read_text().splitlines()) if app.timings.exists() else 0
    hover = page.evaluate(HOVER, 3)
    play = page.evaluate(PLAY)
    after = len(app.timings.read_text().splitlines()) if app.timings.exists() else 0
    return {
        "tokens": tokens,
        "first": first_frame,
        "open": open_to_frame,
        "hover": hover,
        "play": play,
        "reruns": after - runs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load_before = load_average()
    require_browser()
    size, compute = payload_times(args.rounds)
    from playwright.sync_api import sync_playwright

    rounds = []
    with App(port=free_port(8771)) as app, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(path=str(PROBE))
        for _ in range(args.rounds):
            rounds.append(browser_round(app, page))
        browser.close()
    hover = [t for r in rounds for t in r["hover"]]
    play = [t for r in rounds for t in r["play"]]
    first = [r["first"] for r in rounds]
    opened = [r["open"] for r in rounds]
    rows = [
        ["payload (JSON)", f"{size / 1000:.1f} KB", "≤ 300 KB"],
        [
            "forward pass + payload (server)",
            f"{fmt_s(statistics.median(compute), 3)} s (median of {len(compute)})",
            "-",
        ],
        ["first frame after the data", f"{fmt_s(statistics.median(first), 3)} s (max {fmt_s(max(first), 3)})", "≤ 1 s"],
        ["open the page → first frame", f"{fmt_s(statistics.median(opened))} s (max {fmt_s(max(opened))})", "-"],
        ["hover, a token a frame", frame_stats(hover), "≥ 50 fps"],
        ["Play at 4×", frame_stats(play), "≥ 50 fps"],
        ["server runs during hover and Play", str(sum(r["reruns"] for r in rounds)), "0"],
    ]
    print(f"The shipped GPT, {rounds[0]['tokens']} tokens, {args.rounds} rounds, chromium at 1400×1000.\n")
    print(table(["measure", "value", "budget"], rows))
    print()
    print("\n".join(machine(load_before)))
    print(json.dumps({"hover_median_ms": statistics.median(hover), "play_median_ms": statistics.median(play)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
