"""Structural checks on the code itself: module names, import graph."""

import re
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("llmviz", "ui")


def _module_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_no_module_shadows_the_standard_library():
    """A module named like a standard-library one (llmviz/inspect.py did) breaks `import torch` for anyone who
    runs a script from inside the package folder, since Python puts that folder first on sys.path."""
    shadowing = [
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in _module_files(package)
        if path.stem in sys.stdlib_module_names
    ]
    assert shadowing == []


def test_torch_imports_with_the_package_folder_on_sys_path():
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'llmviz')!r}); import torch; print(torch.__version__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(packages=PACKAGES) -> dict[str, set[str]]:
    """Module → the project modules it imports, read from the source with ast (imports inside functions count:
    a circle through a lazy import is still a circle, only hidden until the function runs).

    ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.
    """
    import ast

    files = {_module_name(path): path for package in packages for path in _module_files(package)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from .x import y
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in files:  # import a.b.c → the deepest project module named
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted.

    >>> import_cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    >>> import_cycles({"a": {"b"}, "b": set()})
    []
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_cycle_finder_sees_a_circle_through_a_lazy_import():
    graph = {
        "llmviz.hub.gpt2": {"llmviz.training.trainer"},
        "llmviz.training.trainer": {"llmviz.hub.gpt2", "llmviz.errors"},
        "llmviz.errors": set(),
    }
    assert import_cycles(graph) == [["llmviz.hub.gpt2", "llmviz.training.trainer"]]


def test_no_import_cycles_in_llmviz_or_ui():
    graph = import_graph()
    assert "llmviz.hub.gpt2" in graph and "ui.picker" in graph  # the reader found the modules
    assert "llmviz.models.gpt" in graph["llmviz.hub.gpt2"]  # ... and their imports
    assert import_cycles(graph) == []


def test_every_function_and_class_in_llmviz_and_ui_is_used_somewhere():
    """A cheap unused-code scan (what vulture reports at 60 % confidence): every top-level function or class, and
    every private method, of llmviz/ and ui/ (and every top-level function of the pages) is named somewhere besides
    its own definition: in the package, the pages, app.py, tests, benchmarks or scripts."""
    import ast
    import re
    from collections import Counter

    sources = {
        path: path.read_text(encoding="utf-8")
        for path in ROOT.rglob("*.py")
        if not {".venv", "node_modules"} & set(path.relative_to(ROOT).parts)
    }
    words = Counter(word for text in sources.values() for word in re.findall(r"\w+", text))
    unused = []
    for package in (*PACKAGES, "stages"):
        for path in _module_files(package):
            tree = ast.parse(sources[path])
            defined = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
            defined += [
                item
                for node in tree.body
                if isinstance(node, ast.ClassDef)
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name.startswith("_") and not item.name.startswith("__")
            ]
            unused += [
                f"{path.relative_to(ROOT)}:{node.name}" for node in defined if words[node.name] <= 1
            ]  # only its own def line
    assert sorted(unused) == []


def _project_names_used() -> dict[str, set[str]]:
    """Module → the names the repository's files take from it: ``from llmviz.tokenizers import X`` and ``tk.X``
    after ``from llmviz.tokenizers import bpe`` (or ``import ui.panels.runs`` … ``ui.panels.runs.X``)."""
    import ast
    import importlib.util

    def is_module(name: str) -> bool:
        try:
            return name.split(".")[0] in PACKAGES and importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # the parent is a module, not a package
            return False

    used: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        if {".venv", "node_modules"} & set(path.relative_to(ROOT).parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.level == 0
                and node.module.split(".")[0] in PACKAGES
            ):
                for alias in node.names:
                    if is_module(f"{node.module}.{alias.name}"):
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    else:
                        used.setdefault(node.module, set()).add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in PACKAGES or (alias.asname and alias.name.split(".")[0] in PACKAGES):
                        aliases[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                used.setdefault(aliases[node.value.id], set()).add(node.attr)
    return used


def test_every_name_taken_from_llmviz_or_ui_exists():
    """Every name that the stages, tests, benchmarks and scripts take from llmviz or ui exists there (a module split or
    moved keeps no name behind)."""
    import importlib

    def is_submodule(module: str, name: str) -> bool:
        try:
            return importlib.util.find_spec(f"{module}.{name}") is not None
        except ModuleNotFoundError:
            return False

    used = _project_names_used()
    assert {"BPETokenizer"} <= used["llmviz.tokenizers.bpe.tokenizer"]
    assert (
        {"settings"} <= used["ui.shared_sidebar"] and {"ROOT"} <= used["ui.stages"] and {"keep"} <= used["ui.widgets"]
    )
    assert "ui" not in used  # the package passes on no name: each is taken from its module
    missing = [
        f"{module}.{name}"
        for module, names in sorted(used.items())
        for name in sorted(names)
        if not hasattr(importlib.import_module(module), name) and not is_submodule(module, name)
    ]
    assert missing == []


# ------------------------------------------------------------------ one registry of session state (ui/state.py)

APP_FILES = [ROOT / "app.py", *sorted((ROOT / "stages").glob("*.py")), *_module_files("ui")]
REGISTRY = ROOT / "ui" / "state.py"


def _app_trees():
    import ast

    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in APP_FILES}


def _calls(tree, function: str):
    """Calls of ``state.<function>(…)`` or ``<function>(…)`` (the registry's own module calls it bare)."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func
            if (
                isinstance(called, ast.Attribute)
                and called.attr == function
                and isinstance(called.value, ast.Name)
                and called.value.id in {"state", "ui"}
            ) or (isinstance(called, ast.Name) and called.id == function):
                yield node


def test_session_state_is_touched_only_by_the_registry():
    """Every ``st.session_state`` read or write goes through ui/state.py's slots and widget helpers."""
    import ast

    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _app_trees().items()
        if path != REGISTRY
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "session_state"
    ]
    assert found == []


def test_every_widget_key_is_declared_once_and_used():
    import ast

    from ui import link_params, state

    trees = _app_trees()
    literal_keys = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in trees.items()
        if path != REGISTRY
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg == "key" and isinstance(node.value, ast.Constant | ast.JoinedStr)
    ]
    assert literal_keys == [], "a widget key is written as a literal: declare it in ui.state.WIDGETS"

    used = {
        call.args[0].value
        for tree in trees.values()
        for call in _calls(tree, "widget")
        if call.args and isinstance(call.args[0], ast.Constant)
    }
    assert used - set(state.WIDGETS) == set()
    assert set(state.WIDGETS) - used == set(), "declared widget keys nobody uses"
    kept = {
        call.args[0].value
        for tree in trees.values()
        for call in _calls(tree, "keep")
        if call.args and isinstance(call.args[0], ast.Constant)
    }
    assert kept == set(state.KEPT)
    read = {
        call.args[0].value
        for tree in trees.values()
        for call in _calls(tree, "value")
        if call.args and isinstance(call.args[0], ast.Constant)
    }
    assert read <= set(link_params.PARAMS), "a widget value read by a literal name that is not a link parameter"
    assert not set(state.WIDGETS) & set(link_params.PARAMS), "a key declared twice (link parameter and widget)"


