"""``python -m llmviz interpret sae …`` on the shipped GPT: train a small autoencoder with the CLI, browse, search,
label, steer and knock out with it, each number checked against the library called directly; bad requests are one
line on stderr, exit status 2."""

from __future__ import annotations

import json

import pytest

from llmviz.cli.main import main
from llmviz.errors import ConfigError
from llmviz.interpret import features, sae
from llmviz.training.checkpoint import load_checkpoint

MODEL = "data/gpt-python-docs"
TEXT = "A list is a sequence of items."


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["interpret", "sae", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(MODEL)
    return model.eval(), tokenizer


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("sae")
    argv = ["train", "--model", MODEL, "--layer", "1", "--d-sae", "64", "--k", "4", "--steps", "6", "--batch", "64"]
    argv += ["--tokens", "1024", "--eval-every", "3", "--out", str(out), "--format", "json"]
    assert main(["interpret", "sae", *argv]) == 0
    return out


def test_train_saves_an_autoencoder_whose_numbers_are_its_curves(trained, shipped, capsys):
    model, _ = shipped
    loaded = sae.load(trained, model)
    history = loaded.meta["history"]
    assert [m["step"] for m in history] == [1, 2, 3, 4, 5, 6]
    assert [m["step"] for m in history if m["spliced"]] == [3, 6]
    assert loaded.hook == "blocks.1.resid_post" and loaded.meta["model"]["name"] == MODEL


def test_features_lists_the_most_frequent_first(trained, shipped, capsys):
    code, out, _ = run(capsys, "features", "--sae", str(trained), "--tokens", "512", "--top", "5", "--format", "json")
    rows = json.loads(out)["rows"]
    frequencies = [row["frequency"] for row in rows]
    assert code == 0 and frequencies == sorted(frequencies, reverse=True) and len(rows) == 5


def test_one_feature_search_and_labels(trained, shipped, capsys):
    model, tokenizer = shipped
    loaded = sae.load(trained, model)
    code, out, _ = run(capsys, "features", "--sae", str(trained), "--search", TEXT, "--format", "json")
    ids = tokenizer.encode(TEXT)
    expected = features.search(model, loaded.sae, loaded.hook, ids)
    assert code == 0 and [list(p) for p in json.loads(out)["overall"]] == [list(p) for p in expected.overall]
    feature = expected.overall[0][0]
    code, out, _ = run(
        capsys,
        "features",
        "--sae",
        str(trained),
        "--feature",
        str(feature),
        "--tokens",
        "512",
        "--format",
        "json",
        "--label",
        f"{feature}=starts a list",
    )
    shown = json.loads(out)
    assert code == 0 and shown["label"] == "starts a list" and sae.load(trained).labels[feature] == "starts a list"
    effects = features.logit_effects(model, loaded.sae, loaded.hook, feature)
    assert [v for _, v in shown["promoted"]] == pytest.approx([v for _, v in effects.promoted])


def test_steer_and_knockout(trained, shipped, capsys):
    model, tokenizer = shipped
    loaded = sae.load(trained, model)
    code, out, _ = run(
        capsys,
        "steer",
        "--sae",
        str(trained),
        "--prompt",
        TEXT,
        "--feature",
        "0",
        "--alpha",
        "0",
        "--tokens",
        "5",
        "--temperature",
        "0",
        "--format",
        "json",
    )
    shown = json.loads(out)
    assert code == 0 and shown["plain"] == shown["steered"]
    code, out, _ = run(
        capsys, "knockout", "--sae", str(trained), "--text", TEXT, "--features", "0,1", "--format", "json"
    )
    result = features.knock_out(model, loaded.sae, loaded.hook, tokenizer.encode(TEXT), [0, 1])
    assert code == 0 and json.loads(out)["after"] == pytest.approx(float(result.after.mean()))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--d-sae", "8", "--k", "9", "--out", "x"], "k = 9"),
        (["train", "--layer", "7", "--out", "x"], "Layer 7 does not exist"),
        (["train", "--d-sae", "65536", "--batch", "65536", "--tokens", "4000000", "--out", "x"], "share"),
        (["train", "--corpus", "no-such-file.txt", "--out", "x"], "No corpus file"),
        (["features", "--sae", "no-such-folder"], "not a saved autoencoder"),
        (["knockout", "--sae", "{trained}", "--text", TEXT, "--features", "a,b"], "numbers separated"),
        (["features", "--sae", "{trained}", "--label", "nothing"], "N=TEXT"),
    ],
)
def test_bad_requests_are_one_line(argv, message, trained, capsys, monkeypatch):
    import psutil

    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("M", (), {"available": 8 * 2**30})())
    code, out, err = run(capsys, *[a.replace("{trained}", str(trained)) for a in argv])
    assert code == 2 and message in err and err.count("\n") == 1


def test_an_autoencoder_for_another_model_is_refused(trained, capsys, tmp_path):
    meta = json.loads((trained / sae.CONFIG_FILE).read_text())
    meta["model"]["fingerprint"] = "0" * 16
    other = tmp_path / "other"
    other.mkdir()
    (other / sae.CONFIG_FILE).write_text(json.dumps(meta))
    (other / sae.WEIGHTS_FILE).write_bytes((trained / sae.WEIGHTS_FILE).read_bytes())
    code, _, err = run(capsys, "steer", "--sae", str(other), "--prompt", TEXT, "--feature", "0", "--alpha", "1")
    assert code == 2 and "trained on" in err


