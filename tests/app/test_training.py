"""The Loss & training page under AppTest: runs as jobs (a third one refused), races, the decoder, the
learning-rate question, divergence advice, the runs' colours and progress line, and a positions race measured
past its context."""

from __future__ import annotations

import base64
import functools
import json
import math
import re

import numpy as np
import pytest

from tests.support.pages import (
    JOB_TIMEOUT,
    assert_clean,
    by_label,
    finish_jobs,
    finished_labels,
    open_tab,
    run_app,
    run_page,
    session_jobs,
    texts,
    train_on_names,
)
from tests.support.paths import ROOT
from tests.support.plotly_spec import drawn, specs

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")


def test_the_runs_a_test_leaves_are_ended_after_it():
    """tests/conftest.py's _no_runs_left_behind ends what a test's app runs started (it once named an owner that
    no run had, and ended nothing)."""
    from llmviz.jobs.default import default_manager
    from tests.support.jobs import end_every_session

    at = train_on_names()
    owner = at.session_state["_llmviz_session_id"]
    assert default_manager().jobs(owner)
    assert end_every_session() >= 1
    assert default_manager().jobs(owner) == []


def test_training_short_run_then_sampling_sees_it():
    at = train_on_names()
    assert_clean(at)
    [job] = session_jobs(at)
    assert job.status().state == "finished"
    at.switch_page(str(ROOT / "stages/sampling.py")).run()
    assert_clean(at)
    shared = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page")
    assert shared.value == f"run:{job.id}", "the new run is picked for every page"
    shown = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]  # Markdown source: punctuation is escaped
    assert any("Model: " in c and job.label in c for c in shown), "Sampling shows the picked run"


def test_training_race_and_decoder():
    at = run_page("stages/training.py", corpus="names", training_part="Races")
    by_label(at.slider, "Steps per runner").set_value(50)
    by_label(at.button, "Character-level race on names").click().run()
    assert_clean(at)
    assert len(session_jobs(at)) == 7
    open_tab(at, "training_part", "The decoder of a Transformer")  # its tab
    by_label(at.button, "Train the decoder (200 steps)").click().run()
    assert_clean(at)
    [decoder] = session_jobs(at, "task")
    assert decoder.status().state == "finished" and decoder.status().step == 200
    at.run()
    assert_clean(at)


def test_training_text_shorter_than_a_window():
    at = run_page("stages/training.py", corpus="upload")
    at.session_state["uploaded_corpus"] = ("tiny.txt", "hello there\n")
    at.run()
    at.button(key="train").click().run()
    assert_clean(at, errors_expected=True)
    assert "one window needs" in texts(at.error)


def test_training_diverging_run_says_what_to_change():
    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value("mlp")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.selectbox, "Optimizer").set_value("rmsprop")
    by_label(at.select_slider, "Learning rate").set_value(1.0)
    by_label(at.toggle, "Clip gradients at norm 1").set_value(False)
    by_label(at.slider, "Steps").set_value(200)
    at.button(key="train").click().run()
    [job] = session_jobs(at)
    at.run()
    assert_clean(at, errors_expected=True)
    assert "Lower the learning rate" in texts(at.error), texts(at.error)
    assert "failed" in [row for row in at.dataframe[0].value["status"]]


@pytest.mark.parametrize("model", ["bigram-counts", "bigram-neural"])
def test_training_bigram_with_samples_on(model):
    at = train_on_names(model, sample_every=10)
    [job] = session_jobs(at)
    at.run()
    assert_clean(at)
    assert not at.error, texts(at.error)
    status = job.status()
    assert status.state == "finished" and [step for step, _ in status.samples] == [10, 20]
    assert all(len(sample) > 0 for _, sample in status.samples)


def test_run_colours_are_told_apart():
    """A 7-runner race needs 7 colours that differ (the old list had two near-identical oranges): measured as a person
    sees them (CAM02-UCS ΔE, colorspacious), not as RGB numbers, whose distance said two blues 80 apart were apart.
    Under the colour-vision deficiencies: tests/project/test_colours.py."""
    from itertools import combinations

    import colorspacious

    from ui.panels.runs import COLOURS

    def rgb(colour: str) -> list[float]:
        return [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]

    closest = min(colorspacious.deltaE(rgb(x), rgb(y), input_space="sRGB1") for x, y in combinations(COLOURS, 2))
    assert closest > 20, closest