def test_every_slot_is_used_and_names_are_unique():
    import ast

    from ui import state

    slots = list(state.slots())
    names = [slot.name for slot in slots]
    assert len(names) == len(set(names))
    attributes = {
        node.attr
        for path, tree in _app_trees().items()
        if path != REGISTRY
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "state"
    }
    declared = {name for name, value in vars(state).items() if isinstance(value, state.Slot)}
    assert declared - attributes == set(), "slots nobody uses"
    for slot in slots:
        assert slot.doc and slot.holds, slot.name


def test_widget_keys_and_slot_families_are_checked():
    import pytest

    from ui import state

    assert state.widget("lora_heatmap") == "lora_heatmap"
    assert state.widget("run_stop_", "single", "ab12") == "run_stop_single_ab12"
    assert state.kept("runs_on_chart") == "keep_runs_on_chart"
    assert state.QUIZ_OPEN.key("tokens") == "quiz_open_tokens"
    for wrong in (
        lambda: state.widget("no_such_widget"),
        lambda: state.widget("run_stop_"),
        lambda: state.widget("lora_heatmap", 1),
        lambda: state.kept("no_such"),
        lambda: state.QUIZ_OPEN.key(),
        lambda: state.PICKED.key("x"),
    ):
        with pytest.raises(KeyError):
            wrong()


