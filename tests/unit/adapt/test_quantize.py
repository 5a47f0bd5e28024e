"""Quantization against torch's own quantized tensors (int8), torch's fake-quant (int4 and QAT) and hand derivations."""

import math
import pickle
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.adapt import quantize
from llmviz.data import corpus
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import prepare_data

WEIGHT = torch.randn(6, 10, generator=torch.Generator().manual_seed(0)) * 0.3 + 0.05


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("symmetric", [True, False])
def test_int8_matches_torch_quantized_tensors(per_channel, symmetric):
    spec = quantize.QuantSpec(bits=8, per_channel=per_channel, symmetric=symmetric)
    scale, zero_point = quantize.quantization_parameters(WEIGHT, spec)
    dtype = torch.qint8 if symmetric else torch.quint8
    with warnings.catch_warnings():  # torch marks its quantized tensors deprecated; they are still the reference
        warnings.simplefilter("ignore", UserWarning)
        if per_channel:
            reference = torch.quantize_per_channel(WEIGHT, scale.double(), zero_point, 0, dtype)
        else:
            reference = torch.quantize_per_tensor(WEIGHT, float(scale), int(zero_point), dtype)
    q = quantize.quantize(WEIGHT, scale, zero_point, spec)
    assert torch.equal(q, reference.int_repr().long())
    assert torch.allclose(quantize.dequantize(q, scale, zero_point), reference.dequantize(), atol=1e-7)


def test_int8_scale_and_zero_point_by_hand():
    w = torch.tensor([[-0.5, 0.0, 1.5]])
    sym = quantize.QuantSpec(bits=8, per_channel=False, symmetric=True)
    scale, zero_point = quantize.quantization_parameters(w, sym)
    assert float(scale) == pytest.approx(1.5 / 127) and int(zero_point) == 0
    assert quantize.quantize(w, scale, zero_point, sym).tolist() == [[-42, 0, 127]]  # −0.5 · 127 / 1.5 = −42.33
    asym = quantize.QuantSpec(bits=8, per_channel=False, symmetric=False)
    scale, zero_point = quantize.quantization_parameters(w, asym)
    assert float(scale) == pytest.approx(2.0 / 255) and int(zero_point) == 64  # round(0.5 / (2/255)) = round(63.75)
    assert quantize.quantize(w, scale, zero_point, asym).tolist() == [[0, 64, 255]]


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("symmetric", [True, False])
def test_int4_matches_torch_fake_quantize(per_channel, symmetric):
    spec = quantize.QuantSpec(bits=4, per_channel=per_channel, symmetric=symmetric)
    scale, zero_point = quantize.quantization_parameters(WEIGHT, spec)
    if per_channel:
        reference = torch.fake_quantize_per_channel_affine(WEIGHT, scale, zero_point.int(), 0, spec.qmin, spec.qmax)
    else:
        reference = torch.fake_quantize_per_tensor_affine(WEIGHT, float(scale), int(zero_point), spec.qmin, spec.qmax)
    assert torch.allclose(quantize.round_trip(WEIGHT, spec), reference, atol=1e-7)
    assert len(torch.unique(quantize.quantize(WEIGHT, scale, zero_point, spec))) <= 16


def test_int4_zero_point_by_hand():
    w = torch.tensor([[-0.3, 0.0, 0.2, 1.2]])
    spec = quantize.QuantSpec(bits=4, per_channel=False, symmetric=False)
    scale, zero_point = quantize.quantization_parameters(w, spec)
    # s = 1.5 / 15 = 0.1, z = round(0.3 / 0.1) = 3; q = round(w / 0.1) + 3 = [0, 3, 5, 15]
    assert float(scale) == pytest.approx(0.1) and int(zero_point) == 3
    q = quantize.quantize(w, scale, zero_point, spec)
    assert q.tolist() == [[0, 3, 5, 15]]
    assert torch.allclose(quantize.dequantize(q, scale, zero_point), torch.tensor([[-0.3, 0.0, 0.2, 1.2]]), atol=1e-6)


def test_memory_in_bytes_by_hand():
    assert quantize.stored_bytes((10, 6), quantize.QuantSpec(bits=8, per_channel=False, symmetric=True)) == 60 + 4
    assert quantize.stored_bytes((10, 6), quantize.QuantSpec(bits=8, per_channel=True, symmetric=False)) == 60 + 10 * 5
    assert quantize.stored_bytes((10, 7), quantize.QuantSpec(bits=4, per_channel=False, symmetric=True)) == 35 + 4
    assert (
        quantize.stored_bytes((3, 3), quantize.QuantSpec(bits=4, per_channel=False, symmetric=True)) == 5 + 4
    )  # 9 nibbles → 5 bytes


