"""Fine-tuning for a task: the names data set from the package's own files, BCE against torch, the three modes,
prompting."""

import math
import pickle
from pathlib import Path

import names
import pytest
import torch
import torch.nn.functional as F

from llmviz.adapt import finetune
from llmviz.errors import ConfigError
from llmviz.training.checkpoint import load_checkpoint
from tests.support.paths import ROOT

SHIPPED = ROOT / "data" / "gpt-python-docs"


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(SHIPPED)
    return model, tokenizer


def package_list(kind):
    """The package's list read independently: name → frequency (first two columns)."""
    text = (Path(names.__file__).parent / f"dist.{kind}.first").read_text()
    return {line.split()[0].capitalize(): float(line.split()[1]) for line in text.splitlines() if line.strip()}


def test_names_data_set_is_the_package_lists_with_clear_labels():
    train, held = finetune.name_examples(per_class=300)
    male, female = package_list("male"), package_list("female")
    everything = train + held
    assert len(everything) == 600 and sum(e.label for e in everything) == 300
    for example in everything:
        mine, other = (female, male) if example.label else (male, female)
        assert mine[example.text] >= 10 * other.get(example.text, 0.0)
    assert {e.text for e in train}.isdisjoint({e.text for e in held})
    assert 0.1 < len(held) / len(everything) < 0.3
    assert finetune.name_examples(per_class=300) == (train, held)  # deterministic
    labels = {e.text: e.label for e in everything}
    assert labels["James"] == 0 and labels["Mary"] == 1  # James is on the female list too (0.010 % vs 3.318 %)
    assert "Jordan" not in labels  # no clear majority


def test_bce_steps_equal_torch():
    logits = torch.tensor([-3.0, -0.2, 0.0, 1.5, 40.0, -40.0])
    labels = torch.tensor([0, 1, 1, 0, 1, 0])
    steps = finetune.bce_steps(logits, labels)
    assert steps.mean == pytest.approx(float(F.binary_cross_entropy_with_logits(logits, labels.float())), rel=1e-6)
    per_example = F.binary_cross_entropy_with_logits(logits, labels.float(), reduction="none")
    assert steps.losses == pytest.approx(per_example.tolist(), rel=1e-5, abs=1e-12)
    assert steps.probabilities == pytest.approx(torch.sigmoid(logits).tolist())
    assert steps.losses[1] == pytest.approx(-math.log(1 / (1 + math.exp(0.2))))  # −log σ(−0.2) by hand


def test_padding_does_not_change_the_last_state(shipped):
    model, tokenizer = shipped
    classifier = finetune.NameClassifier(model)
    idx, last = finetune.encode_names(tokenizer, ["Al", "Christopher"], 128)
    alone, alone_last = finetune.encode_names(tokenizer, ["Al"], 128)
    assert torch.allclose(classifier(idx, last)[0], classifier(alone, alone_last)[0], atol=1e-5)


@pytest.mark.parametrize(
    "mode,trained_names",
    [
        ("head", {"head.weight", "head.bias"}),
        ("last block", {"head.weight", "head.bias", "backbone.ln_f.scale", "backbone.ln_f.shift"}),
    ],
)
def test_modes_train_what_they_say(shipped, mode, trained_names):
    model, _ = shipped
    classifier = finetune.NameClassifier(model)
    finetune.set_trainable(classifier, mode)
    names_trained = {n for n, p in classifier.named_parameters() if p.requires_grad}
    last = f"backbone.blocks.{model.config.n_layers - 1}."
    assert trained_names <= names_trained
    assert all(n in trained_names or n.startswith(last) for n in names_trained)
    assert any(n.startswith(last) for n in names_trained) == (mode == "last block")


def test_head_only_run_learns_and_leaves_the_gpt_alone(shipped):
    model, tokenizer = shipped
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = finetune.FineTuneTrainer(
        finetune.FineTuneConfig(mode="head", steps=40, lr=1e-2, eval_interval=20), tokenizer, model
    )
    history = list(trainer.run())
    assert [m.step for m in history] == list(range(1, 41))
    assert history[0].val_accuracy_before == trainer.accuracy_before
    assert history[-1].val_accuracy == pytest.approx(trainer.held_out_accuracy())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # the shared model is untouched
    assert all(torch.equal(v, before[k]) for k, v in trainer.model.state_dict().items())  # head only: GPT frozen
    assert sum(m.train_loss for m in history[-10:]) < sum(m.train_loss for m in history[:10])
    trained, total = trainer.parameter_counts()
    assert trained == model.config.d_model + 1
    pickle.loads(pickle.dumps(trainer))


def test_bad_mode_is_a_clear_error():
    with pytest.raises(ConfigError):
        finetune.FineTuneConfig(mode="some")


def test_label_log_probabilities_by_hand(shipped):
    model, tokenizer = shipped
    prompt = finetune.few_shot_prompt([finetune.Example("Mary", 1)], "James")
    male, female = finetune.label_log_probabilities(model, tokenizer, prompt)
    ids = tokenizer.encode(prompt)
    total = 0.0
    for token in tokenizer.encode(" female"):
        with torch.no_grad():
            total += float(F.log_softmax(model(torch.tensor(ids)[None])[0][0, -1], -1)[token])
        ids = ids + [token]
    assert female == pytest.approx(total, abs=1e-4)
    result = finetune.prompting_accuracy(
        model, tokenizer, 2, finetune.name_examples(20)[1], finetune.name_examples(20)[0]
    )
    assert 0.0 <= result.accuracy <= 1.0 and result.prompt_example.count("Gender:") == 3


def test_batched_label_scores_equal_one_prompt_at_a_time(shipped):
    """Prompts of different lengths padded into one batch (and cut into chunks) score as each prompt alone."""
    model, tokenizer = shipped
    examples = finetune.name_examples(20)[0]
    prompts = [finetune.few_shot_prompt(examples[:k], name) for k, name in ((0, "Ann"), (3, "Bartholomew"), (1, "Jo"))]
    batched = finetune.label_log_probabilities_batch(model, tokenizer, prompts, chunk=2)
    for prompt, pair in zip(prompts, batched, strict=True):
        assert pair == pytest.approx(finetune.label_log_probabilities(model, tokenizer, prompt), abs=1e-4)


def test_prompting_is_measured_on_the_fine_tuned_runs_held_out_names(shipped):
    from llmviz.lessons import adapting

    model, tokenizer = shipped
    held = finetune.name_examples()[1]
    (zero,) = adapting.prompting(model, tokenizer, shots=(0,))
    for share in (zero.accuracy, zero.female_share):  # shares of all the held-out names (106), not of a part
        assert share * len(held) == pytest.approx(round(share * len(held)), abs=1e-9)
    said = [
        pair[1] > pair[0]
        for pair in finetune.label_log_probabilities_batch(
            model, tokenizer, [finetune.few_shot_prompt([], e.text) for e in held]
        )
    ]
    assert zero.accuracy == pytest.approx(sum(s == bool(e.label) for s, e in zip(said, held)) / len(held))
