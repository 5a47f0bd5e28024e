import io
import zipfile

import pytest
import torch

from llmviz.data import corpus
from llmviz.errors import CorpusUnavailable, UploadError


def test_registry_has_the_four_corpora():
    names = [entry.name for entry in corpus.list_corpora()]
    assert names == ["python-docs", "names", "tinyshakespeare", "the-verdict"]
    for entry in corpus.list_corpora():
        assert entry.description and entry.licence and entry.source


def test_python_docs_is_the_reference_manual():
    from pydoc_data.topics import topics

    text = corpus.load("python-docs")
    assert len(text) > 400_000
    assert topics["if"].strip() in text
    s = corpus.stats(text)
    assert s.characters == len(text)
    assert s.words == len(text.split())
    assert s.distinct_characters == len(set(text))


def test_names_are_lowercase_one_per_line():
    text = corpus.load("names")
    names = text.splitlines()
    assert len(names) == len(set(names)) > 4000
    assert all(name.isalpha() and name == name.lower() for name in names)
    assert set(text) == set("abcdefghijklmnopqrstuvwxyz\n")
    assert {"mary", "james", "emma"} <= set(names)


def test_unknown_corpus_is_a_clear_error():
    with pytest.raises(CorpusUnavailable, match="Known corpora"):
        corpus.load("nope")


def test_stats_on_a_hand_example():
    s = corpus.stats("the cat\nthe hat\n")
    assert (s.characters, s.words, s.lines, s.distinct_characters) == (16, 4, 2, 7)


# ------------------------------------------------------------------ upload rules


def test_upload_empty():
    with pytest.raises(UploadError, match="empty"):
        corpus.validate_upload("a.txt", b"")


def test_upload_only_whitespace():
    with pytest.raises(UploadError, match="whitespace"):
        corpus.validate_upload("a.txt", b"  \n\n ")


def test_upload_invalid_utf8_names_the_offset():
    data = "héllo".encode() + b"\xff\xfe rest"
    with pytest.raises(UploadError, match="offset 6"):
        corpus.validate_upload("a.txt", data)


def test_upload_latin1_is_rejected_with_offset():
    with pytest.raises(UploadError, match="offset 1"):
        corpus.validate_upload("a.txt", "aé".encode("latin-1"))


def test_upload_nul_byte():
    with pytest.raises(UploadError, match="NUL byte at offset 3"):
        corpus.validate_upload("a.txt", b"abc\x00def")


def test_upload_oversize():
    with pytest.raises(UploadError, match="limit is"):
        corpus.validate_upload("a.txt", b"a" * 101, max_bytes=100)
    assert corpus.MAX_UPLOAD_BYTES == 20 * 1024 * 1024


def test_upload_pytorch_checkpoint_renamed_to_txt(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"w": torch.zeros(3)}, path)
    with pytest.raises(UploadError, match="zip archive"):
        corpus.validate_upload("model.txt", path.read_bytes())


def test_upload_pickle_and_zip():
    import pickle

    with pytest.raises(UploadError, match="pickle"):
        corpus.validate_upload("x.txt", pickle.dumps([1, 2, 3], protocol=4))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.txt", "hello")
    with pytest.raises(UploadError, match="zip"):
        corpus.validate_upload("x.txt", buffer.getvalue())


def test_upload_good_text_normalises_newlines_and_bom():
    text = corpus.validate_upload("a.txt", "\ufeffone\r\ntwo\rthree\n".encode())
    assert text == "one\ntwo\nthree\n"


def test_upload_keeps_unicode():
    original = "naïve café — 東京 🙂\n"
    assert corpus.validate_upload("a.txt", original.encode()) == original


def test_config_upload_cap_matches_corpus_cap():
    import tomllib

    from tests.support.paths import ROOT

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 1024 * 1024 == corpus.MAX_UPLOAD_BYTES
    assert config["server"]["enableXsrfProtection"] is True
    assert config["server"]["enableCORS"] is True
    assert config["client"]["toolbarMode"] == "viewer"
    # a class on one server: no file watcher, and no gc.collect(2) holding the GIL after every script run
    assert config["server"]["fileWatcherType"] == "none" and config["runner"]["postScriptGC"] is False


def test_cli_corpus_list(capsys):
    from llmviz.cli.main import main

    assert main(["corpus", "list"]) == 0
    out = capsys.readouterr().out
    assert "python-docs" in out and "names" in out and "tinyshakespeare" in out
    assert f"{len(corpus.load('names')):,}" in out
