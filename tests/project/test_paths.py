"""Every repository path named in the code, the tests and the docs exists: a comment or a docstring that points at
`tests/test_ui_defects.py` after that file was split sends the reader nowhere (issue 48 found four such names)."""

import re

from tests.support.paths import ROOT

# a path of the repository: a top folder, then folders and a file with an extension (or a folder ending in /);
# not part of a longer path or an address (github.com/.../data/x.txt), not a pattern (test_<page>.py, names-*)
TOP = r"(?:llmviz|ui|stages|tests|docs|scripts|benchmarks|data|examples|\.ci)"
PATH = re.compile(
    rf"(?<![\w./-])({TOP}/(?:[\w.-]+/)*(?:[\w-]+\.(?:py|md|txt|sh|toml|json|csv|css|yml|yaml)\b|))(?![\w/<*{{$-])"
)
SKIPPED = {".venv", "node_modules", "__pycache__", ".git", "screenshots", "data"}
# history: dated entries name files as they were then (and this file's examples name made-up ones)
HISTORY = {"CHANGELOG.md", "tests/project/test_paths.py"}
HISTORY_FOLDERS = {"docs/benchmarks"}
# names that are meant not to exist (a made-up benchmark, a module name refused, another repository's file)
NOT_FILES = {
    ("benchmarks/record.py", "benchmarks/x.py"),
    ("tests/project/test_benchmarks.py", "benchmarks/no_such_benchmark.py"),
    ("tests/project/test_code_health.py", "llmviz/inspect.py"),
    ("llmviz/data/corpus.py", "data/tinyshakespeare/input.txt"),
    ("docs/benchmarks/README.md", "benchmarks/NAME.py"),
    ("docs/benchmarks/README.md", "docs/benchmarks/NAME.md"),
}


def named_paths(text: str) -> list[str]:
    """The repository paths a text names.

    >>> named_paths("see `tests/app/test_pages.py::test_x`, docs/models.md: and ui/panels/ but not test_<page>.py")
    ['tests/app/test_pages.py', 'docs/models.md', 'ui/panels/']
    >>> named_paths("github.com/karpathy/char-rnn/data/x.txt, data/names-*, `tests/app/test_<page>.py`, llmviz/HF")
    []
    """
    return [match.group(1) for match in PATH.finditer(text)]


def missing_paths(relative: str, text: str) -> list[str]:
    """The paths a file names that exist neither from the repository's root nor (a Markdown link) from its folder.

    >>> missing_paths("docs/x.md", "[results](benchmarks/pages.md), `tests/gone.py`, docs/models.md")
    ['tests/gone.py']
    """
    folder = (ROOT / relative).parent
    return [
        path
        for path in dict.fromkeys(named_paths(text))
        if not (ROOT / path).exists() and not (folder / path).exists() and (relative, path) not in NOT_FILES
    ]


def sources() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT)
        if SKIPPED & set(relative.parts[:-1]) or relative.parts[0] in SKIPPED or not path.is_file():
            continue
        if path.suffix in {".py", ".md", ".sh", ".toml"} or relative.parts[0] == ".ci":
            name = relative.as_posix()
            dated = relative.parent.as_posix() in HISTORY_FOLDERS and path.name != "README.md"
            if name not in HISTORY and not dated:
                found.append(name)
    return found


def test_every_path_named_in_code_tests_and_docs_exists():
    files = sources()
    assert {"app.py", "README.md", "docs/architecture.md", "tests/app/test_pages.py", "ui/streamlit_private.py"} <= set(
        files
    )
    missing = {name: gone for name in files if (gone := missing_paths(name, (ROOT / name).read_text(encoding="utf-8")))}
    assert missing == {}
