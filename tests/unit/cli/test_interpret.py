"""``python -m llmviz interpret …`` on the shipped GPT: each command's numbers against an independent computation
(plain PyTorch hooks, tests/support/interventions.py); a bad request is one line on stderr, exit status 2."""

from __future__ import annotations

import csv
import io
import json

import pytest
import torch

from llmviz.cli.main import main
from llmviz.interpret.interventions import transformer_lens_name
from llmviz.models.gpt import cache_names
from llmviz.training.checkpoint import load_checkpoint
from tests.support import interventions

MODEL = "data/gpt-python-docs"
TEXT = "A list is a sequence of items. The items of a list can be changed."


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(MODEL)
    return model.eval(), tokenizer


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["interpret", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_names_lists_every_hook_point_with_transformer_lens_names(capsys, shipped):
    model, _ = shipped
    code, out, _ = run(capsys, "names", "--model", MODEL, "--format", "json")
    rows = json.loads(out)["rows"]
    assert code == 0 and [row["llmviz"] for row in rows] == cache_names(model.config)
    assert {"llmviz": "blocks.1.attn.pattern", "TransformerLens": "blocks.1.attn.hook_pattern"} in rows
    named = [row for row in rows if row["TransformerLens"] != "-"]
    assert all(row["TransformerLens"] == transformer_lens_name(row["llmviz"]) for row in named)
    assert len(named) == len(rows) - 1 - model.config.n_layers  # all but the logits and every block's raw scores


def test_ablate_heads_equals_hooks_on_w_o(capsys, shipped):
    model, tokenizer = shipped
    code, out, _ = run(capsys, "ablate", "--model", MODEL, "--text", TEXT, "--heads", "1.0,3.2", "--format", "json")
    [row] = json.loads(out)["rows"]
    ids = torch.tensor([tokenizer.encode(TEXT)])
    assert code == 0 and row["heads"] == "1.0 3.2"
    assert row["loss after"] == pytest.approx(
        float(interventions.ablated_loss(model, ids, [(1, 0), (3, 2)])[0]), abs=1e-5
    )
    assert row["loss before"] == pytest.approx(float(interventions.ablated_loss(model, ids, [])[0]), abs=1e-5)


def test_ablate_without_heads_is_the_layer_by_head_table(capsys, shipped):
    model, tokenizer = shipped
    code, out, _ = run(capsys, "ablate", "--model", MODEL, "--text", TEXT, "--mode", "mean", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == model.config.n_layers * model.config.n_heads
    ids = torch.tensor([tokenizer.encode(TEXT)])
    third = rows[6]  # layer 1, head 2 of 4
    assert (third["layer"], third["head"]) == ("1", "2")
    expected = float(interventions.ablated_loss(model, ids, [(1, 2)], mode="mean")[0])
    assert float(third["loss without it"]) == pytest.approx(expected, abs=1e-5)


def test_patch_reports_both_runs_and_the_share_restored(capsys, shipped):
    model, tokenizer = shipped
    clean, corrupted = "A list is a", "A tuple is a"  # the two runs predict different tokens
    code, out, _ = run(
        capsys, "patch", "--model", MODEL, "--clean", clean, "--corrupted", corrupted, "--format", "json"
    )
    result = json.loads(out)
    assert code == 0 and result["component"] == "resid_pre"
    with torch.no_grad():
        clean_logits = model(torch.tensor([tokenizer.encode(clean)]))[0][0, -1]
        corrupted_logits = model(torch.tensor([tokenizer.encode(corrupted)]))[0][0, -1]
    answer, wrong = int(clean_logits.argmax()), int(corrupted_logits.argmax())
    assert result["answer"] == tokenizer.printable(answer) and result["wrong"] == tokenizer.printable(wrong)
    assert result["clean_difference"] == pytest.approx(float(clean_logits[answer] - clean_logits[wrong]), abs=1e-5)
    expected = interventions.patched_logits(
        model, torch.tensor([tokenizer.encode(clean)]), torch.tensor([tokenizer.encode(corrupted)]), "resid_pre", 0, 1
    )
    first_swap = [row for row in result["rows"] if row["layer"] == 0][1]  # position 1: the swapped word
    assert first_swap["logit difference"] == pytest.approx(
        float(expected[0, -1, answer] - expected[0, -1, wrong]), abs=1e-5
    )
    assert first_swap["share restored"] == pytest.approx(1.0, abs=1e-4)  # the only place the runs differ, at layer 0


def test_steer_with_alpha_zero_changes_nothing(capsys):
    code, out, _ = run(
        capsys,
        "steer",
        "--model",
        MODEL,
        "--prompt",
        "The",
        "--layer",
        "1",
        "--alpha",
        "0",
        "--token",
        " list",
        "--tokens",
        "8",
        "--format",
        "json",
    )
    result = json.loads(out)
    assert code == 0 and result["plain"] == result["steered"] and result["direction_norm"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["patch", "--clean", "A list is", "--corrupted", "A tuple is a"], "same number of tokens"),
        (["ablate", "--text", TEXT, "--heads", "1-0"], "layer.head pairs"),
        (["ablate", "--text", TEXT, "--heads", "9.0"], "Layer 9, head 0 does not exist"),
        (["steer", "--prompt", "The", "--layer", "1", "--alpha", "2"], "Give a direction"),
        (["steer", "--prompt", "The", "--layer", "7", "--alpha", "2", "--token", " list"], "Layer 7 does not exist"),
        (
            ["patch", "--clean", "A list is a mutable", "--corrupted", "A tuple is a mutable", "--answer", "a list"],
            "one token",
        ),
    ],
)
def test_bad_requests_are_one_line_on_stderr(capsys, argv, message):
    code, out, err = run(capsys, *argv[:1], "--model", MODEL, *argv[1:])
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
