"""``python -m llmviz lora | finetune | quantize`` write ordinary checkpoints that load like any other."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file, save_file

from llmviz.adapt import finetune, quantize
from llmviz.cli import main
from llmviz.data import corpus
from llmviz.errors import CheckpointError
from llmviz.training.checkpoint import load_checkpoint
from tests.support.paths import ROOT

SHIPPED_PATH = str(ROOT / "data" / "gpt-python-docs")


def run(capsys, *argv, steps: int = 0):
    """The command's one line of JSON; with ``steps``, its step bar on stderr reached ``steps`` with the loss beside
    it (issue 72: lora, finetune and quantize's QAT were silent while they trained)."""
    code = main.main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    if steps:
        frames = captured.err.replace("\r", "\n").splitlines()
        assert any(f"| {steps}/{steps} [" in frame and "loss=" in frame for frame in frames), captured.err
    return json.loads(captured.out.strip().splitlines()[-1])


def test_lora_writes_a_merged_plain_checkpoint(capsys, tmp_path):
    out = tmp_path / "lora"
    text = tmp_path / "text.txt"
    text.write_text(corpus.load("python-docs")[:20_000])  # a short text: tokenizing it is quick
    summary = run(
        capsys,
        "lora",
        "--init",
        SHIPPED_PATH,
        "--out",
        str(out),
        "--steps",
        "3",
        "--rank",
        "2",
        "--targets",
        "q,proj",
        "--corpus",
        str(text),
        steps=3,
    )
    assert summary["trained_parameters"] == 4 * 2 * 2 * (128 + 128)
    model, _, meta = load_checkpoint(out)  # strict load into an ordinary GPT
    original, _, _ = load_checkpoint(SHIPPED_PATH)
    assert meta["lora"]["rank"] == 2 and meta["lora"]["merged"]
    assert meta["train_config"]["init"] == SHIPPED_PATH
    changed = {k for k, v in model.state_dict().items() if not torch.equal(v, original.state_dict()[k])}
    assert changed == {f"blocks.{i}.attn.{m}.weight" for i in range(4) for m in ("qkv", "proj")}
    delta = model.state_dict()["blocks.0.attn.proj.weight"] - original.state_dict()["blocks.0.attn.proj.weight"]
    assert torch.linalg.matrix_rank(delta.double(), rtol=1e-4) <= 2


def test_quantize_writes_the_dequantized_weights(capsys, tmp_path):
    out = tmp_path / "int4"
    summary = run(capsys, "quantize", "--init", SHIPPED_PATH, "--out", str(out), "--bits", "4", "--per-tensor")
    model, _, meta = load_checkpoint(out)
    original, _, _ = load_checkpoint(SHIPPED_PATH)
    expected = quantize.round_trip(original.blocks[1].mlp.fc.weight.detach(), quantize.QuantSpec(4, per_channel=False))
    assert torch.equal(model.blocks[1].mlp.fc.weight, expected)
    assert len(torch.unique(model.blocks[1].mlp.fc.weight)) <= 15  # symmetric int4: −7 … 7
    assert meta["quantization"]["bits"] == 4 and summary["quantized_bytes"] < summary["float_bytes"] / 6
    assert summary["loss_after"] >= summary["loss_before"] - 0.05


def test_quantization_aware_training_shows_its_steps(capsys, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(corpus.load("python-docs")[:20_000])
    out = tmp_path / "qat"
    summary = run(
        capsys,
        "quantize",
        "--init",
        SHIPPED_PATH,
        "--out",
        str(out),
        "--qat-steps",
        "2",
        "--corpus",
        str(text),
        steps=2,
    )
    assert summary["qat_steps"] == 2 and load_checkpoint(out)[2]["quantization"]["qat_steps"] == 2


def test_finetune_writes_the_gpt_and_its_head(capsys, tmp_path):
    out = tmp_path / "names"
    summary = run(
        capsys, "finetune", "--init", SHIPPED_PATH, "--out", str(out), "--steps", "5", "--mode", "head", steps=5
    )
    model, _, meta = load_checkpoint(out)
    original, _, _ = load_checkpoint(SHIPPED_PATH)
    assert all(torch.equal(v, original.state_dict()[k]) for k, v in model.state_dict().items())  # head only
    head = load_file(str(out / "classifier_head.safetensors"))
    assert head["weight"].shape == (1, 128)
    assert (
        meta["task"]["accuracy_after"] == summary["accuracy_after"]
        or round(meta["task"]["accuracy_after"], 4) == summary["accuracy_after"]
    )

    # read back: the same classifier, so the same held-out accuracy the run reported when it ended
    classifier, tokenizer, task = finetune.load_classifier(out)
    _, held = finetune.name_examples()
    assert finetune.accuracy(classifier, tokenizer, held) == task["accuracy_after"]
    # P(female) = σ(w · h + b), h the final norm's output at the name's last token (the GPT's own cache)
    names = ["Mary", "John", "Ada"]
    probabilities = finetune.female_probabilities(classifier, tokenizer, names)
    for name, probability in zip(names, probabilities, strict=True):
        ids = torch.tensor([tokenizer.encode(" " + name)])  # a name follows a space, as in a sentence
        _, _, cache = model.run_with_cache(ids)
        hidden = cache["ln_f"][0, -1]  # (C,)
        expected = torch.sigmoid(hidden @ head["weight"][0] + head["bias"][0])
        assert probability == pytest.approx(float(expected), abs=1e-6)


def test_a_checkpoint_without_a_head_or_with_a_wrong_one_is_refused(capsys, tmp_path):
    with pytest.raises(CheckpointError, match="no classifier head"):
        finetune.load_classifier(SHIPPED_PATH)
    out = tmp_path / "names"
    run(capsys, "finetune", "--init", SHIPPED_PATH, "--out", str(out), "--steps", "1")
    save_file({"weight": torch.zeros(1, 7), "bias": torch.zeros(1)}, str(out / finetune.HEAD_FILE))
    with pytest.raises(CheckpointError, match="needs"):
        finetune.load_classifier(out)


@pytest.mark.parametrize(
    "argv",
    [
        ["lora", "--init", SHIPPED_PATH, "--out", "x", "--targets", "w_z"],
        ["lora", "--init", "no/such/folder", "--out", "x"],
    ],
)
def test_bad_input_is_a_clear_error(capsys, argv):
    assert main.main(argv) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_final_hidden_is_the_cached_final_norm_and_classifying_is_thread_safe(tmp_path):
    """The classifier reads GPT.final_hidden (no hook on the shared model): equal to run_with_cache's ln_f, and
    two sessions classifying with one cached classifier at the same time each get their own answers."""
    import threading

    model, tokenizer, _ = load_checkpoint(SHIPPED_PATH)
    ids = torch.tensor([tokenizer.encode(" The for statement")])
    _, _, cache = model.run_with_cache(ids)
    with torch.no_grad():
        # The same sums by two attention kernels (fused and written out), added in another order: float32 rounding
        # of a sum of d_model terms is about sqrt(d_model) units in the last place of the largest value, on any CPU
        # (an AMD EPYC differs by 1.43e-6 = 3 ulps of 7.08; a fixed 1e-6 held only on some CPUs).
        scale = float(cache["ln_f"].abs().max())
        tolerance = math.sqrt(model.config.d_model) * torch.finfo(torch.float32).eps * scale  # 128, 7.08 → 9.6e-6
        torch.testing.assert_close(model.final_hidden(ids), cache["ln_f"], rtol=0, atol=tolerance)
        assert tolerance < 1e-3 * scale  # still far below a real difference (a wrong norm or a missing layer)

    classifier = finetune.NameClassifier(model, seed=3).eval()
    groups = [["Mary", "Ada", "Grace"], ["John", "Alan", "Christopher", "Bob"]]
    alone = [finetune.female_probabilities(classifier, tokenizer, names) for names in groups]
    results: list[list] = [[], []]
    problems: list[BaseException] = []

    def classify(index: int) -> None:
        try:
            for _ in range(150):
                results[index].append(finetune.female_probabilities(classifier, tokenizer, groups[index]))
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            problems.append(error)

    threads = [threading.Thread(target=classify, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    for index in range(2):
        assert all(found == pytest.approx(alone[index], abs=1e-6) for found in results[index])


def test_a_checkpoints_task_numbers_are_read_only_when_they_are_accuracies(capsys, tmp_path):
    """checkpoint.json comes from a folder anyone could write: a task "accuracy" that is not a number in [0, 1] is
    read as unknown (the page shows "?"), never formatted as a number."""
    out = tmp_path / "names"
    run(capsys, "finetune", "--init", SHIPPED_PATH, "--out", str(out), "--steps", "1")
    meta = json.loads((out / "checkpoint.json").read_text())
    meta["task"]["accuracy_before"], meta["task"]["accuracy_after"] = "<b>high</b>", 7
    (out / "checkpoint.json").write_text(json.dumps(meta))
    _, _, task = finetune.load_classifier(out)
    assert task["accuracy_before"] is None and task["accuracy_after"] is None
