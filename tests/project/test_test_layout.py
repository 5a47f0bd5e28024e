"""The tests are organised by subject (docs/testing.md): the library's tests mirror llmviz/ under tests/unit/, page
tests are in tests/app/, chromium tests in tests/browser/, repository checks in tests/project/, and what tests share
is in tests/support/. No test module imports another."""

import ast

import pytest

from tests.support.paths import ROOT

TESTS = ROOT / "tests"
FOLDERS = ("unit", "app", "browser", "project", "support")


def _modules(folder=TESTS):
    return sorted(folder.rglob("*.py"))


def _imported(path) -> list[str]:
    """Every module ``path`` imports, at any depth (``from tests.support import pages`` gives tests.support.pages)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def _name(path) -> str:
    return str(path.relative_to(ROOT))


def test_no_test_module_imports_another():
    """Shared helpers live in tests/support/; a test module imported by another is a helper in disguise (and
    collecting it twice, or renaming it, breaks the other)."""
    offenders = [
        f"{_name(path)} imports {name}"
        for path in _modules()
        for name in _imported(path)
        if name.startswith("tests.") and not name.startswith("tests.support")
    ]
    assert offenders == [], "move what they share to tests/support/: " + "; ".join(offenders)


def test_the_support_package_imports_no_test_module():
    assert [n for p in _modules(TESTS / "support") for n in _imported(p) if n.startswith("tests.test")] == []


def test_every_test_module_is_in_its_folder():
    """Test modules sit in the folders of the map, never loose in tests/ (a new file goes where its subject is)."""
    loose = [_name(path) for path in TESTS.glob("test_*.py")]
    unknown = [
        _name(path)
        for path in TESTS.rglob("test_*.py")
        if path.parent != TESTS and path.relative_to(TESTS).parts[0] not in FOLDERS
    ]
    assert loose == [] and unknown == [], (loose, unknown)


def test_every_test_folder_is_a_package():
    """tests/unit/models/test_attention.py and tests/app/test_attention.py share a base name: pytest tells them
    apart by their packages, so every folder needs its __init__.py."""
    folders = {path.parent for path in TESTS.rglob("*.py")} | {TESTS / name for name in FOLDERS}
    assert sorted(_name(f) for f in folders if not (f / "__init__.py").exists()) == []


@pytest.mark.parametrize("path", _modules(TESTS / "unit"), ids=_name)
def test_the_library_tests_need_no_streamlit(path):
    """tests/unit/ is the fast lane (``python -m pytest -m unit``): the library, no Streamlit and no app."""
    assert [n for n in _imported(path) if n.split(".")[0] in ("streamlit", "ui", "stages", "playwright")] == []


def _marks_browser(path) -> bool:
    return any(
        isinstance(node, ast.Attribute) and node.attr == "browser" and getattr(node.value, "attr", None) == "mark"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    )


def test_only_the_browser_folder_drives_chromium():
    outside = [_name(path) for path in _modules() if path.relative_to(TESTS).parts[0] not in ("browser", "support")]
    assert [name for name in outside if _marks_browser(ROOT / name)] == []
    assert all(_marks_browser(path) for path in TESTS.glob("browser/test_*.py"))


def test_the_fast_lane_is_the_library_without_its_slow_tests():
    """``-m unit`` selects tests/unit/'s tests that are not marked slow, and nothing else."""
    import subprocess
    import sys

    files = ["tests/unit/training/test_overfitting.py", "tests/app/test_home.py"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "--collect-only", "-q", "-m", "unit"]
        + files,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    selected = [line for line in result.stdout.splitlines() if "::" in line]
    assert selected and all(line.startswith("tests/unit/training/test_overfitting.py::") for line in selected)
    assert not [line for line in selected if "llmviz_train_says_so" in line]  # the one marked slow


# words that tell when or how a test came to be, not what it checks
HISTORY_WORDS = {"glitches", "glitch", "defects", "fixes", "bugs", "regressions", "wave", "round", "new", "old", "misc"}


def history_words(name: str) -> set[str]:
    """The words of a test file's name that date it instead of naming its subject (a trailing letter, `_b`, too).

    >>> sorted(history_words("test_glitches_first_stages.py")), sorted(history_words("test_pages_b.py"))
    (['glitches'], ['b'])
    >>> history_words("test_layout.py")
    set()
    """
    words = name.removesuffix(".py").split("_")[1:]
    return {word for word in words if word in HISTORY_WORDS or len(word) == 1}


def test_every_test_file_is_named_for_its_subject():
    """Issue 48: the browser tests of layout (test_layout.py) and of each page's key picture (test_key_pictures.py)
    were named by their history (test_glitches_first_stages.py, test_pages_b.py)."""
    named = {_name(path): found for path in _modules() if (found := history_words(path.name))}
    assert named == {}
