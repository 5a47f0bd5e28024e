"""llmviz.training.overfitting: when a run's validation loss says it learns its training text by heart, on curves
written here with their verdicts worked out by hand, and on real runs."""

import math

import pytest

from llmviz.training.config import TrainConfig
from llmviz.training.overfitting import overfitting
from llmviz.training.trainer import StepMetrics, Trainer


def curve(points, train_between=None):
    """StepMetrics of a run evaluated at the given ``(step, train_loss, val_loss)`` points (other fields: 0). With
    ``train_between``, the steps between evaluations are filled in with that training loss and no evaluation."""
    metrics = []
    for step, train, val in points:
        if train_between is not None:
            start = metrics[-1].step + 1 if metrics else 1
            metrics += [StepMetrics(s, train_between, None, 0.0, 0.0, 0.0, 0.0, 0.0) for s in range(start, step)]
        metrics.append(StepMetrics(step, train, val, 0.0, 0.0, 0.0, 0.0, 0.0))
    return metrics


def test_a_validation_loss_that_rose_well_above_its_best_while_training_fell():
    run = curve([(100, 3.0, 3.20), (200, 2.5, 3.00), (300, 2.0, 3.16), (400, 1.5, 3.25)])
    found = overfitting(run, vocab_size=65)
    # best 3.00 at step 200; "well above": max(0.1, 5 % of 3.00 = 0.15) = 0.15; the last two are 3.16 and 3.25
    assert (found.best_step, found.best_val_loss, found.last_step, found.last_val_loss) == (200, 3.00, 400, 3.25)
    assert found.rise == pytest.approx(0.25)
    # training loss now: the mean of the last 10 steps' (here the 4 there are), (3.0 + 2.5 + 2.0 + 1.5) / 4
    assert found.train_loss_now == pytest.approx(2.25)
    assert found.rose and not found.worse_than_guessing  # ln 65 = 4.17 is above 3.25
    message = found.message()
    assert "rose from 3.000 at step 200 to 3.250 at step 400" in message
    assert "its best was at step 200" in message and "more text" in message and "dropout" in message
    assert "--steps 200" in found.message(flags=True) and "--dropout" in found.message(flags=True)


def test_a_rise_under_the_threshold_is_noise():
    # best 3.00; the last two at 3.14 and 3.14: 0.14 < 0.15 (5 % of 3.00)
    assert overfitting(curve([(100, 3.0, 3.20), (200, 2.5, 3.00), (300, 2.0, 3.14), (400, 1.5, 3.14)]), 65) is None
    # at a best of 1.0 the threshold is 0.1 nats (5 % would be 0.05): 1.09 is noise, 1.10 is not
    low = [(100, 1.5, 1.2), (200, 1.0, 1.0), (300, 0.8, 1.09), (400, 0.6, 1.09)]
    assert overfitting(curve(low), 65) is None
    assert overfitting(curve(low[:2] + [(300, 0.8, 1.1), (400, 0.6, 1.1)]), 65).rose


def test_one_high_evaluation_is_not_a_trend():
    spike_last = [(100, 3.0, 3.2), (200, 2.5, 3.0), (300, 2.0, 3.05), (400, 1.5, 3.5)]
    assert overfitting(curve(spike_last), 65) is None  # only the last is well above: wait for the next
    spike_before = [(100, 3.0, 3.2), (200, 2.5, 3.0), (300, 2.0, 3.5), (400, 1.5, 3.05)]
    assert overfitting(curve(spike_before), 65) is None
    assert overfitting(curve(spike_last + [(500, 1.2, 3.4)]), 65).best_step == 200


def test_a_run_whose_training_loss_rose_too_is_unstable_not_overfitting():
    # validation and training loss both went up after the best: the optimizer's trouble, which other advice fixes
    run = curve([(100, 3.0, 3.2), (200, 2.5, 3.0), (300, 2.9, 3.4), (400, 3.1, 3.6)])
    assert overfitting(run, 65) is None


def test_worse_than_guessing_on_held_out_text():
    """README's old example: validation loss 7.60 against training 0.023 with a vocabulary of 512."""
    uniform = math.log(512)  # 6.238
    found = overfitting(curve([(500, 0.023, 7.596)]), vocab_size=512)
    assert found.worse_than_guessing and not found.rose  # one evaluation: no trend, but worse than a guess
    assert found.uniform_loss == pytest.approx(uniform)
    assert "than guessing uniformly over its vocabulary (ln V = 6.24)" in found.message()


def test_a_model_that_learned_nothing_is_not_overfitting():
    # at ln V + a little on both sides (random weights): nothing memorised
    uniform = math.log(65)
    assert overfitting(curve([(25, uniform + 0.1, uniform + 0.12), (50, uniform, uniform + 0.05)]), 65) is None
    # above ln V on held-out text, but the training loss only 0.4 below: not the half a nat it takes
    assert overfitting(curve([(50, uniform - 0.3, uniform + 0.1)]), 65) is None


def test_training_losses_are_averaged_over_the_last_ten_steps():
    run = curve([(10, 3.0, 3.0), (20, 2.0, 2.9), (30, 1.0, 3.2), (40, 1.0, 3.3)], train_between=2.0)
    found = overfitting(run, 65)
    # now: steps 31–39 at 2.0 and step 40 at 1.0, (9 × 2.0 + 1.0) / 10 = 1.9; at the best evaluation (step 20):
    # steps 11–20, all 2.0. 1.9 < 2.0: the training loss fell while the validation loss rose 0.3 (> 0.145)
    assert found.train_loss_now == pytest.approx(1.9) and found.rose


def test_nothing_to_judge():
    assert overfitting([], 65) is None
    assert overfitting(curve([(10, 2.0, None)]), 65) is None
    nan = curve([(10, 2.0, 2.0), (20, 1.5, float("nan"))])
    assert overfitting(nan, 65) is None  # a NaN evaluation is skipped, never the best
    assert overfitting(curve([(10, 0.01, 9.0)]), 0) is None  # no vocabulary known: no ln V to compare


@pytest.mark.slow  # two short runs of a GPT micro
def test_a_run_on_a_few_sentences_overfits_and_llmviz_train_says_so(tmp_path, capsys):
    """A GPT micro that sees 700 characters 40 times over learns them by heart: ``llmviz train`` warns on stderr
    and its summary says so; the same model on 200,000 characters of the Python manual for as many steps does not
    overfit (validation is the text's last 10 %)."""
    import json

    from llmviz.cli.main import main
    from llmviz.data import corpus

    text = corpus.load("python-docs")
    (tmp_path / "few.txt").write_text(text[:700])
    options = ["--model", "gpt-micro", "--tokenizer", "char", "--context", "32", "--steps", "300"]
    argv = ["train", "--corpus", str(tmp_path / "few.txt"), *options, "--eval-interval", "25", "--out", "few"]
    assert main([*argv[:-1], str(tmp_path / "few")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])["overfits"] is True
    assert "warning: This run overfits: its validation loss rose from" in captured.err
    assert "fewer steps (--steps " in captured.err
    config = TrainConfig(model="gpt-micro", tokenizer="char", context_length=32, steps=300, eval_interval=25)
    large = Trainer.from_text(text[:200_000], config)
    list(large.run())
    assert overfitting(large.history, large.dataset.vocab_size) is None
