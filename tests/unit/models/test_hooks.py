"""Hook points (llmviz.models.cache.HookPoints, run_with_hooks) on every architecture of the GPT: every named
intermediate can be edited during a forward pass, an edit that changes nothing changes nothing (exactly), and an
edit equals the same edit made with plain PyTorch forward hooks on the modules (≤ 1e-5)."""

from __future__ import annotations

import pytest
import torch

from llmviz.errors import ConfigError
from llmviz.models.gpt import block_points, cache_name, cache_names
from tests.support.interventions import ARCHITECTURES, model_of


@pytest.fixture(scope="module", params=list(ARCHITECTURES))
def arch(request):
    return request.param, model_of(ARCHITECTURES[request.param])


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, 97, (2, 12), generator=torch.Generator().manual_seed(3))  # (B, T)


def test_every_name_is_a_hook_point_and_an_identity_edit_changes_nothing_exactly(arch, ids):
    name, model = arch
    names = cache_names(model.config)
    seen: list[str] = []

    def identity(x, point):
        seen.append(point)
        return x.clone()

    plain, _, _ = model.run_with_hooks(ids)
    edited, _, cache = model.run_with_hooks(ids, hooks={n: identity for n in names}, keep=True)
    assert seen == names, "every recorded name is reached, in forward order, once"
    assert list(cache) == names
    assert torch.equal(edited, plain)
    recorded, _, _ = model.run_with_cache(ids)
    assert torch.equal(recorded, plain), "run_with_cache and run_with_hooks take the same path"
    fast, _ = model(ids)  # the fused attention kernel: the same numbers, to float precision
    torch.testing.assert_close(fast, plain, atol=1e-5, rtol=0)
    assert plain.abs().max() > 1.0


def test_a_patch_of_an_activation_by_itself_changes_nothing_exactly(arch, ids):
    _, model = arch
    plain, _, cache = model.run_with_hooks(ids, keep=True)
    hooks = {n: (lambda x, point: cache[point].to(x.dtype)) for n in cache_names(model.config) if n != "aux_loss"}
    patched, _, _ = model.run_with_hooks(ids, hooks=hooks)
    assert torch.equal(patched, plain)


def test_an_edit_flows_into_the_rest_of_the_forward_pass(arch, ids):
    """Each block point edited (x → 1.5·x, or a pattern made uniform): the logits change, and recomputing the rest of
    the pass by hand from the edited tensor gives them."""
    name, model = arch
    last = model.config.n_layers - 1
    for point in block_points(model.config):
        if point in ("mlp.experts", "attn.masked_scores"):
            continue  # ids, and -inf entries: edited in their own tests below
        hooked = cache_name(last, point)
        changed, _, _ = model.run_with_hooks(ids, hooks={hooked: lambda x, p: 1.5 * x})
        plain, _, _ = model.run_with_hooks(ids)
        assert not torch.allclose(changed, plain), (name, point)
    # the final norm's output, edited, goes straight into the output head
    logits, _, cache = model.run_with_hooks(ids, hooks={"ln_f": lambda x, p: x * 2.0}, keep=["ln_f"])
    torch.testing.assert_close(logits, model.lm_head(cache["ln_f"]), atol=1e-5, rtol=0)


def test_a_uniform_pattern_gives_the_mean_of_the_values(ids):
    """The pattern replaced by causal uniform attention: z at position t is the mean of v over positions ≤ t
    (computed here by hand from the recorded values)."""
    model = model_of(ARCHITECTURES["gpt2"])
    tokens = ids.shape[1]
    uniform = torch.tril(torch.ones(tokens, tokens))
    uniform = uniform / uniform.sum(-1, keepdim=True)  # (T, T)
    name = cache_name(0, "attn.pattern")
    _, _, cache = model.run_with_hooks(
        ids, hooks={name: lambda x, p: uniform.expand_as(x)}, keep=[cache_name(0, "attn.v"), cache_name(0, "attn.z")]
    )
    v = cache[cache_name(0, "attn.v")]  # (B, H, T, hd)
    expected = torch.cumsum(v, dim=2) / torch.arange(1, tokens + 1)[:, None]  # running mean over positions
    torch.testing.assert_close(cache[cache_name(0, "attn.z")], expected, atol=1e-6, rtol=0)


