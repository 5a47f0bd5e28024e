"""The Adapt & serve page's numbers (llmviz/lessons/adapting.py) and its lab runs through the job system."""

import pytest
import torch
import torch.nn.functional as F

import llmviz.lessons.serving
from llmviz.adapt import finetune, lora, quantize
from llmviz.data import corpus
from llmviz.jobs.manager import JobManager
from llmviz.lessons import adapting
from llmviz.training.checkpoint import load_checkpoint, model_description, model_from_description
from llmviz.training.snapshots import load_into
from tests.support.paths import ROOT

SHIPPED = ROOT / "data" / "gpt-python-docs"


TEXT = corpus.load("python-docs")[:40_000]


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(SHIPPED)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, tokenizer


@pytest.fixture
def manager():
    made = JobManager(max_running=2, session_timeout=None, workers="process")  # as on the server: pickled trainers
    yield made
    made.shutdown()


def test_lora_demo_merges_exactly_and_delta_rank_is_at_most_r(shipped):
    model, tokenizer = shipped
    demo = adapting.lora_demo(model, tokenizer, TEXT, lora.LoRAConfig(rank=2, alpha=4, targets=("q", "proj")), steps=3)
    assert demo.max_logit_difference <= 1e-5
    assert len(demo.losses) == 3
    assert demo.trained == model.config.n_layers * 2 * 2 * (128 + 128)
    proj = adapting.spectrum(demo.deltas["blocks.0.attn.proj.weight"])
    assert proj.rank <= 2
    assert adapting.spectrum(demo.deltas["blocks.0.attn.qkv.weight"]).rank <= 2  # q only: one slice


def test_quant_report_numbers(shipped):
    model, tokenizer = shipped
    spec = quantize.QuantSpec(bits=4, per_channel=True, symmetric=False)
    report = adapting.quant_report(model, tokenizer, TEXT, spec, "The for", new_tokens=5)
    windows = adapting.held_out_ids(tokenizer, TEXT, model)
    with torch.no_grad():
        reference = F.cross_entropy(model(windows[:, :-1])[0].flatten(0, 1), windows[:, 1:].flatten())
    assert report.comparison.loss_before == pytest.approx(float(reference), rel=1e-5)
    assert report.float_bytes == 4 * model.num_parameters()
    assert report.quantized_bytes < report.float_bytes / 4
    assert report.text_before.startswith("The for")
    before, after = adapting.layer_values(model, "blocks.0.attn.qkv.weight", spec)
    assert len(torch.unique(after[:128])) <= 16  # one row: 16 levels at most


def test_weight_histograms_count_every_weight_in_shared_bins(shipped):
    import numpy as np

    model, _ = shipped
    spec = quantize.QuantSpec(bits=4, per_channel=False, symmetric=True)
    counted = adapting.weight_histograms(model, "blocks.0.attn.qkv.weight", spec, bins=50)
    before, after = adapting.layer_values(model, "blocks.0.attn.qkv.weight", spec)
    edges = counted.edges.numpy()
    assert edges[0] == pytest.approx(min(float(before.min()), float(after.min())))
    assert edges[-1] == pytest.approx(max(float(before.max()), float(after.max())))
    # the reference: numpy's histogram on the same edges (the last bin closed, as in torch.histogram)
    assert counted.before.numpy().tolist() == np.histogram(before.double().numpy(), bins=edges)[0].tolist()
    assert counted.after.numpy().tolist() == np.histogram(after.double().numpy(), bins=edges)[0].tolist()
    assert int(counted.before.sum()) == int(counted.after.sum()) == before.numel()
    assert int((counted.after > 0).sum()) <= 16  # 4 bits, one scale for the tensor: 16 levels at most


def test_bce_example_equals_torch(shipped):
    model, tokenizer = shipped
    example = adapting.bce_example(model, tokenizer)
    assert example.steps.mean == pytest.approx(example.torch_value, rel=1e-6)
    assert len(example.names) == 6


def test_questions_are_computed(shipped):
    model, tokenizer = shipped
    questions = adapting.adapt_questions(model, tokenizer, "The for statement")
    count, top, kv = questions
    assert count.options[count.answer] == f"{4 * 4 * (128 + 128) * 2:,}"
    assert kv.options[kv.answer] == f"{2 * 4 * 128 * 4 * 100:,}"
    int4 = quantize.quantize_model(model, quantize.QuantSpec(bits=4, per_channel=False, symmetric=True)).model
    ids = torch.tensor([tokenizer.encode("The for statement")])
    with torch.no_grad():
        same = int(model(ids)[0][0, -1].argmax()) == int(int4(ids)[0][0, -1].argmax())
    assert top.options[top.answer] == ("the same top token" if same else "a different top token")


