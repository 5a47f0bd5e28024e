"""The Adapting page under AppTest: prompting beside the fine-tuned runs, the memory table, its lab runs' controls
and final lines, a checkpoint written by `llmviz finetune` classifying typed names; its results keyed by content
(two sessions), and its captions checked against its charts."""

import json
import math
import re

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from llmviz.adapt import finetune, lora, quantize
from llmviz.cli import main
from llmviz.data import corpus
from llmviz.errors import CheckpointError
from llmviz.jobs.default import default_manager
from llmviz.lessons import adapting
from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import assert_clean, computed, finish_jobs, finished_labels, open_tab, run_app, run_page
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

    at = run_page("stages/adapting.py", adapting_part="Fine-tuning for a task")  # its tab (issue: one key picture)
    at.slider(key="task_steps").set_value(20).run()
    at.button(key="task_start").click().run()
    finish_jobs(at)
    at = computed(at, "prompting")  # prompting runs in a worker too
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    versus = next(c for c in charts if "prompting vs fine-tuning" in c["layout"]["title"]["text"])
    bars = {trace["name"]: dict(zip(trace["x"], trace["y"], strict=True)) for trace in versus["data"]}
    assert list(bars["prompting"]) == ["prompt, 0 examples", "prompt, 1 example", "prompt, 4 examples"]
    assert len(bars["fine-tuned"]) == 3 and all(0 <= v <= 1 for v in bars["fine-tuned"].values())
    held = finetune.name_examples()[1]
    for value in [*bars["prompting"].values(), *bars["fine-tuned"].values()]:  # shares of the same 106 names
        assert value * len(held) == pytest.approx(round(value * len(held)), abs=1e-4)  # float32 means


def test_the_pages_formulas_write_thousands_so_math_mode_adds_no_space():
    """'8,192' in a LaTeX formula renders '8, 192': every formula on the page writes its separators as {,}."""
    import re

    from tests.support.pages import run_page

    at = run_page("stages/adapting.py")
    formulas = [element.value for element in at.latex]
    assert any("8{,}192" in formula for formula in formulas)  # LoRA r 4 on W_Q and W_V of the shipped GPT
    assert not [formula for formula in formulas if re.search(r"\d,\d", formula)]


def test_the_memory_table_names_each_steps_autocast():
    from tests.support.pages import assert_clean, run_page

    at = computed(run_page("stages/adapting.py", adapting_part="Training in less memory"), "memory")  # in a worker
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

    from llmviz.jobs.default import default_manager
    from tests.support.pages import assert_clean, run_page

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


SHIPPED_PATH = str(ROOT / "data" / "gpt-python-docs")


def run(capsys, *argv):
    code = main.main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out.strip().splitlines()[-1])


def test_the_adapt_page_reads_a_fine_tuned_head_back(capsys, tmp_path, monkeypatch):
    """Pick the checkpoint `finetune` wrote: the Adapt page classifies typed names with its trained head."""
    from tests.support.pages import assert_clean, run_page

    runs = tmp_path / "runs"
    run(capsys, "finetune", "--init", SHIPPED_PATH, "--out", str(runs / "names-head"), "--steps", "20")
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs))
    at = run_page("stages/adapting.py", _picker_selected="dir:names-head", adapting_part="Fine-tuning for a task")
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
    at.session_state["adapting_part"] = "Fine-tuning for a task"
    at.run()
    at.switch_page(str(ROOT / "stages" / "adapting.py")).run()
    assert_clean(at, errors_expected=True)
    assert [error.value for error in at.error if "is missing" in error.value], [e.value for e in at.error]
    assert len(at.error) == 1


def shown(elements) -> str:
    return " ".join(re.sub(r"\\(.)", r"\1", str(e.value)) for e in elements)  # Markdown source: punctuation escaped


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def computed_demo(at):
    return computed(at, "lora_demo")  # the LoRA demo, in a worker once its button is pressed (or found at once)


