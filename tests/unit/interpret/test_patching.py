"""Activation patching (llmviz.interpret.patching) against an independent implementation with plain PyTorch forward
hooks (tests/support/interventions.py) for every component, on every attention variant: a patch of an activation
by itself changes nothing, exactly, and patching the residual stream of every layer at once gives the clean run."""

from __future__ import annotations

import pytest
import torch

from llmviz.errors import ConfigError
from llmviz.interpret import patching
from tests.support import interventions
from tests.support.interventions import ARCHITECTURES, model_of

KINDS = ["gpt2", "attention-only", "llama", "moe"]


@pytest.fixture(scope="module", params=KINDS)
def model(request):
    return model_of(ARCHITECTURES[request.param], seed=3)


@pytest.fixture(scope="module")
def prompts() -> tuple[list[int], list[int]]:
    clean = torch.randint(0, 97, (9,), generator=torch.Generator().manual_seed(6)).tolist()
    corrupted = list(clean)
    corrupted[3] = (clean[3] + 11) % 97  # one token swapped, as a name would be
    return clean, corrupted


def components(model) -> list[str]:
    return [c for c in patching.COMPONENTS if c != "mlp.out" or model.config.mlp]


def test_every_patch_equals_pytorch_hooks(model, prompts):
    clean, corrupted = prompts
    answer, wrong = patching.default_answers(model, clean, corrupted)
    assert answer != wrong
    clean_row, corrupted_row = torch.tensor([clean]), torch.tensor([corrupted])
    for component in components(model):
        result = patching.patching(model, clean, corrupted, answer, wrong, component)
        assert result.complete
        with torch.no_grad():
            expected_clean = patching.logit_difference(model(clean_row)[0], answer, wrong)
            expected_corrupted = patching.logit_difference(model(corrupted_row)[0], answer, wrong)
        assert result.clean_difference == pytest.approx(float(expected_clean), abs=1e-5)
        assert result.corrupted_difference == pytest.approx(float(expected_corrupted), abs=1e-5)
        expected = torch.tensor(
            [
                [
                    float(
                        patching.logit_difference(
                            interventions.patched_logits(model, clean_row, corrupted_row, component, layer, index),
                            answer,
                            wrong,
                        )
                    )
                    for index in range(result.differences.shape[1])
                ]
                for layer in range(model.config.n_layers)
            ]
        )
        torch.testing.assert_close(result.differences, expected, atol=1e-5, rtol=0)
        restored = (expected - expected_corrupted) / (expected_clean - expected_corrupted)
        torch.testing.assert_close(result.restored, restored, atol=1e-4, rtol=1e-4)


def test_positions_before_the_swap_restore_nothing_and_the_residual_stream_there_restores_all(model, prompts):
    """Before the swapped token both runs are the same: a patch there is the corrupted run (0 restored). At layer 0 the
    residual stream at the swapped position is the only place the runs differ: patching it restores everything."""
    clean, corrupted = prompts
    answer, wrong = patching.default_answers(model, clean, corrupted)
    result = patching.patching(model, clean, corrupted, answer, wrong, "resid_pre")
    assert result.first_difference == 3
    assert torch.equal(result.restored[:, :3], torch.zeros(model.config.n_layers, 3))
    assert float(result.restored[0, 3]) == pytest.approx(1.0, abs=1e-4)


def test_a_patch_of_an_activation_by_itself_changes_nothing_exactly(model, prompts):
    clean, _ = prompts
    every = [(layer, position) for layer in range(model.config.n_layers) for position in range(len(clean))]
    plain, _, _ = model.run_with_hooks(torch.tensor([clean]))
    for component in components(model):
        heads = [(layer, head) for layer in range(model.config.n_layers) for head in range(model.config.n_heads)]
        cells = heads if component == "attn.z" else every
        assert torch.equal(_patched_by_itself(model, clean, component, cells), plain), component


def _patched_by_itself(model, ids, component, cells):
    """The run of ``ids`` with its own activations patched in (patched_logits refuses two equal prompts, rightly)."""
    cache = patching.clean_activations(model, ids, component)
    hooks = patching.patch_hooks([list(cells)], cache, component)
    logits, _, _ = model.run_with_hooks(torch.tensor([ids]), hooks=hooks)
    return logits


def test_patching_every_layer_at_once_gives_the_clean_run(model, prompts):
    clean, corrupted = prompts
    every = [(layer, position) for layer in range(model.config.n_layers) for position in range(len(clean))]
    patched = patching.patched_logits(model, clean, corrupted, "resid_pre", every)
    plain, _, _ = model.run_with_hooks(torch.tensor([clean]))
    assert torch.equal(patched, plain)


def test_bad_pairs_are_refused(prompts):
    model = model_of(ARCHITECTURES["attention-only"])
    clean, corrupted = prompts
    with pytest.raises(ConfigError, match="same number of tokens"):
        patching.patching(model, clean, corrupted[:-1], 1, 2)
    with pytest.raises(ConfigError, match="The two prompts are the same"):
        patching.patching(model, clean, clean, 1, 2)
    with pytest.raises(ConfigError, match="no MLPs"):
        patching.patching(model, clean, corrupted, 1, 2, "mlp.out")
    with pytest.raises(ConfigError, match="two different tokens"):
        patching.patching(model, clean, corrupted, 1, 1)
    with pytest.raises(ConfigError, match="Patch one of"):
        patching.patching(model, clean, corrupted, 1, 2, "embed")


def test_the_default_pair_changes_the_shipped_gpts_answer_and_a_pair_that_does_not_is_named():
    """The lesson's old default ("for"/"if") predicted the same token from both prompts: its "wrong" answer was the
    corrupted run's second choice, d_clean 1.105 < d_corrupted 1.304, and the page drew shares of 2.88 and −0.65."""
    from llmviz.training.checkpoint import load_checkpoint
    from tests.support.paths import ROOT

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    clean, corrupted = tokenizer.encode(patching.DEFAULT_CLEAN), tokenizer.encode(patching.DEFAULT_CORRUPTED)
    with torch.no_grad():
        probabilities = torch.softmax(model(torch.tensor([clean, corrupted]))[0][:, -1], dim=-1)  # (2, V)
    found = patching.answers(model, clean, corrupted)
    assert found.answer == int(probabilities[0].argmax()) and found.wrong == int(probabilities[1].argmax())
    assert found.changed and found.problem is None and found.answer != found.wrong
    sweep = patching.patching(model, clean, corrupted, found.answer, found.wrong, "resid_pre")
    assert sweep.problem is None and sweep.clean_difference > 0 > sweep.corrupted_difference
    restored = sweep.restored[0, sweep.first_difference]  # the stream entering block 0 where the prompts differ
    assert abs(float(restored) - 1.0) < 1e-4  # is the whole difference: all of it comes back

    old_clean = tokenizer.encode('The "for" statement is used to iterate over the elements of a')
    old_corrupted = tokenizer.encode('The "if" statement is used to iterate over the elements of a')
    kept = patching.answers(model, old_clean, old_corrupted)
    assert not kept.changed and "does not change the answer" in kept.problem
    assert (kept.answer, kept.wrong) == patching.default_answers(model, old_clean, old_corrupted)
    old = patching.patching(model, old_clean, old_corrupted, kept.answer, kept.wrong, "resid_pre")
    assert old.clean_difference <= old.corrupted_difference and "does not change the answer" in old.problem
