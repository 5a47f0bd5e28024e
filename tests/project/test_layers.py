"""The library's layers point one way: ``llmviz/lessons/`` (a page's numbers) builds on the library, never the other
way round, and the trainer never reaches the Hugging Face Hub. Front ends sit above the lessons: the pages
(``stages/``, ``ui/``) and the command line (``llmviz/cli/``, which prints the same lessons)."""

import ast

from tests.support.paths import ROOT

FRONT_ENDS = ("llmviz/cli/", "llmviz/__main__.py", "llmviz/lessons/")
#: Known arrows up, each with where it should go (not this lane's files; remove the entry when it moves).
KNOWN: dict[str, set[str]] = {}


def imported_modules(path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (``from a import b`` names ``a`` and
    ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_import_reader_sees_a_lazy_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from llmviz import lessons\n    import llmviz.hub.gpt2\n")
    assert {"llmviz", "llmviz.lessons", "llmviz.hub.gpt2"} <= imported_modules(module)


def test_no_library_module_imports_the_lessons():
    arrows = {}
    for path in sorted((ROOT / "llmviz").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith(FRONT_ENDS):
            continue
        up = {m for m in imported_modules(path) if m == "llmviz.lessons" or m.startswith("llmviz.lessons.")}
        known = KNOWN.get(name, set())
        up = {m for m in up if not any(m == k or m.startswith(k + ".") for k in known)}
        if up:
            arrows[name] = sorted(up)
    assert arrows == {}


#: Arrows that point up, each forbidden: (the importing modules' folder or file prefix, the module prefix they must
#: not import). The shared parts of the app (``ui/*.py``) sit below the pages' panels; the library's interpretability
#: tools, its training and the lab sit below the jobs layer that runs them (a runner interface, llmviz.jobs.runners,
#: goes the other way).
FORBIDDEN = [
    ("ui/", "ui.panels"),
    ("llmviz/interpret/", "llmviz.jobs"),
    ("llmviz/training/", "llmviz.jobs"),
    # the lab is the record and declares what it needs of whatever trains runs (llmviz.lab.trainer); the jobs
    # layer implements it and app.py wires them at start (issue 68 §1): the lab imports nothing of it
    ("llmviz/lab/", "llmviz.jobs"),
    ("llmviz/lab/migrations/", "llmviz.jobs"),
]


def test_no_arrow_points_up():
    arrows = {}
    for folder, above in FORBIDDEN:
        for path in sorted(ROOT.glob(folder + "*.py")):
            name = path.relative_to(ROOT).as_posix()
            up = {m for m in imported_modules(path) if m == above or m.startswith(above + ".")}
            if up:
                arrows[name] = sorted(up)
    assert arrows == {}


def test_the_arrow_check_finds_a_forbidden_import(tmp_path, monkeypatch):
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "picker.py").write_text("from ui.panels import hub\n")
    monkeypatch.setattr("tests.project.test_layers.ROOT", tmp_path)
    with __import__("pytest").raises(AssertionError):
        test_no_arrow_points_up()


def test_the_trainer_does_not_reach_the_hub():
    training = ROOT / "llmviz" / "training"
    reaching = {
        path.name: sorted(m for m in imported_modules(path) if m.startswith("llmviz.hub"))
        for path in training.glob("*.py")
    }
    assert {name: hub for name, hub in reaching.items() if hub} == {}