def lora_losses(at) -> tuple[str, str]:
    found = re.search(r"Loss over the 20 steps: (\d+\.\d+) → (\d+\.\d+)", shown(at.caption))
    assert found, shown(at.caption)
    return found.groups()


def quantized_perplexity(at) -> str:
    return next(m.value for m in at.metric if m.label == "perplexity")


def test_results_are_keyed_by_the_texts_content_not_its_name(fresh_session_jobs):
    """Class safety: a session that uploads a file named like the built-in corpus must not make another session see
    its LoRA losses and quantized perplexity (the page cached them by the corpus's label: a fresh session on the
    Python manual saw LoRA loss 9.491 → 1.342, true 2.700 → 2.604, and perplexity 12,808, true 67.20)."""
    other_text = corpus.load("names")  # a real text, not the manual
    first = run_page("stages/adapting.py", corpus="upload", uploaded_corpus=("Python reference manual", other_text))
    first = computed_demo(first)
    assert_clean(first)
    uploaded = lora_losses(first)
    first = finish_jobs(open_tab(first, "adapting_part", "Quantization"))
    uploaded_perplexity = quantized_perplexity(first)

    second = computed_demo(run_page("stages/adapting.py"))  # a fresh session, on the built-in manual
    assert_clean(second)
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    manual = corpus.load("python-docs")
    demo = adapting.lora_demo(model, tokenizer, manual, lora.LoRAConfig(4, 8.0, ("q", "v")), steps=20)
    assert lora_losses(second) == (f"{demo.losses[0]:.3f}", f"{demo.losses[-1]:.3f}") != uploaded
    second = finish_jobs(open_tab(second, "adapting_part", "Quantization"))
    report = adapting.quant_report(model, tokenizer, manual, quantize.QuantSpec(8, True, True), "x", new_tokens=1)
    assert quantized_perplexity(second) == f"{report.comparison.perplexity_after:.2f}" != uploaded_perplexity


def test_the_rank_the_caption_states_is_the_charts_numerical_rank(fresh_session_jobs):
    """'ΔW has rank ≤ r' sat over a chart showing rank 8 for r = 4 (W_Q and W_V adapted in one fused matrix)."""
    at = computed_demo(run_page("stages/adapting.py"))
    spectrum = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Singular values"))
    rank = int(re.search(r"numerical rank (\d+)", spectrum["layout"]["title"]["text"]).group(1))
    bound = int(re.search(r"has rank at most (\d+)", shown(at.caption)).group(1))
    assert rank == bound == 2 * 4  # the page's default: r = 4 on W_Q and W_V


def test_the_quantization_metrics_keep_their_notes_short(fresh_session_jobs):
    """'same top token at 98.8% of positi…' was a note cut off under the KL metric: it is a metric of its own."""
    at = run_page("stages/adapting.py", adapting_part="Quantization")
    at = finish_jobs(at)
    assert_clean(at)
    metrics = {m.label: m for m in at.metric}
    assert re.fullmatch(r"\d+\.\d%", metrics["same top token"].value)
    assert all(len(str(m.proto.delta or "")) <= 24 for m in at.metric), [m.proto.delta for m in at.metric]


def test_step_times_are_shown_as_one_measurement_is_precise(fresh_session_jobs):
    """Step times were printed to 4 decimals (0.0123 s) on a shared server: two significant digits now."""
    at = computed(run_page("stages/adapting.py", adapting_part="Training in less memory"), "memory")
    assert_clean(at)
    table = next(frame.value for frame in at.dataframe if "saved for backward" in frame.value.columns)
    assert all(re.fullmatch(r"\d{1,2}(\.\d)?|\d{3}", t.split()[0]) for t in table["step time"]), list(
        table["step time"]
    )
    assert all(t.endswith((" ms", " s")) for t in table["step time"])


