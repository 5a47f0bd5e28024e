"""Every picture has words (issue 70), the other pages' charts: Serving's block tables and batching, Adapting's
quantization, spectra and bars, Embeddings', Tokens', the Model page's. Each test reads the figure as the browser
receives it and recomputes, here with numpy on the drawn arrays, the numbers its sentence must say."""

import re

import numpy as np
import torch

from llmviz.lessons import adapting, words
from tests.support.pages import assert_clean, by_label, computed, finish_jobs, run_page
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
    chart = titled(at, "ΔW of ")
    z = drawn(chart["data"][0]["z"])
    whole = re.search(r"(\d+) × (\d+) entries", chart["layout"]["meta"])
    assert int(whole.group(1)) >= z.shape[0] and int(whole.group(2)) >= z.shape[1]
    assert (
        f"The first {z.shape[0]} × {z.shape[1]} of ΔW's" in chart["layout"]["meta"]
        and f"run from {said(z.min())} to {said(z.max())}; their mean size is {said(np.abs(z).mean())}."
        in chart["layout"]["meta"]
    ), chart["layout"]["meta"]


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


def pair_told(labels: list[str], z: np.ndarray) -> tuple[str, str]:
    """The most and least alike of every different pair of a symmetric matrix, as the sentence names them."""
    i, j = np.triu_indices(len(labels), k=1)
    values = z[i, j]
    high, low = int(np.argmax(values)), int(np.argmin(values))
    return tuple(f'"{labels[i[k]]}" and "{labels[j[k]]}" ({said(values[k])})' for k in (high, low))  # type: ignore[return-value]


def test_the_cosine_lessons_angle_and_your_tokens_cosines_say_their_numbers():
    at = run_page("stages/embeddings.py")
    chart = next(s for s in specs(at) if "apart: cosine" in s["layout"].get("meta", ""))
    a, b = chart["data"][:2]
    x, y = drawn(b["x"])[-1], drawn(b["y"])[-1]  # the second direction; the first lies along x
    assert drawn(a["y"])[-1] == 0 and drawn(a["x"])[-1] == 1
    angle = np.degrees(np.arctan2(y, x))
    assert (
        f'"{a["name"]}" and "{b["name"]}" are {said(angle)}° apart: cosine {said(x / np.hypot(x, y))}.'
        in (chart["layout"]["meta"])
    ), chart["layout"]["meta"]
    chart = titled(at, "cosine similarity")
    trace = chart["data"][0]
    high, low = pair_told(list(trace["x"]), drawn(trace["z"]))
    assert f"Most alike: {high}; least alike: {low}" in chart["layout"]["meta"], chart["layout"]["meta"]


def test_the_positions_charts_say_each_waves_length_and_how_fast_each_rope_pair_turns():
    at = run_page("stages/embeddings.py", embeddings_tab="Positions")
    chart = next(s for s in specs(at) if "the slower its wave" in s["layout"].get("meta", ""))
    sentence = chart["layout"]["meta"]
    for trace in chart["data"]:  # each drawn wave's length, read off its value at position 1, is the one said
        positions, values = drawn(trace["x"]), drawn(trace["y"])
        sine = "(sin)" in trace["name"]
        length = 2 * np.pi / (np.arcsin(values[1]) if sine else np.arccos(values[1]))
        assert np.abs(values - (np.sin if sine else np.cos)(2 * np.pi * positions / length)).max() < 1e-3
        assert re.search(rf"{re.escape(trace['name'])} (repeats )?every {re.escape(said(length))}\b", sentence), (
            trace["name"],
            said(length),
            sentence,
        )
    chart = titled(at, "angle of pair i")
    z = drawn(chart["data"][0]["z"])  # position 1's row: each pair's turn per position
    first, last = z[1, 0], z[1, -1]
    assert (
        f"Pair 0 turns {said(first)} radian per position (a full turn every {said(2 * np.pi / first)} positions); the "
        f"last pair, {z.shape[1] - 1}, turns {said(last)} (a full turn every {said(2 * np.pi / last)})."
        in chart["layout"]["meta"]
    ), chart["layout"]["meta"]
    chart = titled(at, "a unit pair turned")
    for trace in chart["data"]:
        turned = np.unwrap(np.arctan2(drawn(trace["y"]), drawn(trace["x"])))
        turns = (turned[-1] - turned[0]) / (2 * np.pi)
        assert re.search(rf"{trace['name']} (makes )?{re.escape(said(turns))}\b", chart["layout"]["meta"]), (
            trace["name"],
            said(turns),
            chart["layout"]["meta"],
        )
    chart = titled(at, "score against distance")
    distances, scores = drawn(chart["data"][0]["x"]), drawn(chart["data"][0]["y"])
    high, low = int(np.argmax(scores)), int(np.argmin(scores))
    assert (
        f"{said(scores[0])} at distance {int(distances[0])}, highest {said(scores[high])} at distance "
        f"{int(distances[high])}, lowest {said(scores[low])} at distance {int(distances[low])}."
        in chart["layout"]["meta"]
    ), chart["layout"]["meta"]