def test_progress_line_names_its_perplexity_and_smooths_tokens_per_second():
    from types import SimpleNamespace

    from llmviz.lab.live_status import JobState, JobStatus

    steps = [SimpleNamespace(val_loss=None, perplexity=20.0, tokens_per_s=rate) for rate in [33_000.0] * 19 + [200.0]]
    status = JobStatus(
        job_id="x",
        label="run",
        kind="train",
        state=JobState.RUNNING,
        step=20,
        total=100,
        losses=((20, 3.0),),
        metrics=tuple(steps),
        samples=(),
        queue_position=None,
        error=None,
        snapshot_steps=(),
        elapsed_s=1.0,
    )
    line = status.describe()
    assert "training perplexity 20.0" in line
    # 20 steps of equal size: 20 / (19 / 33,000 + 1 / 200) tokens per second, not the last step's 200
    expected = 20 / (19 / 33_000 + 1 / 200)
    assert f"{expected:,.0f} tokens/s" in line, line


def test_training_page_states_the_backprop_count_of_the_shipped_head():
    from ui import picker

    at = run_page("stages/training.py", training_part="The loss by hand")
    head = picker.shipped_default().model.lm_head.weight  # (V, C)
    vocab, width = head.shape
    text = next(s.value for s in at.success if "By hand vs autograd" in s.value)
    assert f"all {vocab * width + vocab:,} entries" in text, text
    assert f"∂L/∂W ({vocab * width:,})" in text and f"∂L/∂z ({vocab:,})" in text, text


def test_chart_selection_adds_new_runs_and_keeps_the_students_choice():
    from ui.panels.runs import chart_selection

    runs = {f"id{n}": f"run {n}" for n in range(9)}
    assert chart_selection(runs, None, set()) == [f"run {n}" for n in range(2, 9)]  # first time: the newest 7
    # the student took run 5 off and put run 0 on; runs 9 and 10 (a race) just started: they join, nothing else moves
    chosen = ["run 2", "run 3", "run 4", "run 6", "run 7", "run 8", "run 0"]
    later = runs | {"id9": "run 9", "id10": "run 10"}
    assert chart_selection(later, chosen, set(runs)) == chosen + ["run 9", "run 10"]
    # offered once: taken off again by the student, they stay off
    assert chart_selection(later, chosen, set(later)) == chosen


def test_a_finished_race_is_on_the_comparison_chart():
    """Before: the multiselect kept the runs it first showed, so a race trained later was only in the table."""
    at = train_on_names()
    [first] = session_jobs(at)
    at.run()
    chart = by_label(at.multiselect, "Runs on the chart")
    assert chart.value == [first.label]
    open_tab(at, "training_part", "Races")  # the races are a tab of their own; the chart is under "Your runs"
    by_label(at.slider, "Steps per runner").set_value(50)
    by_label(at.selectbox, "Optimizer race: model").set_value("mlp")
    by_label(at.button, "SGD vs momentum vs RMSprop vs Adam").click().run()
    runners = [job for job in session_jobs(at) if job.id != first.id]
    assert len(runners) == 4
    open_tab(at, "training_part", "Your runs")
    assert_clean(at)
    assert by_label(at.multiselect, "Runs on the chart").value == [first.label] + [job.label for job in runners]


def jobs_of(at):
    from llmviz.jobs.default import default_manager

    return default_manager().jobs(at.session_state["_llmviz_session_id"])


def test_a_third_run_is_refused_with_the_reason():
    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value("mlp")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Steps").set_value(2000)
    for _ in range(2):
        at.button(key="train").click().run()
        assert_clean(at)
    assert len(jobs_of(at)) == 2  # one training, one waiting
    at.button(key="train").click().run()
    assert_clean(at)  # a refusal is a warning, not an error box
    assert "each browser session trains 1 run at a time" in texts(at.warning)
    assert len(jobs_of(at)) == 2
    assert any("Yours: " in caption.value for caption in at.caption)
    for job in jobs_of(at):
        job.stop()
        assert job.wait(60)


def test_the_learning_rate_question_trains_as_a_job_then_asks():
    at = run_page("stages/training.py", corpus="names")
    at.button(key="quiz_ask_training").click().run()
    assert_clean(at)
    [job] = [job for job in jobs_of(at) if job.kind == "task"]
    assert job.label == "quiz: two short runs"
    assert job.wait(JOB_TIMEOUT) and job.status().state == "finished", job.status().describe()
    # a worker process, as any run (its id is known once the worker started: not yet right after submitting)
    assert job.worker_pid is not None
    at.run()
    assert_clean(at)
    prompts = texts(at.markdown)
    assert "(×10) instead, would the loss" in prompts, "the question is asked once its runs are done"