def test_the_untrained_heads_loss_caption_states_the_tables_mean(fresh_session_jobs):
    """'The loss is about log 2 = 0.693' sat under a mean of 0.766."""
    import torch

    at = run_page("stages/adapting.py", adapting_part="Fine-tuning for a task")
    table = next(frame.value for frame in at.dataframe if "logit z" in frame.value.columns)
    mean = float(
        F.binary_cross_entropy_with_logits(
            torch.tensor(list(table["logit z"]), dtype=torch.float64),
            torch.tensor(list(table["label y"]), dtype=torch.float64),
        )
    )
    caption = shown(at.caption)
    assert f"the mean loss on these {len(table)} names is {mean:.3f}" in caption
    assert "about log 2" not in caption and ("above ln 2" in caption) == (mean >= math.log(2))


def test_lab_runs_are_the_sections_own_and_end_with_their_result(fresh_session_jobs):
    """The section draws the runs it started (their ids, kept in the session), not any run whose label looks like
    one of its own; each ends with a line: steps, final training loss (its last 10 steps' mean), validation loss and
    validation perplexity."""
    at = run_page("stages/adapting.py")
    session = at.session_state["_llmviz_session_id"]
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    impostor = default_manager().submit_training(  # a run named like the page's old labels, started elsewhere
        session, adapting.full_run(model, tokenizer, corpus.load("python-docs"), 20, 1), label="adapt LoRA r4 (q, v)"
    )
    at.slider(key="lora_steps").set_value(20)
    at.button(key="lora_start").click().run()
    at = finish_jobs(at)
    assert_clean(at)
    assert impostor.status().done
    lines = [m.value for m in at.markdown if "finished after 20 steps" in m.value]
    assert len(lines) == 2 and not [m for m in at.markdown if "adapt LoRA" in str(m.value)], lines
    ours = [job for job in default_manager().jobs(session) if job.kind == "train" and job is not impostor]
    for job in ours:
        status = job.status()
        train = sum(m.train_loss for m in status.metrics[-10:]) / 10  # the mean of the last 10 steps, by hand
        val = status.last_val_loss
        line = next(line for line in lines if re.sub(r"\\(.)", r"\1", line).startswith(f"**{job.label}**"))
        line = re.sub(r"\\(.)", r"\1", line)
        assert f"training loss {train:.3f} · validation loss {val:.3f}" in line, line
        assert f"validation perplexity {math.exp(val):,.2f}" in line, line


def test_a_sections_runs_come_back_in_a_new_session_of_their_student_only(fresh_session_jobs):
    """Issue 68 §2: a section finds the runs it started in the lab, not in the browser's session. A new session of the
    same student (a reload, a new tab) draws the LoRA comparison again, live while this process holds the runs and
    from the lab's record once it does not (a restart); another student's session shows none of it."""
    import secrets

    student, other = (f"section-{secrets.token_hex(6)}" for _ in range(2))
    at = run_app("stages/adapting.py", _llmviz_student_id=student)
    at.slider(key="lora_steps").set_value(20)
    at = finish_jobs(at.button(key="lora_start").click().run())
    assert_clean(at)
    labels = sorted(job.label for job in default_manager().jobs(student) if job.kind == "train")
    assert len(labels) == 2
    default_manager().keeper.flush()  # the keeper's next pass (once a second) writes how they ended

    again = run_app("stages/adapting.py", _llmviz_student_id=student)  # a new session: nothing in its state
    assert_clean(again)
    assert finished_labels(again, 20) == labels  # live: this process still holds them
    default_manager().sessions.end_session(student)  # this process forgets them (as after a restart): the lab has them
    assert default_manager().jobs(student) == []
    restarted = run_app("stages/adapting.py", _llmviz_student_id=student)
    assert_clean(restarted)
    assert finished_labels(restarted, 20) == labels  # drawn from the lab's record: steps and final loss
    assert finished_labels(run_app("stages/adapting.py", _llmviz_student_id=other), 20) == []


