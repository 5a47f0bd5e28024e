"""llmviz's hook points and interventions against TransformerLens's, on the same GPT-2-style weights: every named
intermediate (the docs' name table, ``interventions.TRANSFORMER_LENS``), head ablation on ``hook_z``, TransformerLens's
own activation-patching functions (``transformer_lens.patching``) for every component, and steering on
``hook_resid_pre``, each to ≤ 1e-5.

TransformerLens 3.9 is pinned in requirements-dev.txt (4.x replaced ``HookedTransformer``, and the comparison then
skipped unseen). In an environment of your own without it the test still skips: ``pip install "transformer_lens<4"``."""

from __future__ import annotations

import pytest
import torch

from llmviz.interpret import ablation, interventions, patching, steering
from llmviz.models.gpt import GPTConfig, cache_name, cache_names
from tests.support.interventions import model_of

lens = pytest.importorskip("transformer_lens")
try:
    from transformer_lens import HookedTransformer, HookedTransformerConfig
except ImportError:
    pytest.skip("this TransformerLens has no HookedTransformer (version 4 or later)", allow_module_level=True)
from transformer_lens import patching as lens_patching  # noqa: E402

CONFIG = GPTConfig(vocab_size=97, context_length=16, d_model=32, n_heads=4, n_layers=3, dropout=0.0)


def to_transformer_lens(model) -> HookedTransformer:
    """``model`` (GPT-2 style: learned positions, LayerNorm, GELU) as a HookedTransformer with the same weights."""
    config = model.config
    heads, head_dim, width = config.n_heads, config.head_dim, config.d_model
    target = HookedTransformer(
        HookedTransformerConfig(
            n_layers=config.n_layers,
            d_model=width,
            n_ctx=config.context_length,
            d_head=head_dim,
            n_heads=heads,
            d_mlp=config.mlp_width,
            d_vocab=config.vocab_size,
            act_fn="gelu_new",  # GPT-2's tanh approximation
            normalization_type="LN",
            positional_embedding_type="standard",
            eps=config.norm_eps,
            default_prepend_bos=False,
            device="cpu",
            dtype=torch.float32,
        )
    ).eval()
    state = {"embed.W_E": model.tok_emb.weight, "pos_embed.W_pos": model.pos_emb.weight}
    for layer, block in enumerate(model.blocks):
        p = f"blocks.{layer}."
        w_q, w_k, w_v = block.attn.qkv.weight.split(width, dim=0)  # each (C_out, C_in)
        b_q, b_k, b_v = (
            block.attn.qkv.bias.split(width) if block.attn.qkv.bias is not None else (torch.zeros(width),) * 3
        )
        for name, weight, bias in (("Q", w_q, b_q), ("K", w_k, b_k), ("V", w_v, b_v)):
            state[p + f"attn.W_{name}"] = weight.T.reshape(width, heads, head_dim).permute(1, 0, 2)  # (H, C, hd)
            state[p + f"attn.b_{name}"] = bias.reshape(heads, head_dim)
        state[p + "attn.W_O"] = block.attn.proj.weight.T.reshape(heads, head_dim, width)  # (H, hd, C)
        state[p + "attn.b_O"] = block.attn.proj.bias
        state[p + "ln1.w"], state[p + "ln1.b"] = block.ln1.scale, block.ln1.shift
        state[p + "ln2.w"], state[p + "ln2.b"] = block.ln2.scale, block.ln2.shift
        state[p + "mlp.W_in"], state[p + "mlp.b_in"] = block.mlp.fc.weight.T, block.mlp.fc.bias
        state[p + "mlp.W_out"], state[p + "mlp.b_out"] = block.mlp.proj.weight.T, block.mlp.proj.bias
    state["ln_final.w"], state["ln_final.b"] = model.ln_f.scale, model.ln_f.shift
    state["unembed.W_U"] = model.lm_head.weight.T
    state["unembed.b_U"] = torch.zeros(config.vocab_size)
    missing, unexpected = target.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=False)
    assert not unexpected and all(name.endswith(("IGNORE", "mask")) for name in missing), (missing, unexpected)
    return target


@pytest.fixture(scope="module")
def pair():
    model = model_of(CONFIG, seed=8, scale=0.15)  # activations of a few units: float32 rounds them to ~1e-7
    return model, to_transformer_lens(model)


