"""Every benchmark has a results file in docs/benchmarks/, listed in its index, and benchmarks/record.py appends a
dated entry to it (its docstring's example runs here: pytest leaves benchmarks/ out of its doctests)."""

import doctest
import importlib.util

from tests.support.paths import ROOT

RESULTS = ROOT / "docs" / "benchmarks"
SCRIPTS = sorted(
    p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_") and p.stem != "record"
)


def _record():
    spec = importlib.util.spec_from_file_location("record_under_test", ROOT / "benchmarks" / "record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_has_a_results_file_in_the_index():
    index = (RESULTS / "README.md").read_text(encoding="utf-8")
    for name in SCRIPTS:
        assert (RESULTS / f"{name}.md").exists(), name
        assert f"`benchmarks/{name}.py`" in index and f"({name}.md)" in index, name


def test_a_recorded_entry_says_when_where_how_busy_and_which_commit():
    record = _record()
    assert doctest.testmod(record, optionflags=doctest.ELLIPSIS).failed == 0
    entry = record.entry(["python", "benchmarks/sampling.py"], "table\n", record.datetime.datetime(2026, 1, 2), "1.0")
    assert "- machine: " in entry and "- commit: " in entry and "- load average" in entry and "table" in entry


def test_an_unknown_benchmark_records_nothing(monkeypatch, capsys):
    record = _record()
    monkeypatch.setattr("sys.argv", ["record.py", "no_such_benchmark"])
    assert record.main() == 2
    assert "no benchmark benchmarks/no_such_benchmark.py" in capsys.readouterr().err
