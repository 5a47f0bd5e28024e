"""The induction-head preset: its data, its probe, and (slow) the phase change on a fixed seed."""

import math
import random

import pytest
import torch

from llmviz.interpret import heads, induction
from llmviz.jobs.manager import JobManager
from llmviz.models.gpt import GPT, GPTConfig
from tests.support.paths import ROOT

# The stated threshold: by the end of the (shortened) preset run, some layer-1 head puts at least this much
# of its attention on the token after the earlier copy (a head attending uniformly scores 0.04 here).
INDUCTION_THRESHOLD = 0.3


def test_repeated_lines_hold_one_repeat_within_the_context():
    rng = random.Random(3)
    for _ in range(50):
        line = induction.repeated_line(rng, 32, 8, 16)
        assert len(line) == 32 and set(line) <= set(induction.ALPHABET)
        assert any(line[i : i + m] == line[i + m : i + 2 * m] for m in range(8, 17) for i in range(0, 33 - 2 * m))
    text = induction.repeated_text(induction.InductionPreset(lines=10))
    assert text.count("\n") == 10 and all(len(line) == 32 for line in text.splitlines())


def test_preset_is_a_regular_training_config():
    config = induction.PRESET.train_config()
    assert config.model == "attn-only-2l" and config.stride == config.context_length + 1
    with pytest.raises(ValueError):
        induction.InductionPreset(context=16, max_repeat=12)


def test_probe_lines_repeat_a_half_of_distinct_characters():
    lines = induction.probe_lines(count=3)
    assert lines.shape == (3, 32)
    for row in lines.tolist():
        assert row[:16] == row[16:] and len(set(row[:16])) == 16


def test_probe_on_a_model_that_knows_nothing():
    model = GPT(
        GPTConfig(vocab_size=63, context_length=32, d_model=16, n_heads=2, n_layers=2, dropout=0.0, mlp=False)
    ).eval()
    with torch.no_grad():
        model.lm_head.weight.zero_()  # every prediction uniform: loss ln 63 on both halves
    result = induction.probe(model, induction.probe_lines(count=2), step=7)
    assert result.step == 7
    assert result.first_half_loss == pytest.approx(math.log(63), abs=1e-5)
    assert result.repeated_half_loss == pytest.approx(math.log(63), abs=1e-5)
    assert result.vocab_size == 63 and result.uniform_loss == pytest.approx(math.log(63))
    assert set(result.scores) == set(heads.DETECTORS) and result.scores["induction"].shape == (2, 2)


def test_the_preset_vocabulary_is_62_characters_and_the_newline():
    text = induction.repeated_text(induction.InductionPreset(lines=200))
    assert induction.tokenizer().vocab_size == len(set(text)) == 63
    assert induction.make_trainer(induction.InductionPreset(lines=20)).model.config.vocab_size == 63


def probe_result(induction_scores, first=4.21, repeated=3.0, step=300) -> induction.ProbeResult:
    values = torch.tensor(induction_scores)
    return induction.ProbeResult(
        step,
        {"induction": values, "previous token": torch.zeros_like(values)},
        first_half_loss=first,
        repeated_half_loss=repeated,
        vocab_size=63,
    )


def test_a_layer_0_head_is_never_named_an_induction_head():
    """Early in the run a layer-0 head can score highest; it cannot be an induction head (no earlier layer
    can have told it the previous token), and below the threshold no head is named one."""
    early = probe_result([[0.05, 0.18], [0.07, 0.14]])
    assert induction.strongest_induction_head(early) == (1, 1, pytest.approx(0.14))
    text = induction.describe(early)
    assert "no head is an induction head yet" in text and "layer 0" not in text and "layer 1 head 1" in text
    late = probe_result([[0.04, 0.10], [0.44, 0.71]], first=4.209, repeated=0.394, step=600)
    assert induction.strongest_induction_head(late) == (1, 1, pytest.approx(0.71))
    assert "At step 600 **layer 1, head 1** is an induction head (score 0.71)" in induction.describe(late)
    with pytest.raises(ValueError):
        induction.strongest_induction_head(probe_result([[0.5, 0.2]]))


def test_the_first_half_is_compared_with_uniform_guessing_over_the_real_vocabulary():
    uniform = math.log(63)  # 62 letters and digits and the newline: 4.1431…, not ln 62 = 4.1271…
    text = induction.describe(probe_result([[0.0, 0.0], [0.5, 0.1]], first=4.209, repeated=0.394))
    assert f"ln 63 = {uniform:.2f}" in text and "ln 62" not in text
    assert f"{4.209 - uniform:.2f} above uniform guessing" in text  # the gap, 0.07
    assert "0.39 nats" in text and "4.21 nats" in text


