"""The Adapt & serve page's numbers (llmviz/lessons/adapting.py) and its lab runs through the job system."""

import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from llmviz.adapt import finetune, lora
from llmviz.adapt import quantize as qz
from llmviz.data import corpus
from llmviz.jobs.manager import JobManager
from llmviz.lessons import adapting as adapt
from llmviz.training.checkpoint import load_checkpoint, model_description, model_from_description
from llmviz.training.snapshots import load_into

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "gpt-python-docs"
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
    demo = adapt.lora_demo(model, tokenizer, TEXT, lora.LoRAConfig(rank=2, alpha=4, targets=("q", "proj")), steps=3)
    assert demo.max_logit_difference <= 1e-5
    assert len(demo.losses) == 3
    assert demo.trained == model.config.n_layers * 2 * 2 * (128 + 128)
    proj = adapt.spectrum(demo.deltas["blocks.0.attn.proj.weight"])
    assert proj.rank <= 2
    assert adapt.spectrum(demo.deltas["blocks.0.attn.qkv.weight"]).rank <= 2  # q only: one slice


def test_quant_report_numbers(shipped):
    model, tokenizer = shipped
    spec = qz.QuantSpec(bits=4, per_channel=True, symmetric=False)
    report = adapt.quant_report(model, tokenizer, TEXT, spec, "The for", new_tokens=5)
    windows = adapt.held_out_ids(tokenizer, TEXT, model)
    with torch.no_grad():
        reference = F.cross_entropy(model(windows[:, :-1])[0].flatten(0, 1), windows[:, 1:].flatten())
    assert report.comparison.loss_before == pytest.approx(float(reference), rel=1e-5)
    assert report.float_bytes == 4 * model.num_parameters()
    assert report.quantized_bytes < report.float_bytes / 4
    assert report.text_before.startswith("The for")
    before, after = adapt.layer_values(model, "blocks.0.attn.qkv.weight", spec)
    assert len(torch.unique(after[:128])) <= 16  # one row: 16 levels at most


def test_weight_histograms_count_every_weight_in_shared_bins(shipped):
    import numpy as np

    model, _ = shipped
    spec = qz.QuantSpec(bits=4, per_channel=False, symmetric=True)
    counted = adapt.weight_histograms(model, "blocks.0.attn.qkv.weight", spec, bins=50)
    before, after = adapt.layer_values(model, "blocks.0.attn.qkv.weight", spec)
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
    example = adapt.bce_example(model, tokenizer)
    assert example.steps.mean == pytest.approx(example.torch_value, rel=1e-6)
    assert len(example.names) == 6


def test_questions_are_computed(shipped):
    model, tokenizer = shipped
    questions = adapt.adapt_questions(model, tokenizer, "The for statement")
    count, top, kv = questions
    assert count.options[count.answer] == f"{4 * 4 * (128 + 128) * 2:,}"
    assert kv.options[kv.answer] == f"{2 * 4 * 128 * 4 * 100:,}"
    int4 = qz.quantize_model(model, qz.QuantSpec(bits=4, per_channel=False, symmetric=True)).model
    ids = torch.tensor([tokenizer.encode("The for statement")])
    with torch.no_grad():
        same = int(model(ids)[0][0, -1].argmax()) == int(int4(ids)[0][0, -1].argmax())
    assert top.options[top.answer] == ("the same top token" if same else "a different top token")


def test_batching_uses_the_held_out_names(shipped):
    model, tokenizer = shipped
    results = adapt.batching(model, tokenizer, 2, (3, 1, 2))
    assert results["static"].useful_tokens == results["continuous"].useful_tokens == 6
    assert results["continuous"].steps <= results["static"].steps


def _snapshot_model(job):
    step = job.snapshots.steps()[-1]
    return load_into(model_from_description(job.info.description), job.snapshots.get(step))