def test_the_sentence_embeddings_say_the_most_and_least_alike_and_the_closest_on_the_map():
    at = run_page("stages/embeddings.py", embeddings_tab="Sentence embeddings")
    chart = titled(at, "cosine similarity")
    trace = chart["data"][0]
    high, low = pair_told(list(trace["y"]), drawn(trace["z"]))
    assert f"Most alike: {high}; least alike: {low}" in chart["layout"]["meta"], chart["layout"]["meta"]
    chart = next(s for s in specs(at) if "Closest on the map" in s["layout"].get("meta", ""))
    trace = chart["data"][0]
    labels = [f"{n} · {text}" for n, text in zip(trace["text"], trace["hovertext"], strict=True)]
    points = np.stack([drawn(trace["x"]), drawn(trace["y"])], axis=1)
    i, j = np.triu_indices(len(labels), k=1)
    away = np.hypot(*(points[i] - points[j]).T)
    near, far = int(np.argmin(away)), int(np.argmax(away))
    assert (
        f"Closest on the map: {labels[i[near]]} and {labels[j[near]]} ({said(away[near])} apart); farthest: "
        f"{labels[i[far]]} and {labels[j[far]]} ({said(away[far])} apart)." in chart["layout"]["meta"]
    ), chart["layout"]["meta"]


def test_a_trained_bpes_compression_and_zipf_charts_say_their_numbers():
    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.slider, "Vocabulary size").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    chart = next(s for s in specs(at) if "Characters per token" in s["layout"].get("meta", ""))
    sizes, chars = drawn(chart["data"][0]["x"]), drawn(chart["data"][0]["y"])
    assert (
        f"Characters per token: {said(chars[0])} with a vocabulary of {said(sizes[0])}, {said(chars[-1])} with "
        f"{said(sizes[-1])} ({said(chars[-1] / chars[0])} times fewer tokens)." in chart["layout"]["meta"]
    ), chart["layout"]["meta"]
    chart = next(s for s in specs(at) if "distinct tokens" in s["layout"].get("meta", ""))
    points, line = chart["data"]
    counts, sentence = drawn(points["y"]), chart["layout"]["meta"]
    assert (np.diff(counts) <= 0).all() and (drawn(points["x"]) == np.arange(1, len(counts) + 1)).all()
    assert f"{len(counts)} distinct tokens: the commonest occurs {said(counts[0])} times" in sentence, sentence
    for rank in (10, 100):
        if rank <= len(counts):
            assert f"the {rank}th {said(counts[rank - 1])}" in sentence, sentence
    (x0, x1), (y0, y1) = drawn(line["x"]), drawn(line["y"])
    assert f"the fitted line's slope is {np.log(y1 / y0) / np.log(x1 / x0):.2f}" in sentence, sentence