def test_pages_keep_their_sections_in_functions():
    """A page's top level only wires its sections together: at most 180 lines outside functions (imports and the
    docstring aside), so that each section can be read, timed and rerun on its own."""
    import ast

    too_long = {}
    for path in sorted((ROOT / "stages").glob("*.py")):
        lines = 0
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            ):
                continue
            lines += node.end_lineno - node.lineno + 1
        if lines > 180:
            too_long[path.name] = lines
    assert too_long == {}


def test_no_name_in_session_state_can_be_taken_for_another():
    """A family (a name ending in "_") owns every key that starts with it: no other slot, widget, kept value or link
    parameter may start with a family's name, or two parts of the app could write the same key."""
    from ui import link_params, state

    names = (
        {slot.name for slot in state.slots()}
        | set(state.WIDGETS)
        | set(link_params.PARAMS)
        | {state.KEEP + name for name in state.KEPT}
    )
    families = {name for name in names if name.endswith("_")} | {state.KEEP}
    clashes = sorted(
        (family, name)
        for family in families
        for name in names
        if name != family
        and name.startswith(family)
        and not (family == state.KEEP and name[len(family) :] in state.KEPT)
    )
    assert clashes == []


def test_checkpoint_io_lives_in_the_checkpoint_module():
    """llmviz/training/trainer.py trains; reading, writing and restoring checkpoints is
    llmviz/training/checkpoint.py's (without an import circle: checkpoint.py names the trainer by a Protocol)."""
    import ast

    tree = ast.parse((ROOT / "llmviz" / "training" / "trainer.py").read_text(encoding="utf-8"))
    calls = {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert not calls & {
        "save_file",
        "save",
        "set_state",
        "set_rng_state",
        "read_safetensors",
        "set_model_state_dict",
        "set_optimizer_state_dict",
    }  # files and saved random states are checkpoint.py's


def _re_exports(path: Path, package: str) -> list[str]:
    """What ``path`` (a module of ``package``) re-exports: any name a package's ``__init__.py`` imports from the
    package, and any name a module imports from another module of the package without using it (a module imported
    for what importing it does, such as registering a source, is not a name passed on).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp()) / "ui"
    >>> folder.mkdir()
    >>> _ = (folder / "__init__.py").write_text("from ui.stages import ROOT\\n")
    >>> _re_exports(folder / "__init__.py", "ui")
    ['ui/__init__.py imports from ui.stages', 'ui/__init__.py re-exports ROOT from ui.stages']
    >>> _ = (folder / "page.py").write_text("from ui.stages import ROOT\\nprint(ROOT)\\n")
    >>> _re_exports(folder / "page.py", "ui")
    []
    """
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    above = next(folder for folder in path.parents if folder.name == package).parent  # the folder holding the package
    shown = path.relative_to(above).as_posix()
    offenders, imported = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
            if path.name == "__init__.py":
                offenders.append(f"{shown} imports from {node.module}")
            for alias in node.names:
                target = above.joinpath(*node.module.split("."), alias.name)
                if not (target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()):  # a module
                    imported[alias.asname or alias.name] = node.module
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used |= {
        node.value.id for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }
    offenders += [f"{shown} re-exports {name} from {module}" for name, module in imported.items() if name not in used]
    return offenders


def test_one_address_per_name():
    """A package's ``__init__.py`` imports nothing from its package (no re-export hubs: ``ui/__init__.py`` once
    passed on 21 names), and no module of llmviz or ui imports a name from another module of its package without
    using it: every name has one address, where it is defined."""
    offenders = [
        offender for package in PACKAGES for path in _module_files(package) for offender in _re_exports(path, package)
    ]
    assert offenders == []


# ------------------------------------------------------------------ failures are logged

_LOGGING_CALLS = {"log_failure", "exception", "error", "warning", "info", "debug", "fail"}


def _silent_broad_handlers(source: str, name: str) -> list[str]:
    """``except Exception`` (or ``BaseException``, or bare) blocks that neither log nor re-raise, and every
    ``contextlib.suppress(Exception)``, in the file ``name`` holding ``source``."""
    import ast

    def broad(handler: ast.ExceptHandler) -> bool:
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        return any(
            name is None or (isinstance(name, ast.Name) and name.id in {"Exception", "BaseException"}) for name in names
        )

    def logs_or_raises(handler: ast.ExceptHandler) -> bool:
        for node in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
            if isinstance(node, ast.Raise):
                return True
            if isinstance(node, ast.Call):
                called = node.func
                name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                if name in _LOGGING_CALLS:
                    return True
        return False

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler) and broad(node) and not logs_or_raises(node):
            found.append(f"{name}:{node.lineno}")
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "suppress"
            and any(isinstance(arg, ast.Name) and arg.id in {"Exception", "BaseException"} for arg in node.args)
        ):
            found.append(f"{name}:{node.lineno} (suppress)")
    return found