def test_features_of_the_shipped_autoencoder_read_more_than_a_prompts_worth_of_corpus(capsys):
    """``features --tokens 8192`` tokenizes 73,728 characters of the corpus: the prompt's 20,000-character bound
    refused it ("The corpus is 73,728 characters"), so the documented command and the page's numbers could not be
    reproduced. Its frequencies are the Features tab's (llmviz.lessons.inside.feature_corpus)."""
    from llmviz.lessons import inside

    argv = ["features", "--model", MODEL, "--sae", "data/gpt-python-docs-sae", "--tokens", "8192", "--top", "3"]
    code, out, err = run(capsys, *argv, "--format", "json")
    assert code == 0, err
    model, tokenizer, _ = load_checkpoint(MODEL)
    loaded = sae.load("data/gpt-python-docs-sae", model)
    text = open("data/python-manual.txt", encoding="utf-8").read()
    corpus = inside.feature_corpus(model, loaded.sae, loaded.hook, inside.feature_corpus_ids(tokenizer, text))
    rows = json.loads(out)["rows"]
    assert [row["feature"] for row in rows] == corpus.index.order[:3]
    expected = [float(corpus.index.frequency[row["feature"]]) for row in rows]
    assert [row["frequency"] for row in rows] == pytest.approx(expected, abs=1e-7)


def test_labels_for_the_shipped_autoencoder_go_to_the_runs_folder_not_the_repository(capsys, tmp_path, monkeypatch):
    """docs/cli.md's ``--label "199=attributes"`` on data/gpt-python-docs-sae wrote labels.json into the repository
    (issue 57): the label is kept in the runs folder and read back from there; the shipped folder is unchanged."""
    from tests.support.paths import ROOT

    shipped_folder = ROOT / "data" / "gpt-python-docs-sae"
    before = sorted(p.name for p in shipped_folder.iterdir())
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(tmp_path))
    argv = ["features", "--sae", str(shipped_folder), "--feature", "199", "--tokens", "256", "--format", "json"]
    code, out, err = run(capsys, *argv, "--label", "199=attributes")
    assert code == 0, err
    kept = tmp_path / "sae-labels" / "gpt-python-docs-sae" / sae.LABELS_FILE
    assert json.loads(kept.read_text()) == {"199": "attributes"} and str(kept) in err
    assert sorted(p.name for p in shipped_folder.iterdir()) == before
    code, out, _ = run(capsys, *argv)  # a later command shows the label
    assert code == 0 and json.loads(out)["label"] == "attributes"


@pytest.mark.parametrize("command", ["train", "steer"])
@pytest.mark.parametrize("seed", ["1180591620717411303424", "-5"])
def test_a_seed_torch_cannot_take_is_a_usage_error(command, seed, capsys, tmp_path):
    """``--seed 1180591620717411303424`` ended in torch's OverflowError traceback and ``--seed -5`` was accepted,
    while every other command refuses both (issue 57)."""
    argv = {
        "train": ["train", "--out", str(tmp_path / "out")],
        "steer": ["steer", "--sae", "data/gpt-python-docs-sae", "--prompt", "a", "--feature", "1", "--alpha", "1"],
    }[command]
    with pytest.raises(SystemExit) as exit_:
        run(capsys, *argv, "--seed", seed)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    assert "argument --seed" in err and "from 0 to 9,223,372,036,854,775,807" in err
    assert not (tmp_path / "out").exists()


def test_an_autoencoder_config_refuses_a_seed_torch_cannot_take():
    with pytest.raises(ConfigError, match="seed must be a whole number from 0"):
        sae.SaeConfig(seed=2**70)


@pytest.mark.parametrize("command", ["features", "steer", "knockout"])
@pytest.mark.parametrize(
    "field, value, words",
    [
        ("d_sae", None, "config has d_sae = "),
        ("lr", "x", "config has lr = "),
        ("dead_window", [], "config has dead_window = "),
        ("k", True, "config has k = "),
        ("config", None, "is damaged"),
        ("config", [], "is damaged"),
        ("d_in", "x", "is damaged"),
        ("model", "x", "is damaged"),
    ],
)
def test_a_damaged_autoencoder_config_is_one_line_never_a_type_error(command, field, value, words, capsys, tmp_path):
    """A sae.json whose numbers are not numbers raised a raw TypeError from the config's range checks (issue 57)."""
    from tests.support.paths import ROOT

    shipped_folder = ROOT / "data" / "gpt-python-docs-sae"
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    meta = json.loads((shipped_folder / sae.CONFIG_FILE).read_text())
    if field in ("config", "d_in", "model"):
        meta[field] = value
    else:
        meta["config"][field] = value
    (damaged / sae.CONFIG_FILE).write_text(json.dumps(meta))
    (damaged / sae.WEIGHTS_FILE).write_bytes((shipped_folder / sae.WEIGHTS_FILE).read_bytes())
    argv = {
        "features": ["features", "--top", "2", "--tokens", "256"],
        "steer": ["steer", "--prompt", "a", "--feature", "1", "--alpha", "1", "--tokens", "2"],
        "knockout": ["knockout", "--text", TEXT, "--features", "1"],
    }[command]
    code, _, err = run(capsys, *argv, "--sae", str(damaged))
    assert code == 2 and err.count("\n") == 1 and words in err, err