def test_lab_runs_go_through_the_job_system(shipped, manager):
    model, tokenizer = shipped
    runs = {
        "lora": adapt.lora_run(model, tokenizer, TEXT, lora.LoRAConfig(rank=2), steps=4, seed=1),
        "qat": adapt.qat_run(model, tokenizer, TEXT, qz.QuantSpec(bits=4), steps=4, seed=1),
        "names": adapt.finetune_runs(model, tokenizer, steps=4, seed=1)["last block"],
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
    deltas = adapt.delta_between(start, _snapshot_model(lora_job))
    assert deltas and all(adapt.spectrum(d).rank <= 2 * 2 for d in deltas.values())  # q and v slices of qkv
    rows = adapt.ptq_vs_qat(start, _snapshot_model(jobs["qat"]), None, tokenizer, TEXT, qz.QuantSpec(bits=4))
    assert len(rows) == 3 and all(v > 0 for v in rows.values())


def test_prompting_accuracy_is_a_share_of_the_held_out_names(shipped):
    model, tokenizer = shipped
    results = adapt.prompting(model, tokenizer, shots=(0, 2), limit=6)
    assert [r.shots for r in results] == [0, 2]
    assert all(r.accuracy in {i / 6 for i in range(7)} for r in results)
    assert finetune.few_shot_prompt([], "Ann") == "Name: Ann\nGender:"


def test_questions_count_from_the_models_real_shapes_with_grouped_query_attention(shipped):
    """LoRA's count and the KV cache's bytes on a llama-style run (GQA: 2 key/value heads of 32, d_mlp 344)."""
    from llmviz.models.gpt import GPT, PRESETS

    _, tokenizer = shipped  # the shipped BPE: 1,024 tokens, as the preset
    torch.manual_seed(0)
    model = GPT(PRESETS["llama-style"]).eval()
    count, _, kv = adapt.adapt_questions(model, tokenizer, "The for statement")
    assert count.options[count.answer] == f"{4 * 4 * ((128 + 128) + (128 + 64)):,}"  # W_Q 128 rows, W_V 64
    assert kv.options[kv.answer] == f"{2 * 4 * 64 * 4 * 100:,}"


def test_the_page_shows_prompting_and_the_fine_tuned_runs_side_by_side():
    """Prompting's held-out accuracy and the three fine-tuning runs' are one chart, on the same held-out names."""
    import json

    from tests.test_app_pages import assert_clean, finish_jobs, run_page

    at = run_page("stages/adapting.py", adapting_part="Fine-tuning for a task")  # its tab (issue: one key picture)
    at.slider(key="task_steps").set_value(20).run()
    at.button(key="task_start").click().run()
    finish_jobs(at)
    at.button(key="task_start_prompting").click().run()  # prompting runs in a worker too
    finish_jobs(at)
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    versus = next(c for c in charts if "prompting vs fine-tuning" in c["layout"]["title"]["text"])
    bars = {trace["name"]: dict(zip(trace["x"], trace["y"], strict=True)) for trace in versus["data"]}
    assert list(bars["prompting"]) == ["prompt, 0 examples", "prompt, 1 example", "prompt, 4 examples"]
    assert len(bars["fine-tuned"]) == 3 and all(0 <= v <= 1 for v in bars["fine-tuned"].values())
    held = finetune.name_examples()[1]
    for value in [*bars["prompting"].values(), *bars["fine-tuned"].values()]:  # shares of the same 106 names
        assert value * len(held) == pytest.approx(round(value * len(held)), abs=1e-4)  # float32 means


def test_a_names_run_ends_with_its_checkpoint_file_like_every_run(shipped, manager):
    """The Training page offers a finished run's single-file checkpoint; a names run's GPT is one too (its end
    failed: 'FineTuneTrainer' object has no attribute 'sharded', and no file came back)."""
    import safetensors.torch

    model, tokenizer = shipped
    job = manager.submit_training(
        "owner", adapt.finetune_runs(model, tokenizer, steps=2, seed=1)["last block"], label="names"
    )
    assert job.wait(120)
    assert job.status().state == "finished"
    assert job.checkpoint is not None
    weights = safetensors.torch.load(job.checkpoint)
    restored = _snapshot_model(job)
    assert all(torch.equal(weights[k], v) for k, v in restored.state_dict().items() if k in weights)


def test_the_batching_chart_shows_each_requests_wait_and_its_speed_as_a_median_of_repeats(shipped):
    """Issue 28 item 6: waiting time per request, both policies, on one chart (now on the Serving page). Per-request
    tokens/s was one wall-clock sample (reruns of the same schedule gave 95/280, 309/673, 528/263 tokens/s): the
    page shows each policy's tokens/s as the median of several runs with its spread, and no single sample."""
    import json
    import statistics

    from tests.test_app_pages import assert_clean, finish_jobs, run_page

    model, tokenizer = shipped
    at = finish_jobs(run_page("stages/serving.py", serving_part="Batching"))  # served in a worker
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    batching = next(c for c in charts if c["layout"].get("title", {}).get("text", "").startswith("Steps each request"))
    traces = {trace["name"]: trace for trace in batching["data"]}
    assert batching["layout"]["scattermode"] == "group"
    expected = adapt.batching(model, tokenizer, 2, (24, 4, 16, 6, 10, 4))  # the page's six requests, two slots
    for policy, result in expected.items():
        assert traces[f"{policy}: wait"]["y"] == [r.wait_steps for r in result.requests]
        assert traces[f"{policy}: finished"]["y"] == [r.finish_step for r in result.requests]
        assert traces[f"{policy}: finished"]["offsetgroup"] == policy  # over its own bar, not on the other's dot
    assert not [name for name in traces if "tokens/s" in name]  # no single wall-clock sample per request
    table = next(frame.value for frame in at.dataframe if "policy" in frame.value.columns)
    column = "tokens/s: median (lowest–highest)"
    assert sorted(table["policy"]) == ["continuous", "static"]
    for shown in table[column]:
        median, low, high, runs = re.fullmatch(r"([\d,]+) \(([\d,]+)–([\d,]+), (\d+) runs\)", shown).groups()
        number = [float(value.replace(",", "")) for value in (median, low, high)]
        assert int(runs) == adapt.BATCHING_REPEATS >= 3 and number[1] <= number[0] <= number[2], shown
    # the numbers are the median and the extremes of the repeats the worker measured (a hand check of Rate)
    rate = adapt.Rate((3.0, 9.0, 4.0, 100.0, 5.0))
    assert (rate.median, rate.low, rate.high) == (statistics.median([3, 4, 5, 9, 100]), 3.0, 100.0) == (5, 3, 100)


def test_the_pages_formulas_write_thousands_so_math_mode_adds_no_space():
    """'8,192' in a LaTeX formula renders '8, 192': every formula on the page writes its separators as {,}."""
    import re

    from tests.test_app_pages import run_page

    at = run_page("stages/adapting.py")
    formulas = [element.value for element in at.latex]
    assert any("8{,}192" in formula for formula in formulas)  # LoRA r 4 on W_Q and W_V of the shipped GPT
    assert not [formula for formula in formulas if re.search(r"\d,\d", formula)]


def test_the_block_table_chart_names_whole_blocks():
    """Seen in the browser: a one-row block chart had ticks at −0.5, 0, 0.5 and its axis title ran over the chart's
    title. Rows are named by the blocks they hold, columns are whole numbers."""
    import json

    from tests.test_app_pages import run_page

    at = run_page("stages/serving.py", serving_part="Paged attention")
    at.text_input(key="page_lengths").set_value("13, 5, 22, 9, 40").run()  # 4 + 2 + 6 + 3 + 10 = 25 blocks of 4
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    blocks = next(c for c in charts if c["layout"]["title"]["text"].startswith("Physical blocks"))
    assert blocks["layout"]["yaxis"]["ticktext"] == ["blocks 0–15", "blocks 16–31"]
    assert blocks["layout"]["yaxis"]["tickvals"] == [0, 1]
    assert blocks["layout"]["xaxis"]["tickvals"] == list(range(16))  # whole blocks: a column is "+ n" in its row
    assert blocks["layout"]["xaxis"]["ticktext"] == [f"+{n}" for n in range(16)]
    assert not blocks["layout"]["yaxis"].get("title", {}).get("text")
    assert not blocks["layout"]["xaxis"].get("title", {}).get("text")  # no stray "+ column" axis title


def test_the_memory_table_names_each_steps_autocast():
    from tests.test_app_pages import assert_clean, finish_jobs, run_page

    at = run_page("stages/adapting.py", adapting_part="Training in less memory")
    at.button(key="task_start_memory").click().run()  # measured in a worker
    finish_jobs(at)
    assert_clean(at)
    table = next(frame.value for frame in at.dataframe if "saved for backward" in frame.value.columns)
    assert list(zip(table["gradient checkpointing"], table["autocast"], strict=True)) == [
        ("off", "off"),
        ("off", "bf16"),
        ("on", "off"),
        ("on", "bf16"),
    ]  # fp16 rows only where the model is on CUDA
    assert any(
        button.label.startswith("Train 3 runs: plain, checkpointing, checkpointing + bf16") for button in at.button
    )


def test_a_lab_run_on_the_page_pauses_resumes_and_stops_like_every_run(fresh_session_jobs):
    """Long work can be paused: the Adapt page's LoRA vs full fine-tuning runs have the Training page's
    Pause/Resume/Stop buttons (they had Stop alone)."""
    import json

    from llmviz.jobs.manager import default_manager
    from tests.test_app_pages import assert_clean, run_page

    at = run_page("stages/adapting.py")
    at.slider(key="lora_steps").set_value(400)  # long enough to still be training at every click below
    at.button(key="lora_start").click().run()
    jobs = default_manager().jobs(at.session_state["_llmviz_session_id"])
    assert len(jobs) == 2  # one race, a job per runner
    first, second = jobs
    buttons = {button.key: button for button in at.button}
    assert {f"run_pause_lora_{job.id}" for job in jobs} | {f"run_stop_lora_{job.id}" for job in jobs} <= set(buttons)
    buttons[f"run_pause_lora_{first.id}"].click().run()
    assert first.paused and not second.paused
    at.run()  # the section's next refresh (live in the browser) draws Resume in place of Pause
    buttons = {button.key: button for button in at.button}
    assert f"run_resume_lora_{first.id}" in buttons and f"run_pause_lora_{first.id}" not in buttons
    buttons[f"run_resume_lora_{first.id}"].click().run()
    assert not first.paused
    buttons = {button.key: button for button in at.button}
    buttons[f"run_stop_lora_{second.id}"].click().run()
    assert second.wait(120) and second.status().state == "stopped"
    first.stop()  # (its Stop button is the same widget, keyed by run)
    assert first.wait(120)
    # the same settings again: the second pair is told apart from the first (it replaced it on the chart)
    at.button(key="lora_start").click().run()
    again = default_manager().jobs(at.session_state["_llmviz_session_id"])[2:]
    assert [job.label for job in again] == [f"{job.label} #2" for job in jobs]
    for job in again:
        job.stop()
        assert job.wait(120)
    curves = next(
        json.loads(chart.proto.spec)
        for chart in at.run().get("plotly_chart")
        if json.loads(chart.proto.spec)["layout"].get("title", {}).get("text") == "Training loss"
    )
    # one colour per run (its training curve over its faint raw loss, its validation loss), named by its label
    assert sorted({trace["legendgroup"] for trace in curves["data"]}) == sorted(job.label for job in jobs + again)
    assert_clean(at)
