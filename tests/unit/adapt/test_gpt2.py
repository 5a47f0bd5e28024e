"""The Adapt & serve stage on GPT-2 (a tiny random GPT-2 written by transformers, GPT-2's real 50,257-token
vocabulary and tiktoken): every quick view, every lab run, and the CLI verbs, whose checkpoints the sidebar's
picker lists and loads."""

import math

import pytest
import torch
import torch.nn.functional as F

import llmviz.lessons.serving
from llmviz.adapt import lora, quantize
from llmviz.data import corpus
from llmviz.generation import serving
from llmviz.hub import gpt2
from llmviz.lessons import adapting
from tests.support.gpt2 import make_hf_gpt2

pytestmark = pytest.mark.slow  # transformers writes a GPT-2, and every lab run trains on it in a worker

TEXT = corpus.load("python-docs")[:20_000]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2") / "tiny-gpt2"
    make_hf_gpt2(vocab_size=50257, n_layer=2, n_embd=32, n_head=2, n_positions=64, seed=3).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(folder):
    model, tokenizer, _ = gpt2.load(str(folder))
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, tokenizer


def test_quick_views_on_gpt2(tiny):
    model, tokenizer = tiny
    assert model.lm_head.weight is model.tok_emb.weight  # GPT-2 ties its head to the token embedding
    demo = adapting.lora_demo(
        model, tokenizer, TEXT, lora.LoRAConfig(rank=2, alpha=4, targets=("q", "v", "mlp")), steps=2
    )
    assert demo.max_logit_difference <= 1e-5
    assert demo.trained == lora.adapter_count(model, lora.LoRAConfig(rank=2, targets=("q", "v", "mlp")))

    report = adapting.quant_report(
        model, tokenizer, TEXT, quantize.QuantSpec(bits=8, per_channel=True, symmetric=False), "The for", new_tokens=3
    )
    windows = adapting.held_out_ids(tokenizer, TEXT, model)
    with torch.no_grad():
        reference = F.cross_entropy(model(windows[:, :-1])[0].flatten(0, 1), windows[:, 1:].flatten())
    assert report.comparison.loss_before == pytest.approx(float(reference), rel=1e-5)
    assert report.float_bytes == 4 * model.num_parameters()  # the tied matrix counted once
    assert [layer.name for layer in report.layers].count("tok_emb.weight") == 1
    assert "lm_head.weight" not in [layer.name for layer in report.layers]

    example = adapting.bce_example(model, tokenizer)
    assert example.steps.mean == pytest.approx(example.torch_value, rel=1e-6)
    results = adapting.prompting(model, tokenizer, shots=(0, 1), limit=4)
    assert all(r.accuracy in (0.0, 0.25, 0.5, 0.75, 1.0) for r in results)

    growth = serving.kv_growth(model, tokenizer.encode("The for"), 3)
    assert growth.cache_bytes == [2 * 2 * 32 * 4 * n for n in growth.tokens]
    served = llmviz.lessons.serving.batching(model, tokenizer, 2, (3, 1, 2))
    assert served["static"].useful_tokens == served["continuous"].useful_tokens == 6
    assert len(adapting.adapt_questions(model, tokenizer, "The for statement")) == 3


def test_every_lab_run_trains_on_gpt2(tiny):
    model, tokenizer = tiny
    trainers = {
        "lora": adapting.lora_run(model, tokenizer, TEXT, lora.LoRAConfig(rank=2), 2, 1),
        "full": adapting.full_run(model, tokenizer, TEXT, 2, 1),
        "qat": adapting.qat_run(model, tokenizer, TEXT, quantize.QuantSpec(bits=4), 2, 1),
        "memory": adapting.memory_run(model, tokenizer, TEXT, 2, 1, checkpointing=True, bf16=True),
        **{f"names {mode}": trainer for mode, trainer in adapting.finetune_runs(model, tokenizer, 2, 1).items()},
    }
    for name, trainer in trainers.items():
        losses = [m.train_loss for m in trainer.run()]
        assert len(losses) == 2 and all(math.isfinite(v) for v in losses), name
    assert trainers["names head"].history[-1].val_accuracy is not None
