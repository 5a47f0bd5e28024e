"""Run a benchmark and append what it printed, dated, to its results file in docs/benchmarks/.

    python benchmarks/record.py sampling     # runs benchmarks/sampling.py, appends to docs/benchmarks/sampling.md
    python benchmarks/record.py pages -- --model hub:gpt2   # arguments after -- go to the benchmark

Each entry starts with the date (UTC), the machine (CPU model and cores, the system, Python and torch), the load
average when the run began, the commit the working tree is on (marked "+ changes" when it differs from it) and the
command, then the benchmark's own output, as it printed it. Older entries stay: the file is the benchmark's history.
Nothing is recorded when the benchmark fails.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "benchmarks"


def _git(*arguments: str) -> str:
    try:
        return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def commit() -> str:
    """The commit the working tree is on, and whether it has changes (``abc1234 + changes``)."""
    head = _git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" + changes" if _git("status", "--porcelain", "--untracked-files=no") else "")


def machine() -> str:
    try:
        import torch

        torch_version = f", torch {torch.__version__}"
    except ImportError:
        torch_version = ""
    cpu = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        cpu = model
    except (OSError, StopIteration):
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores, {platform.system()}, Python {platform.python_version()}{torch_version}"
    )


def load_average() -> str:
    try:
        return " / ".join(f"{value:.1f}" for value in os.getloadavg())
    except (OSError, AttributeError):
        return "unknown"


def entry(command: list[str], output: str, began: datetime.datetime, load: str) -> str:
    """The Markdown appended to a results file.

    >>> began = datetime.datetime(2026, 1, 2, 3, 4)
    >>> print(entry(["python", "benchmarks/x.py"], "a table\\n", began, "0.5 / 0.4 / 0.3"))
    <BLANKLINE>
    ## 2026-01-02 03:04 UTC
    <BLANKLINE>
    ...
    - load average at the start (1, 5, 15 min): 0.5 / 0.4 / 0.3
    - command: `python benchmarks/x.py`
    <BLANKLINE>
    ```text
    a table
    ```
    <BLANKLINE>
    """
    return (
        f"\n## {began:%Y-%m-%d %H:%M} UTC\n\n"
        f"- machine: {machine()}\n"
        f"- commit: {commit()}\n"
        f"- load average at the start (1, 5, 15 min): {load}\n"
        f"- command: `{' '.join(command)}`\n\n"
        f"```text\n{output.rstrip()}\n```\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="a script in benchmarks/, without .py (bpe, train, sampling, load, pages, …)")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="after --: the benchmark's own arguments")
    args = parser.parse_args()
    script = ROOT / "benchmarks" / f"{args.name}.py"
    if not script.exists() or args.name.startswith("_") or args.name == "record":
        print(f"error: no benchmark benchmarks/{args.name}.py", file=sys.stderr)
        return 2
    extra = args.arguments[1:] if args.arguments[:1] == ["--"] else args.arguments
    command = ["python", f"benchmarks/{args.name}.py", *extra]
    began, load = datetime.datetime.now(datetime.UTC), load_average()
    result = subprocess.run([sys.executable, str(script), *extra], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        print(f"error: the benchmark failed (exit {result.returncode}); nothing recorded", file=sys.stderr)
        return result.returncode
    results = RESULTS / f"{args.name}.md"
    if not results.exists():
        results.write_text(f"# benchmarks/{args.name}.py\n", encoding="utf-8")
    with results.open("a", encoding="utf-8") as file:
        file.write(entry(command, result.stdout, began, load))
    print(f"recorded in {results.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
