"""The flow's payload (llmviz/lessons/flow.py) against independent references: the model's own run_with_cache read
here with plain torch, transformers' GPT-2 for a converted checkpoint, and the JSON size the browser receives."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from llmviz.errors import ConfigError
from llmviz.lessons import flow
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS
from llmviz.tokenizers.char_word import CharTokenizer
from llmviz.tokenizers.ids import encode
from llmviz.training.checkpoint import load_checkpoint

DATA = Path(__file__).resolve().parents[3] / "data"
# 20 tokens of the shipped GPT (a sentence of the Python manual)
SENTENCE = "The result is then bound to the class name. The assigned object should be a sequence object of the"


def f32_equal(sent, reference: torch.Tensor) -> None:
    """What was sent reads back (as the browser's Math.fround does) as exactly the cache's float32 values."""
    np.testing.assert_array_equal(np.asarray(sent, dtype=np.float32), reference.detach().float().numpy())


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")[:3]
    ids = encode(tokenizer, SENTENCE)
    assert len(ids) == 20
    return model.eval(), tokenizer, ids


def test_the_shipped_gpt_payload_is_its_cache_to_float32_precision(shipped):
    model, tokenizer, ids = shipped
    payload = flow.flow_payload(model, tokenizer, ids)
    with torch.no_grad():
        logits, _, cache = model.run_with_cache(torch.tensor([ids]))
    config = model.config
    assert [s["id"] for s in payload["stages"]] == ["tokens", "embed"] + [
        f"{part}{layer}" for layer in range(config.n_layers) for part in ("attn", "mlp")
    ] + ["final", "logits", "probs"]
    assert payload["ids"] == ids and payload["tokens"] == [tokenizer.printable(i) for i in ids]
    stages = {s["id"]: s for s in payload["stages"]}
    for layer in range(config.n_layers):
        pattern = cache[f"blocks.{layer}.attn.pattern"][0]  # (H, T, T)
        for head in range(config.n_heads):
            for i, row in enumerate(payload["blocks"][layer]["patterns"][head]):
                f32_equal(row, pattern[head, i, : i + 1])
        resid = cache[f"blocks.{layer}.resid_post"][0]  # (T, C)
        f32_equal(stages[f"mlp{layer}"]["main"]["norm"], torch.linalg.vector_norm(resid, dim=-1))
        f32_equal(stages[f"mlp{layer}"]["main"]["first"], resid[:, : flow.FIRST_ENTRIES])
        f32_equal(stages[f"attn{layer}"]["add"]["first"], cache[f"blocks.{layer}.attn.out"][0][:, : flow.FIRST_ENTRIES])
        hidden = cache[f"blocks.{layer}.mlp.hidden"][0]
        f32_equal(payload["blocks"][layer]["mlp"]["active"], (hidden > 0).float().mean(-1))
    f32_equal(stages["embed"]["tok"]["norm"], torch.linalg.vector_norm(cache["embed.tok"][0], dim=-1))
    f32_equal(stages["embed"]["pos"]["first"], cache["embed.pos"][:, : flow.FIRST_ENTRIES])
    f32_equal(stages["final"]["main"]["norm"], torch.linalg.vector_norm(cache["ln_f"][0], dim=-1))
    # the last position's logits, all of them, sorted: what temperature, top-k and top-p reshape in the browser
    last = logits[0, -1]
    f32_equal(payload["last"]["logits"], torch.sort(last, descending=True).values)
    assert payload["last"]["ids"] == torch.topk(last, flow.BARS).indices.tolist() and payload["last"]["omitted"] == 0
    # each position's five most likely next tokens, as torch's softmax gives them
    probs = torch.softmax(logits[0].double(), dim=-1).float()
    f32_equal(payload["next"]["probs"], torch.topk(probs, flow.TOP_PER_POSITION).values)


def test_the_flows_words_say_the_models_own_predictions_and_where_the_last_token_looks(shipped):
    """Issue 70: the flow's text alternative names the three most likely next tokens with their probabilities, and
    for each head of the last block the token the last token attends to most, as plain torch computes them from the
    model's forward pass (not from the payload the sentence is made of)."""
    model, tokenizer, ids = shipped
    said = flow.flow_words(flow.flow_payload(model, tokenizer, ids))
    with torch.no_grad():
        logits, _, cache = model.run_with_cache(torch.tensor([ids]))
    probs = torch.softmax(logits[0, -1].double(), dim=-1)
    top = torch.topk(probs, 3)
    expected = [f'"{tokenizer.printable(i)}" {float(p):.3g}' for p, i in zip(top.values, top.indices.tolist())]
    last = tokenizer.printable(ids[-1])
    assert f'After "{last}" the model predicts {expected[0]}, {expected[1]} and {expected[2]}.' in said, said
    pattern = cache[f"blocks.{model.config.n_layers - 1}.attn.pattern"][0, :, -1]  # (H, T): the last token's row
    for head in range(model.config.n_heads):
        key = int(torch.argmax(pattern[head]))
        assert f'"{tokenizer.printable(ids[key])}" ({float(pattern[head, key]):.3g}, head {head})' in said, said
    assert said.startswith(f"One forward pass of {len(ids)} tokens")


def test_the_payload_for_twenty_tokens_of_the_shipped_gpt_is_at_most_300_kb(shipped):
    model, tokenizer, ids = shipped
    payload = flow.flow_payload(model, tokenizer, ids)
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    assert size == flow.payload_bytes(payload)
    assert size <= 300_000, size
    json.loads(json.dumps(payload, allow_nan=False))  # JSON-able, no NaN or infinity


def test_a_long_text_is_cut_to_its_last_tokens_and_nothing_is_refused(shipped):
    model, tokenizer, ids = shipped
    payload = flow.flow_payload(model, tokenizer, ids * 3)
    assert payload["ids"] == (ids * 3)[-flow.MAX_FLOW_TOKENS :] and payload["cut"] == 60 - flow.MAX_FLOW_TOKENS
    with pytest.raises(ConfigError, match="nothing to run"):
        flow.flow_payload(model, tokenizer, [])


@pytest.mark.parametrize("preset", ["llama-style", "moe-tiny", "attn-only-2l"])
def test_llama_style_presets_draw_what_they_have(preset):
    """RoPE instead of a position table, grouped K/V heads, RMSNorm, SwiGLU, experts with the router's choice."""
    tokenizer = CharTokenizer.train("abcdefghij ")
    config = PRESETS[preset].replace(vocab_size=tokenizer.vocab_size, context_length=16, n_layers=2)
    torch.manual_seed(0)
    model = GPT(config).eval()
    ids = encode(tokenizer, "abc defg hij")
    payload = flow.flow_payload(model, tokenizer, ids)
    with torch.no_grad():
        _, _, cache = model.run_with_cache(torch.tensor([ids]))
    facts = payload["model"]
    assert (facts["positions"], facts["norm"], facts["kv_heads"]) == (config.positions, config.norm, config.kv_heads)
    embed = next(s for s in payload["stages"] if s["id"] == "embed")
    assert (embed["pos"] is None) == (config.positions in ("rope", "none"))
    kinds = [s["kind"] for s in payload["stages"]]
    assert kinds.count("mlp") == (config.n_layers if config.mlp else 0)
    if config.n_experts:
        mlp = payload["blocks"][1]["mlp"]
        assert mlp["experts"] == cache["blocks.1.mlp.experts"][0].tolist()
        f32_equal(mlp["weights"], cache["blocks.1.mlp.expert_weights"][0])
        f32_equal(mlp["router"], cache["blocks.1.mlp.router_probs"][0])


@pytest.mark.parametrize(
    "name", ["names-bigram-counts", "names-bigram-neural", "names-mlp", "names-rnn", "names-gru", "names-wavenet"]
)
def test_every_shipped_character_model_is_drawn_from_its_cache(name):
    model, tokenizer, _ = load_checkpoint(DATA / name)[:3]
    ids = encode(tokenizer, "emma.olivia")
    payload = flow.flow_payload(model.eval(), tokenizer, ids)
    with torch.no_grad():
        logits, _, cache = model.run_with_cache(torch.tensor([payload["ids"]]))
    assert payload["model"]["kind"] == "other" and payload["stages"][0]["id"] == "tokens"
    hidden = [s for s in payload["stages"] if s["kind"] == "hidden"]
    assert [s["title"] for s in hidden] == [n for n, t in cache.items() if n != "logits" and t.dim() >= 3]
    first = cache[hidden[0]["title"]][0]
    # a WaveNet's stages are its positions' own nodes (the window's last group; test_a_wavenet_...)
    first = first[:, -1] if name == "names-wavenet" else first.reshape(len(payload["ids"]), -1)
    f32_equal(hidden[0]["main"]["norm"], torch.linalg.vector_norm(first, dim=-1))
    f32_equal(payload["last"]["logits"], torch.sort(logits[0, -1], descending=True).values)


def summary_equal(stage: dict, vectors: torch.Tensor) -> None:
    """A stage drawn is ``vectors`` (T, C), computed here: each row's norm and first entries, to float32 rounding."""
    np.testing.assert_allclose(stage["main"]["norm"], torch.linalg.vector_norm(vectors, dim=-1).numpy(), rtol=2e-5)
    np.testing.assert_allclose(stage["main"]["first"], vectors[:, : flow.FIRST_ENTRIES].numpy(), atol=2e-6)


def test_an_rnn_is_drawn_as_torch_rnn_computes_it_with_its_state_carried_on():
    """Issue 72 §6: the shipped RNN's hidden states are torch.nn.RNN's (the model's weights copied in, no code of
    llmviz's in the loop), and the stage says it reads the previous position's state."""
    model, tokenizer, _ = load_checkpoint(DATA / "names-rnn")[:3]
    ids = encode(tokenizer, "charlotte")
    payload = flow.flow_payload(model.eval(), tokenizer, ids)
    reference = torch.nn.RNN(model.embedding.embedding_dim, model.hidden_size, batch_first=True)
    with torch.no_grad():
        reference.weight_ih_l0.copy_(model.input_to_hidden.weight)
        reference.bias_ih_l0.copy_(model.input_to_hidden.bias)
        reference.weight_hh_l0.copy_(model.hidden_to_hidden.weight)
        reference.bias_hh_l0.zero_()
        states, _ = reference(model.embedding(torch.tensor([ids])))
    stages = {s["title"]: s for s in payload["stages"] if s["kind"] == "hidden"}
    assert list(stages) == ["embed.tok", "rnn.hidden"]
    summary_equal(stages["rnn.hidden"], states[0])
    h = stages["rnn.hidden"]
    assert h["reads"] == [{"stage": stages["embed.tok"]["id"], "offset": 0}, {"stage": h["id"], "offset": -1}]


def test_a_gru_draws_its_gates_before_the_state_they_compute_as_torch_gru_computes_them():
    """Issue 72 §6: the stages in the order the GRU computes them (reset, update, candidate, then h_t); h_t is
    torch.nn.GRU's, and each gate is recomputed here from torch.nn.GRU's weights and its previous state (PyTorch's
    formulas: r = σ(W_ir x + b_ir + W_hr h + b_hr), z likewise, n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)))."""
    model, tokenizer, _ = load_checkpoint(DATA / "names-gru")[:3]
    ids = encode(tokenizer, "charlotte")
    payload = flow.flow_payload(model.eval(), tokenizer, ids)
    size = model.hidden_size
    reference = torch.nn.GRU(model.embedding.embedding_dim, size, batch_first=True)
    z_in, r_in, n_in = model.input_gates.weight.chunk(3)
    z_hid, r_hid, n_hid = model.hidden_gates.weight.chunk(3)
    bz_in, br_in, bn_in = model.input_gates.bias.chunk(3)
    bz_hid, br_hid, bn_hid = model.hidden_gates.bias.chunk(3)
    with torch.no_grad():  # PyTorch orders the gates reset, update, new
        reference.weight_ih_l0.copy_(torch.cat([r_in, z_in, n_in]))
        reference.weight_hh_l0.copy_(torch.cat([r_hid, z_hid, n_hid]))
        reference.bias_ih_l0.copy_(torch.cat([br_in, bz_in, bn_in]))
        reference.bias_hh_l0.copy_(torch.cat([br_hid, bz_hid, bn_hid]))
        x = model.embedding(torch.tensor(ids))  # (T, e)
        states, _ = reference(x[None])
        states = states[0]  # (T, h)
        before = torch.cat([torch.zeros(1, size), states[:-1]])  # h_{t−1}, zeros before the first
        gi = x @ reference.weight_ih_l0.T + reference.bias_ih_l0
        gh = before @ reference.weight_hh_l0.T + reference.bias_hh_l0
        reset = torch.sigmoid(gi[:, :size] + gh[:, :size])
        update = torch.sigmoid(gi[:, size : 2 * size] + gh[:, size : 2 * size])
        candidate = torch.tanh(gi[:, 2 * size :] + reset * gh[:, 2 * size :])
    hidden = [s for s in payload["stages"] if s["kind"] == "hidden"]
    assert [s["title"] for s in hidden] == [
        "embed.tok",
        "gru.reset_gate",
        "gru.update_gate",
        "gru.candidate",
        "rnn.hidden",
    ]
    for stage, vectors in zip(hidden[1:], (reset, update, candidate, states), strict=True):
        summary_equal(stage, vectors)
    ids_of = {s["title"]: s["id"] for s in hidden}
    previous = {"stage": ids_of["rnn.hidden"], "offset": -1}
    assert all(previous in s["reads"] for s in hidden[1:]), "every gate and h_t read h_{t−1}"
    assert {"stage": ids_of["gru.reset_gate"], "offset": 0} in hidden[3]["reads"]  # the candidate reads r_t
    assert {r["stage"] for r in hidden[4]["reads"]} == {
        ids_of["gru.update_gate"],
        ids_of["gru.candidate"],
        ids_of["rnn.hidden"],
    }


def test_a_wavenet_is_drawn_as_the_dilated_causal_convolution_it_computes():
    """Issue 72 §6: level l at position t reads the level below at t − 2^l and at t. The reference is
    torch's conv1d with dilation 2^l over the text left-padded with the boundary id 0 (the model's Linear on two
    neighbours as a kernel of width 2), LayerNorm and tanh: each level's node at each position is the stage drawn."""
    import torch.nn.functional as F

    model, tokenizer, _ = load_checkpoint(DATA / "names-wavenet")[:3]
    ids = encode(tokenizer, "charlotte")
    payload = flow.flow_payload(model.eval(), tokenizer, ids)
    kept = payload["ids"]
    T = len(kept)
    with torch.no_grad():
        padded = torch.tensor([0] * (model.context - 1) + kept)
        a = model.embedding(padded).T[None]  # (1, e, T + 2^L − 1)
        hidden = [s for s in payload["stages"] if s["kind"] == "hidden"]
        summary_equal(hidden[0], a[0, :, -T:].T)
        for level, (fuse, norm) in enumerate(zip(model.fuse, model.norms, strict=True)):
            width = a.shape[1]
            kernel = torch.stack([fuse.weight[:, :width], fuse.weight[:, width:]], dim=-1)  # (h, width, 2)
            a = F.conv1d(a, kernel, fuse.bias, dilation=2**level)
            a = torch.tanh(F.layer_norm(a.transpose(1, 2), norm.normalized_shape, norm.weight, norm.bias)).transpose(
                1, 2
            )
            stage = hidden[level + 1]
            summary_equal(stage, a[0, :, -T:].T)
            below = hidden[level]["id"]
            assert stage["reads"] == [{"stage": below, "offset": -(2**level)}, {"stage": below, "offset": 0}]


def test_gpt2_converted_from_transformers_matches_transformers_own_pass(tmp_path):
    """GPT-2's 50,257-token vocabulary: the top 8,192 logits are sent, and they are transformers' own."""
    from llmviz.hub import gpt2
    from tests.support.gpt2 import make_hf_gpt2

    hf = make_hf_gpt2(vocab_size=50257, n_layer=2, n_embd=32, n_head=2, n_positions=64, seed=7)
    hf.save_pretrained(tmp_path)
    model, tokenizer, _ = gpt2.load(tmp_path)
    ids = encode(tokenizer, "Hello world, hello attention")
    payload = flow.flow_payload(model, tokenizer, ids)
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_attentions=True)
    reference = torch.sort(out.logits[0, -1], descending=True).values
    np.testing.assert_allclose(payload["last"]["logits"], reference[: flow.MAX_LOGITS].numpy(), atol=2e-4)
    assert payload["last"]["omitted"] == 50257 - flow.MAX_LOGITS
    rest = torch.softmax(out.logits[0, -1].double(), -1).sort(descending=True).values[flow.MAX_LOGITS :].sum()
    assert payload["last"]["omitted_share"] == pytest.approx(float(rest), abs=1e-6)
    for layer, attentions in enumerate(out.attentions):
        for i, row in enumerate(payload["blocks"][layer]["patterns"][1]):
            np.testing.assert_allclose(row, attentions[0, 1, i, : i + 1].numpy(), atol=1e-5)


def test_a_model_without_a_cache_is_refused_in_one_sentence():
    with pytest.raises(ConfigError, match="records no cache"):
        flow.flow_payload(torch.nn.Linear(2, 2), None, [1])
