"""Steering (llmviz.interpret.steering) against plain PyTorch forward pre-hooks on the blocks: the mean difference is
the difference of the recorded block inputs' means, adding α × direction equals adding it with a pre-hook, α = 0
changes nothing, exactly, and greedy steered generation equals a loop written here with the pre-hook."""

from __future__ import annotations

import pytest
import torch

from llmviz.errors import ConfigError
from llmviz.interpret import steering
from llmviz.models.gpt import cache_name
from tests.support import interventions
from tests.support.interventions import ARCHITECTURES, model_of


@pytest.fixture(scope="module", params=["gpt2", "llama", "moe"])
def model(request):
    return model_of(ARCHITECTURES[request.param], seed=5)


def prompts(seed: int, count: int = 3) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 97, (int(n),), generator=generator).tolist() for n in (5, 8, 3)[:count]]


def test_the_mean_difference_is_the_difference_of_the_block_inputs_means(model):
    positive, negative = prompts(1), prompts(2, 2)
    found = steering.mean_difference(model, positive, negative, layer=1)

    def mean(group):
        rows = [interventions.block_inputs(model, torch.tensor([ids]))[1][0] for ids in group]  # each (T, C)
        return torch.cat(rows).mean(0)  # every position of every prompt counts once

    torch.testing.assert_close(found, mean(positive) - mean(negative), atol=1e-5, rtol=0)


def test_adding_a_direction_equals_a_pytorch_pre_hook(model):
    direction = steering.token_direction(model, 7)
    assert float(direction.norm()) == pytest.approx(1.0, abs=1e-6)
    ids = torch.tensor([prompts(3)[1]])
    for layer in range(model.config.n_layers):
        hooks = {cache_name(layer, "resid_pre"): steering.steering_hook(direction, 4.0)}
        ours, _, _ = model.run_with_hooks(ids, hooks=hooks)
        expected = interventions.steered_logits(model, ids, layer, 4.0 * direction)
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=0)
        plain, _, _ = model.run_with_hooks(ids)
        assert not torch.allclose(ours, plain)


def test_alpha_zero_changes_nothing_exactly(model):
    direction = steering.mean_difference(model, prompts(1), prompts(2), layer=0)
    pair = steering.steered_pair(model, prompts(4)[0], 0, direction, 0.0, new_tokens=8, temperature=1.0, seed=3)
    assert pair.plain == pair.steered and len(pair.plain) == 8
    hooks = {cache_name(0, "resid_pre"): steering.steering_hook(direction, 0.0)}
    ids = torch.tensor([prompts(4)[0]])
    assert torch.equal(model.run_with_hooks(ids, hooks=hooks)[0], model.run_with_hooks(ids)[0])


def test_greedy_steered_generation_equals_a_loop_with_the_pre_hook(model):
    direction = steering.token_direction(model, 11)
    start = prompts(5)[1]
    pair = steering.steered_pair(model, start, 1, direction, 6.0, new_tokens=6, temperature=0.0)
    sequence = list(start)
    for _ in range(6):
        logits = interventions.steered_logits(model, torch.tensor([sequence]), 1, 6.0 * direction)
        sequence.append(int(logits[0, -1].argmax()))
    assert pair.steered == sequence[len(start) :]
    plain = list(start)
    for _ in range(6):
        with torch.no_grad():
            plain.append(int(model(torch.tensor([plain]))[0][0, -1].argmax()))
    assert pair.plain == plain[len(start) :]
    assert pair.plain != pair.steered, "α = 6 along a token's direction changes what random weights say"
    assert not model.training, "generating never switches the model to training mode"


def test_the_stream_norm_is_the_mean_length_of_the_block_input(model):
    ids = prompts(6)[1]
    inputs = interventions.block_inputs(model, torch.tensor([ids]))[1][0]  # (T, C)
    assert steering.stream_norm(model, ids, 1) == pytest.approx(float(inputs.norm(dim=-1).mean()), abs=1e-5)


def test_bad_requests_are_refused():
    model = model_of(ARCHITECTURES["gpt2"])
    direction = steering.token_direction(model, 1)
    with pytest.raises(ConfigError, match="Layer 5 does not exist"):
        steering.steered_pair(model, [1, 2], 5, direction, 1.0)
    with pytest.raises(ConfigError, match="between 1 and 200"):
        steering.steered_pair(model, [1, 2], 0, direction, 1.0, new_tokens=0)
    with pytest.raises(ConfigError, match="32 numbers"):
        steering.steered_pair(model, [1, 2], 0, torch.ones(3), 1.0)
    with pytest.raises(ConfigError, match="finite"):
        steering.steered_pair(model, [1, 2], 0, direction, float("nan"))
    with pytest.raises(ConfigError, match="at least one prompt"):
        steering.mean_difference(model, [], [[1]], 0)
    with pytest.raises(ConfigError, match="not in the model's vocabulary"):
        steering.token_direction(model, 97)
