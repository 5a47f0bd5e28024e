"""The figures the docs quote are what the docs' commands print today: the cheap commands are run here and their
numbers compared with the text (issue 50 §4: a retrained shipped GPT left docs/cli.md and docs/interpretability.md
quoting figures of the model before, and README rounded a 0.73× benchmark row down to 0.7×)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import pytest

from tests.support.paths import ROOT


def text(path: str) -> str:
    """A doc's text with its line breaks and repeated spaces folded (a figure may be split over two lines)."""
    return " ".join((ROOT / path).read_text(encoding="utf-8").split())


def test_the_steering_lengths_in_interpretability_md_are_the_shipped_gpts():
    from llmviz.interpret import steering
    from llmviz.training.checkpoint import load_checkpoint

    docs = text("docs/interpretability.md")
    quoted = re.search(r"mean difference of length ([\d.]+) is a large push on a stream ([\d.]+) long", docs)
    assert quoted, "the steering example's figures are gone from docs/interpretability.md"
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    towards = [tokenizer.encode(t) for t in ['The "for" statement', 'The "while" statement']]  # the doc's example
    away = [tokenizer.encode(t) for t in ["Lists are mutable sequences", "Tuples are immutable sequences"]]
    assert "['The \"for\" statement', 'The \"while\" statement']" in docs
    length = float(steering.mean_difference(model, towards, away, layer=2).norm())
    stream = steering.stream_norm(model, tokenizer.encode("The"), 2)
    assert (quoted.group(1), quoted.group(2)) == (f"{length:.1f}", f"{stream:.1f}")


def test_readmes_bpe_speed_is_the_worst_row_of_its_benchmark():
    bpe = text("docs/benchmarks/bpe.md")
    row = re.findall(r"llmviz / HF = (.*?)\(target", bpe)[-1]  # the latest measurement
    worst = max(float(ratio) for ratio in re.findall(r"([\d.]+)×", row) if float(ratio) < 3)
    assert f"worst row {worst:.2f}×" in row
    assert f"BPE training takes at most {worst:.2f}× the time" in text("README.md")