def test_the_silent_handler_finder_sees_one():
    import textwrap

    sample = textwrap.dedent("""
            import contextlib, logging
            try:
                pass
            except Exception:
                pass
            try:
                pass
            except Exception as error:
                logging.getLogger("x").warning("%s", error)
            with contextlib.suppress(Exception):
                pass
        """)
    assert _silent_broad_handlers(sample, "sample.py") == ["sample.py:5", "sample.py:11 (suppress)"]


def test_every_caught_failure_is_logged_or_raised():
    """A job's, a page's or a helper's unexpected exception reaches the server's log with its traceback
    (llmviz.errors.log_failure, a logger), or is raised again: never swallowed by a broad ``except``."""
    files = [ROOT / "app.py", *sorted((ROOT / "stages").glob("*.py")), *_module_files("ui"), *_module_files("llmviz")]
    assert [
        found
        for path in files
        for found in _silent_broad_handlers(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ] == []


# ------------------------------------------------------------------ docs and types


def test_ci_checks_types_docstrings_and_complexity_of_the_package():
    """.ci/run runs ruff and mypy; mypy checks all of llmviz/, bodies of unannotated functions included; ruff asks
    llmviz/ and ui/ for class docstrings (D101) and bounds their functions' complexity (C901)."""
    import tomllib

    ci = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "ruff check ." in ci and "mypy" in ci
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    assert config["mypy"]["files"] == ["llmviz"] and config["mypy"]["check_untyped_defs"] is True
    assert {"D101", "C901"} <= set(config["ruff"]["lint"]["select"])
    assert config["ruff"]["lint"]["mccabe"]["max-complexity"] <= 15
    unchecked = [
        pattern
        for pattern, rules in config["ruff"]["lint"]["per-file-ignores"].items()
        if {"D101", "C901"} & set(rules)
    ]
    assert unchecked and not [pattern for pattern in unchecked if pattern.startswith(("!", "llmviz", "ui"))]
    # issue 48: the pages' functions are bounded too (stages/ may skip class docstrings, never the complexity bound)
    assert not [
        pattern
        for pattern, rules in config["ruff"]["lint"]["per-file-ignores"].items()
        if "C901" in rules and pattern.startswith(("stages", "app"))
    ]


def test_no_function_of_the_package_the_ui_or_the_pages_is_over_complexity_15():
    """ruff's C901 (mccabe) at pyproject's bound, 15, over llmviz/, ui/ and stages/ (issue 48: the pages had no bound
    in practice: stages/sampling.py's generate_section scored 39 in radon's count). The one named exception in the
    code is BPETokenizer.train_steps (``noqa: C901``, the fast BPE trainer's one loop)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--select",
            "C901",
            "--output-format",
            "concise",
            "llmviz",
            "ui",
            "stages",
            "app.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:]


PAGE_LINES = 500


def test_every_page_wires_its_sections_in_at_most_500_lines_and_builds_no_figure():
    """Issue 48's rule: stages/<stage>.py wires the page's sections (at most 500 lines); ui/panels/<stage>.py draws
    its figures and tables (no Plotly in a page); llmviz/lessons/<stage>.py computes its numbers."""
    pages = sorted((ROOT / "stages").glob("*.py"))
    assert len(pages) >= 10
    too_long = {
        page.name: n for page in pages if (n := len(page.read_text(encoding="utf-8").splitlines())) > PAGE_LINES
    }
    assert too_long == {}
    drawing = [page.name for page in pages if "plotly" in _imported_modules(page)]
    assert drawing == []


def _imported_modules(path: Path) -> set[str]:
    """The top-level names of every module a file imports (``import plotly.graph_objects as go`` gives plotly)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


PROJECT_ROOTS = ("llmviz", "ui", "stages", "tests", "benchmarks", "scripts")


def module_aliases(path: Path) -> list[str]:
    """The ``import a.b as c`` / ``from a import b as c`` lines of a file that rename a project module (a name of
    the project imported as itself, ``from a import b``, or a function or class renamed, is fine).

    >>> import tempfile
    >>> f = Path(tempfile.mkstemp(suffix=".py")[1])
    >>> _ = f.write_text("from ui.panels import runs as training\\nfrom ui import quiz\\nimport ui.charts as c\\n")
    >>> module_aliases(f)
    ['1: ui.panels.runs as training', '3: ui.charts as c']
    """
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            pairs = [(alias.name, alias.asname) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            pairs = [(f"{node.module}.{alias.name}", alias.asname) for alias in node.names]
        else:
            continue
        for dotted, asname in pairs:
            if not asname or asname == dotted.rpartition(".")[2] or dotted.split(".")[0] not in PROJECT_ROOTS:
                continue
            target = ROOT.joinpath(*dotted.split("."))
            if target.with_suffix(".py").is_file() or (target / "__init__.py").is_file():
                found.append(f"{node.lineno}: {dotted} as {asname}")
    return found


def test_no_project_module_is_imported_under_another_name():
    """Issue 48: `from ui.panels import runs as training` made `training.start(...)` the lab's runs panel in a page
    that also imports the llmviz.training package. A module is imported under its own name; where two share a name
    (a stage's lesson and its panel), a file imports them by their dotted path (`import ui.panels.attention`) or
    imports the functions it needs."""
    files = [ROOT / "app.py", ROOT / "run.py"] + [path for folder in PROJECT_ROOTS for path in _module_files(folder)]
    aliased = {str(path.relative_to(ROOT)): found for path in files if (found := module_aliases(path))}
    assert aliased == {}


#: The one function allowed past the bound, by design: the fast BPE trainer's one loop (its state lives in local
#: variables for speed; split, it would pass a dozen of them around on every merge).
COMPLEXITY_EXCEPTIONS = {"llmviz/tokenizers/bpe/tokenizer.py:BPETokenizer.train_steps"}


def over_complexity(paths, bound: int = 15) -> dict[str, int]:
    """Every function and method of ``paths`` whose cyclomatic complexity in radon's count (which, unlike ruff's
    mccabe, counts each ``and``/``or`` and each comprehension's ``if``) is over ``bound``: ``{"file:qualname": n}``.

    >>> import tempfile
    >>> f = Path(tempfile.mkstemp(suffix=".py")[1])
    >>> _ = f.write_text("def f(a, b, c):\\n    return a and b and c\\n")
    >>> over_complexity([f], bound=2) == {f"{f.as_posix()}:f": 3}
    True
    """
    from radon.complexity import cc_visit

    found = {}
    for path in paths:
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()
        for block in cc_visit(path.read_text(encoding="utf-8")):  # functions, methods (and classes, not counted)
            if hasattr(block, "is_method") and block.complexity > bound:
                found[f"{name}:{block.fullname}"] = block.complexity
    return found


def test_no_function_is_over_complexity_15_in_radons_count():
    """Issue 60: ruff's mccabe does not count boolean operators, so 28 functions radon scored over 15 passed the gate
    above; the same bound in radon's count, over the package, the app's shared parts, its panels and its pages."""
    paths = [p for folder in ("llmviz", "ui", "stages") for p in sorted((ROOT / folder).rglob("*.py"))]
    over = over_complexity([*paths, ROOT / "app.py"])
    assert {name: n for name, n in over.items() if name not in COMPLEXITY_EXCEPTIONS} == {}


UI_LINES = 600


def test_no_file_of_the_app_is_over_600_lines_or_its_pages_over_300_statements():
    """Issue 60: the page cap (500 lines) moved the weight into ui/panels/ instead of dividing it. Every module of ui/
    (panels included) stays under 600 lines, and a page under 300 statements as well as 500 lines: a bound on what
    the code does, not only on how it is laid out."""
    import ast

    long = {
        p.relative_to(ROOT).as_posix(): n
        for p in sorted((ROOT / "ui").rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > UI_LINES
    }
    assert long == {}
    statements = {
        p.name: n
        for p in sorted((ROOT / "stages").glob("*.py"))
        if (n := sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))) > 300
    }
    assert statements == {}


def test_no_module_of_the_lab_or_the_jobs_is_over_600_lines():
    """Issue 68 §7: the lab (``llmviz/lab/``) and the jobs (``llmviz/jobs/``) hold their parts as objects, one module
    each: none over 600 lines, like the app's modules."""
    long = {
        p.relative_to(ROOT).as_posix(): n
        for folder in ("llmviz/lab", "llmviz/jobs")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > UI_LINES
    }
    assert long == {}


JS_COLUMNS = 120


def javascript_files() -> list[Path]:
    """Every JavaScript file of the project that a browser or CI loads (its own, not node_modules' or .venv's)."""
    return sorted(
        path
        for pattern in ("*.js", "*.mjs")
        for path in ROOT.rglob(pattern)
        if not {".venv", "node_modules", ".git"} & set(path.relative_to(ROOT).parts)
    )


def test_no_javascript_file_is_over_600_lines_or_a_line_over_120_columns():
    """Issue 72 §14: the JavaScript under the same bounds as the Python of ui/ (600 lines a file) and ruff's line
    length (120 columns); eslint (.ci/run, eslint.config.mjs) checks the rest."""
    files = javascript_files()
    assert ROOT / "ui" / "components" / "flow" / "main.js" in files
    long = {
        p.relative_to(ROOT).as_posix(): n for p in files if (n := len(p.read_text("utf-8").splitlines())) > UI_LINES
    }
    assert long == {}
    wide = [
        f"{p.relative_to(ROOT).as_posix()}:{number}"
        for p in files
        for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if len(line) > JS_COLUMNS
    ]
    assert wide == []


def test_the_javascript_linter_is_pinned_and_run_by_ci_only():
    """eslint's version is exact in package.json and locked in package-lock.json; .ci/run installs it with npm ci
    and lints the flow's modules; README's two commands (run.py) never call Node."""
    import json

    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    pins = package["devDependencies"]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", version) for version in pins.values()), pins
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/eslint"]["version"] == pins["eslint"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "npm ci" in ci and "npx --no-install eslint ui/components" in ci
    assert not re.search(r"\b(npm|npx|node)\b", (ROOT / "run.py").read_text(encoding="utf-8"))


HIDDEN_IMPORT = re.compile(r"""__import__\(\s*["'](ui|llmviz|stages)\b""")


def test_no_file_imports_the_projects_packages_out_of_the_gates_sight():
    """A test took ``ROOT`` from ``ui`` through ``__import__``, a name ``ui/__init__.py`` no longer re-exports: the
    re-export gate reads import statements and never saw it, and the fresh suite failed. Import the defining module
    by name instead."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("app.py", "ui", "stages", "llmviz", "tests", "benchmarks", "scripts")
        for path in ([ROOT / folder] if folder.endswith(".py") else sorted((ROOT / folder).rglob("*.py")))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HIDDEN_IMPORT.search(line)
    ]
    assert found == [], found
