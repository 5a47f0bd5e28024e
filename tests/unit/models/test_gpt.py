"""llmviz.models.gpt: parameter counts (GPT-2 124M by hand), the named cache, the explicit attention path against
SDPA and torch's MultiheadAttention, causal masking, the KV cache and the loss."""

import math

import pytest
import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT, GPTConfig, cache_names, count_parameters_without_building
from llmviz.models.padded_head import padded_head
from llmviz.models.presets import PRESETS

TINY = GPTConfig(vocab_size=50, context_length=16, d_model=16, n_heads=4, n_layers=2, dropout=0.0)


def gpt2_params_by_hand(vocab, ctx, d, layers, tied, qkv_bias=False):
    """GPT-2 small's shapes, counted by hand (every Linear but W_Q, W_K, W_V with a bias; those with one when
    ``qkv_bias``, as GPT-2 has)."""
    per_block = (
        3 * d * d  # W_Q, W_K, W_V
        + (3 * d if qkv_bias else 0)  # and their biases
        + d * d
        + d  # W_O and its bias
        + d * 4 * d
        + 4 * d  # MLP up
        + 4 * d * d
        + d  # MLP down
        + 2 * 2 * d  # two LayerNorms, scale and shift
    )
    total = vocab * d + ctx * d + layers * per_block + 2 * d + (0 if tied else vocab * d)
    return total