@pytest.mark.slow
def test_the_shipped_gpts_40_step_fine_tune_in_cli_md_ends_where_the_doc_says(tmp_path):
    """docs/cli.md's own command (its --out moved to a temporary folder): 27 s on the 2-core machine."""
    docs = text("docs/cli.md")
    command = re.search(r"(python -m llmviz train --init data/gpt-python-docs [^\n`]*?--out runs/shipped-notes)", docs)
    assert command, "the shipped GPT's fine-tune command is gone from docs/cli.md"
    argv = shlex.split(command.group(1))[3:-1] + [str(tmp_path / "run")]
    quoted = re.search(
        r"`--steps 40` ends at a validation loss of ([\d.]+) \(training loss ([\d.]+)\), no warning", docs
    )
    assert quoted, "the fine-tune's figures are gone from docs/cli.md"
    done = subprocess.run(
        [sys.executable, "-m", "llmviz", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (quoted.group(1), quoted.group(2)) == (f"{result['val_loss']:.2f}", f"{result['train_loss']:.2f}")
    assert result["overfits"] is False and "warning:" not in done.stderr


WARNING = re.compile(
    r"```text (warning: This run overfits: its validation loss rose from ([\d.]+) at step (\d+) to ([\d.]+) at step "
    r"(\d+) while its training loss fell to ([\d.]+)[.;].*?) ``` That is what `(python -m llmviz train [^`]*)` printed"
)


def test_cli_mds_overfitting_warning_is_the_text_train_writes_for_its_figures():
    """The quoted warning, word for word, is what ``llmviz.training.overfitting`` writes for the quoted numbers (a
    rise; the ln V clause exactly when the last loss is worse than a uniform guess over the command's vocabulary)."""
    import math

    from llmviz.training.overfitting import GAP_NATS, Overfitting

    quoted = WARNING.search(text("docs/cli.md"))
    assert quoted, "the overfitting warning and its command are gone from docs/cli.md"
    best, best_step, last, last_step, train_now = (float(quoted.group(i)) for i in range(2, 7))
    vocab = int(re.search(r"--vocab-size (\d+)", quoted.group(7)).group(1))
    uniform = math.log(vocab)
    worse = last > uniform and last - train_now >= GAP_NATS  # the rule's second sign, by hand
    found = Overfitting(int(best_step), best, int(last_step), last, train_now, uniform, True, worse)
    assert quoted.group(1) == f"warning: {found.message(flags=True)}"


@pytest.mark.slow
@pytest.mark.extended
def test_cli_mds_overfitting_warning_is_what_its_command_prints(tmp_path):
    """docs/cli.md's command, run (its --out a temporary folder): 1-3 min on the shared 2-core machine, so it is left
    out of the default run (``python -m pytest -m extended`` runs it)."""
    quoted = WARNING.search(text("docs/cli.md"))
    assert quoted, "the overfitting warning and its command are gone from docs/cli.md"
    argv = shlex.split(quoted.group(7))[3:] + ["--out", str(tmp_path / "run")]
    done = subprocess.run(
        [sys.executable, "-m", "llmviz", *argv], cwd=ROOT, capture_output=True, text=True, timeout=1800, check=True
    )
    printed = [line for line in done.stderr.splitlines() if line.startswith("warning: This run overfits")]
    assert printed == [quoted.group(1)]
    assert json.loads(done.stdout.strip().splitlines()[-1])["overfits"] is True


def test_classroom_mds_memory_figures_are_the_latest_worker_memory_entry():
    """docs/classroom.md quotes how far the estimates sat above the measured peaks (every one above: an estimate must
    cover its peak), and a worker's size after its first step, from docs/benchmarks/worker_memory.md's latest entry
    (``python benchmarks/worker_memory.py``)."""
    from llmviz.training.footprint import MB, WORKER_BYTES

    latest = (ROOT / "docs" / "benchmarks" / "worker_memory.md").read_text(encoding="utf-8").split("\n## ")[-1]
    rows = re.findall(r"^\| (.+?) \| (\d+) \| (\d+) \| [\d.]+ \|$", latest, flags=re.M)
    shares = {title: (int(estimate) - int(peak)) / int(peak) * 100 for title, estimate, peak in rows}
    after_step = int(re.search(r"worker after one step: resident (\d+) MB", latest).group(1))
    assert all(share >= 0 for share in shares.values()), f"an estimate under its measured peak: {shares}"
    docs = text("docs/classroom.md")
    assert f"every estimate {min(shares.values()):.0f}-{max(shares.values()):.0f} % above the measured peak" in docs
    assert f"a worker holds {after_step} MB after its first step, and {WORKER_BYTES // MB} MB are counted" in docs


def test_install_md_gives_the_latest_set_up_times_and_sizes():
    """docs/install.md quotes the first set-up's times, wheels and disk sizes as docs/benchmarks/setup.md's latest
    entry measured them (README links there: issue 72 moved its figures out)."""
    latest = (ROOT / "docs" / "benchmarks" / "setup.md").read_text(encoding="utf-8").split("\n## ")[-1]
    rows = re.findall(
        r"^\| (?:then )?`python3 run\.py setup(?: test)?`.*?\| (\d+ min \d+ s) \(.*?\| (\d+) s .*?\| \d+, (\d+) MB",
        latest,
        re.M,
    )
    (app_time, app_cpu, app_mb), (test_time, _, test_mb) = rows
    sizes = re.findall(r"\| (\d+\.\d)G \|$", latest, flags=re.M)
    install = text("docs/install.md")
    wheels_app, wheels_all = f"{int(app_mb) / 1000:.2f} GB", f"{(int(app_mb) + int(test_mb)) / 1000:.2f} GB"
    assert app_time in install and test_time in install and f"{app_cpu} s of" in install
    assert wheels_app in install and wheels_all in install
    assert f"**{sizes[0]} GB** after `python run.py setup app`" in install and f"**{sizes[1]} GB**" in install


def test_testing_md_gives_the_suites_times_of_the_test_suite_benchmark():
    """docs/testing.md's "How long" quotes README's suite of test-suite.md's latest entry (its tests and time), the
    range of the last three entries' suite times, and the fast lane's entry."""
    entries = (ROOT / "docs" / "benchmarks" / "test-suite.md").read_text(encoding="utf-8").split("\n## ")
    suites = [
        found.groups()
        for entry in entries
        if (
            found := re.search(
                r"README's suite\*\*(?: \(`python run\.py test`\))?: \*\*([\d,]+) passed in (\d+ min \d+ s)", entry
            )
        )
    ]
    unit = re.findall(
        r"\(`python run\.py test -m unit`.*?\*\*([\d,]+) passed in (\d+)(?:\.\d)? s\*\*", "\n".join(entries), re.S
    )
    doc = text("docs/testing.md")
    tests, time = suites[-1]
    seconds = sorted(suites[-3:], key=lambda suite: [int(n) for n in re.findall(r"\d+", suite[1])])
    assert f"({tests} tests in the last, {time}" in doc
    assert f"took {seconds[0][1]} to {seconds[-1][1]} in three runs" in doc
    assert f"the fast lane (`-m unit`) {unit[-1][1]} s ({unit[-1][0]} tests)" in doc


def documented_patch_pairs() -> list[tuple[str, str, str | None, str | None]]:
    """``(clean, corrupted, answer, wrong)`` of every ``interpret patch`` command in docs/cli.md and
    docs/interpretability.md, and of interpretability.md's Python example (answer and wrong None: the defaults)."""
    from llmviz.cli.main import build_parser

    pairs = []
    for name in ("cli.md", "interpretability.md"):
        raw = (ROOT / "docs" / name).read_text(encoding="utf-8")
        for line in raw.replace("\\\n", " ").splitlines():
            line = re.split(r"\s#\s", line, maxsplit=1)[0].strip()
            if line.startswith("python -m llmviz interpret patch"):
                args = build_parser().parse_args(shlex.split(line)[3:])
                pairs.append((args.clean, args.corrupted, args.answer, args.wrong))
    example = re.search(
        r"clean = tokenizer\.encode\('(.+?)'\)\ncorrupted = tokenizer\.encode\('(.+?)'\)",
        (ROOT / "docs" / "interpretability.md").read_text(encoding="utf-8"),
    )
    return [*pairs, (example.group(1), example.group(2), None, None)]


def test_the_documented_patching_pairs_have_a_clean_answer_to_bring_back():
    """Issue 50 §6: with the "for"/"if" pair both prompts predicted the same token, so d_clean (1.105) < d_corrupted
    (1.304) and the shares taught nothing. Every pair the docs patch changes the shipped GPT's answer, and where a
    command names its tokens the clean run prefers the answer more than the corrupted run does."""
    import torch

    from llmviz.interpret import patching
    from llmviz.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    pairs = documented_patch_pairs()
    assert len(pairs) >= 4
    for clean, corrupted, answer, wrong in pairs:
        ids = [tokenizer.encode(clean), tokenizer.encode(corrupted)]
        found = patching.answers(model, *ids)
        assert found.changed, (clean, corrupted)
        if answer is not None:
            (a,), (w,) = tokenizer.encode(answer), tokenizer.encode(wrong)
            with torch.no_grad():
                logits, _ = model.eval()(torch.tensor(ids))  # (2, T, V)
            d_clean, d_corrupted = (float(logits[row, -1, a] - logits[row, -1, w]) for row in (0, 1))
            assert d_clean > d_corrupted, (clean, corrupted, answer, wrong, d_clean, d_corrupted)


def test_the_tuning_speed_and_memory_ratios_quoted_are_the_latest_tuning_benchmark_entry():
    """docs/tuning.md and docs/benchmarks/README.md quote llmviz's SFT and DPO against TRL as the latest entry of
    docs/benchmarks/tuning.md measured them (``python benchmarks/record.py tuning``)."""
    latest = text("docs/benchmarks/tuning.md").split("## ")[-1]
    figures = []
    for kind in ("SFT", "DPO"):
        found = re.search(
            rf"{kind} llmviz / TRL tokens/s, per round .*?: median ([\d.]+)× .*?by CPU time: median ([\d.]+)× "
            rf".*?{kind} llmviz / TRL peak memory: ([\d.]+)×",
            latest,
        )
        assert found, f"the {kind} ratios are gone from docs/benchmarks/tuning.md's latest entry"
        figures += [f"{figure}×" for figure in found.groups()]
    for doc in ("docs/tuning.md", "docs/benchmarks/README.md"):
        quoted = text(doc)
        assert all(figure in quoted for figure in figures), (doc, figures)
