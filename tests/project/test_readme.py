"""README's set-up and command-line examples work as written: every file they name exists (or an earlier line
writes it), and a fine-tuning line asks for a context the model has."""

import json
import re
import shlex

from llmviz.data import corpus
from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
HUB_NAMES = {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "distilgpt2"}
BUILT_IN_TOKENIZERS = {"gpt2", "cl100k", "char", "bpe"}  # tokenize names, and train --tokenizer choices


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _commands(text: str) -> list[list[str]]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith(("python -m llmviz", "torchrun")):
                commands.append(shlex.split(line))
    return commands


def test_the_cpu_torch_line_comes_before_the_requirements_and_the_address_is_given():
    setup = _section("Set up")
    assert setup.index("--index-url https://download.pytorch.org/whl/cpu") < setup.index(
        "pip install -r requirements.txt"
    )
    assert "http://localhost:8501" in setup and "headless = true" in setup
    assert "pip check" in setup


def test_cli_examples_name_files_that_exist():
    written = set()
    for title in ("Train and export from the command line", "The real GPT-2"):
        for argv in _commands(_section(title)):
            options = dict(zip(argv, argv[1:]))
            for flag in ("--corpus", "--file", "--tokenizer", "--init", "--checkpoint", "--resume"):
                value = options.get(flag)
                if value is None or value in corpus.REGISTRY or value in BUILT_IN_TOKENIZERS | HUB_NAMES:
                    continue
                assert (ROOT / value).exists() or value in written, f"{' '.join(argv)}: {value} does not exist"
            if "--out" in options:
                written.add(options["--out"])


def test_fine_tuning_examples_ask_for_a_context_the_model_has():
    for argv in _commands(_section("The real GPT-2")):
        options = dict(zip(argv, argv[1:]))
        if options.get("--init", "").startswith("data/"):
            meta = json.loads((ROOT / options["--init"] / "checkpoint.json").read_text())
            assert int(options["--context"]) <= meta["model"]["config"]["context_length"], argv
