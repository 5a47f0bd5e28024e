"""Structural checks on the code itself: module names, import graph."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("llmviz", "ui")


def _module_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_no_module_shadows_the_standard_library():
    """A module named like a standard-library one (llmviz/inspect.py did) breaks `import torch` for anyone who
    runs a script from inside the package folder, since Python puts that folder first on sys.path."""
    shadowing = [str(path.relative_to(ROOT)) for package in PACKAGES for path in _module_files(package)
                 if path.stem in sys.stdlib_module_names]
    assert shadowing == []


def test_torch_imports_with_the_package_folder_on_sys_path():
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'llmviz')!r}); import torch; print(torch.__version__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
