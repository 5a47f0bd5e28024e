"""Every picture has words (issue 70), the other pages' charts: Serving's block tables and batching, Adapting's
quantization, spectra and bars, Embeddings', Tokens', the Model page's. Each test reads the figure as the browser
receives it and recomputes, here with numpy on the drawn arrays, the numbers its sentence must say."""

import re

import numpy as np
import torch

from llmviz.lessons import adapting, words
from tests.support.pages import assert_clean, computed, finish_jobs, run_page
from tests.support.plotly_spec import drawn, specs


def said(value: float) -> str:
    """How a sentence writes a number (the wording's one rule, not the number)."""
    return words.number(float(value))


def title(spec: dict) -> str:
    return (spec["layout"].get("title") or {}).get("text") or ""


def titled(at, start: str) -> dict:
    return next(s for s in specs(at) if title(s).startswith(start))


def test_the_block_tables_say_which_blocks_each_request_holds():
    at = run_page("stages/serving.py", serving_part="Paged attention")
    at.text_input(key="page_lengths").set_value("13, 5, 22, 9, 40").run()
    assert_clean(at)
    chart = titled(at, "Physical blocks")
    z, sentence = drawn(chart["data"][0]["z"]).ravel(), chart["layout"]["meta"]
    owners = sorted({int(v) for v in z[np.isfinite(z)]})
    assert f"{int(np.isfinite(z).sum())} blocks held by {len(owners)} requests:" in sentence, sentence
    for owner in owners:
        blocks = [str(i) for i in np.nonzero(z == owner)[0]]
        listed = blocks[0] if len(blocks) == 1 else ", ".join(blocks[:-1]) + " and " + blocks[-1]
        if owner <= 6:
            assert f"request {owner} block{'s' if len(blocks) > 1 else ''} {listed}" in sentence, sentence


def test_the_batching_chart_says_when_each_policys_last_request_finished_and_how_long_requests_waited():
    at = finish_jobs(run_page("stages/serving.py", serving_part="Batching"))  # served in a worker
    assert_clean(at)
    chart = titled(at, "Steps each request")
    traces, sentence = {t["name"]: t for t in chart["data"]}, chart["layout"]["meta"]
    for policy in ("static", "continuous"):
        waits, finishes = drawn(traces[f"{policy}: wait"]["y"]), drawn(traces[f"{policy}: finished"]["y"])
        assert (
            f"{policy}: the last request finished at step {int(finishes.max())}, the longest wait {int(waits.max())} "
            f"steps, the mean wait {said(waits.mean())}" in sentence
        ), sentence


def listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def test_the_quantization_charts_say_the_rounding_error_and_how_few_levels_the_weights_land_on(fresh_session_jobs):
    at = finish_jobs(run_page("stages/adapting.py", adapting_part="Quantization"))
    assert_clean(at)
    chart = titled(at, "Rounding error per matrix")
    trace, sentence = chart["data"][0], chart["layout"]["meta"]
    errors, matrices = drawn(trace["y"]), list(trace["x"])
    top, low = int(np.argmax(errors)), int(np.argmin(errors))
    assert (
        f"the relative rounding error is {said(errors.mean())} on average over {len(errors)} matrices: largest "
        f"{said(errors[top])} ({matrices[top]}), smallest {said(errors[low])} ({matrices[low]})." in sentence
    ), sentence
    chart = next(s for s in specs(at) if title(s).endswith("weights before and after"))
    before, after = chart["data"]
    centres, counted, rounded = drawn(before["x"]), drawn(before["y"]), drawn(after["y"])
    held = np.nonzero(counted)[0]
    assert counted.sum() == rounded.sum()  # the same weights, binned twice
    assert (
        f"{said(counted.sum())} weights of {chart['layout']['title']['text'].split(':')[0]}, from "
        f"{said(centres[held[0]])} to {said(centres[held[-1]])}: float32 fills {len(held)} of the {len(centres)} "
        f"bins, {after['name']} fills {int((rounded > 0).sum())}." in chart["layout"]["meta"]
    ), chart["layout"]["meta"]


