"""Every benchmark has a results file in docs/benchmarks/, listed in its index, and benchmarks/record.py appends a
dated entry to it (its docstring's example runs here: pytest leaves benchmarks/ out of its doctests); every
side-by-side benchmark alternates its two sides in rounds (benchmarks/_rounds.py), and the quick modes run."""

import ast
import doctest
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def test_the_rounds_helper_pairs_each_round_and_reports_the_median_ratio():
    """benchmarks/_rounds.py (pytest leaves benchmarks/ out of its doctests): its examples, and a burst of load on one
    round moves the median per-round ratio no more than that round."""
    spec = importlib.util.spec_from_file_location("rounds_under_test", ROOT / "benchmarks" / "_rounds.py")
    rounds = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = rounds  # its dataclass looks its module up
    spec.loader.exec_module(rounds)
    assert doctest.testmod(rounds).failed == 0
    found = rounds.Rounds({"reference": [2.0, 2.0, 20.0, 2.0], "ours": [1.0, 1.0, 1.0, 1.0]})
    assert found.median("reference", "ours") == 2.0  # a total-time ratio would say 6.5


#: the benchmarks not in rounds, each saying why in its docstring ("Not in rounds: …"): one side only, absolute
#: budgets with a floor printed beside them, or memory rather than time. An entry here is a decision to review: a
#: benchmark that compares two sides (ours vs a named reference, or two settings) alternates them (_rounds.py)
NOT_IN_ROUNDS = {"class_load", "flow", "hall_load", "pages", "profile_open", "soak", "worker_memory"}


def _benchmark(script: str, *args: str, timeout: int = 900) -> str:
    """``python benchmarks/<script> <args>`` from the repository root (its package importable); what it printed,
    once it exited 0."""
    done = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _docstring(name: str) -> str:
    return ast.get_docstring(ast.parse((ROOT / "benchmarks" / f"{name}.py").read_text(encoding="utf-8"))) or ""


def test_every_side_by_side_benchmark_alternates_its_sides_in_rounds():
    """Every benchmark imports benchmarks/_rounds.py and prints the median per-round ratio with its spread
    (``summary`` or ``spread_text``) and the load average, unless it is listed above and says in its docstring why it
    has no rounds (issue 57 item 16: one side timed after the other compared two machines when the load changed in
    between). A new benchmark that names a reference is in rounds or fails here."""
    for name in SCRIPTS:
        source = (ROOT / "benchmarks" / f"{name}.py").read_text(encoding="utf-8")
        docstring = _docstring(name)
        if name in NOT_IN_ROUNDS:
            assert re.search(r"Not in rounds: \w.{20,}", docstring), f"{name}.py: say why it has no rounds"
            assert not re.search(r"\b(alternate|child_rounds|Rounds)\b", source), (
                f"{name}.py is in rounds: off NOT_IN_ROUNDS"
            )
            continue
        assert re.search(r"^from _rounds import .*\b(alternate|child_rounds|Rounds)\b", source, re.M), (
            f"{name}.py: not in rounds"
        )
        assert re.search(r"\.summary\(|spread_text\(", source), f"{name}.py prints no median per-round ratio"
        assert "load_average(" in source, f"{name}.py prints no load average"


#: the quick mode of every benchmark brought into rounds for issue 57 item 16 (seconds on the 2-core machine, quiet)
QUICK = {
    "bpe": ["--quick"],  # 8 s
    "cpu_precision": ["--quick"],  # 10 s
    "interventions": ["--quick"],  # 5 s
    "gpt2_step": ["--quick", "--device", "cpu"],  # 9 s
    "gpt2_pages": ["--quick"],  # 11 s
    "distributed": ["--quick"],  # 30 s: two torchrun launches and two single runs
}
MEDIAN = re.compile(r"median \d+\.\d\d× over \d+ rounds \(quartiles \d+\.\d\d-\d+\.\d\d×, extremes ")


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("name", sorted(QUICK))
def test_a_benchmarks_quick_mode_prints_the_median_per_round_ratio(name):
    """Each converted benchmark's ``--quick`` runs (a smoke: its figures on a busy machine mean nothing) and prints
    the median per-round ratio with its spread and the load average."""
    assert name not in NOT_IN_ROUNDS and "--quick" in _docstring(name)
    printed = _benchmark(f"{name}.py", *QUICK[name])
    assert MEDIAN.search(printed), printed[-3000:]


@pytest.mark.slow
@pytest.mark.processes
def test_the_tuning_benchmarks_quick_run_prints_both_ratios_and_checks_both_sides_do_the_same_work():
    """benchmarks/tuning.py --quick (35 s of CPU: five processes importing torch, two of them TRL; about 40 s on the
    quiet 2-core machine, 110 s at a load of 7): for SFT and for DPO, the median per-round tokens/s ratio against TRL,
    the peak-memory ratio, and the first batch's loss equal on both sides (it exits 1 when they differ)."""
    printed = _benchmark("tuning.py", "--quick", timeout=600)
    for kind in ("SFT", "DPO"):
        assert re.search(rf"{kind} llmviz / TRL tokens/s, per round [^\n]*: median [\d.]+× over 2 rounds", printed)
        assert re.search(rf"{kind} llmviz / TRL peak memory: [\d.]+×", printed)
        assert re.search(rf"{kind} same work: [^\n]*: SAME", printed)
    assert "load average: " in printed


@pytest.mark.slow
@pytest.mark.processes
def test_the_gpt2_steps_profile_prints_the_operators_that_take_the_time():
    """benchmarks/gpt2_step.py --profile on the CPU (the small shape, 5 s): PyTorch's profiler table of llmviz's step,
    its matrix products among the rows (on a GPU, the table that found the unpadded output head)."""
    printed = _benchmark("gpt2_step.py", "--profile", "--device", "cpu", timeout=600)
    assert "Self CPU time total" in printed and "aten::mm" in printed, printed[-3000:]


@pytest.mark.slow
@pytest.mark.processes
def test_the_open_profile_says_where_a_class_open_goes(tmp_path):
    """benchmarks/profile_open.py with 3 students (py-spy sampling the app and the bare page): a row for each page and
    action, the page runs' packages (Streamlit's among them) and the Attention page's own functions by name."""
    if not _can_sample():
        pytest.skip("py-spy may not read another process's memory here (ptrace not permitted)")
    record = tmp_path / "profile.md"
    _benchmark("profile_open.py", "--students", "3", "--toggles", "1", "--rate", "100", "--record", str(record))
    text = record.read_text(encoding="utf-8")
    for row in ("| bare page | open | 3 |", "| bare page | toggle | 3 |", "| attention | open | 3 |"):
        assert row in text, text
    assert "| streamlit |" in text and "`stages/attention.py:" in text and "load average" in text, text


def _can_sample() -> bool:
    """Whether py-spy can read a process of this user here (it needs ptrace: root, or ``ptrace_scope`` 0); any
    other failure of py-spy's is the test's to report."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.5)
        spy = str(Path(sys.executable).with_name("py-spy"))
        done = subprocess.run([spy, "dump", "--pid", str(child.pid)], capture_output=True, text=True, timeout=60)
        return done.returncode == 0 or "ermission" not in done.stdout + done.stderr
    finally:
        child.kill()
        child.wait()
