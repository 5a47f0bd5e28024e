"""llmviz.models.attention: every step of (multi-head, masked, cross-) attention against PyTorch's
scaled_dot_product_attention and MultiheadAttention, and by hand; the models use these steps."""

import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.models.attention import (
    JOURNEY_EMBEDDINGS,
    TOY_EMBEDDINGS,
    TOY_POSITIONS,
    TOY_W_K,
    TOY_W_O,
    TOY_W_Q,
    TOY_W_V,
    attention_steps,
    causal_mask,
    head_split_steps,
    simple_self_attention,
    toy_input,
    toy_matrices,
)
from llmviz.models.gpt import GPT, GPTConfig

torch.manual_seed(0)
B, T, D = 2, 5, 8
X = torch.randn(B, T, D)
W = {name: torch.randn(D, D) * 0.5 for name in ("q", "k", "v", "o")}
PADDING = torch.tensor([[True, True, True, True, True], [True, True, True, False, False]])


def sdpa_reference(x, heads, mask, kv=None):
    source = x if kv is None else kv
    q = (x @ W["q"]).view(x.shape[0], x.shape[1], heads, -1).transpose(1, 2)
    k = (source @ W["k"]).view(source.shape[0], source.shape[1], heads, -1).transpose(1, 2)
    v = (source @ W["v"]).view(source.shape[0], source.shape[1], heads, -1).transpose(1, 2)
    if mask == "causal":
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    elif mask == "padding":
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=PADDING[:, None, None, :])
    else:
        out = F.scaled_dot_product_attention(q, k, v)
    return out.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1) @ W["o"]


def mha_reference(x, heads, mask, kv=None):
    source = x if kv is None else kv
    module = torch.nn.MultiheadAttention(
        D, heads, bias=False, batch_first=True, kdim=source.shape[-1], vdim=source.shape[-1]
    )
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.cat([W["q"].T, W["k"].T, W["v"].T]))  # keys have width D too
        module.out_proj.weight.copy_(W["o"].T)
        kwargs = {}
        if mask == "causal":
            kwargs["attn_mask"] = ~causal_mask(x.shape[1])  # True = not allowed
        elif mask == "padding":
            kwargs["key_padding_mask"] = ~PADDING
        out, weights = module(x, source, source, need_weights=True, average_attn_weights=False, **kwargs)
    return out, weights


@pytest.mark.parametrize("heads", [1, 2, 4, 8])
@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
def test_equals_sdpa_and_multihead_attention(heads, mask):
    steps = attention_steps(
        X,
        W["q"],
        W["k"],
        W["v"],
        num_heads=heads,
        w_o=W["o"],
        **({"padding_mask": PADDING} if mask == "padding" else {"mask": mask}),
    )
    torch.testing.assert_close(steps["output"], sdpa_reference(X, heads, mask), atol=1e-5, rtol=1e-5)
    expected_out, expected_weights = mha_reference(X, heads, mask)
    torch.testing.assert_close(steps["output"], expected_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steps["weights"], expected_weights, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steps["weights"].sum(-1), torch.ones(B, heads, T), atol=1e-6, rtol=0)
    disallowed = ~steps["mask"].expand(B, heads, T, T)
    assert torch.all(steps["weights"][disallowed] == 0.0), "masked entries are exactly 0"


def test_first_query_under_a_causal_mask_attends_only_to_itself():
    steps = attention_steps(X, W["q"], W["k"], W["v"], num_heads=2, mask="causal")
    assert torch.all(steps["weights"][:, :, 0, 0] == 1.0)
    assert torch.all(steps["weights"][:, :, 0, 1:] == 0.0)


def test_fully_masked_row_is_finite():
    nobody = torch.zeros(1, T, dtype=torch.bool)  # every key is padding
    steps = attention_steps(X[:1], W["q"], W["k"], W["v"], num_heads=2, padding_mask=nobody, w_o=W["o"])
    assert torch.isfinite(steps["weights"]).all() and torch.isfinite(steps["output"]).all()
    assert torch.all(steps["weights"] == 0)


def test_cross_attention_shapes_and_values():
    encoder = torch.randn(B, 7, D)
    steps = attention_steps(X, W["q"], W["k"], W["v"], num_heads=2, kv=encoder, w_o=W["o"])
    assert steps["scores"].shape == (B, 2, T, 7)
    assert steps["output"].shape == (B, T, D)
    torch.testing.assert_close(steps["output"], sdpa_reference(X, 2, "none", kv=encoder), atol=1e-5, rtol=1e-5)
    expected, _ = mha_reference(X, 2, "none", kv=encoder)
    torch.testing.assert_close(steps["output"], expected, atol=1e-5, rtol=1e-5)


def test_scaling_by_hand():
    steps = attention_steps(X, W["q"], W["k"], W["v"], num_heads=4)
    torch.testing.assert_close(steps["scaled_scores"], steps["scores"] / math.sqrt(2))
    q, k = steps["Q_heads"][0, 1, 2], steps["K_heads"][0, 1, 3]
    assert float(steps["scores"][0, 1, 2, 3]) == pytest.approx(float((q * k).sum()), abs=1e-5)


