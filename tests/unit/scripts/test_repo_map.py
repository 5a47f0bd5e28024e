"""scripts/repo_map.py maps a small tree the way wc -l and radon count it by hand."""

import importlib.util
import sys

from radon.complexity import cc_visit

from tests.support.paths import ROOT


def load_script():
    spec = importlib.util.spec_from_file_location("repo_map", ROOT / "scripts" / "repo_map.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["repo_map"] = module
    spec.loader.exec_module(module)
    return module


BRANCHY = (
    "def branchy(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(11)) + "    return -1\n"
)


def test_the_map_counts_lines_per_folder_and_lists_the_complex_functions(tmp_path, capsys):
    repo_map = load_script()
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / ".venv").mkdir()
    (tmp_path / "app.py").write_text("print(1)\n")
    (tmp_path / "pkg" / "a.py").write_text(BRANCHY)
    (tmp_path / "pkg" / "sub" / "b.py").write_text("x = 1\ny = 2")
    (tmp_path / ".venv" / "skipped.py").write_text("z = 3\n" * 50)

    assert repo_map.main(["--root", str(tmp_path), "--largest", "2", "--complexity", "10"]) == 0
    out = capsys.readouterr().out
    branchy_lines = BRANCHY.count("\n")  # 24: one def, 11 ifs of two lines, one return
    assert out.startswith(f"3 Python files, {1 + branchy_lines + 2} lines.")
    assert "| . | 1 | 1 |" in out and f"| pkg | 1 | {branchy_lines} |" in out and "| pkg/sub | 1 | 2 |" in out
    assert f"| pkg/a.py | {branchy_lines} |" in out and "| app.py |" not in out  # only the 2 largest
    (expected,) = cc_visit(BRANCHY)  # 11 ifs + 1 = 12, radon's own count
    assert expected.complexity == 12
    assert "| 12 | pkg/a.py:1 `branchy` |" in out and "1 functions over complexity 10" in out


def test_a_missing_root_is_one_line_on_stderr(tmp_path, capsys):
    repo_map = load_script()
    assert repo_map.main(["--root", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip().startswith("repo_map: no folder")