def test_the_held_out_loss_and_the_models_validation_loss_say_which_text_each_is(fresh_session_jobs):
    """Issue 50 §10: Adapting's held-out loss (3.4) beside the Model page's "final validation loss 5.26" with no word
    on why. Each says what it was measured on: the checkpoint's recorded eval (checkpoint.json's settings), and the
    Adapting page's consecutive windows from the end of the text."""
    recorded = json.loads((ROOT / "data" / "gpt-python-docs" / "checkpoint.json").read_text())
    config = recorded["train_config"]
    model_page = run_page("stages/model.py", model_tab="Inside a trained GPT")  # the tab that says it
    assert_clean(model_page)
    captions = " ".join(c.value for c in model_page.caption)
    assert (
        f"final validation loss {recorded['final']['val_loss']:.2f}: {config['eval_batches']} random batches of "
        f"{config['batch_size']} × {config['context_length']} tokens from the last {config['val_fraction']:.0%}"
    ) in captions, captions
    at = finish_jobs(run_page("stages/adapting.py", adapting_part="Quantization"))
    assert_clean(at)
    note = next(c.value for c in at.caption if "held-out tokens" in c.value)
    assert f"last {adapting.MAX_TEXT:,} characters" in note and "Another sample than" in note, note


def _live_then_kept(part: str, name: str):
    """A new student's runs of the Adapting page's ``part`` (its ``<name>_steps`` slider at 20, its
    ``<name>_start`` button), drawn live, then drawn from the lab's record once this process forgets them (as after a
    restart): the two pages."""
    import functools
    import secrets

    student = f"{name}-again-{secrets.token_hex(6)}"
    open_part = functools.partial(run_app, "stages/adapting.py", adapting_part=part, _llmviz_student_id=student)
    at = open_part()
    at.slider(key=f"{name}_steps").set_value(20).run()
    at = finish_jobs(at.button(key=f"{name}_start").click().run())
    assert_clean(at)
    default_manager().keeper.flush()  # the keeper's next pass (once a second) writes how they ended
    default_manager().sessions.end_session(student)  # this process forgets them (as after a restart)
    restarted = open_part()
    assert_clean(restarted)
    return at, restarted


def test_the_task_runs_drawn_from_the_lab_after_a_restart_read_as_they_did_live(fresh_session_jobs):
    """Issue 68 §2: the fine-tuning runs of "Fine-tuning for a task", drawn from the lab's record once this process no
    longer holds them (a restart), end on the same line (training loss, held-out accuracy and the untrained
    head's) and draw the same loss and accuracy charts as they did live."""

    from tests.support.plotly_spec import drawn, specs

    def lines(at) -> list[str]:
        return sorted(str(m.value) for m in at.markdown if "finished after 20 steps" in str(m.value))

    def curves(at) -> dict[str, list[tuple]]:
        titles = ("Training loss (BCE)", "Held-out accuracy")
        return {
            spec["layout"]["title"]["text"]: [
                (t.get("name"), drawn(t["x"]).tolist(), [round(v, 6) for v in drawn(t["y"]).tolist()])
                for t in spec["data"]
            ]
            for spec in specs(at)
            if spec["layout"].get("title", {}).get("text") in titles
        }

    at, restarted = _live_then_kept("Fine-tuning for a task", "task")
    live_lines, live_curves = lines(at), curves(at)
    assert len(live_lines) == 3 and all("accuracy" in line and "untrained head" in line for line in live_lines)
    assert set(live_curves) == {"Training loss (BCE)", "Held-out accuracy"}
    assert lines(restarted) == live_lines
    assert curves(restarted) == live_curves


def test_the_memory_runs_drawn_from_the_lab_after_a_restart_keep_their_speed(fresh_session_jobs):
    """Issue 68 §2: the runs of "Training in less memory" (checkpointing, bf16), drawn from the lab's record once
    this process no longer holds them, end on the same lines as live, their tokens/s included (the record keeps a
    memory run's speed with each curve point: before, the lines after a restart had none)."""

    def lines(at) -> list[str]:  # as read (Markdown's escapes left out)
        shown = (str(m.value).replace("\\", "") for m in at.markdown)
        return sorted(line for line in shown if "finished after 20 steps" in line)

    at, restarted = _live_then_kept("Training in less memory", "memory")
    live = lines(at)
    assert len(live) >= 2 and all("tokens/s (median of its steps)" in line for line in live), live
    assert lines(restarted) == live
