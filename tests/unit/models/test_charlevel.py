"""llmviz.models.charlevel: the character-level ladder (bigram counts, neural bigram, MLP, WaveNet, RNN, GRU,
Transformer) against cross-entropy by hand and torch's RNN and GRU."""

import math
from collections import Counter

import pytest
import torch

from llmviz.models.charlevel import CHAR_MODELS, build_char_model


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


def test_bigram_counts_match_a_hand_count():
    model = build_char_model("bigram-counts", 3, smoothing=0.0)
    idx = torch.tensor([[0, 1, 1, 2]])
    targets = torch.tensor([[1, 1, 2, 0]])
    model.update_counts(idx, targets)
    # pairs: (0,1) (1,1) (1,2) (2,0)
    assert model.counts.tolist() == [[0, 1, 0], [0, 1, 1], [1, 0, 0]]
    assert model.probabilities()[1].tolist() == [0.0, 0.5, 0.5]


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
