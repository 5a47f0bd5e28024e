"""The command line names itself as it was called, and a broken module fails loudly."""

import subprocess
import sys
from pathlib import Path

import pytest

from llmviz.cli import main
from tests.support.paths import ROOT


def test_help_names_the_entry_point(capsys):
    with pytest.raises(SystemExit):
        main.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: llmviz ")


@pytest.mark.slow  # a fresh Python process imports torch
def test_python_dash_m_names_itself():
    result = subprocess.run(
        [sys.executable, "-m", "llmviz", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m llmviz ")
    for command in ("corpus", "train", "sample"):
        assert command in result.stdout


def test_a_broken_training_module_is_not_hidden(monkeypatch):
    monkeypatch.setitem(sys.modules, "llmviz.cli.train", None)  # importing it now raises ImportError
    with pytest.raises(ImportError):
        main.build_parser()


# ------------------------------------------------------------------ python -m llmviz tokenize


def _tokenize(capsys, *argv):
    code = main.main(["tokenize", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", ["gpt2", "cl100k"])
def test_tokenize_reference_encodings_print_tiktoken_ids(capsys, name):
    from llmviz.tokenizers.bpe.reference import encoding

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

    from llmviz.tokenizers.bpe.tokenizer import BPETokenizer

    bpe = BPETokenizer.train("the cat sat on the mat " * 10, vocab_size=280)
    bpe.save(tmp_path / "bpe.json")
    (tmp_path / "in.txt").write_text("the mat\n", encoding="utf-8")
    code, out, _ = _tokenize(
        capsys, "--file", str(tmp_path / "in.txt"), "--tokenizer", str(tmp_path / "bpe.json"), "--format", "json"
    )
    data = json.loads(out)
    assert code == 0 and data["ids"] == bpe.encode("the mat\n") and data["vocab_size"] == bpe.vocab_size
    code, out, _ = _tokenize(
        capsys, "for x in", "--tokenizer", str(ROOT / "data" / "gpt-python-docs"), "--format", "ids"
    )
    shipped = BPETokenizer.from_dict(
        json.loads((ROOT / "data" / "gpt-python-docs" / "checkpoint.json").read_text())["tokenizer"]
    )
    assert code == 0 and [int(i) for i in out.split()] == shipped.encode("for x in")


def test_tokenize_char(capsys):
    code, out, _ = _tokenize(capsys, "abba", "--tokenizer", "char", "--format", "ids")
    assert code == 0 and out.split() == ["0", "1", "1", "0"]  # the text's own characters, sorted: a=0, b=1
    code, out, _ = _tokenize(capsys, "ab", "--tokenizer", "char", "--corpus", "names", "--format", "ids")
    assert code == 0 and out.split() == ["1", "2"]  # names: "\n" is 0, then a, b, …


@pytest.mark.parametrize(
    "argv",
    [
        [],  # no text
        ["text", "--file", "x.txt"],  # both
        ["text", "--tokenizer", "no-such-tokenizer"],
        ["--file", "/no/such/file.txt"],
        ["Zé", "--tokenizer", "char", "--corpus", "names"],  # characters outside the vocabulary
    ],
)
def test_tokenize_bad_input_is_a_clear_error(capsys, argv):
    code, out, err = _tokenize(capsys, *argv)
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err


def test_tokenize_binary_file_is_a_clear_error(capsys, tmp_path):
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    code, _, err = _tokenize(capsys, "--file", str(tmp_path / "bin"))
    assert code == 2 and "UTF-8" in err


# ------------------------------------------------------------------ clear errors (devices, files, offline)


def _run(capsys, *argv):
    code = main.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "mps", "gpu", "cdua"])
def test_an_unavailable_or_unknown_device_is_an_error_naming_the_available_ones(capsys, monkeypatch, tmp_path, device):
    import llmviz.device

    monkeypatch.setattr(
        llmviz.device, "available_devices", lambda: ["cpu"]
    )  # a CPU-only machine, whatever runs the test
    code, _, err = _run(
        capsys,
        "train",
        "--corpus",
        "names",
        "--model",
        "bigram-counts",
        "--steps",
        "1",
        "--device",
        device,
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 2 and "Traceback" not in err
    assert f"'{device}'" in err and "On this machine: auto (= cpu), cpu." in err
    assert not (tmp_path / "run").exists()  # nothing trained in silence on the CPU


def test_a_missing_file_is_called_missing_not_a_utf8_problem(capsys, tmp_path):
    code, _, err = _tokenize(capsys, "--file", str(tmp_path / "notes.txt"))
    assert code == 2 and "No file" in err and "UTF-8" not in err


def test_a_missing_tokenizer_file_is_called_missing(capsys, tmp_path):
    for name in ("bpe-tokenizer.json", str(tmp_path / "runs" / "mine")):
        code, _, err = _tokenize(capsys, "for x in", "--tokenizer", name)
        assert code == 2 and "No tokenizer" in err and "Unknown tokenizer" not in err, err


def test_gpt2_download_with_hf_hub_offline_says_to_unset_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache
    for argv in (["gpt2", "download"], ["sample", "--model", "gpt2", "--tokens", "1"]):
        code, out, err = _run(capsys, *argv)
        assert code == 2 and "downloading" not in err + out
        assert "HF_HUB_OFFLINE" in err and "unset" in err


def test_sample_with_a_vanishing_top_p_prints_text(capsys):
    code, out, err = _run(
        capsys,
        "sample",
        "--checkpoint",
        str(ROOT / "data" / "gpt-python-docs"),
        "--prompt",
        "def ",
        "--tokens",
        "5",
        "--top-p",
        "1e-300",
    )
    assert code == 0 and out.strip() and "Traceback" not in err


@pytest.mark.parametrize("tokens", ["0", "-5", "1000000000000", "many"])
def test_sample_refuses_a_token_count_it_cannot_or_should_not_make(capsys, tokens):
    """--tokens 10**12 ran until memory ran out (every step's record is kept); 0 or less printed the prompt alone."""
    with pytest.raises(SystemExit) as exit_:
        _run(capsys, "sample", "--checkpoint", str(ROOT / "data" / "gpt-python-docs"), "--tokens", tokens)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    assert f"argument --tokens: {tokens!r} is not a whole number from 1 to 100,000" in err, err


def test_training_says_which_device_it_trains_on(capsys, tmp_path):
    """--device auto on a machine without a GPU trains on the CPU: the first line says so (a 124M run on the CPU
    takes minutes a step; the student must not wait without a word)."""
    import torch

    code, _, err = _run(
        capsys,
        "train",
        "--corpus",
        "names",
        "--model",
        "bigram-counts",
        "--steps",
        "1",
        "--device",
        "cpu",
        "--out",
        str(tmp_path / "run"),
    )
    threads = torch.get_num_threads()
    assert code == 0 and f"; training on CPU ({threads} thread{'' if threads == 1 else 's'})" in err, err


def test_a_corpus_file_on_your_own_machine_is_not_held_to_the_apps_upload_cap(tmp_path):
    """README's 'Training bigger' trains on big.txt: the CLI read it through the app's 20 MB upload check
    ('… the limit is 20 MB. Upload a smaller excerpt.'), and a folder gave a raw IsADirectoryError traceback."""
    from llmviz.cli.train import _load_text
    from llmviz.data import corpus
    from llmviz.errors import CorpusUnavailable

    big = tmp_path / "big.txt"
    line = "The while statement is used for repeated execution as long as an expression is true.\n"
    big.write_text(line * (corpus.MAX_UPLOAD_BYTES // len(line) + 1000))
    assert len(_load_text(str(big))) == big.stat().st_size > corpus.MAX_UPLOAD_BYTES
    with pytest.raises(CorpusUnavailable, match="is a folder"):
        _load_text(str(tmp_path))
    if Path("/dev/zero").exists():
        with pytest.raises(CorpusUnavailable, match="not a regular file"):
            _load_text("/dev/zero")
