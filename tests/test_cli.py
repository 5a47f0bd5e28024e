"""The command line names itself as it was called, and a broken module fails loudly."""

import subprocess
import sys

import pytest

from llmviz import cli
from tests.conftest import ROOT


def test_help_names_the_entry_point(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: llmviz ")


def test_python_dash_m_names_itself():
    result = subprocess.run([sys.executable, "-m", "llmviz", "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m llmviz ")
    for command in ("corpus", "train", "sample"):
        assert command in result.stdout


def test_a_broken_training_module_is_not_hidden(monkeypatch):
    monkeypatch.setitem(sys.modules, "llmviz.train_cli", None)  # importing it now raises ImportError
    with pytest.raises(ImportError):
        cli.build_parser()
