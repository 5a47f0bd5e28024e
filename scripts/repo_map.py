"""Print the map of the repository as Markdown: folders with their Python line counts, the largest modules, and
the functions over a cyclomatic complexity (radon's count, which also counts boolean operators and comprehensions).

    python scripts/repo_map.py                 # this checkout
    python scripts/repo_map.py --root ../main  # another checkout (read only)
    python scripts/repo_map.py --largest 15 --complexity 10

The issue that split the pages (one stage, one name, three layers) keeps its "before" and "after" maps in
docs/benchmarks/repo-map.md.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from radon.complexity import cc_visit

SKIPPED = {".venv", "node_modules", "__pycache__", ".git", "screenshots"}


def python_files(root: Path) -> list[Path]:
    """Every .py file under root, outside virtual environments and caches, sorted."""
    return sorted(path for path in root.rglob("*.py") if not SKIPPED & set(path.relative_to(root).parts))


def line_count(path: Path) -> int:
    """Lines in a file, the way ``wc -l`` counts them (a last line without a newline counts too).

    >>> import tempfile; f = Path(tempfile.mkstemp()[1]); _ = f.write_text("a\\nb"); line_count(f)
    2
    """
    return len(path.read_text(encoding="utf-8").splitlines())


def folder_of(relative: Path) -> str:
    """The folder a file is counted under: its first two levels (``llmviz/models``), or ``.`` at the top.

    >>> folder_of(Path("llmviz/models/gpt.py")), folder_of(Path("app.py")), folder_of(Path("stages/home.py"))
    ('llmviz/models', '.', 'stages')
    """
    parts = relative.parts[:-1]
    return "/".join(parts[:2]) if parts else "."


def complex_functions(path: Path, threshold: int) -> list[tuple[int, str, int]]:
    """(complexity, name, line) of every function or method in a file whose radon complexity exceeds threshold."""
    found = []
    for block in cc_visit(path.read_text(encoding="utf-8")):
        blocks = [block, *getattr(block, "methods", [])]
        for item in blocks:
            if item.complexity > threshold and type(item).__name__ == "Function":
                name = f"{item.classname}.{item.name}" if getattr(item, "classname", None) else item.name
                found.append((item.complexity, name, item.lineno))
    return found


def repo_map(root: Path, largest: int, threshold: int) -> str:
    """The map as Markdown text."""
    files = python_files(root)
    lines = {path.relative_to(root): line_count(path) for path in files}
    folders: Counter[str] = Counter()
    modules: Counter[str] = Counter()
    for relative, count in lines.items():
        folders[folder_of(relative)] += count
        modules[folder_of(relative)] += 1
    out = [
        f"{len(files)} Python files, {sum(lines.values()):,} lines.",
        "",
        "| folder | modules | lines |",
        "|---|---:|---:|",
    ]
    out += [f"| {folder} | {modules[folder]} | {folders[folder]:,} |" for folder in sorted(folders)]
    out += ["", f"The {largest} largest modules:", "", "| module | lines |", "|---|---:|"]
    out += [f"| {relative} | {count:,} |" for relative, count in sorted(lines.items(), key=lambda kv: -kv[1])[:largest]]
    heavy = sorted(
        (
            (score, str(path.relative_to(root)), name, line)
            for path in files
            for score, name, line in complex_functions(path, threshold)
        ),
        key=lambda row: (-row[0], row[1], row[3]),
    )
    out += [
        "",
        f"{len(heavy)} functions over complexity {threshold} (radon):",
        "",
        "| complexity | function |",
        "|---:|---|",
    ]
    out += [f"| {score} | {where}:{line} `{name}` |" for score, where, name, line in heavy]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--largest", type=int, default=15)
    parser.add_argument("--complexity", type=int, default=10)
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        print(f"repo_map: no folder {args.root}", file=sys.stderr)
        return 2
    sys.stdout.write(repo_map(args.root, args.largest, args.complexity))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