def test_the_training_page_measures_a_finished_positions_race_beyond_its_context():
    at = run_page("stages/training.py", corpus="names", training_part="Races")
    by_label(at.selectbox, "Architecture race: one switch, two GPT micros").set_value("positions")
    by_label(at.slider, "Steps per runner").set_value(50)
    by_label(at.button, "Race the two").click().run()
    assert_clean(at)
    at = finish_jobs(at)
    assert_clean(at)
    tables = [frame.value for frame in at.dataframe if "loss, positions 1–32" in getattr(frame.value, "columns", [])]
    assert tables, [m.value for m in at.caption]
    table = tables[-1]
    assert len(table) == 2 and table["loss, positions 33–64"].notna().all()
    assert any("learned positions" in run for run in table["run"]) and any("RoPE" in run for run in table["run"])


def test_a_run_that_learns_its_text_by_heart_is_told_it_overfits():
    """700 characters of the Python manual for 300 steps: the run's panel says it overfits and what to do, the
    verdict of llmviz.training.overfitting that the CLI prints too."""
    from llmviz.data import corpus
    from llmviz.lab.identity import student_key
    from llmviz.lab.service import default_lab
    from llmviz.training.overfitting import curve_points, overfitting
    from tests.support.waiting import wait_for

    at = run_page("stages/training.py", corpus="upload")
    at.session_state["uploaded_corpus"] = ("few.txt", corpus.load("python-docs")[:700])
    at.run()
    by_label(at.selectbox, "Model").set_value("gpt-micro")
    by_label(at.radio, "Tokenizer").set_value("char")
    at.button(key="train").click().run()
    [job] = session_jobs(at)
    at.run()
    assert_clean(at)
    found = overfitting(job.status().metrics, job.info.vocab_size)
    assert found is not None and found.rose, job.status().describe()
    assert found.message() in [warning.value for warning in at.warning]
    assert "It is learning its training text by heart" in found.message()
    # the run as the lab keeps it (drawn after a restart, or by another app process: no job, no ln V) reads the same
    student = student_key(at.session_state["_llmviz_session_id"])
    wait_for(lambda: default_lab().run(student, job.id).state == "finished", timeout=JOB_TIMEOUT)
    kept = overfitting(curve_points(default_lab().curve(student, job.id).points), 0)
    assert kept is not None and (kept.best_step, kept.last_step, kept.rose) == (found.best_step, found.last_step, True)
    assert (kept.best_val_loss, kept.last_val_loss) == pytest.approx((found.best_val_loss, found.last_val_loss))