def test_the_model_pages_parameter_bars_and_residual_stream_say_their_numbers():
    at = run_page("stages/model.py")
    chart = next(s for s in specs(at) if s["layout"].get("meta", "").startswith("Chart. Parameters:"))
    trace = chart["data"][0]
    names, counts = list(trace["y"]), drawn(trace["x"])  # horizontal bars
    total = counts.sum()
    order = np.argsort(-counts, kind="stable")[:3]
    named = [f"{names[i]} {said(counts[i])} ({counts[i] / total:.1%})" for i in order]
    assert f"Parameters: {said(total)} in all; {named[0]}, {named[1]} and {named[2]}." in chart["layout"]["meta"]
    at = run_page("stages/model.py", model_tab="Inside a trained GPT")
    chart = next(s for s in specs(at) if "residual stream goes from" in s["layout"].get("meta", ""))
    where, size = list(chart["data"][0]["x"]), drawn(chart["data"][0]["y"])
    top = int(np.argmax(size))
    assert (
        f"goes from {said(size[0])} ({where[0]}) to {said(size[-1])} ({where[-1]}); largest {said(size[top])} "
        f"({where[top]})." in chart["layout"]["meta"]
    ), chart["layout"]["meta"]


def test_the_loss_by_hands_gradient_bars_say_the_targets_p_and_its_gradient():
    at = run_page("stages/training.py", training_part="The loss by hand")
    chart = next(s for s in specs(at) if "The target" in s["layout"].get("meta", ""))
    bars = {t["name"]: t for t in chart["data"]}
    labels, p = list(bars["p (softmax)"]["x"]), drawn(bars["p (softmax)"]["y"])
    gradient = drawn(bars["∂L/∂logit = p − y"]["y"])
    target = next(i for i, label in enumerate(labels) if label.endswith("(target)"))
    assert abs(gradient[target] - (p[target] - 1)) < 1e-6
    other = max((i for i in range(len(p)) if i != target), key=lambda i: p[i])
    sentence = chart["layout"]["meta"]
    assert f"The target {labels[target]} has p {said(p[target])}: its logit's gradient is p - 1 = " in sentence
    assert f"{said(gradient[target])}, pushed up." in sentence, sentence
    assert f"The likeliest other, {labels[other]}, has p {said(p[other])} = its gradient" in sentence, sentence


def test_the_longer_context_chart_says_each_runs_mean_loss_within_and_beyond_training():
    """Drawn only after a race's runs are measured at a longer context: the sentence the panel passes, for two small
    untrained GPTs measured here, against each curve's means computed with numpy."""
    from llmviz.lessons.architectures import extrapolation
    from llmviz.lessons.training import extrapolation_words
    from llmviz.models.gpt import GPT
    from llmviz.models.presets import PRESETS

    torch.manual_seed(0)
    models = {"learned": GPT(PRESETS["gpt-nano"]).eval(), "again": GPT(PRESETS["gpt-nano"]).eval()}
    result = extrapolation(models, torch.arange(300) % 11, trained_context=8, context=16)
    sentence = extrapolation_words(8, result.context, result.within, result.beyond)
    assert "Mean loss at positions 1-8 (trained) and 9-16 (beyond): " in sentence
    for name, curve in result.by_position.items():
        losses = curve.numpy()
        assert f"{name} {said(losses[:8].mean())} and {said(losses[8:].mean())}" in sentence, sentence


def test_an_answers_tokens_scored_by_every_model_say_each_models_mean_probability():
    at = run_page("stages/tuning.py")
    chart = next(s for s in specs(at) if "each token's probability under each model" in title(s))
    trace, sentence = chart["data"][0], chart["layout"]["meta"]
    z, models, tokens = drawn(trace["z"]), list(trace["y"]), list(chart["layout"]["xaxis"]["ticktext"])
    answering = re.match(r"The (.+) model's answer", title(chart)).group(1)
    means = ", ".join(f"{name} {said(row.mean())}" for name, row in zip(models, z, strict=True))
    assert f"The {answering} model's answer, {len(tokens)} tokens: mean probability {means};" in sentence, sentence
    own = z[models.index(answering)]
    low = int(np.argmin(own))
    assert f'least likely token is "{tokens[low]}" ({said(own[low])}).' in sentence, sentence


