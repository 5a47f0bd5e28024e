"""How llmviz's int8 quantization compares with torch's quantized tensors, on every weight matrix of the shipped GPT,
and what docs/adapting.md says about it (it said "equal"; with a zero point a handful of integers differ by one, at
rounding ties)."""

import re
import warnings
from pathlib import Path

import pytest
import torch

from llmviz.adapt import quantize
from llmviz.training.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[3]


def _differences(spec: quantize.QuantSpec) -> tuple[int, int, list[float]]:
    """(integers that differ from torch's, integers in all, how far each differing w/s + z sits from a half)."""
    model, _, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    total, differ, distances = 0, 0, []
    for _, weight in model.named_parameters():
        if weight.dim() != 2:
            continue
        w = weight.detach()
        scale, zero_point = quantize.quantization_parameters(w, spec)
        ours = quantize.quantize(w, scale, zero_point, spec)
        dtype = torch.qint8 if spec.symmetric else torch.quint8
        with warnings.catch_warnings():  # torch marks its quantized tensors deprecated; they are still the reference
            warnings.simplefilter("ignore", UserWarning)
            if spec.per_channel:
                theirs = torch.quantize_per_channel(w, scale.double().flatten(), zero_point.flatten(), 0, dtype)
            else:
                theirs = torch.quantize_per_tensor(w, float(scale), int(zero_point), dtype)
        reference = theirs.int_repr().long()
        mask = ours != reference
        assert int((ours - reference).abs().max()) <= 1  # never more than one step apart
        exact = (w.double() / scale.double().reshape(-1, *[1] * (w.dim() - 1)))[mask]
        distances += (exact - exact.floor() - 0.5).abs().tolist()
        total, differ = total + w.numel(), differ + int(mask.sum())
    return differ, total, distances


@pytest.mark.parametrize("per_channel", [False, True])
def test_symmetric_int8_is_torchs_and_zero_point_int8_differs_only_at_ties(per_channel):
    differ, total, _ = _differences(quantize.QuantSpec(8, per_channel, symmetric=True))
    assert differ == 0
    differ, total, distances = _differences(quantize.QuantSpec(8, per_channel, symmetric=False))
    assert 0 < differ < total / 100_000
    assert max(distances) < 1e-4  # each one a rounding tie: w / s is a half, give or take float error


def test_the_docs_say_how_many_integers_differ():
    differ, total, _ = _differences(quantize.QuantSpec(8, per_channel=False, symmetric=False))
    text = (ROOT / "docs" / "adapting.md").read_text(encoding="utf-8")
    claim = re.search(r"(\d[\d,]*)\s+of\s+([\d,]+)\s+integers", text)
    assert claim, "docs/adapting.md states how many integers differ from torch's"
    assert (int(claim.group(1).replace(",", "")), int(claim.group(2).replace(",", ""))) == (differ, total)
    assert not re.search(r"\bequal to `?torch", text), "no claim of equality with torch's zero-point int8"