def test_quantized_model_account_and_layers():
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"]).eval()
    result = quantize.quantize_model(model, quantize.QuantSpec(bits=8, per_channel=True, symmetric=True))
    total = sum(p.numel() for p in model.parameters())
    assert result.float_bytes == 4 * total
    names = [layer.name for layer in result.layers]
    assert names[:2] == ["tok_emb.weight", "pos_emb.weight"] and "lm_head.weight" in names
    assert "blocks.0.ln1.weight" not in names
    layer = result.layers[names.index("blocks.0.attn.qkv.weight")]
    w = model.blocks[0].attn.qkv.weight.detach()
    w_hat = result.model.blocks[0].attn.qkv.weight.detach()
    assert layer.rms_error == pytest.approx(float(((w_hat - w) ** 2).mean().sqrt()), rel=1e-5)
    assert layer.max_error <= float(w.abs().amax(1).max()) / 127 / 2 + 1e-7  # at most half a step
    assert torch.equal(model.blocks[0].attn.qkv.weight, w)  # the original is unchanged
    assert result.total_bytes < result.float_bytes / 3


def test_comparison_is_cross_entropy_and_kl_by_hand():
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"]).eval()
    int4 = quantize.quantize_model(model, quantize.QuantSpec(bits=4, per_channel=False, symmetric=True)).model
    windows = quantize.held_out_windows(
        torch.randint(0, 256, (200,), generator=torch.Generator().manual_seed(1)), 16, 4
    )
    assert windows.shape == (4, 17)
    result = quantize.compare(model, int4, windows)
    with torch.no_grad():
        p = F.softmax(model(windows[:, :-1])[0], -1)
        q = F.softmax(int4(windows[:, :-1])[0], -1)
    kl = (p * (p.log() - q.log())).sum(-1).mean()
    assert result.kl == pytest.approx(float(kl), rel=1e-4)
    assert result.kl == pytest.approx(float(F.kl_div(q.log(), p, reduction="none").sum(-1).mean()), rel=1e-4)
    assert result.loss_before == pytest.approx(float(model(windows[:, :-1], windows[:, 1:])[1].detach()), rel=1e-6)
    assert result.perplexity_after == pytest.approx(math.exp(result.loss_after))
    assert quantize.compare(model, model, windows).kl == pytest.approx(0.0, abs=1e-7)


def test_fake_quant_linear_is_torch_fake_quant_with_a_straight_through_gradient():
    torch.manual_seed(0)
    spec = quantize.QuantSpec(bits=4, per_channel=True, symmetric=True)
    linear = nn.Linear(10, 6)
    fake = quantize.FakeQuantLinear.from_linear(linear, spec)
    x = torch.randn(5, 10)
    fake(x).sum().backward()
    ours = linear.weight.grad.clone()
    linear.weight.grad = None
    scale, zero_point = quantize.quantization_parameters(linear.weight, spec)
    reference_weight = torch.fake_quantize_per_channel_affine(
        linear.weight, scale, zero_point.int(), 0, spec.qmin, spec.qmax
    )
    expected = F.linear(x, reference_weight, linear.bias)
    assert torch.allclose(fake(x), expected, atol=1e-6)
    expected.sum().backward()  # torch's fake quant passes the gradient straight through inside the range
    assert torch.allclose(ours, linear.weight.grad, atol=1e-6)


def test_qat_run_keeps_an_ordinary_state_dict_and_trains():
    torch.manual_seed(0)
    config = TrainConfig(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=6,
        lr=1e-2,
        warmup_steps=1,
        eval_interval=3,
        eval_batches=1,
        seed=3,
    )
    dataset = prepare_data(corpus.load("names")[:3000], config)
    pretrained = GPT(PRESETS["gpt-nano"].replace(vocab_size=dataset.vocab_size, context_length=16)).eval()
    trainer = quantize.QATTrainer(config, dataset, initial_model=pretrained, quant=quantize.QuantSpec(bits=4))
    assert isinstance(trainer.model.blocks[0].attn.qkv, quantize.FakeQuantLinear)
    history = list(trainer.run())
    assert len(history) == 6
    plain = GPT(trainer.model.config)
    plain.load_state_dict(trainer.model.state_dict())  # snapshots load into a plain GPT
    pickle.loads(pickle.dumps(trainer))
    with pytest.raises(ConfigError):
        quantize.QuantSpec(bits=3)


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("symmetric", [True, False])
def test_scale_and_zero_point_are_torch_ao_min_max_observers(bits, per_channel, symmetric):
    """The quantization parameters themselves (the tests above hand them to torch) are what torch.ao's min/max
    observers compute over the same integer range."""
    from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver

    spec = quantize.QuantSpec(bits=bits, per_channel=per_channel, symmetric=symmetric)
    if symmetric:
        scheme = torch.per_channel_symmetric if per_channel else torch.per_tensor_symmetric
    else:
        scheme = torch.per_channel_affine if per_channel else torch.per_tensor_affine
    options = dict(
        dtype=torch.qint8 if symmetric else torch.quint8, qscheme=scheme, quant_min=spec.qmin, quant_max=spec.qmax
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        observer = PerChannelMinMaxObserver(ch_axis=0, **options) if per_channel else MinMaxObserver(**options)
        observer(WEIGHT)
        reference_scale, reference_zero_point = observer.calculate_qparams()
    scale, zero_point = quantize.quantization_parameters(WEIGHT, spec)
    assert torch.allclose(scale.flatten().double(), reference_scale.flatten().double(), rtol=1e-6)
    assert torch.equal(zero_point.flatten().long(), reference_zero_point.flatten().long())