def test_heads_must_divide_the_width():
    with pytest.raises(ConfigError, match="cannot split"):
        attention_steps(X, W["q"], W["k"], W["v"], num_heads=3)
    with pytest.raises(ConfigError, match="rows"):
        attention_steps(X, torch.ones(3, 8), W["k"], W["v"])


def test_toy_example_computed_by_hand():
    x = torch.tensor(TOY_EMBEDDINGS) + torch.tensor(TOY_POSITIONS)
    steps = attention_steps(
        x,
        torch.tensor(TOY_W_Q),
        torch.tensor(TOY_W_K),
        torch.tensor(TOY_W_V),
        num_heads=2,
        w_o=torch.tensor(TOY_W_O),
        mask="causal",
    )
    # Q_The = [0.1, 0.4, 0.5, 0.7] · W_Q, first column: 0.05 + 0.16 + 0.15 + 0.14
    assert float(steps["Q"][0, 0]) == pytest.approx(0.05 + 0.16 + 0.15 + 0.14)
    # the first token sees only itself: its head outputs are its own value vector
    torch.testing.assert_close(steps["concat"][0], steps["V"][0])


def test_simple_self_attention_by_hand():
    x = torch.tensor(JOURNEY_EMBEDDINGS)
    result = simple_self_attention(x)
    # ω(journey, Your) = 0.55·0.43 + 0.87·0.15 + 0.66·0.89
    assert float(result["scores"][1, 0]) == pytest.approx(0.55 * 0.43 + 0.87 * 0.15 + 0.66 * 0.89, abs=1e-6)
    torch.testing.assert_close(result["weights"], torch.softmax(x @ x.T, dim=-1))
    torch.testing.assert_close(result["context"], torch.softmax(x @ x.T, dim=-1) @ x)


def test_head_split_steps_round_trip():
    x = torch.arange(24.0).view(1, 3, 8)
    shapes = head_split_steps(x, 2)
    assert shapes["viewed"].shape == (1, 3, 2, 4) and shapes["transposed"].shape == (1, 2, 3, 4)
    torch.testing.assert_close(shapes["merged"], x)


def test_a_causal_matrix_is_never_read_as_padding_when_batch_equals_queries():
    x = torch.randn(3, 3, D)  # batch 3 = T_q 3: the shape alone cannot say what a (3, 3) mask means
    eye = torch.eye(D)
    by_matrix = attention_steps(x, eye, eye, eye, allowed=causal_mask(3))
    by_name = attention_steps(x, eye, eye, eye, mask="causal")
    assert by_matrix["weights"][1, 0, 0].tolist()[1:] == [0.0, 0.0]  # query 0 of sequence 1 sees only key 0
    torch.testing.assert_close(by_matrix["weights"], by_name["weights"])
    # the same (3, 3) tensor as a padding mask means "sequence b has keys mask[b]"
    padded = attention_steps(x, eye, eye, eye, padding_mask=causal_mask(3))
    assert padded["weights"][1, 0].tolist()[0][2] == 0.0 and padded["weights"][1, 0, 2, 1] > 0


def test_a_mask_tensor_must_say_its_kind():
    with pytest.raises(ConfigError, match="padding_mask="):
        attention_steps(X, W["q"], W["k"], W["v"], mask=PADDING)
    with pytest.raises(ConfigError, match=r"\(batch, keys\)"):
        attention_steps(X, W["q"], W["k"], W["v"], padding_mask=torch.ones(3, T, dtype=torch.bool))


def test_causal_and_padding_combine():
    steps = attention_steps(X, W["q"], W["k"], W["v"], num_heads=2, mask="causal", padding_mask=PADDING)
    weights = steps["weights"][1, :, 4]  # sequence 1, last query: keys 3 and 4 are padding
    assert torch.all(weights[:, 3:] == 0) and torch.allclose(weights[:, :3].sum(-1), torch.ones(2))


@pytest.mark.parametrize("cell", [None, float("nan"), float("inf"), "abc", pd.NA])
def test_a_toy_matrix_with_a_cleared_or_bad_cell_is_refused_by_name(cell):
    """The Attention page's editors: a student who clears a cell (None / NaN / <NA>) gets a message naming the
    matrix."""
    table = pd.DataFrame(TOY_W_K, columns=[f"c{j}" for j in range(4)]).astype(object)
    table.iloc[2, 1] = cell
    with pytest.raises(ConfigError, match="^W_K has an empty cell"):
        toy_matrices({"X": toy_input().tolist(), "W_K": table.to_numpy(dtype=object)})
    edited = toy_matrices({"W_K": pd.DataFrame(TOY_W_K).to_numpy(dtype=object)})["W_K"]
    torch.testing.assert_close(edited, torch.tensor(TOY_W_K))  # an untouched table is the example's matrix


TINY = GPTConfig(vocab_size=50, context_length=16, d_model=16, n_heads=4, n_layers=2, dropout=0.0)


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
