"""README and docs/ work as written: README stays short (a newcomer's five minutes, no engineering log), its first
screen shows the two commands and its Python example runs; every file a command-line example names exists (or an
earlier line writes it), a fine-tuning line asks for a context the model has, and every link leads somewhere."""

import json
import re
import shlex
import subprocess
import sys

import pytest

from llmviz.data import corpus
from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
CLI = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
HUB_NAMES = {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "distilgpt2"}
BUILT_IN_TOKENIZERS = {"gpt2", "cl100k", "char", "bpe"}  # tokenize names, and train --tokenizer choices
FIRST_SCREEN = 40  # lines: what a browser shows of README before any scrolling, picture included


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _commands(text: str) -> list[list[str]]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith(("python -m llmviz", "torchrun")):
                commands.append(shlex.split(line))
    return commands


def test_readme_is_short():
    """nanoGPT's README is 234 lines, minbpe's 150, tiktoken's 131: the rest of llmviz's is in docs/."""
    assert len(README.splitlines()) <= 200


def test_readme_holds_no_engineering_log():
    """No commit hashes and no clock times: dated measurements belong to docs/benchmarks/, stories to CHANGELOG.md."""
    hashes = [word for word in re.findall(r"\b[0-9a-f]{7,40}\b", README) if re.search(r"[a-f]", word)]
    clock_times = re.findall(r"\b\d{1,2}:\d{2}(?::\d{2})?\b", README)
    assert hashes == [] and clock_times == [], (hashes, clock_times)


def test_the_first_screen_shows_the_two_commands():
    first_screen = "\n".join(README.splitlines()[:FIRST_SCREEN])
    [block] = re.findall(r"```bash\n(.*?)```", first_screen, flags=re.S)
    assert block.splitlines() == ["python run.py app", "python run.py test"]


def test_ci_runs_the_test_command_of_readme():
    """.ci/run sets up with run.py and runs the suite with README's second command (python3: CI's interpreter; with
    ``env -u CI …``: before the hall's extras, tests/project/test_hall_services.py)."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    steps = [re.sub(r"^env (-u \w+ )*", "", line.strip()) for line in lines if "run.py" in line]
    assert "python3 run.py test" in steps and not any("pytest" in step for step in steps)


def test_the_python_example_runs(tmp_path):
    [example] = re.findall(r"```python\n(.*?)```", _section(README, "In Python"), flags=re.S)
    result = subprocess.run(
        [sys.executable, "-c", example],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    shape = result.stdout.splitlines()[0]
    assert shape == "torch.Size([1, 4, 3, 3])"  # the shipped GPT's 4 heads, "The for statement" in 3 tokens
    assert result.stdout.splitlines()[1].startswith("The for statement")


@pytest.mark.parametrize(
    "document", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("docs/**/*.md"))]
)
def test_every_link_to_a_file_leads_to_one(document):
    path = ROOT / document
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    missing = [t for t in targets if "://" not in t and not (path.parent / t).exists()]
    assert missing == []


def test_the_cpu_torch_line_comes_before_the_requirements_and_the_address_is_given():
    by_hand = _section(INSTALL, "Doing it by hand")
    assert by_hand.index("--index-url https://download.pytorch.org/whl/cpu") < by_hand.index(
        "pip install -r requirements.txt"
    )
    assert "http://localhost:8501" in INSTALL and "headless = true" in INSTALL
    assert "pip check" in INSTALL


def test_cli_examples_name_files_that_exist():
    written = set()
    sections = [_section(README, "The command line")] + [
        _section(CLI, title)
        for title in (
            "Train and sample",
            "After pre-training: LoRA, fine-tuning, quantization",
            "GPT-2 and other models from the Hugging Face Hub",
        )
    ]
    for text in sections:
        for argv in _commands(text):
            options = dict(zip(argv, argv[1:]))
            for flag in ("--corpus", "--file", "--tokenizer", "--init", "--checkpoint", "--resume"):
                value = options.get(flag)
                if value is None or value in corpus.REGISTRY or value in BUILT_IN_TOKENIZERS | HUB_NAMES:
                    continue
                assert (ROOT / value).exists() or value in written, f"{' '.join(argv)}: {value} does not exist"
            if "--out" in options:
                written.add(options["--out"])


def test_fine_tuning_examples_ask_for_a_context_the_model_has():
    for argv in _commands(_section(CLI, "GPT-2 and other models from the Hugging Face Hub")):
        options = dict(zip(argv, argv[1:]))
        if options.get("--init", "").startswith("data/"):
            meta = json.loads((ROOT / options["--init"] / "checkpoint.json").read_text())
            assert int(options["--context"]) <= meta["model"]["config"]["context_length"], argv
