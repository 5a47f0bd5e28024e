import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.models.attention import attention_steps
from llmviz.models.charlevel import CHAR_MODELS, build_char_model
from llmviz.models.decoder import Decoder, DecoderConfig, toy_task, train_toy
from llmviz.models.gpt import GPT, PRESETS, GPTConfig, cache_names, count_parameters_without_building
from llmviz.models.layers import GELU, LayerNorm, gelu_tanh

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


def test_layernorm_steps_equal_torch():
    ln = LayerNorm(8)
    with torch.no_grad():
        ln.scale.uniform_(0.5, 1.5)
        ln.shift.uniform_(-1, 1)
    x = torch.randn(4, 8) * 3 + 2
    steps = ln.steps(x)
    torch.testing.assert_close(steps["output"], F.layer_norm(x, (8,), ln.scale, ln.shift, 1e-5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ln(x), steps["output"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steps["normalised"].mean(-1), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(steps["normalised"].var(-1, unbiased=False), torch.ones(4), atol=1e-3, rtol=0)


def test_gelu_tanh_matches_torch():
    x = torch.linspace(-6, 6, 1001)
    torch.testing.assert_close(gelu_tanh(x), F.gelu(x, approximate="tanh"), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(GELU()(x), GELU.explicit(x), atol=1e-6, rtol=1e-6)
    # a value derived by hand: x = 1 → 0.5·(1 + tanh(√(2/π)·1.044715))
    assert float(gelu_tanh(torch.tensor(1.0))) == pytest.approx(
        0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715))
    )


def test_decoder_parameter_count_from_the_seed_configuration():
    config = DecoderConfig()
    d, heads, dq, dff, vocab, layers = 32, 8, 4, 128, 12, 6
    attention = 4 * (dq * heads) * d  # W_Q, W_K, W_V, W_O without bias
    ffn = d * dff + dff + dff * d + d
    norms = 3 * 2 * d
    expected = vocab * d + layers * (2 * attention + ffn + norms) + d * vocab + vocab
    model = Decoder(config)
    assert sum(p.numel() for p in model.parameters()) == expected == sum(model.parameter_breakdown().values())


def test_decoder_trains_on_shifted_labels():
    inputs, targets, _ = toy_task()
    assert torch.equal(inputs[:, 1:], targets[:, :-1]) and (inputs[:, 0] == 0).all()
    losses = [loss for _, loss in train_toy(steps=60)]
    assert losses[-1] < 0.3 * losses[0]


def test_decoder_cache_and_cross_attention_shapes():
    model = Decoder().eval()
    inputs, targets, enc = toy_task(batch_size=2)
    _, loss, cache = model.run_with_cache(inputs, enc, targets)
    assert cache["layers.0.self_attn.pattern"].shape == (2, 8, 7, 7)
    assert cache["layers.0.cross_attn.pattern"].shape == (2, 8, 7, 8)
    assert torch.all(cache["layers.0.self_attn.pattern"].triu(diagonal=1) == 0)


def _cross_entropy_by_hand(logits, targets):
    """−log softmax(z)[t] = log Σ_j e^{z_j} − z_t (shifted by max z for safety), averaged over positions."""
    total, rows = 0.0, logits.detach().reshape(-1, logits.shape[-1]).double().tolist()
    for row, target in zip(rows, targets.reshape(-1).tolist()):
        top = max(row)
        total += top + math.log(sum(math.exp(v - top) for v in row)) - row[target]
    return total / len(rows)


@pytest.mark.parametrize("name", list(CHAR_MODELS))
def test_char_model_loss_equals_cross_entropy(name):
    torch.manual_seed(4)
    model = build_char_model(name, 27)
    idx = torch.randint(0, 27, (4, 12))
    targets = torch.randint(0, 27, (4, 12))
    if getattr(model, "trained_by_counting", False):
        model.update_counts(idx, targets)
    logits, loss = model(idx, targets)
    assert logits.shape == (4, 12, 27)
    assert loss.item() == pytest.approx(_cross_entropy_by_hand(logits, targets), rel=1e-5)
    if name == "bigram-counts":  # and from the pair counts alone: p(n | c) = (N[c, n] + 1) / (Σ_k N[c, k] + 27)
        pairs = Counter(zip(idx.flatten().tolist(), targets.flatten().tolist()))
        rows = Counter(idx.flatten().tolist())
        by_counts = [-math.log((pairs[c, n] + 1) / (rows[c] + 27)) for c, n in pairs.elements()]
        assert loss.item() == pytest.approx(sum(by_counts) / len(by_counts), rel=1e-5)
    _, _, cache = model.run_with_cache(idx)
    assert list(cache)[-1] == "logits" or name == "gru"


@pytest.mark.parametrize("name", list(CHAR_MODELS))
def test_char_model_overfits_one_batch(name):
    torch.manual_seed(5)
    vocab = 27
    model = build_char_model(name, vocab)
    base = (torch.randperm(vocab - 1)[:6] + 1).repeat(8, 2)  # distinct tokens repeating: learnable
    idx, targets = base[:, :-1], base[:, 1:]
    if getattr(model, "trained_by_counting", False):
        model.update_counts(idx, targets)
        _, loss = model(idx, targets)
        assert loss.item() < math.log(vocab) / 2
        return
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(80):
        _, loss = model(idx, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < math.log(vocab) / 4


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


def test_bigram_counts_match_a_hand_count():
    model = build_char_model("bigram-counts", 3, smoothing=0.0)
    idx = torch.tensor([[0, 1, 1, 2]])
    targets = torch.tensor([[1, 1, 2, 0]])
    model.update_counts(idx, targets)
    # pairs: (0,1) (1,1) (1,2) (2,0)
    assert model.counts.tolist() == [[0, 1, 0], [0, 1, 1], [1, 0, 0]]
    assert model.probabilities()[1].tolist() == [0.0, 0.5, 0.5]


def test_attention_steps_is_what_the_model_uses():
    torch.manual_seed(7)
    model = GPT(TINY).eval()
    x = torch.randn(1, 5, 16)
    attn = model.blocks[0].attn
    with torch.no_grad():
        steps = attention_steps(x, num_heads=4, mask="causal", **attn.weights())
        cache = {}
        out, _ = attn(x, cache=cache)
    torch.testing.assert_close(out, steps["output"])
    torch.testing.assert_close(cache["attn.pattern"], steps["weights"])


def test_rnn_equals_torch_rnn():
    torch.manual_seed(8)
    model = build_char_model("rnn", 27)
    reference = torch.nn.RNN(16, 64, batch_first=True, nonlinearity="tanh")
    with torch.no_grad():
        reference.weight_ih_l0.copy_(model.input_to_hidden.weight)
        reference.bias_ih_l0.copy_(model.input_to_hidden.bias)
        reference.weight_hh_l0.copy_(model.hidden_to_hidden.weight)
        reference.bias_hh_l0.zero_()
        idx = torch.randint(0, 27, (3, 9))
        _, _, cache = model.run_with_cache(idx)
        expected, _ = reference(model.embedding(idx))
    torch.testing.assert_close(cache["rnn.hidden"], expected, atol=1e-5, rtol=1e-5)


def test_gru_equals_torch_gru():
    torch.manual_seed(9)
    model = build_char_model("gru", 27)
    reference = torch.nn.GRU(16, 64, batch_first=True)
    z_in, r_in, n_in = model.input_gates.weight.chunk(3)
    z_hid, r_hid, n_hid = model.hidden_gates.weight.chunk(3)
    bz_in, br_in, bn_in = model.input_gates.bias.chunk(3)
    bz_hid, br_hid, bn_hid = model.hidden_gates.bias.chunk(3)
    with torch.no_grad():  # PyTorch orders the gates reset, update, new
        reference.weight_ih_l0.copy_(torch.cat([r_in, z_in, n_in]))
        reference.weight_hh_l0.copy_(torch.cat([r_hid, z_hid, n_hid]))
        reference.bias_ih_l0.copy_(torch.cat([br_in, bz_in, bn_in]))
        reference.bias_hh_l0.copy_(torch.cat([br_hid, bz_hid, bn_hid]))
        idx = torch.randint(0, 27, (3, 9))
        _, _, cache = model.run_with_cache(idx)
        expected, _ = reference(model.embedding(idx))
    torch.testing.assert_close(cache["rnn.hidden"], expected, atol=1e-5, rtol=1e-5)
    assert cache["gru.update_gate"].shape == (3, 9, 64)
    assert list(cache)[-1] == "logits"


def test_gpt_loss_equals_cross_entropy_by_hand():
    torch.manual_seed(5)
    model = GPT(TINY).eval()
    idx, targets = torch.randint(0, 50, (2, 10)), torch.randint(0, 50, (2, 10))
    logits, loss = model(idx, targets)
    assert loss.item() == pytest.approx(_cross_entropy_by_hand(logits, targets), rel=1e-5)
