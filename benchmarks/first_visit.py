"""The first visit after the start: how long the first student waits for Home once the server says it is ready.

    python benchmarks/first_visit.py [--rounds 3] [--record]

Each round starts two servers from nothing, one after the other (the side that goes first alternating):

- **llmviz**: ``python run.py app`` (the app as a teacher starts it), and the first visitor opens Home over
  Streamlit's protocol (``_protocol_client.Student``) the moment ``run.py`` prints "the app is at …";
- **reference**: a bare Streamlit page (``_app.REFERENCE_PAGE``: torch imported, one Plotly heatmap) started with
  ``streamlit run``, opened the moment the server answers its health check (what "ready" means for a bare page).

What is timed is the visit only: from the ready moment to the end of the page's first script run, as the client saw
it. The round's ratio (llmviz's visit over the bare page's) is taken at once; the median per-round ratio is printed
with its spread and the load average (``_rounds.py``). Issue 71 §2 asks for the first visit after the ready line to
take at most 3 s on a quiet machine: before ``run.py`` warmed the app before saying so, it took 19.1 s.

``--record`` appends the dated result to docs/benchmarks/first_visit.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _app import REFERENCE_PAGE  # noqa: E402
from _protocol_client import Student  # noqa: E402
from _rounds import Rounds, load_average  # noqa: E402
from record import commit, machine  # noqa: E402

from tests.support.app_server import command, free_port  # noqa: E402
from tests.support.run_py_app import ready_app  # noqa: E402

RECORD = ROOT / "docs" / "benchmarks" / "first_visit.md"
READY_S = 600  # a server that has not said it is ready after this long has failed


def _start(command: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _visit(url: str, page: str) -> float:
    """Seconds for a first visitor's open of ``page`` to end its script run (no error allowed)."""

    async def go() -> float:
        async with Student(url, timeout_s=READY_S) as student:
            began = time.perf_counter()
            run = await student.open(page)
            if run.errors:
                raise RuntimeError(f"the page drew an error: {run.errors[:1]}")
            return time.perf_counter() - began

    return asyncio.run(go())


def llmviz_visit(folder: Path) -> float:
    """``run.py app`` from nothing; Home opened when it prints the ready line."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LLMVIZ_RUNS_DIR": str(folder / "runs")}
    with ready_app(port, env, timeout_s=READY_S):
        return _visit(f"http://127.0.0.1:{port}", "")


def reference_visit(folder: Path) -> float:
    """A bare Streamlit page from nothing; opened when its health check answers."""
    page = folder / "reference.py"
    page.write_text(REFERENCE_PAGE, encoding="utf-8")
    port = free_port()
    env = {**os.environ, "LLMVIZ_TIMINGS": str(folder / "timings.jsonl")}
    server = _start(command(page, port), env)
    try:
        deadline = time.monotonic() + READY_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the bare page's server did not start") from None
                time.sleep(0.1)
        return _visit(f"http://127.0.0.1:{port}", "")
    finally:
        _stop(server)


def measure(rounds: int) -> Rounds:
    found = Rounds()
    sides = {"llmviz": llmviz_visit, "reference": reference_visit}
    for number in range(rounds):
        order = list(sides) if number % 2 == 0 else list(reversed(sides))
        for side in order:
            with tempfile.TemporaryDirectory(prefix="llmviz-first-visit-") as folder:
                found.add(side, sides[side](Path(folder)))
    return found


def report(found: Rounds, load_before: str) -> str:
    llmviz, reference = found.seconds["llmviz"], found.seconds["reference"]
    lines = [
        "| round | llmviz: Home after 'the app is at' (s) | bare Streamlit page after its health check (s) |",
        "|---|---|---|",
        *(f"| {n + 1} | {a:.2f} | {b:.2f} |" for n, (a, b) in enumerate(zip(llmviz, reference, strict=True))),
        "",
        f"- llmviz's first visit: median {sorted(llmviz)[len(llmviz) // 2]:.2f} s (issue 71 §2: at most 3 s quiet)",
        f"- llmviz over the bare page, per round: {found.summary('llmviz', 'reference')}",
        f"- load average before: {load_before}; after: {load_average()}",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each side once per round (default 3)")
    parser.add_argument("--record", action="store_true", help=f"append the result to {RECORD.relative_to(ROOT)}")
    args = parser.parse_args()
    load_before = load_average()
    found = measure(max(1, args.rounds))
    text = report(found, load_before)
    print(text)
    if args.record:
        began = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        with RECORD.open("a", encoding="utf-8") as out:
            out.write(
                f"\n## {began}\n\n- machine: {machine()}\n- commit: {commit()}\n"
                f"- command: `python benchmarks/first_visit.py --rounds {args.rounds} --record`\n\n{text}\n"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
