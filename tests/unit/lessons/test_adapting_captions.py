"""What the Adapting page says beside its numbers is true (llmviz/lessons/adapting.py, llmviz/adapt): each claim is
checked against an independent computation (torch's own rank, a hand count of the grid, torch's loss)."""

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import llmviz.lessons.serving
from llmviz.adapt import lora, quantize
from llmviz.data import corpus
from llmviz.lessons import adapting
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS
from llmviz.training.checkpoint import load_checkpoint

SHIPPED = Path(__file__).resolve().parents[3] / "data" / "gpt-python-docs"


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(SHIPPED)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model.eval(), tokenizer


@pytest.mark.parametrize("targets, qkv_bound", [(("q", "v"), 8), (("q",), 4), (("q", "k", "v"), 12)])
def test_the_rank_bound_is_r_per_adapter_writing_into_the_matrix(targets, qkv_bound):
    """'ΔW has rank ≤ r' was false: W_Q and W_V share the fused qkv matrix, and the default pair of adapters
    reaches 2r there. The bound the page states is the rank torch finds in trained adapters' ΔW (random A and B
    reach it exactly: each adapter adds r independent rows)."""
    config = lora.LoRAConfig(rank=4, alpha=8.0, targets=(*targets, "proj"))
    model = GPT(PRESETS["gpt-micro"])
    lora.add_adapters(model, config)
    generator = torch.Generator().manual_seed(0)
    for adapter in lora.adapters(model).values():  # B starts at 0: give both matrices random values
        for parameter in [*adapter.lora_A, *adapter.lora_B]:
            parameter.data = torch.randn(parameter.shape, generator=generator)
    deltas = {f"{name}.weight": adapter.delta_weight().detach() for name, adapter in lora.adapters(model).items()}
    for name, delta in deltas.items():
        bound = adapting.delta_rank_bound(name, config)
        assert int(torch.linalg.matrix_rank(delta)) == bound, name
        assert bound == (qkv_bound if name.endswith("qkv.weight") else 4)


def test_the_spectrum_the_chart_draws_shows_that_rank(shipped):
    """The chart's 'numerical rank' of the page's own demo (r = 4 on W_Q and W_V) is the caption's bound, 2r = 8."""
    model, tokenizer = shipped
    config = lora.LoRAConfig(rank=4, alpha=8.0, targets=("q", "v"))
    demo = adapting.lora_demo(model, tokenizer, corpus.load("python-docs")[:40_000], config, steps=3)
    qkv = next(name for name in demo.deltas if name.endswith("qkv.weight"))
    assert adapting.spectrum(demo.deltas[qkv]).rank == adapting.delta_rank_bound(qkv, config) == 8
    assert int(torch.linalg.matrix_rank(demo.deltas[qkv])) == 8  # torch's own tolerance for float32


def test_the_int4_question_counts_the_symmetric_grids_levels(shipped):
    """A quiz said 'sixteen levels' for symmetric int4: its grid is −7 … 7, 15 levels."""
    model, tokenizer = shipped
    spec = quantize.QuantSpec(bits=4, per_channel=False, symmetric=True)
    weight = torch.linspace(-1, 1, 1001)
    levels = torch.unique(quantize.round_trip(weight[None], spec)).numel()
    assert levels == len(range(-7, 8)) == 15
    question = next(q for q in adapting.adapt_questions(model, tokenizer, "The for") if q.kind == "int4-top")
    assert "15 levels" in question.explanation and "ixteen" not in question.explanation


def test_the_mlp_targets_title_says_what_a_swiglu_mlp_keeps():
    """'MLP (both layers)' never adapted SwiGLU's gate matrix and did not say so."""
    model = GPT(PRESETS["llama-style"])
    lora.add_adapters(model, lora.LoRAConfig(targets=("mlp",)))
    mlp = model.blocks[0].mlp
    assert isinstance(mlp.fc, lora.LoRALinear) and isinstance(mlp.proj, lora.LoRALinear)
    assert not isinstance(mlp.gate, lora.LoRALinear)  # what the title must say
    assert "not the SwiGLU gate" in lora.target_title("mlp", PRESETS["llama-style"])
    assert lora.target_title("mlp", PRESETS["gpt-mini"]) == "MLP (both layers)"  # GELU: two matrices, both adapted


def test_the_untrained_heads_loss_is_compared_with_ln_2_as_it_is(shipped):
    """'The loss is about log 2 = 0.693' sat under a mean of 0.766: the caption states the mean torch computes,
    and says on which side of ln 2 it is."""
    model, tokenizer = shipped
    example = adapting.bce_example(model, tokenizer)
    logits = torch.tensor(example.steps.logits)
    labels = torch.tensor(example.steps.labels, dtype=torch.float64)
    mean = float(F.binary_cross_entropy_with_logits(logits, labels))
    caption = example.caption()
    assert f"{mean:.3f}" in caption and "about log 2" not in caption
    assert ("above ln 2" in caption) == (mean >= math.log(2)) and ("below ln 2" in caption) == (mean < math.log(2))
    docs = " ".join((Path(__file__).resolve().parents[3] / "docs" / "adapting.md").read_text(encoding="utf-8").split())
    assert f"({mean:.3f} on the shipped GPT's six names" in docs
    wrong = int(((torch.sigmoid(logits) > 0.5) != labels.bool()).sum())  # names on the wrong side of 50 %
    assert f"lean the wrong way for {wrong} of the {len(logits)} names" in caption
    costs = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    assert int((costs > math.log(2)).sum()) == wrong  # each of them costs more than ln 2, as the caption says


def test_batching_repeats_give_a_median_and_a_spread(shipped):
    """Measured speeds vary from run to run: the page shows each policy's tokens/s as the median of several runs with
    the lowest and highest; the schedule (steps, waits) is the same in every run."""
    model, tokenizer = shipped
    found = adapting.run_to_end(
        llmviz.lessons.serving.batching_steps(lambda: False, model, tokenizer, 2, (3, 1, 2), repeats=3)
    )
    again = llmviz.lessons.serving.batching(model, tokenizer, 2, (3, 1, 2))
    for policy, result in found.results.items():
        assert [r.finish_step for r in result.requests] == [r.finish_step for r in again[policy].requests]
        rate = found.rates[policy]
        assert len(rate.values) == 3 and rate.low <= rate.median <= rate.high
        assert rate.median == sorted(rate.values)[1]