def test_attentions_step_by_step_masks_and_grouped_query_charts_say_their_numbers():
    at = run_page("stages/attention.py", attention_tab="Step by step")
    chart = next(s for s in specs(at) if " Softmax weights. Where each" in s["layout"].get("meta", ""))
    weights = chart["data"][3]  # the fourth panel: the softmax weights
    z, keys, queries = drawn(weights["z"]), list(weights["x"]), list(weights["y"])
    assert np.allclose(z.sum(axis=1), 1, atol=1e-6)
    looks = [f'"{queries[i]}" at "{keys[int(np.argmax(z[i]))]}" ({said(z[i].max())})' for i in range(len(queries))]
    assert f"Where each token looks most: {', '.join(looks)}." in chart["layout"]["meta"], chart["layout"]["meta"]

    at = run_page("stages/attention.py", attention_tab="Masks")
    chart = next(s for s in specs(at) if "under each mask" in s["layout"].get("meta", ""))
    panels = [(a["text"], drawn(t["z"])) for a, t in zip(chart["layout"]["annotations"], chart["data"], strict=False)]
    for name, z in panels:
        assert f"{name} {int((np.abs(z) < 1e-6).sum())} of {z.size}" in chart["layout"]["meta"], (name, chart)

    at = run_page("stages/attention.py", attention_tab="Grouped-query")
    chart = next(s for s in specs(at) if "key/value heads" in s["layout"].get("meta", ""))
    trace = chart["data"][0]
    owner, queries = drawn(trace["z"])[0].astype(int), list(trace["x"])
    groups = sorted(set(owner))
    each = len(owner) // len(groups)
    assert f"{len(owner)} query heads share {len(groups)} key/value heads, {each} each: " in chart["layout"]["meta"]
    for kv in groups:
        readers = [queries[i] for i in np.nonzero(owner == kv)[0]]
        listed_ = readers[0] if len(readers) == 1 else ", ".join(readers[:-1]) + " and " + readers[-1]
        assert re.search(rf"K{kv} V{kv} (is read )?by {listed_}[;.]", chart["layout"]["meta"]), chart["layout"]["meta"]


def test_the_beam_search_tree_says_how_many_candidates_it_expanded_and_the_winning_path():
    at = run_page("stages/sampling.py", sampling_part="Generate")
    by_label(at.radio, "Method").set_value("beam search").run()
    by_label(at.slider, "Tokens to generate").set_value(4)
    next(b for b in at.button if b.label == "Generate").click().run()
    assert_clean(at)
    chart = next(s for s in specs(at) if "candidates expanded" in s["layout"].get("meta", ""))
    sentence = chart["layout"]["meta"]
    dots = [t for t in chart["data"] if t.get("mode", "").startswith("markers")]
    counts = ", ".join(f"{t['name']} {len(t['x'])}" for t in dots)
    assert f"candidates expanded ({counts})." in sentence and f"{sum(len(t['x']) for t in dots)} candidates" in sentence
    path = next(t for t in dots if t["name"] == "winning path")
    order = np.argsort(drawn(path["x"]), kind="stable")
    tokens = [f'"{path["text"][i]}"' for i in order]
    assert f"The winning path {', '.join(tokens[:-1])} and {tokens[-1]} scores " in sentence, sentence
    last = path["hovertext"][order[-1]]  # the deepest node's hover says the whole path's score (3 decimals)
    score = float(re.search(r"path score = (-?[\d.]+)", last).group(1))
    said_score = float(re.search(r"scores (-?[\d.,]+)\. ", sentence).group(1).replace(",", ""))
    assert abs(said_score - score) <= 0.006 * abs(score) + 0.0005, (said_score, score)


def test_the_inside_a_trained_gpt_tabs_mlp_charts_say_their_numbers():
    at = run_page("stages/model.py", model_tab="Inside a trained GPT")
    chart = next(s for s in specs(at) if "nearly closed" in s["layout"].get("meta", ""))
    bars = {t["name"]: drawn(t["y"]) for t in chart["data"]}
    gelu, gate, swiglu = bars["GELU(W₁x)"], bars["gate SiLU(W_gate x)"], bars["SwiGLU: gate × W₁x"]
    closed = int((np.abs(gate) < 0.1).sum())
    assert (
        f"{len(gelu)} neurons: GELU passes {int((np.abs(gelu) > 0.01).sum())}, SwiGLU "
        f"{int((np.abs(swiglu) > 0.01).sum())}; {closed} gate" in chart["layout"]["meta"]
    ), chart["layout"]["meta"]
    chart = next(s for s in specs(at) if "values are positive" in s["layout"].get("meta", ""))
    trace = chart["data"][0]
    z, tokens, neurons = drawn(trace["z"]), list(trace["y"]), list(trace["x"])
    row, column = np.unravel_index(int(np.argmax(z)), z.shape)
    assert (
        f"for {len(tokens)} tokens: {int((z > 0).sum())} of the {z.size} values are positive; the largest "
        f'{said(z[row, column])} ("{tokens[row]}", neuron {neurons[column]}).' in chart["layout"]["meta"]
    ), chart["layout"]["meta"]