@pytest.fixture(scope="module")
def prompts() -> tuple[list[int], list[int]]:
    clean = torch.randint(0, 97, (10,), generator=torch.Generator().manual_seed(2)).tolist()
    corrupted = list(clean)
    corrupted[4] = (clean[4] + 5) % 97
    return clean, corrupted


def test_every_named_intermediate_equals_transformer_lens(pair, prompts):
    model, target = pair
    ids = torch.tensor([prompts[0]])
    logits, _, ours = model.run_with_hooks(ids, keep=True)
    expected_logits, theirs = target.run_with_cache(ids)
    torch.testing.assert_close(logits, expected_logits, atol=1e-5, rtol=0)
    assert logits.abs().max() > 1.0
    compared = 0
    for name in cache_names(model.config):
        if name in ("logits", "aux_loss") or name.endswith(".attn.scores"):
            continue  # logits compared above; TransformerLens records the scores only after the mask
        mine, reference = ours[name], theirs[interventions.transformer_lens_name(name)]
        if name.rsplit(".", 1)[-1] in ("q", "k", "v", "z"):
            mine = mine.transpose(1, 2)  # llmviz (B, H, T, hd); TransformerLens (B, T, H, hd)
        if name.endswith("masked_scores"):
            finite = torch.isfinite(mine)
            assert torch.equal(finite, torch.isfinite(reference) & (reference > -1e4))  # the same causal mask
            mine, reference = mine[finite], reference[finite]
        point = name.split(".", 2)[-1] if name.startswith("blocks.") else name
        if point in ("ln1", "ln2", "ln_f"):  # TransformerLens: before the scale and shift
            norm = model.ln_f if point == "ln_f" else getattr(model.blocks[int(name.split(".")[1])], point)
            reference = reference * norm.scale + norm.shift
        if name == "embed.pos":
            reference = reference[0] if reference.dim() == 3 else reference
            mine = mine.expand_as(reference)
        torch.testing.assert_close(mine, reference, atol=1e-5, rtol=0, msg=name)
        compared += 1
    assert compared == len(cache_names(model.config)) - 1 - model.config.n_layers  # all but the logits and scores


def test_head_ablation_equals_transformer_lens_hook_z(pair, prompts):
    model, target = pair
    ids = prompts[0]
    heads = [(0, 2), (2, 1)]

    def knock(z, hook):
        layer = int(hook.name.split(".")[1])
        for at, h in heads:
            if at == layer:
                z[:, :, h] = 0.0  # TransformerLens: (B, T, H, hd)
        return z

    tokens = torch.tensor([ids])
    expected = target.run_with_hooks(
        tokens, return_type="loss", fwd_hooks=[(f"blocks.{layer}.attn.hook_z", knock) for layer in range(3)]
    )
    assert ablation.ablate(model, ids, heads).loss_after == pytest.approx(float(expected), abs=1e-5)


@pytest.mark.parametrize(
    "component, function",
    [
        ("resid_pre", "get_act_patch_resid_pre"),
        ("attn.out", "get_act_patch_attn_out"),
        ("mlp.out", "get_act_patch_mlp_out"),
        ("attn.z", "get_act_patch_attn_head_out_all_pos"),
    ],
)
def test_patching_equals_transformer_lens_patching(pair, prompts, component, function):
    model, target = pair
    clean, corrupted = prompts
    answer, wrong = patching.default_answers(model, clean, corrupted)
    _, clean_cache = target.run_with_cache(torch.tensor([clean]))

    def metric(logits):
        return patching.logit_difference(logits, answer, wrong)[0]

    expected = getattr(lens_patching, function)(target, torch.tensor([corrupted]), clean_cache, metric)
    result = patching.patching(model, clean, corrupted, answer, wrong, component)
    torch.testing.assert_close(result.differences, expected.float(), atol=1e-5, rtol=0)


def test_steering_equals_a_transformer_lens_hook(pair, prompts):
    model, target = pair
    ids = torch.tensor([prompts[0]])
    direction = steering.token_direction(model, 3)
    name = cache_name(1, "resid_pre")
    ours, _, _ = model.run_with_hooks(ids, hooks={name: steering.steering_hook(direction, 5.0)})
    expected = target.run_with_hooks(
        ids, fwd_hooks=[(interventions.transformer_lens_name(name), lambda x, hook: x + 5.0 * direction)]
    )
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=0)
