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


# ------------------------------------------------------------------ python -m llmviz tokenize


def _tokenize(capsys, *argv):
    code = cli.main(["tokenize", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", ["gpt2", "cl100k"])
def test_tokenize_reference_encodings_print_tiktoken_ids(capsys, name):
    from llmviz.tokenizers import encoding

    text = "Hello world <|endoftext|> naïve"
    code, out, _ = _tokenize(capsys, text, "--tokenizer", name, "--format", "ids")
    assert code == 0
    assert [int(i) for i in out.split()] == encoding(name).encode_ordinary(text)
    code, out, _ = _tokenize(capsys, text, "--tokenizer", name, "--format", "ids", "--allow-special")
    assert [int(i) for i in out.split()] == encoding(name).encode(text, allowed_special="all")


def test_tokenize_table_shows_tokens_and_ids(capsys):
    code, out, _ = _tokenize(capsys, "Hello world")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["position", "id", "token"]
    assert lines[2].split() == ["0", "15496", "Hello"]  # GPT-2: "Hello" is id 15496 (tiktoken)
    assert lines[3].split() == ["1", "995", "␣world"]
    assert "2 tokens for 11 characters" in out


def test_tokenize_a_file_with_a_saved_bpe_and_a_checkpoint(capsys, tmp_path):
    import json

    from llmviz.tokenizers import BPETokenizer

    bpe = BPETokenizer.train("the cat sat on the mat " * 10, vocab_size=280)
    bpe.save(tmp_path / "bpe.json")
    (tmp_path / "in.txt").write_text("the mat\n", encoding="utf-8")
    code, out, _ = _tokenize(capsys, "--file", str(tmp_path / "in.txt"), "--tokenizer", str(tmp_path / "bpe.json"),
                             "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["ids"] == bpe.encode("the mat\n") and data["vocab_size"] == bpe.vocab_size
    code, out, _ = _tokenize(capsys, "for x in", "--tokenizer", str(ROOT / "data" / "gpt-python-docs"), "--format", "ids")
    shipped = BPETokenizer.from_dict(json.loads((ROOT / "data" / "gpt-python-docs" / "checkpoint.json").read_text())["tokenizer"])
    assert code == 0 and [int(i) for i in out.split()] == shipped.encode("for x in")


def test_tokenize_char(capsys):
    code, out, _ = _tokenize(capsys, "abba", "--tokenizer", "char", "--format", "ids")
    assert code == 0 and out.split() == ["0", "1", "1", "0"]  # the text's own characters, sorted: a=0, b=1
    code, out, _ = _tokenize(capsys, "ab", "--tokenizer", "char", "--corpus", "names", "--format", "ids")
    assert code == 0 and out.split() == ["1", "2"]  # names: "\n" is 0, then a, b, …


@pytest.mark.parametrize("argv", [
    [],  # no text
    ["text", "--file", "x.txt"],  # both
    ["text", "--tokenizer", "no-such-tokenizer"],
    ["--file", "/no/such/file.txt"],
    ["Zé", "--tokenizer", "char", "--corpus", "names"],  # characters outside the vocabulary
])
def test_tokenize_bad_input_is_a_clear_error(capsys, argv):
    code, out, err = _tokenize(capsys, *argv)
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err


def test_tokenize_binary_file_is_a_clear_error(capsys, tmp_path):
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    code, _, err = _tokenize(capsys, "--file", str(tmp_path / "bin"))
    assert code == 2 and "UTF-8" in err