def test_masked_scores_edits_change_the_pattern(ids):
    """Equal scores wherever the causal mask allows: the pattern becomes uniform over the positions so far."""
    model = model_of(ARCHITECTURES["llama"])
    pattern = cache_name(1, "attn.pattern")

    def equal_scores(x, point):
        allowed = torch.ones(x.shape[-2:], dtype=torch.bool).tril()  # (T, T)
        return torch.zeros_like(x).masked_fill(~allowed, float("-inf"))

    _, _, cache = model.run_with_hooks(ids, hooks={cache_name(1, "attn.masked_scores"): equal_scores}, keep=[pattern])
    tokens = ids.shape[1]
    uniform = torch.tril(torch.ones(tokens, tokens)) / torch.arange(1, tokens + 1)[:, None]  # row t: 1/(t+1)
    torch.testing.assert_close(cache[pattern], uniform.expand_as(cache[pattern]), atol=1e-6, rtol=0)


def test_expert_choices_can_be_forced():
    """A mixture of experts with every token sent to experts 0 and 1 at weight ½ each: its output is the mean of those
    two experts' MLPs on the normalised stream (computed here with the expert modules themselves)."""
    model = model_of(ARCHITECTURES["moe"])
    ids = torch.randint(0, 97, (1, 6), generator=torch.Generator().manual_seed(5))
    experts, weights = cache_name(0, "mlp.experts"), cache_name(0, "mlp.expert_weights")
    hooks = {experts: lambda x, p: torch.tensor([0, 1]).expand_as(x), weights: lambda x, p: torch.full_like(x, 0.5)}
    _, _, cache = model.run_with_hooks(ids, hooks=hooks, keep=[cache_name(0, "ln2"), cache_name(0, "mlp.out")])
    normed = cache[cache_name(0, "ln2")]
    moe = model.blocks[0].mlp
    expected = 0.5 * (moe.experts[0](normed) + moe.experts[1](normed))
    torch.testing.assert_close(cache[cache_name(0, "mlp.out")], expected, atol=1e-6, rtol=0)


def test_residual_edit_equals_a_pytorch_forward_pre_hook(arch, ids):
    """Adding a vector to the residual stream entering block 1 (hook point blocks.1.resid_pre) equals a plain PyTorch
    forward pre-hook on model.blocks[1] that adds it to the block's input (the fused fast path)."""
    _, model = arch
    vector = torch.randn(model.config.d_model, generator=torch.Generator().manual_seed(9))

    def pre_hook(module, args, kwargs):
        return (args[0] + vector, *args[1:]), kwargs

    handle = model.blocks[1].register_forward_pre_hook(pre_hook, with_kwargs=True)
    try:
        with torch.no_grad():
            expected, _ = model(ids)
    finally:
        handle.remove()
    ours, _, _ = model.run_with_hooks(ids, hooks={cache_name(1, "resid_pre"): lambda x, p: x + vector})
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=0)


def test_unknown_names_and_wrong_shapes_are_refused(ids):
    model = model_of(ARCHITECTURES["attention-only"])
    with pytest.raises(ConfigError, match="no intermediate named blocks.0.mlp.out"):
        model.run_with_hooks(ids, hooks={"blocks.0.mlp.out": lambda x, p: x})
    with pytest.raises(ConfigError, match="no intermediate named blocks.0.hook_resid_pre"):
        model.run_with_hooks(ids, hooks={"blocks.0.hook_resid_pre": lambda x, p: x})
    with pytest.raises(ConfigError, match="returned shape"):
        model.run_with_hooks(ids, hooks={cache_name(0, "resid_pre"): lambda x, p: x[:, :1]})
    with pytest.raises(ConfigError, match="No hook point"):
        cache_name(0, "hook_z")
    with pytest.raises(ConfigError, match="whole number"):
        cache_name(-1, "attn.z")


def test_cache_names_are_the_names_the_model_records(arch, ids):
    _, model = arch
    _, _, cache = model.run_with_cache(ids)
    assert list(cache) == cache_names(model.config)