def test_gpt2_124m_parameter_counts_are_computed():
    """The preset is GPT-2 small as published (a bias in W_Q, W_K, W_V, the head tied): transformers' GPT2LMHeadModel
    counts the same, and so does the hand count; without the bias, tied and untied, the counts by hand too."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = PRESETS["gpt2-124m"]
    assert config.qkv_bias and config.tie_weights
    with torch.device("meta"):  # shapes only
        reference = GPT2LMHeadModel(GPT2Config()).num_parameters()
    published = sum(count_parameters_without_building(config).values())
    assert published == reference == gpt2_params_by_hand(50257, 1024, 768, 12, tied=True, qkv_bias=True)
    plain = config.replace(qkv_bias=False)
    untied = sum(count_parameters_without_building(plain.replace(tie_weights=False)).values())
    tied = sum(count_parameters_without_building(plain).values())
    assert untied == gpt2_params_by_hand(50257, 1024, 768, 12, tied=False)
    assert tied == gpt2_params_by_hand(50257, 1024, 768, 12, tied=True)
    assert (untied, tied) == (163_009_536, 124_412_160)


def test_breakdown_sums_to_module_count():
    model = GPT(TINY)
    assert sum(model.parameter_breakdown().values()) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"d_model": 30, "n_heads": 4}, "not divisible"),
        ({"n_layers": 0}, "n_layers"),
        ({"context_length": 0}, "context_length"),
        ({"dropout": 1.5}, "dropout"),
    ],
)
def test_bad_configs_have_clear_messages(changes, message):
    with pytest.raises(ConfigError, match=message):
        TINY.replace(**changes)


def test_context_longer_than_positions_is_refused():
    model = GPT(TINY)
    with pytest.raises(ConfigError, match="context"):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_cache_names_and_shapes_are_pinned():
    model = GPT(TINY).eval()
    idx = torch.randint(0, 50, (2, 7))
    logits, loss, cache = model.run_with_cache(idx)
    expected = ["embed.tok", "embed.pos"]
    for layer in range(2):
        p = f"blocks.{layer}"
        expected += [
            f"{p}.resid_pre",
            f"{p}.ln1",
            f"{p}.attn.q",
            f"{p}.attn.k",
            f"{p}.attn.v",
            f"{p}.attn.scores",
            f"{p}.attn.masked_scores",
            f"{p}.attn.pattern",
            f"{p}.attn.z",
            f"{p}.attn.out",
            f"{p}.resid_mid",
            f"{p}.ln2",
            f"{p}.mlp.pre",
            f"{p}.mlp.hidden",
            f"{p}.mlp.out",
            f"{p}.resid_post",
        ]
    expected += ["ln_f", "logits"]
    assert list(cache) == expected == cache_names(TINY)
    assert cache["embed.tok"].shape == (2, 7, 16)
    assert cache["embed.pos"].shape == (7, 16)
    assert cache["blocks.0.attn.q"].shape == (2, 4, 7, 4)
    assert cache["blocks.0.attn.pattern"].shape == (2, 4, 7, 7)
    assert cache["blocks.1.mlp.hidden"].shape == (2, 7, 64)
    assert cache["logits"].shape == logits.shape == (2, 7, 50)
    assert all(t.device.type == "cpu" and not t.requires_grad for t in cache.values())
    assert loss is None


def test_nothing_is_recorded_without_a_cache(monkeypatch):
    from llmviz.models.gpt import CausalSelfAttention

    calls = []
    monkeypatch.setattr(CausalSelfAttention, "explicit", lambda *a, **k: calls.append(1))
    model = GPT(TINY)
    model(torch.randint(0, 50, (2, 5)))
    assert calls == [], "the fast path must not run the step-by-step attention"


def test_explicit_path_equals_sdpa_path():
    torch.manual_seed(0)
    model = GPT(TINY).eval()
    idx = torch.randint(0, 50, (3, 11))
    fast, _ = model(idx)
    explicit, _, _ = model.run_with_cache(idx)
    torch.testing.assert_close(explicit, fast, atol=1e-5, rtol=1e-5)


def test_attention_block_equals_torch_multihead_attention():
    torch.manual_seed(1)
    model = GPT(TINY).eval()
    attn = model.blocks[0].attn
    x = torch.randn(2, 6, 16)
    reference = torch.nn.MultiheadAttention(16, 4, bias=True, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(attn.qkv.weight)
        reference.in_proj_bias.zero_()
        reference.out_proj.weight.copy_(attn.proj.weight)
        reference.out_proj.bias.copy_(attn.proj.bias)
        causal = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)  # True = not allowed
        expected, _ = reference(x, x, x, attn_mask=causal, need_weights=False)
        got, _ = attn(x, cache={})
        fast, _ = attn(x)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast, expected, atol=1e-5, rtol=1e-5)


def test_causal_masking_future_tokens_do_not_change_earlier_logits():
    torch.manual_seed(2)
    model = GPT(TINY).eval()
    idx = torch.randint(0, 50, (1, 10))
    changed = idx.clone()
    changed[0, 6] = (changed[0, 6] + 1) % 50
    with torch.no_grad():
        a, _ = model(idx)
        b, _ = model(changed)
    torch.testing.assert_close(a[0, :6], b[0, :6])
    assert not torch.allclose(a[0, 6:], b[0, 6:])


def test_kv_cache_forward_matches_full_forward():
    torch.manual_seed(3)
    model = GPT(TINY).eval()
    idx = torch.randint(0, 50, (2, 9))
    full, _ = model(idx)
    logits, past = model.forward_with_kv_cache(idx[:, :5])
    torch.testing.assert_close(logits, full[:, :5], atol=1e-5, rtol=1e-5)
    for t in range(5, 9):
        step_logits, past = model.forward_with_kv_cache(idx[:, t : t + 1], past)
        torch.testing.assert_close(step_logits[:, 0], full[:, t], atol=1e-5, rtol=1e-5)


def _cross_entropy_by_hand(logits, targets):
    """−log softmax(z)[t] = log Σ_j e^{z_j} − z_t (shifted by max z for safety), averaged over positions."""
    total, rows = 0.0, logits.detach().reshape(-1, logits.shape[-1]).double().tolist()
    for row, target in zip(rows, targets.reshape(-1).tolist()):
        top = max(row)
        total += top + math.log(sum(math.exp(v - top) for v in row)) - row[target]
    return total / len(rows)


def test_gpt_overfits_one_batch():
    torch.manual_seed(6)
    model = GPT(TINY)
    idx = torch.randint(0, 50, (4, 12))
    targets = torch.randint(0, 50, (4, 12))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(200):
        _, loss = model(idx, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < math.log(50) / 4


def test_gpt_loss_equals_cross_entropy_by_hand():
    torch.manual_seed(5)
    model = GPT(TINY).eval()
    idx, targets = torch.randint(0, 50, (2, 10)), torch.randint(0, 50, (2, 10))
    logits, loss = model(idx, targets)
    assert loss.item() == pytest.approx(_cross_entropy_by_hand(logits, targets), rel=1e-5)


def test_the_padded_head_gives_plain_linear_numbers_and_gradients():
    """The training step's padded output head (GPU only) against F.linear: the same logits, the same loss read from
    the padded logits (−inf columns), and the same gradients for the input and the weight (PyTorch is the reference)."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 12, generator=generator, requires_grad=True)
    weight = torch.randn(257, 12, generator=generator, requires_grad=True)  # 257 rows: padded to 320
    targets = torch.randint(0, 257, (10,), generator=generator)
    logits, padded = padded_head(x, weight)  # (2, 5, 257), (2, 5, 320)
    loss = F.cross_entropy(padded.reshape(-1, 320), targets)
    reference = F.linear(x, weight)  # (2, 5, 257)
    reference_loss = F.cross_entropy(reference.reshape(-1, 257), targets)
    assert logits.shape == (2, 5, 257) and padded.shape == (2, 5, 320)
    torch.testing.assert_close(logits, reference)
    torch.testing.assert_close(loss, reference_loss)
    for ours, theirs in zip(torch.autograd.grad(loss, (x, weight)), torch.autograd.grad(reference_loss, (x, weight))):
        torch.testing.assert_close(ours, theirs)


@pytest.mark.extended
@pytest.mark.processes  # Inductor runs the C++ compiler
@pytest.mark.slow
def test_the_padded_head_compiles_to_the_same_numbers():
    """``--compile`` on a GPU traces the padded head (a GPT-2-sized vocabulary): torch.compile's graph of it on the CPU
    (Inductor, 16 s here) gives eager PyTorch's logits, loss and gradients."""
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(2, 5, 12, generator=generator, requires_grad=True)
    weight = torch.randn(257, 12, generator=generator, requires_grad=True)
    targets = torch.randint(0, 257, (10,), generator=generator)

    def step(x, weight):
        logits, padded = padded_head(x, weight)  # (2, 5, 257), (2, 5, 320)
        return logits, F.cross_entropy(padded.reshape(-1, padded.size(-1)), targets)

    results = []
    for run in (torch.compile(step), step):
        logits, loss = run(x, weight)
        results.append((logits, loss, *torch.autograd.grad(loss, (x, weight))))
    for ours, eager in zip(*results):
        torch.testing.assert_close(ours, eager)