def values(array) -> list[float]:
    """A Plotly trace's values as the browser gets them (numpy arrays travel as base64 with their dtype)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def test_with_no_run_the_page_opens_on_the_train_button():
    at = run_page("stages/training.py", corpus="names")
    assert_clean(at)
    assert at.button(key="train").label == "Train"
    assert any("No run yet. Press **Train**" in i.value for i in at.info)
    assert [t.label for t in at.tabs][:2] == ["Your runs", "Races"]


def test_it_opens_on_the_picked_runs_curve_and_its_final_line():
    at = run_page("stages/training.py", corpus="names")
    at.selectbox(key="train_model").set_value("mlp")
    at.radio(key="train_tokenizer").set_value("char")
    at.slider(key="steps").set_value(30)
    at.button(key="train").click().run()
    [job] = jobs_of(at)
    assert job.wait(120)
    at.run()
    assert_clean(at)
    status = job.status()
    train = sum(m.train_loss for m in status.metrics[-10:]) / 10  # by hand: the mean of the last 10 steps
    line = next(re.sub(r"\\(.)", r"\1", m.value) for m in at.markdown if "finished after 30 steps" in str(m.value))
    assert line.startswith(f"**{job.label}**")
    assert f"training loss {train:.3f} · validation loss {status.last_val_loss:.3f}" in line
    assert f"validation perplexity {math.exp(status.last_val_loss):,.2f}" in line
    curve = json.loads(at.get("plotly_chart")[0].proto.spec)  # the first picture: this run's curve
    raw, smoothed = curve["data"][0], curve["data"][1]
    assert raw["line"]["color"].startswith("rgba(") and raw["showlegend"] is False  # the raw loss, faint
    raw_y, smoothed_y = values(raw["y"]), values(smoothed["y"])
    assert smoothed["name"] == f"{job.label} (train)" and len(raw_y) == len(smoothed_y) == 30
    assert raw_y == [m.train_loss for m in status.metrics]
    # an exponential moving average with TensorBoard's bias correction, by hand (weight 0.8)
    average, expected = 0.0, []
    for step, value in enumerate(raw_y, start=1):
        average = 0.8 * average + 0.2 * value
        expected.append(average / (1 - 0.8**step))
    assert all(abs(a - b) < 1e-9 for a, b in zip(smoothed_y, expected, strict=True))


def test_a_run_trains_in_the_precision_picked_and_the_page_names_it():
    at = run_page("stages/training.py", corpus="names")
    precision = by_label(at.selectbox, "Precision")
    assert precision.options == ["float32", "bfloat16 (autocast)"]  # this server computes on the CPU: no fp16
    assert precision.value == "float32"  # auto: float32 on a CPU (bf16 on a GPU that has it)
    precision.set_value("bf16")
    by_label(at.selectbox, "Model").set_value("gpt-nano")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Steps").set_value(10)
    by_label(at.slider, "Sample every (steps)").set_value(0)
    at.button(key="train").click().run()
    assert_clean(at)
    at = finish_jobs(at)
    assert_clean(at)
    [job] = session_jobs(at)
    assert job.status().state == "finished" and job.info.config.precision == "bf16"
    assert any("bfloat16 (autocast)" in caption.value for caption in at.caption)


def test_with_no_run_the_page_opens_on_the_shipped_gpts_recorded_curve():
    """Issue 50 §9: with no run the page opened on 248 words and no picture. It opens on how the shipped GPT learned:
    the losses its checkpoint recorded (read here from checkpoint.json), its validation loss, and ln V."""
    recorded = json.loads((ROOT / "data" / "gpt-python-docs" / "checkpoint.json").read_text())
    at = run_page("stages/training.py")
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    curve = next(c for c in charts if c["layout"]["title"]["text"].startswith("How Shipped GPT"))
    traces = {trace["name"]: trace for trace in curve["data"]}
    steps = [m["step"] for m in recorded["metrics"]]
    assert traces["training loss (each step)"]["x"] == steps
    assert np.allclose(traces["training loss (each step)"]["y"], [m["train_loss"] for m in recorded["metrics"]])
    measured = [m for m in recorded["metrics"] if m["val_loss"] is not None]
    assert np.allclose(traces["validation loss"]["y"], [m["val_loss"] for m in measured])
    assert traces["validation loss"]["y"][-1] == pytest.approx(recorded["final"]["val_loss"])
    vocab = recorded["model"]["config"]["vocab_size"]
    assert curve["layout"]["shapes"][0]["y0"] == pytest.approx(math.log(vocab))


def test_a_loss_spike_stays_on_the_chart_and_the_runs_table_keeps_its_last_column():
    """Issue 50 §10: the chart drew every n-th step (a spike between two was dropped) and the runs table's last column,
    every snapshot step in a list, ran past the table's edge. The drawn rows keep each stretch's lowest and highest
    loss; the snapshots are a count and a range."""
    import pandas as pd

    from ui.panels.runs import thinned
    from ui.panels.training import snapshots_cell

    losses = [5.0 - i / 2000 for i in range(2000)]
    losses[1001] = 12.0  # one spike, on a step the old stride (every 4th) skipped
    frame = pd.DataFrame({"step": range(1, 2001), "train_loss": losses})
    drawn = thinned(frame, points=500)
    assert len(drawn) <= 502 and 12.0 in drawn["train_loss"].tolist()
    assert drawn["step"].iloc[0] == 1 and drawn["step"].iloc[-1] == 2000
    assert min(drawn["train_loss"]) == min(losses)
    assert snapshots_cell(list(range(0, 2001, 50))) == "41 (steps 0–2000)"


def test_clear_all_runs_asks_first_how_many_runs_and_how_much_and_cancel_keeps_them():
    """Issue 72 §3: Clear all runs deleted every run of the table (and its kept files) at once, without the question
    Delete asks. Now it asks, naming the runs, their kept snapshots and their size; Cancel keeps them, Yes deletes."""
    import doctest

    import ui.panels.training
    from llmviz.lab.identity import student_key
    from llmviz.lab.service import default_lab
    from llmviz.training.footprint import size_text
    from tests.support.waiting import wait_for

    assert doctest.testmod(ui.panels.training).failed == 0
    at = train_on_names()
    [job] = session_jobs(at)
    student = student_key(at.session_state["_llmviz_session_id"])
    wait_for(  # kept by the keeper's thread, to its last step
        lambda: [s.step for s in default_lab().snapshots(student, job.id)][-1:] == [job.status().total],
        timeout=JOB_TIMEOUT,
    )
    kept = default_lab().snapshots(student, job.id)
    at.run()
    assert_clean(at)

    at.button(key="kept_delete").click().run()  # Delete asks the same way, and has its Cancel too
    assert [w for w in at.warning if "Press the button again to delete it (Cancel keeps it)" in w.value]
    at.button(key="kept_delete_cancel").click().run()
    assert not [w for w in at.warning if "Press the button again" in w.value]
    assert default_lab().run(student, job.id) is not None

    at.button(key="runs_clear").click().run()
    [question] = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning if "in the table above" in w.value]
    assert question.startswith(
        f"Delete the run in the table above ({job.label}), with its curve, its {len(kept)} kept "
        f"snapshot{'' if len(kept) == 1 else 's'} ({size_text(sum(s.nbytes for s in kept))}) and what it keeps"
    ), question
    assert default_lab().run(student, job.id) is not None and session_jobs(at) == [job]  # asked, nothing deleted
    at.button(key="runs_clear_cancel").click().run()
    assert not [w for w in at.warning if "in the table above" in w.value]
    assert default_lab().run(student, job.id) is not None and session_jobs(at) == [job]  # Cancel keeps it
    assert_clean(at)

    at.button(key="runs_clear").click().run()
    at.button(key="runs_clear_yes").click().run()
    assert session_jobs(at) == []
    wait_for(lambda: default_lab().run(student, job.id) is None, timeout=JOB_TIMEOUT)  # deleted, with its files
    assert default_lab().snapshots(student, job.id) == []
    assert_clean(at)


def final_lines(at) -> list[str]:
    """The final lines of the ended runs the page draws ("**label** · finished after … steps · …"), sorted."""
    return sorted(str(m.value) for m in at.markdown if "finished after" in str(m.value))


def race_chart(at) -> list[tuple[str, list[float], list[float]]]:
    """The race's loss chart as the browser receives it: each trace's name, steps and values."""
    [chart] = [spec for spec in specs(at) if spec["data"] and "race" in str(spec["data"][0].get("name", ""))]
    return [(t.get("name"), drawn(t["x"]).tolist(), drawn(t["y"]).tolist()) for t in chart["data"]]


def test_the_newest_race_comes_back_from_the_lab_in_a_new_session_of_its_student(fresh_session_jobs):
    """Issue 68 §2: the tab Races finds the newest race in the lab, not in the browser's session: a new session of the
    same student draws it again, live while this process holds its runners and from the lab's record once it does not
    (a restart); another student's session shows none of it."""
    import secrets

    from llmviz.jobs.default import default_manager

    student, other = (f"race-again-{secrets.token_hex(6)}" for _ in range(2))
    open_races = functools.partial(run_app, "stages/training.py", corpus="names", training_part="Races")
    at = open_races(_llmviz_student_id=student)
    by_label(at.slider, "Steps per runner").set_value(50)
    by_label(at.selectbox, "Optimizer race: model").set_value("mlp")
    at = finish_jobs(by_label(at.button, "SGD vs momentum vs RMSprop vs Adam").click().run())
    assert_clean(at)
    labels = sorted(job.label for job in default_manager().jobs(student) if job.kind == "train")
    assert len(labels) == 4
    default_manager().keeper.flush()  # the keeper's next pass (once a second) writes how they ended

    assert finished_labels(at, 50) == labels
    again = open_races(_llmviz_student_id=student)  # a new session: nothing in its state
    assert_clean(again)
    assert finished_labels(again, 50) == labels
    default_manager().sessions.end_session(student)  # this process forgets the runners (as after a restart)
    restarted = open_races(_llmviz_student_id=student)
    assert_clean(restarted)
    assert finished_labels(restarted, 50) == labels  # from the lab's record
    # each line as it was drawn live: steps, training loss, and the validation loss and perplexity the record keeps
    assert final_lines(restarted) == final_lines(at) and all(
        "validation perplexity" in line for line in final_lines(at)
    )
    # and its chart is the one drawn live: every runner's training and validation loss at every step
    live_chart, kept_chart = race_chart(at), race_chart(restarted)
    assert len(live_chart) == 12 and max(len(x) for _, x, _ in live_chart) == 50  # 4 runners: raw, smoothed, validation
    assert [(name, x) for name, x, _ in kept_chart] == [(name, x) for name, x, _ in live_chart]
    for (_, _, kept_y), (_, _, live_y) in zip(kept_chart, live_chart, strict=True):
        np.testing.assert_allclose(kept_y, live_y, rtol=1e-6)
    assert finished_labels(open_races(_llmviz_student_id=other), 50) == []