def test_batching_uses_the_held_out_names(shipped):
    model, tokenizer = shipped
    results = llmviz.lessons.serving.batching(model, tokenizer, 2, (3, 1, 2))
    assert results["static"].useful_tokens == results["continuous"].useful_tokens == 6
    assert results["continuous"].steps <= results["static"].steps


def _snapshot_model(job):
    step = job.snapshots.steps()[-1]
    return load_into(model_from_description(job.info.description), job.snapshots.get(step))


@pytest.mark.slow  # six lab runs in worker processes
def test_lab_runs_go_through_the_job_system(shipped, manager):
    model, tokenizer = shipped
    runs = {
        "lora": adapting.lora_run(model, tokenizer, TEXT, lora.LoRAConfig(rank=2), steps=4, seed=1),
        "qat": adapting.qat_run(model, tokenizer, TEXT, quantize.QuantSpec(bits=4), steps=4, seed=1),
        "names": adapting.finetune_runs(model, tokenizer, steps=4, seed=1)["last block"],
    }
    jobs = {name: manager.submit_training("owner", trainer, label=name) for name, trainer in runs.items()}
    for name, job in jobs.items():
        assert job.wait(120), name
        status = job.status()
        assert status.state == "finished", (name, status.error)
        assert [m.step for m in status.metrics] == [1, 2, 3, 4]
        restored = _snapshot_model(job)  # the picker's way: a plain model from the description, strict load
        assert type(restored).__name__ == "GPT"
    last = jobs["names"].status().metrics
    assert last[0].val_accuracy_before is not None and last[-1].val_accuracy is not None
    # the LoRA run's snapshot is the merged model: ΔW from step 0 has rank ≤ 2 in every changed matrix
    lora_job = jobs["lora"]
    start = load_into(model_from_description(model_description(model)), lora_job.snapshots.get(0))
    deltas = adapting.delta_between(start, _snapshot_model(lora_job))
    assert deltas and all(adapting.spectrum(d).rank <= 2 * 2 for d in deltas.values())  # q and v slices of qkv
    rows = adapting.ptq_vs_qat(start, _snapshot_model(jobs["qat"]), None, tokenizer, TEXT, quantize.QuantSpec(bits=4))
    assert len(rows) == 3 and all(v > 0 for v in rows.values())


def test_prompting_accuracy_is_a_share_of_the_held_out_names(shipped):
    model, tokenizer = shipped
    results = adapting.prompting(model, tokenizer, shots=(0, 2), limit=6)
    assert [r.shots for r in results] == [0, 2]
    assert all(r.accuracy in {i / 6 for i in range(7)} for r in results)
    assert finetune.few_shot_prompt([], "Ann") == "Name: Ann\nGender:"


def test_questions_count_from_the_models_real_shapes_with_grouped_query_attention(shipped):
    """LoRA's count and the KV cache's bytes on a llama-style run (GQA: 2 key/value heads of 32, d_mlp 344)."""
    from llmviz.models.gpt import GPT
    from llmviz.models.presets import PRESETS

    _, tokenizer = shipped  # the shipped BPE: 1,024 tokens, as the preset
    torch.manual_seed(0)
    model = GPT(PRESETS["llama-style"]).eval()
    count, _, kv = adapting.adapt_questions(model, tokenizer, "The for statement")
    assert count.options[count.answer] == f"{4 * 4 * ((128 + 128) + (128 + 64)):,}"  # W_Q 128 rows, W_V 64
    assert kv.options[kv.answer] == f"{2 * 4 * 64 * 4 * 100:,}"


@pytest.mark.slow  # a fine-tuning run in a worker process
def test_a_names_run_ends_with_its_checkpoint_file_like_every_run(shipped, manager):
    """The Training page offers a finished run's single-file checkpoint; a names run's GPT is one too (its end
    failed: 'FineTuneTrainer' object has no attribute 'sharded', and no file came back)."""
    import safetensors.torch

    model, tokenizer = shipped
    job = manager.submit_training(
        "owner", adapting.finetune_runs(model, tokenizer, steps=2, seed=1)["last block"], label="names"
    )
    assert job.wait(120)
    assert job.status().state == "finished"
    assert job.checkpoint is not None
    weights = safetensors.torch.load(job.checkpoint)
    restored = _snapshot_model(job)
    assert all(torch.equal(weights[k], v) for k, v in restored.state_dict().items() if k in weights)
