"""DPO: the loss equals TRL's (its DPOTrainer's own loss code, run on the same log-probabilities), the summed
answer log-probabilities equal a plain loop, the reference never changes, and a tiny run prefers the chosen answer
on pairs it never saw."""

import string
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from trl import DPOTrainer as TRLDPOTrainer

from llmviz.adapt import dpo, sft
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.tokenizers.char_word import CharTokenizer

CHARS = string.ascii_letters + string.digits + " .?|<>\n_`"


@pytest.fixture()
def tiny():
    tokenizer = CharTokenizer.train(CHARS)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, context_length=48, d_model=32, n_heads=2, n_layers=2))
    return model.eval(), tokenizer


def trl_loss_and_metrics(chosen, rejected, reference_chosen, reference_rejected, beta):
    """TRL 1.16's DPOTrainer._compute_loss itself (the sigmoid loss and its logged metrics), on a stub trainer whose
    model returns the given summed log-probabilities as one completion token per row and whose reference
    log-probabilities are precomputed: the loss is computed by TRL's own lines from these numbers."""
    stub = object.__new__(TRLDPOTrainer)
    vars(stub).update(
        model=SimpleNamespace(training=True),
        accelerator=SimpleNamespace(device=torch.device("cpu"), gather_for_metrics=lambda x: x, gather=lambda x: x),
        aux_loss_enabled=False,
        ld_alpha=None,
        precompute_ref_logps=True,
        f_divergence_type="reverse_kl",
        loss_types=["sigmoid"],
        loss_weights=[1.0],
        beta=beta,
        use_weighting=False,
        _metrics=defaultdict(lambda: defaultdict(list)),
        _total_train_tokens=0,
        _tp_size=1,
    )
    rows = 2 * len(chosen)
    outputs = SimpleNamespace(
        log_probs=torch.cat([chosen, rejected])[:, None],
        entropy=torch.zeros(rows, 1),
        mean_logits=torch.zeros(rows, 1),
        is_top1=torch.zeros(rows, 1, dtype=torch.bool),
    )
    inputs = {
        "input_ids": torch.zeros(rows, 2, dtype=torch.long),
        "attention_mask": torch.ones(rows, 2, dtype=torch.long),
        "completion_mask": torch.tensor([[0, 1]] * rows),
        "ref_chosen_logps": reference_chosen,
        "ref_rejected_logps": reference_rejected,
    }
    loss = TRLDPOTrainer._compute_loss(stub, lambda **_: outputs, inputs, return_outputs=False)
    return loss, stub._metrics["train"]


@pytest.mark.parametrize("beta", [0.01, 0.1, 0.5, 2.0])
def test_the_loss_and_metrics_equal_trls(beta):
    generator = torch.Generator().manual_seed(int(beta * 100))
    logps = [-40 * torch.rand(16, generator=generator, dtype=torch.float64) for _ in range(4)]
    theirs, metrics = trl_loss_and_metrics(*logps, beta)
    losses, chosen, rejected = dpo.dpo_loss(*logps, beta)
    assert float(losses.mean()) == pytest.approx(float(theirs), abs=1e-6)
    _, summary = dpo.summarise(dpo.PairScores(*logps), beta)
    assert summary.loss == pytest.approx(float(theirs), abs=1e-6)
    assert summary.margin == pytest.approx(metrics["rewards/margins"][0], abs=1e-6)
    assert summary.accuracy == pytest.approx(metrics["rewards/accuracies"][0], abs=1e-6)
    assert summary.chosen_ratio * beta == pytest.approx(metrics["rewards/chosen"][0], abs=1e-6)
    assert summary.rejected_ratio * beta == pytest.approx(metrics["rewards/rejected"][0], abs=1e-6)


def hand_log_prob(model, example):
    total = 0.0
    for position in range(example.prompt_tokens, len(example.ids)):
        logits, _ = model(torch.tensor([example.ids[:position]]))
        total += float(F.log_softmax(logits[0, -1].detach().double(), -1)[example.ids[position]])
    return total


def test_summed_answer_log_probabilities_equal_a_plain_loop(tiny):
    model, tokenizer = tiny
    rows = [
        {"prompt": "Is it?", "chosen": "yes it is.", "rejected": "no"},
        {"prompt": "Q", "chosen": "A", "rejected": "B b"},
    ]
    pairs = dpo.encode_pairs(tokenizer, rows, 48)
    inputs, labels = dpo.pair_batch(pairs)
    scores = dpo.pair_scores(model, model, inputs, labels)
    assert scores.policy_chosen.tolist() == pytest.approx([hand_log_prob(model, p.chosen) for p in pairs], abs=1e-5)
    assert scores.policy_rejected.tolist() == pytest.approx([hand_log_prob(model, p.rejected) for p in pairs], abs=1e-5)
    # the prompt is never scored: its positions are masked in both halves
    for row, example in enumerate([p.chosen for p in pairs] + [p.rejected for p in pairs]):
        assert (labels[row, : example.prompt_tokens - 1] == -100).all()
        assert (labels[row] != -100).sum() == example.response_tokens


def yes_no_rows(numbers):
    return [{"prompt": f"Is {n} ok?", "chosen": "yes", "rejected": "no"} for n in numbers]


def test_a_tiny_run_prefers_the_chosen_answer_on_held_out_pairs_and_keeps_its_reference(tiny):
    model, tokenizer = tiny
    config = dpo.DpoConfig(beta=0.5, steps=30, batch_size=4, lr=3e-3, eval_interval=10, seed=0)
    train = yes_no_rows(n for n in range(60) if n % 4)
    held = yes_no_rows(n for n in range(60) if not n % 4)  # prompts it never trains on
    trainer = dpo.DpoRunner(config, tokenizer, model, train, held)
    reference = {k: v.clone() for k, v in trainer.reference.state_dict().items()}
    assert trainer.before.accuracy == 0.0 and trainer.before.margin == 0.0  # policy = reference: every pair a tie
    metrics = list(trainer.run())
    held = [m for m in metrics if m.val_accuracy is not None]
    assert [m.step for m in held] == [10, 20, 30]
    assert held[-1].val_accuracy > 0.5 and held[-1].val_margin > 0  # above chance on prompts it never saw
    assert held[-1].chosen_ratio > held[-1].rejected_ratio
    assert all(torch.equal(reference[k], v) for k, v in trainer.reference.state_dict().items())
    assert not all(p.requires_grad for p in trainer.reference.parameters())
    assert any(not torch.equal(reference[k], v) for k, v in trainer.model.state_dict().items())


@pytest.mark.parametrize("bad", [{"beta": 0.0}, {"beta": -1.0}, {"steps": 0}, {"lr": 0.0}, {"beta": float("inf")}])
def test_bad_settings_are_one_clear_error(bad):
    with pytest.raises(ConfigError, match="cannot work"):
        dpo.DpoConfig(**bad)


def test_a_pair_batch_is_the_chosen_then_the_rejected():
    pairs = [dpo.Pair(sft.Encoded([1, 2, 3], 2), sft.Encoded([1, 2, 4, 5], 2))]
    inputs, labels = dpo.pair_batch(pairs)
    assert inputs.tolist() == [[1, 2, 0], [1, 2, 4]] and labels.tolist() == [[-100, 3, -100], [-100, 4, 5]]