def test_the_memory_tabs_bars_say_each_settings_bytes_and_each_sharding_stages_share(fresh_session_jobs):
    at = computed(run_page("stages/adapting.py", adapting_part="Training in less memory"), "memory")
    assert_clean(at)
    chart = titled(at, "Activations saved")
    trace, sentence = chart["data"][0], chart["layout"]["meta"]
    mib, settings = drawn(trace["y"]), list(trace["x"])
    for setting, value in zip(settings, mib, strict=True):
        assert f"{setting} {said(value)} MiB" in sentence, sentence
    least = int(np.argmin(mib))
    assert f"The least, {settings[least]}, is {mib[least] / mib[0]:.1%} of the first." in sentence, sentence
    chart = next(s for s in specs(at) if "processes" in title(s))
    bars, sentence = chart["data"], chart["layout"]["meta"]
    stages = list(bars[0]["x"])
    totals = sum(drawn(b["y"]) for b in bars)
    for i, stage in enumerate(stages):
        parts = ", ".join(f"{b['name']} {said(drawn(b['y'])[i])}" for b in bars)
        assert f"{stage} {said(totals[i])} MiB ({parts})" in sentence, sentence
    assert f"{stages[-1]} needs {totals[-1] / totals[0]:.1%} of {stages[0]}." in sentence, sentence


def spectrum_told(trace: dict, rank: int) -> str:
    values = drawn(trace["y"])
    assert (np.diff(values) <= 1e-12).all()  # largest first
    squares = values**2
    return (
        f"The largest singular values are {listed([said(v) for v in values[:3]])}; the first {rank} (the numerical "
        f"rank) hold {squares[:rank].sum() / squares.sum():.1%} of the sum of their squares."
    )


def test_the_lora_demos_singular_values_say_the_largest_and_how_much_the_rank_holds(fresh_session_jobs):
    at = computed(run_page("stages/adapting.py"), "lora_demo")
    assert_clean(at)
    chart = titled(at, "Singular values")
    rank = int(re.search(r"numerical rank (\d+)", chart["layout"]["title"]["text"]).group(1))
    assert spectrum_told(chart["data"][0], rank) in chart["layout"]["meta"], chart["layout"]["meta"]


def test_a_picked_runs_weight_change_spectrum_says_the_same_of_its_bars():
    """Drawn only for a run picked at a later step: the page's own figure and sentence for a weight change of rank 3
    made here, checked against the figure's bars."""
    from ui.chart_text import describe
    from ui.panels.adapting import spectrum_bars

    generator = torch.Generator().manual_seed(0)
    delta = torch.randn(48, 3, generator=generator) @ torch.randn(3, 40, generator=generator)
    spectrum = adapting.spectrum(delta)
    figure = spectrum_bars(spectrum, spectrum.title("W"), 320)
    sentence = describe(figure, adapting.spectrum_words(spectrum.values, spectrum.rank))
    trace = figure.to_plotly_json()["data"][0]
    assert spectrum.rank == 3 and spectrum_told(trace, 3) in sentence, sentence
    assert "hold 100.0%" in sentence  # a rank-3 product: the other singular values are rounding


def test_prompting_accuracy_bars_say_each_bars_accuracy_and_the_best(fresh_session_jobs):
    at = computed(run_page("stages/adapting.py", adapting_part="Fine-tuning for a task"), "prompting")
    assert_clean(at)
    chart = next(s for s in specs(at) if "prompting vs fine-tuning" in s["layout"]["title"]["text"])
    bars = [(x, y) for trace in chart["data"] for x, y in zip(trace["x"], drawn(trace["y"]), strict=True)]
    sentence = chart["layout"]["meta"]
    assert "Held-out accuracy: " + "; ".join(f"{x} {y:.1%}" for x, y in bars) + "." in sentence, sentence
    assert f"The best: {max(bars, key=lambda bar: bar[1])[0]}." in sentence, sentence
