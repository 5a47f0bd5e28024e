"""Head ablation (llmviz.interpret.ablation) against an independent implementation with plain PyTorch forward hooks on
W_O's input (tests/support/interventions.py), on every attention variant; an ablation of nothing changes nothing,
exactly; the layer × head grid is each head knocked out alone."""

from __future__ import annotations

import pytest
import torch

from llmviz.errors import ConfigError
from llmviz.interpret import ablation
from tests.support import interventions
from tests.support.interventions import ARCHITECTURES, model_of

KINDS = ["gpt2", "attention-only", "llama", "qwen", "multi-query", "moe"]


@pytest.fixture(scope="module", params=KINDS)
def model(request):
    return model_of(ARCHITECTURES[request.param], seed=1)


@pytest.fixture(scope="module")
def ids() -> list[int]:
    return torch.randint(0, 97, (14,), generator=torch.Generator().manual_seed(4)).tolist()


@pytest.mark.parametrize("mode", ablation.MODES)
def test_ablating_heads_equals_pytorch_hooks_on_w_o(model, ids, mode):
    heads = [(0, 1), (1, 0), (1, 3)]
    result = ablation.ablate(model, ids, heads, mode)
    row = torch.tensor([ids])
    expected_after = float(interventions.ablated_loss(model, row, heads, mode)[0])
    expected_before = float(interventions.ablated_loss(model, row, [], mode)[0])
    assert result.loss_after == pytest.approx(expected_after, abs=1e-5)
    assert result.loss_before == pytest.approx(expected_before, abs=1e-5)
    assert abs(result.change) > 1e-3  # random weights: knocking three heads out does change the loss
    assert result.heads == ((0, 1), (1, 0), (1, 3)) and result.mode == mode
    assert result.token_losses_after.shape == (len(ids) - 1,)
    assert float(result.token_losses_after.mean()) == pytest.approx(result.loss_after, abs=1e-6)


def test_an_ablation_of_nothing_changes_nothing_exactly(model, ids):
    for mode in ablation.MODES:
        result = ablation.ablate(model, ids, [], mode)
        assert result.loss_after == result.loss_before
        assert torch.equal(result.token_losses_after, result.token_losses_before)


def test_the_head_grid_is_each_head_knocked_out_alone(model, ids):
    for mode in ablation.MODES:
        grid = ablation.head_effects(model, ids, mode)
        assert grid.complete and grid.losses.shape == (model.config.n_layers, model.config.n_heads)
        row = torch.tensor([ids])
        expected = torch.tensor(
            [
                [
                    float(interventions.ablated_loss(model, row, [(layer, head)], mode)[0])
                    for head in range(grid.losses.shape[1])
                ]
                for layer in range(grid.losses.shape[0])
            ]
        )
        torch.testing.assert_close(grid.losses, expected, atol=1e-5, rtol=0)
        assert grid.clean_loss == pytest.approx(float(interventions.ablated_loss(model, row, [], mode)[0]), abs=1e-5)
        effect, layer, head = grid.ranked()[0]
        assert effect == pytest.approx(float(grid.effects.max()), abs=0) and grid.effects[layer, head] == effect


def test_the_grid_is_the_same_in_small_batches(monkeypatch, ids):
    """A sweep over a large model takes more forward passes, never more memory: cut into batches of two heads, the
    grid is the same."""
    model = model_of(ARCHITECTURES["gpt2"], seed=2)
    whole = ablation.head_effects(model, ids)
    monkeypatch.setattr(ablation, "rows_per_batch", lambda config, tokens: 3)  # the clean row and two heads
    progress = []
    cut = ablation.head_effects(model, ids, progress=lambda done, total: progress.append((done, total)))
    torch.testing.assert_close(cut.losses, whole.losses, atol=1e-5, rtol=0)
    assert progress == [(2, 8), (4, 8), (6, 8), (8, 8)]


def test_a_stopped_sweep_keeps_what_it_measured(monkeypatch, ids):
    model = model_of(ARCHITECTURES["gpt2"], seed=2)
    monkeypatch.setattr(ablation, "rows_per_batch", lambda config, tokens: 3)
    first = next(ablation.head_effect_steps(model, ids))
    assert first.done == 2 and not first.complete
    assert torch.isnan(first.losses).sum() == 6 and len(first.ranked()) == 2


def test_bad_requests_are_refused_before_any_forward_pass(ids):
    model = model_of(ARCHITECTURES["gpt2"])
    with pytest.raises(ConfigError, match="Layer 2, head 0 does not exist"):
        ablation.ablate(model, ids, [(2, 0)])
    with pytest.raises(ConfigError, match="'zero' or 'mean'"):
        ablation.ablate(model, ids, [(0, 0)], mode="resample")
    with pytest.raises(ConfigError, match="at least 2 tokens"):
        ablation.head_effects(model, ids[:1])
    with pytest.raises(ConfigError, match="do not fit this model's context of 16"):
        ablation.head_effects(model, ids * 2)
