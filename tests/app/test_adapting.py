"""The Adapting page under AppTest: its results are keyed by content (two sessions), its captions match its charts,
and its lab runs are found by the ids the page kept and end with their final line."""

import json
import math
import re

import torch.nn.functional as F

from llmviz.adapt import lora
from llmviz.adapt import quantize as qz
from llmviz.data import corpus
from llmviz.jobs.manager import default_manager
from llmviz.lessons import adapting as adapt
from llmviz.training.checkpoint import load_checkpoint
from tests.test_app_pages import assert_clean, finish_jobs, open_tab, run_page
from ui import ROOT


def shown(elements) -> str:
    return " ".join(re.sub(r"\\(.)", r"\1", str(e.value)) for e in elements)  # Markdown source: punctuation escaped


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def with_lora_demo(at):
    """The LoRA demo's result: it is computed in a worker once its button is pressed (or found at once, when another
    session already computed the same thing)."""
    if [button for button in at.button if button.key == "task_start_lora_demo"]:
        at.button(key="task_start_lora_demo").click().run()
    return finish_jobs(at)


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
    first = with_lora_demo(first)
    assert_clean(first)
    uploaded = lora_losses(first)
    first = finish_jobs(open_tab(first, "adapting_part", "Quantization"))
    uploaded_perplexity = quantized_perplexity(first)

    second = with_lora_demo(run_page("stages/adapting.py"))  # a fresh session, on the built-in manual
    assert_clean(second)
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    manual = corpus.load("python-docs")
    demo = adapt.lora_demo(model, tokenizer, manual, lora.LoRAConfig(4, 8.0, ("q", "v")), steps=20)
    assert lora_losses(second) == (f"{demo.losses[0]:.3f}", f"{demo.losses[-1]:.3f}") != uploaded
    second = finish_jobs(open_tab(second, "adapting_part", "Quantization"))
    report = adapt.quant_report(model, tokenizer, manual, qz.QuantSpec(8, True, True), "x", new_tokens=1)
    assert quantized_perplexity(second) == f"{report.comparison.perplexity_after:.2f}" != uploaded_perplexity


def test_the_rank_the_caption_states_is_the_charts_numerical_rank(fresh_session_jobs):
    """'ΔW has rank ≤ r' sat over a chart showing rank 8 for r = 4 (W_Q and W_V adapted in one fused matrix)."""
    at = with_lora_demo(run_page("stages/adapting.py"))
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
    at = run_page("stages/adapting.py", adapting_part="Training in less memory")
    at.button(key="task_start_memory").click().run()
    at = finish_jobs(at)
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
        session, adapt.full_run(model, tokenizer, corpus.load("python-docs"), 20, 1), label="adapt LoRA r4 (q, v)"
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