@pytest.fixture(scope="module")
def preset_run() -> dict[int, torch.nn.Module]:
    """The preset's run (600 steps on the fixed seed) trained once through the job system, as the page trains it, with
    a snapshot every 20 steps: ``{step: model}`` for the two tests below."""
    manager = JobManager(max_running=1)
    try:
        job = manager.submit_training("test", induction.make_trainer(), label="induction", snapshot_every=20)
        assert job.wait(timeout=600), "the run did not finish in 10 minutes"
        assert job.status().state == "finished"
        return dict(induction.snapshot_models(job.snapshots, job.info.description))
    finally:
        manager.shutdown()


@pytest.mark.slow
def test_an_induction_head_forms_on_a_fixed_seed(preset_run):
    assert set(range(0, 601, 20)) <= set(preset_run), "a snapshot every 20 steps, step 0 included"
    curve = induction.phase_curve(preset_run.items(), induction.probe_lines())
    first, last = curve[0], curve[-1]
    assert first.step == 0 and last.step == 600
    layer, head, score = induction.strongest_induction_head(last)
    assert layer == 1 and score > INDUCTION_THRESHOLD, (layer, head, score)
    assert float(first.scores["induction"].max()) < 0.15
    # the loss on the repeated half drops with it, far below the first half's (which stays near uniform guessing, ln 63)
    assert first.repeated_half_loss > 3.5 and last.repeated_half_loss < 2.0
    assert last.first_half_loss > 3.5


@pytest.mark.slow
def test_readme_figures_of_the_induction_run_are_what_the_preset_computes(preset_run):
    """README quotes the preset run's curve (probed every 20 steps on the fixed seed): recomputed here from the
    preset's own run; each figure within 0.01 of what README prints (rounding, and another CPU's arithmetic)."""

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = " ".join(
        readme.split("4. **Watching an induction head form**")[1].split("`tests/test_induction.py`")[0].split()
    )
    claims = {  # (what, step) → the figure README prints, in README's sentence
        ("induction 1.1", 340): "0.13 at step 340",
        ("induction 1.1", 400): "0.37 at step 400",
        ("induction 1.1", 500): "0.70 at step 500",
        ("induction 1.1", 600): "0.71 at step 600",
        ("previous 0.1", 360): "0.16 at step 360",
        ("previous 0.1", 500): "0.31 at step",
        ("previous 0.1", 600): "0.35 at step 600",
        ("repeated", 340): "3.0 nats (step 340)",
        ("repeated", 500): "0.69 (step 500)",
        ("repeated", 600): "0.39 (step 600)",
    }
    for sentence in claims.values():
        assert sentence in paragraph, sentence
    lines = induction.probe_lines()
    probes = {step: induction.probe(model.eval(), lines, step) for step, model in preset_run.items() if step % 20 == 0}
    assert sorted(probes) == list(range(0, 601, 20))

    def value(what, step):
        result = probes[step]
        if what == "repeated":
            return result.repeated_half_loss
        kind, where = what.split(" ")
        layer, head = map(int, where.split("."))
        return float(result.scores["induction" if kind == "induction" else "previous token"][layer, head])

    for (what, step), sentence in claims.items():
        assert abs(value(what, step) - float(sentence.split(" ")[0])) <= 0.01 + 1e-9, (what, step, value(what, step))
    below = [value("induction 1.1", step) for step in range(0, 361, 20)]
    assert max(below) < 0.2 and "stays below 0.2 up to step 360" in paragraph
    layer0 = max(float(probes[step].scores["induction"][0].max()) for step in range(0, 361, 20))
    assert abs(layer0 - 0.18) <= 0.01 and "up to 0.18" in paragraph
    first = [probes[step].first_half_loss for step in range(80, 601, 20)]
    assert 4.20 - 0.005 <= min(first) and max(first) < 4.27 + 0.005 and "4.20–4.27 nats from step 80 on" in paragraph
    assert f"ln 63 =\n   {math.log(63):.2f}" in readme or f"ln 63 = {math.log(63):.2f}" in paragraph


def test_induction_probe_says_what_it_was_measured_on():
    """Before: section 4's "score 0.71" and section 2's 0.74 for the same head read as a contradiction: neither
    said it was measured on its own inputs."""
    from llmviz.interpret import induction

    model = induction.make_trainer(induction.InductionPreset(lines=20)).model.eval()
    lines = induction.probe_lines(count=3)  # (3, 32): 16 characters, repeated
    result = induction.probe(model, lines)
    assert (result.test_lines, result.half_length) == (3, 16)
    assert (
        "measured on the 3 test lines (16 random characters, repeated), their attention averaged"
        in induction.describe(result)
    )