def test_the_positions_heatmaps_say_what_each_diagonal_and_each_dimension_hold():
    at = run_page("stages/embeddings.py", embeddings_tab="Positions")
    chart = titled(at, "rotated q at m")
    z = drawn(chart["data"][0]["z"])
    diagonals = [np.diagonal(z, offset=-d) for d in range(len(z))]
    spread = max(d.max() - d.min() for d in diagonals)
    firsts = ", ".join(f"distance {d} {said(diagonals[d][0])}" for d in range(3))
    assert f"holds one number, within {said(spread)}: {firsts}." in chart["layout"]["meta"], chart["layout"]["meta"]
    chart = titled(at, "PE[pos, i]")
    z = drawn(chart["data"][0]["z"])
    assert list(z[0, :4]) == [0, 1, 0, 1]
    last = z.shape[1] - 2
    assert (
        f"Over {len(z)} positions dimension 0 runs from {said(z[:, 0].min())} to {said(z[:, 0].max())}, dimension "
        f"{last} from {said(z[:, last].min())} to {said(z[:, last].max())}." in chart["layout"]["meta"]
    ), chart["layout"]["meta"]


def test_the_word2vec_map_says_where_the_looked_up_word_is_and_how_far_its_neighbours_lie_on_it():
    at = run_page("stages/embeddings.py", corpus="python-docs", embeddings_tab="Word2vec")
    by_label(at.slider, "Steps").set_value(100)
    finish_jobs(by_label(at.button, "Train word2vec").click().run())
    assert_clean(at)
    chart = next(s for s in specs(at) if "of the variance. Points on the map" in s["layout"].get("meta", ""))
    trace, sentence = chart["data"][0], chart["layout"]["meta"]
    names, points = list(trace["hovertext"]), np.stack([drawn(trace["x"]), drawn(trace["y"])], axis=1)
    assert f"Points on the map: words {len(names)}." in sentence, sentence
    word = at.text_input(key="w2v_nn").value.strip().lower()
    here = points[names.index(word)]
    assert f'"{word}" is at ({said(here[0])}, {said(here[1])})' in sentence, sentence
    orange = [i for i, c in enumerate(trace["marker"]["color"]) if c == "#e8590c" and names[i] != word]
    away = sorted((float(np.hypot(*(points[i] - here))), names[i]) for i in orange)
    named = [f'"{name}" {said(d)} away' for d, name in away]
    assert ", ".join(named[:-1]) + " and " + named[-1] + "." in sentence, sentence


def test_the_activation_curves_say_each_curves_right_end_and_lowest_point():
    at = run_page("stages/model.py", model_tab="Inside a trained GPT")
    chart = next(s for s in specs(at) if "Lowest:" in s["layout"].get("meta", ""))
    sentence = chart["layout"]["meta"]
    for trace in chart["data"]:
        x, y = drawn(trace["x"]), drawn(trace["y"])
        assert f'"{trace["name"]}" {said(y[-1])}' in sentence, (trace["name"], sentence)
        bottom = np.nonzero(y == y.min())[0]
        where = (
            f"from x = {said(x[bottom[0]])} to {said(x[bottom[-1]])}"
            if len(bottom) > 1
            else f"at x = {said(x[bottom[0]])}"
        )
        assert f'"{trace["name"]}" {said(y.min())} {where}' in sentence, (trace["name"], where, sentence)


