"""How much memory a training worker holds, and how close llmviz's estimate of a run's peak comes.

``python benchmarks/worker_memory.py [--cases gpt-micro,sae] [--starts forkserver,spawn]`` submits what the pages submit
(``tests/support/worker_peak.py``'s cases: the Training page's runs of each model family, dropout on and off, the
Adapting page's fine-tuning and its LoRA race, the Inside page's autoencoder) to a ``JobManager`` with process workers,
with the page's own estimate, and reads the worker process's peak resident memory (``VmHWM``, Linux only), each case
in a process of its own, for two ways a worker starts:

- ``forkserver``: as the server starts them, forked from the forkserver that preloaded torch and the trainer (its
  resident size counts only the library pages it touched since the fork);
- ``spawn``: a fresh interpreter running the same worker entry (a Ray worker, a platform without a forkserver),
  which counts every page it maps.

``gpt-nano`` (one step, batch 1 × 8) is the worker itself after a first step
(:data:`llmviz.training.footprint.WORKER_BYTES`). The table goes to stdout with the load average before and after
(memory does not depend on the load, but a busy machine's other processes can leave less of it); dated results are
kept in ``docs/benchmarks/worker_memory.md``.

Not in rounds: it measures memory, not time (a worker's peak does not move with the machine's load), and the
estimate it is held against is computed, not a second run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

from _rounds import load_average  # this folder is on sys.path (the benchmarks' shared helpers)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.worker_peak import CASES  # noqa: E402

MB = 2**20


def measure(case: str, start: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.worker_peak", case, start],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        return {"case": case, "start": start, "errors": [done.stderr.strip().splitlines()[-1:]]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    parser.add_argument("--starts", default="spawn,forkserver")
    args = parser.parse_args()
    from llmviz.training.footprint import WORKER_BYTES

    print(f"# worker memory · {datetime.date.today()} · {platform.platform()} · Python {sys.version.split()[0]}")
    print(f"load average before: {load_average()}; the worker counted at {WORKER_BYTES // MB} MB\n")
    print("| run (worker start) | estimate (MB) | measured peak (MB) | estimate / measured |")
    print("| --- | ---: | ---: | ---: |")
    for case in args.cases.split(","):
        for start in args.starts.split(","):
            found = measure(case, start)
            if found.get("errors") or not found.get("peak"):
                print(f"| {case} ({start}): failed: {found.get('errors')} | | | |")
                continue
            estimate, peak = found["estimate"] / MB, found["peak"] / MB
            print(f"| {case} ({start}) | {estimate:.0f} | {peak:.0f} | {estimate / peak:.2f} |")
            if case == "gpt-nano":
                print(f"|   (worker after one step: resident {peak:.0f} MB, {start}) | | | |")
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
