"""The Adapt & serve page under AppTest: prompting beside the fine-tuned runs, batching, block tables, the memory
table, its lab runs' controls, and a checkpoint written by `llmviz finetune` classifying typed names."""

import json

import pytest
import torch
from safetensors.torch import save_file

from llmviz.adapt import finetune
from llmviz.cli import main as cli
from llmviz.errors import CheckpointError
from llmviz.lessons import adapting as adapt
from llmviz.training.checkpoint import load_checkpoint
from tests.support.paths import ROOT

SHIPPED = ROOT / "data" / "gpt-python-docs"


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(SHIPPED)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, tokenizer


def test_the_page_shows_prompting_and_the_fine_tuned_runs_side_by_side():
    """Prompting's held-out accuracy and the three fine-tuning runs' are one chart, on the same held-out names."""
    import json

    from tests.support.pages import assert_clean, finish_jobs, run_page

    at = run_page("stages/adapt.py")
    at.slider(key="task_steps").set_value(20).run()
    at.button(key="task_start").click().run()
    finish_jobs(at)
    at.button(key="task_prompting").click().run()
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    versus = next(c for c in charts if "prompting vs fine-tuning" in c["layout"]["title"]["text"])
    bars = {trace["name"]: dict(zip(trace["x"], trace["y"], strict=True)) for trace in versus["data"]}
    assert list(bars["prompting"]) == ["prompt, 0 examples", "prompt, 1 example", "prompt, 4 examples"]
    assert len(bars["fine-tuned"]) == 3 and all(0 <= v <= 1 for v in bars["fine-tuned"].values())
    held = finetune.name_examples()[1]
    for value in [*bars["prompting"].values(), *bars["fine-tuned"].values()]:  # shares of the same 106 names
        assert value * len(held) == pytest.approx(round(value * len(held)), abs=1e-4)  # float32 means


def test_the_batching_chart_shows_each_requests_wait_and_tokens_per_second(shipped):
    """Issue 28 item 6: waiting time and tokens/s per request, both policies, on one chart."""
    import json

    from tests.support.pages import assert_clean, run_page

    model, tokenizer = shipped
    at = run_page("stages/adapt.py")
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    batching = next(
        c for c in charts if c["layout"].get("title", {}).get("text", "").startswith("Static vs continuous")
    )
    traces = {trace["name"]: trace for trace in batching["data"]}
    assert batching["layout"]["scattermode"] == "group"
    expected = adapt.batching(model, tokenizer, 2, (24, 4, 16, 6, 10, 4))  # the page's six requests, two slots
    for policy, result in expected.items():
        assert traces[f"{policy}: wait"]["y"] == [r.wait_steps for r in result.requests]
        assert traces[f"{policy}: finished"]["y"] == [r.finish_step for r in result.requests]
        assert traces[f"{policy}: finished"]["offsetgroup"] == policy  # over its own bar, not on the other's dot
        speeds = traces[f"{policy}: tokens/s"]
        assert speeds["x"] == [r.name for r in result.requests] and all(v > 0 for v in speeds["y"])


def test_the_pages_formulas_write_thousands_so_math_mode_adds_no_space():
    """'8,192' in a LaTeX formula renders '8, 192': every formula on the page writes its separators as {,}."""
    import re

    from tests.support.pages import run_page

    at = run_page("stages/adapt.py")
    formulas = [element.value for element in at.latex]
    assert any("8{,}192" in formula for formula in formulas)  # LoRA r 4 on W_Q and W_V of the shipped GPT
    assert not [formula for formula in formulas if re.search(r"\d,\d", formula)]


def test_the_block_table_chart_names_whole_blocks():
    """Seen in the browser: a one-row block chart had ticks at −0.5, 0, 0.5 and its axis title ran over the chart's
    title. Rows are named by the blocks they hold, columns are whole numbers."""
    import json

    from tests.support.pages import run_page

    at = run_page("stages/adapt.py")
    at.text_input(key="page_lengths").set_value("13, 5, 22, 9, 40").run()  # 4 + 2 + 6 + 3 + 10 = 25 blocks of 4
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    blocks = next(c for c in charts if c["layout"]["title"]["text"].startswith("Physical blocks"))
    assert blocks["layout"]["yaxis"]["ticktext"] == ["blocks 0–15", "blocks 16–31"]
    assert blocks["layout"]["yaxis"]["tickvals"] == [0, 1] and blocks["layout"]["xaxis"]["dtick"] == 1
    assert not blocks["layout"]["yaxis"].get("title", {}).get("text")


def test_the_memory_table_names_each_steps_autocast():
    from tests.support.pages import assert_clean, run_page

    at = run_page("stages/adapt.py")
    at.button(key="memory_run").click().run()
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
    from tests.support.pages import assert_clean, run_page

    at = run_page("stages/adapt.py")
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
    assert sorted(trace["name"] for trace in curves["data"]) == sorted(job.label for job in jobs + again)
    assert_clean(at)


SHIPPED_PATH = str(ROOT / "data" / "gpt-python-docs")


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out.strip().splitlines()[-1])


def test_the_adapt_page_reads_a_fine_tuned_head_back(capsys, tmp_path, monkeypatch):
    """Pick the checkpoint `finetune` wrote: the Adapt page classifies typed names with its trained head."""
    from tests.support.pages import assert_clean, run_page

    runs = tmp_path / "runs"
    run(capsys, "finetune", "--init", SHIPPED_PATH, "--out", str(runs / "names-head"), "--steps", "20")
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs))
    at = run_page("stages/adapt.py", _picker_selected="dir:names-head")
    assert_clean(at)
    table = next(frame.value for frame in at.dataframe if "P(female list)" in frame.value.columns)
    classifier, tokenizer, _ = finetune.load_classifier(runs / "names-head")
    names = list(table["name"])
    assert names == ["Mary", "John", "Ada", "Alan", "Grace"]
    expected = finetune.female_probabilities(classifier, tokenizer, names)
    assert list(table["P(female list)"]) == pytest.approx([round(p, 4) for p in expected])
    assert list(table["the names lists say"])[:2] == ["female", "male (held out)"]  # John: one name in five is held out

    at.text_input(key="task_names").set_value(" , ").run()  # nothing to classify: a warning, not an error
    assert_clean(at)
    assert any("at least one first name" in warning.value for warning in at.warning)


def test_a_missing_oversized_or_broken_head_is_refused_with_a_message(capsys, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.support.pages import TIMEOUT, assert_clean

    runs = tmp_path / "runs"
    out = runs / "names-head"
    run(capsys, "finetune", "--init", SHIPPED_PATH, "--out", str(out), "--steps", "1")
    head = out / finetune.HEAD_FILE
    save_file({"weight": torch.full((1, 128), float("nan")), "bias": torch.zeros(1)}, str(head))
    with pytest.raises(CheckpointError, match="NaN"):
        finetune.load_classifier(out)
    head.write_bytes(b"\0" * 200_000)
    with pytest.raises(CheckpointError, match="refused unread"):
        finetune.load_classifier(out)
    head.unlink()
    with pytest.raises(CheckpointError, match="missing"):
        finetune.load_classifier(out)
    # the page: one message naming the file, and the rest of the page goes on
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["_picker_selected"] = "dir:names-head"
    at.run()
    at.switch_page(str(ROOT / "stages" / "adapt.py")).run()
    assert_clean(at, errors_expected=True)
    assert [error.value for error in at.error if "is missing" in error.value], [e.value for e in at.error]
    assert len(at.error) == 1