def test_your_tokens_vectors_say_the_largest_value_and_the_longest_and_shortest_row():
    at = run_page("stages/embeddings.py")
    chart = titled(at, "vectors (first")
    trace, sentence = chart["data"][0], chart["layout"]["meta"]
    z, labels = drawn(trace["z"]), list(trace["y"])
    row, column = np.unravel_index(np.argmax(np.abs(z)), z.shape)
    lengths = np.linalg.norm(z, axis=1)
    assert f"{z.shape[0]} tokens × {z.shape[1]} dimensions." in sentence, sentence
    assert f'Largest in size: {said(z[row, column])} ("{labels[row]}", dimension {column})' in sentence, sentence
    longest, shortest = int(np.argmax(lengths)), int(np.argmin(lengths))
    assert f'Longest row "{labels[longest]}" ({said(lengths[longest])})' in sentence, sentence
    assert f'shortest "{labels[shortest]}" ({said(lengths[shortest])})' in sentence, sentence


def test_token_plus_position_says_each_tables_size_and_that_one_token_at_two_places_is_two_inputs():
    at = run_page("stages/embeddings.py", embeddings_tab="Positions")
    token, position, total = (titled(at, name) for name in ("token embedding", "+ position embedding", "= input to"))
    tok, pos, both = (drawn(c["data"][0]["z"]) for c in (token, position, total))
    assert np.allclose(tok + pos, both, atol=1e-5)  # the third is the sum of the first two, as drawn
    assert f"mean size {said(np.abs(tok).mean())};" in token["layout"]["meta"], token["layout"]["meta"]
    assert f"The position rows: mean size {said(np.abs(pos).mean())}," in position["layout"]["meta"]
    same = [(i, j) for j in range(len(tok)) for i in range(j) if np.array_equal(tok[i], tok[j])]  # one token twice
    if same:
        i, j = same[0]
        apart = said(np.linalg.norm(both[i] - both[j]))
        assert (
            f"at positions {i} and {j} enters block 0 as two different rows, {apart} apart" in total["layout"]["meta"]
        )
    else:
        assert "each token's row is moved by its position's" in total["layout"]["meta"], total["layout"]["meta"]


def test_the_router_and_load_sentences_say_the_counts_a_numpy_recount_gives():
    """The MoE router's words against numpy on a random router (the Model page draws them for a mixture-of-experts
    model only; the words are the lessons', recounted here independently)."""
    from llmviz.lessons import architectures

    generator = torch.Generator().manual_seed(3)
    probs = torch.softmax(torch.randn(7, 4, generator=generator), dim=-1)
    labels = [f"t{i}" for i in range(7)]
    sentence = architectures.router_words(labels, probs, 2)
    p = probs.numpy()
    firsts = np.bincount(p.argmax(axis=1), minlength=4)
    counted = [f"expert {e} {n} token{'s' if n != 1 else ''}" for e, n in enumerate(firsts) if n]
    assert f"First choices: {listed(counted)}." in sentence, sentence
    sure = int(np.argmax(p.max(axis=1)))
    assert f'Surest: "t{sure}" to expert {p[sure].argmax()} at {said(p[sure].max())}' in sentence, sentence
    load = np.bincount(np.argsort(-p, axis=1)[:, :2].ravel(), minlength=4)
    said_load = architectures.load_words(load.tolist(), 2)
    assert said_load.startswith(
        f"{load.sum()} choices (7 tokens × top 2): expert {int(np.argmax(load))} takes the most"
    )


def test_the_toy_heads_four_steps_say_the_scores_the_scaled_range_and_the_masked_cells():
    at = run_page("stages/attention.py", attention_tab="Step by step")
    chart = next(
        s
        for s in specs(at)
        if s["layout"].get("meta", "").startswith("Chart") and "Q Kᵀ: scores" in s["layout"]["meta"]
    )
    scores, scaled, masked = (drawn(trace["z"]) for trace in chart["data"][:3])
    sentence = chart["layout"]["meta"]
    assert f"Q Kᵀ: scores from {said(scores.min())} to {said(scores.max())}." in sentence, sentence
    d_k = round(float(np.nanmedian(scores / scaled)) ** 2)  # the drawn ratio of the first two panels is √d_k
    assert f"÷ √{d_k} = {said(d_k**0.5)}: from {said(scaled.min())} to {said(scaled.max())}." in sentence, sentence
    blank = int(np.isnan(masked).sum())
    assert f"Masked: {blank} of {masked.size} cells set to −∞" in sentence, sentence
