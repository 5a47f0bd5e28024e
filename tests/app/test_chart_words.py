"""Every picture has words (issue 70): each page's own sentence for its key charts (``llmviz.lessons``: the next
tokens, where attention looks, which head does what, a loss and its trend) says the numbers the chart draws. Each test
reads the figure the browser receives and recomputes, here, what the sentence must say."""

import numpy as np

from llmviz.lessons import words
from tests.support.pages import run_page
from tests.support.plotly_spec import drawn, specs


def said(value: float) -> str:
    """How a sentence writes a number (the wording's one rule, not the number)."""
    return words.number(float(value))


def test_the_sampling_bars_say_the_three_most_likely_tokens_and_how_many_can_be_chosen():
    at = run_page("stages/sampling.py")
    bars = [s for s in specs(at) if s["data"] and s["data"][0]["type"] == "bar"]
    assert len(bars) >= 4  # raw softmax, temperature, top-k, top-p
    for spec in bars:
        trace, sentence = spec["data"][0], spec["layout"]["meta"]
        labels, values = list(trace["y"]), drawn(trace["x"])
        top = np.argsort(-values, kind="stable")[:3]
        named = [f'"{labels[i]}" {said(values[i])}' for i in top]
        assert f"Most likely next: {named[0]}, {named[1]} and {named[2]};" in sentence, sentence
        assert f"{int((values > 0).sum())} of the {len(values)} tokens drawn can be chosen" in sentence, sentence


def test_the_attention_pattern_says_where_each_token_looks_most():
    at = run_page("stages/attention.py")
    heat = next(s for s in specs(at) if (s["layout"].get("title") or {}).get("text") == "layer 0, head 0")
    trace, sentence = heat["data"][0], heat["layout"]["meta"]
    z, keys, queries = drawn(trace["z"]), trace["x"], trace["y"]
    assert np.allclose(z.sum(axis=1), 1, atol=1e-6)  # it is an attention pattern: each row a distribution
    looks = []
    for i in range(max(0, len(queries) - 6), len(queries)):
        j = int(np.argmax(z[i]))
        looks.append(f'"{queries[i]}" at "{keys[j]}" ({said(z[i, j])})')
    written = np.array(trace["text"], dtype=object)  # colour is not the only signal: a strong weight is written
    assert ((written != "") == (z >= 0.25)).all()
    assert all(f"{z[i, j]:.1f}" == written[i, j] for i, j in zip(*np.nonzero(z >= 0.25)))
    lines = next(s for s in specs(at) if s["data"] and s["data"][0]["type"] == "scatter")  # the lines beside it
    for told in (sentence, lines["layout"]["meta"]):
        assert ", ".join(looks) + "." in told, told


def test_every_head_at_a_glance_names_the_heads_that_look_at_the_previous_the_first_token_and_themselves():
    """The head grid tiles every layer × head pattern into one heatmap (a gap of NaN between tiles): each tile is cut
    out of the drawn grid here and measured."""
    at = run_page("stages/attention.py", lazy_attention_grid=True)
    grid = next(s for s in specs(at) if "heads that look most" in s["layout"].get("meta", ""))
    heat = next(s for s in specs(at) if (s["layout"].get("title") or {}).get("text") == "layer 0, head 0")
    tokens = len(heat["data"][0]["x"])
    z = drawn(grid["data"][0]["z"])
    gap = max(1, tokens // 8)
    cell = tokens + gap
    layers, heads = (z.shape[0] + gap) // cell, (z.shape[1] + gap) // cell
    queries = np.arange(2, tokens)
    best: dict[str, tuple[float, int, int]] = {}
    for layer in range(layers):
        for head in range(heads):
            tile = z[layer * cell : layer * cell + tokens, head * cell : head * cell + tokens]
            for kind, mean in {
                "the previous token": tile[queries, queries - 1].mean(),
                "the first token": tile[queries, 0].mean(),
                "itself": tile[queries, queries].mean(),
            }.items():
                if kind not in best or mean > best[kind][0]:
                    best[kind] = (mean, layer, head)
    sentence = grid["layout"]["meta"]
    for kind, (mean, layer, head) in best.items():
        assert f"layer {layer} head {head} at {kind} ({said(mean)} of its weight)" in sentence, (kind, sentence)
    table = next(frame.value for frame in at.dataframe if "the previous token" in frame.value.columns)
    assert len(table) == layers * heads  # every head a row: the grid's numbers for a screen reader
    for kind, (mean, layer, head) in best.items():
        row = table[(table["layer"] == layer) & (table["head"] == head)]
        assert abs(float(row[kind].iloc[0]) - mean) < 1e-6 and float(table[kind].max()) == float(row[kind].iloc[0])


def expected_trend(steps: np.ndarray, values: np.ndarray) -> tuple[str, str]:
    """The loss now (at its last step) and the way it moved over the last quarter of the steps."""
    keep = np.isfinite(values)
    steps, values = steps[keep], values[keep]
    now = f"now {said(values[-1])} at step {said(steps[-1])}, from {said(values[0])} at step {said(steps[0])}"
    before = values[steps <= steps[-1] - 0.25 * (steps[-1] - steps[0])][-1]
    change = values[-1] - before
    moved = "stayed flat" if abs(change) < 0.01 * abs(values[-1]) else ("fell" if change < 0 else "rose")
    return now, moved


def test_the_training_curve_says_the_loss_now_and_its_trend():
    at = run_page("stages/training.py")
    chart = next(s for s in specs(at) if "now" in s["layout"].get("meta", "") and "loss" in s["layout"]["meta"])
    sentence = chart["layout"]["meta"]
    curves = [t for t in chart["data"] if t.get("showlegend") is not False and t["type"] == "scatter"]
    assert curves
    for trace in curves[:4]:
        now, moved = expected_trend(drawn(trace["x"]), drawn(trace["y"]))
        assert f"{trace['name']} {now}".lower() in sentence.lower(), (now, sentence)
        part = sentence.lower().split(trace["name"].lower(), 1)[1].split(";")[1]
        assert moved in part, (moved, part)


def test_the_logit_lens_says_each_positions_own_prediction_and_the_first_layer_that_has_it():
    at = run_page("stages/inside.py")
    grid = next(s for s in specs(at) if "own top prediction" in s["layout"].get("meta", ""))
    trace, sentence = grid["data"][0], grid["layout"]["meta"]
    z, text, rows = drawn(trace["z"]), trace["text"], trace["y"]
    for column, token in enumerate(trace["x"]):
        final = text[-1][column]
        first = next(row for row in range(len(rows)) if text[row][column] == final)
        assert f'reading "{token}", "{final}" {said(z[-1, column])} (from {rows[first]})' in sentence, sentence


def test_the_kv_cache_chart_says_the_bytes_after_the_last_token_the_formulas_and_each_other_way_to_store_it():
    at = run_page("stages/serving.py")
    chart = next(
        s for s in specs(at) if (s["layout"].get("title") or {}).get("text") == "The KV cache while generating"
    )
    traces, sentence = {t["name"].split(":")[0]: t for t in chart["data"]}, chart["layout"]["meta"]
    measured, formula = traces.pop("measured (the cache's tensors)"), traces.pop("formula")
    tokens, held = drawn(measured["x"]), drawn(measured["y"])
    slope = np.diff(drawn(formula["y"])) / np.diff(drawn(formula["x"]))  # the formula's line: bytes a token
    assert np.allclose(slope, slope[0])
    assert (
        f"After {int(tokens[-1])} tokens the cache holds {said(held[-1])} bytes; the formula, {said(slope[0])} bytes "
        f"a token, gives {said(drawn(formula['y'])[-1])}." in sentence
    ), sentence
    assert traces  # bfloat16 and one key/value head, by default
    for name, trace in traces.items():
        assert f"{name}: {said(drawn(trace['y'])[-1])} bytes" in sentence, (name, sentence)


def test_the_lora_memory_chart_says_each_columns_total_and_parts_and_loras_share():
    at = run_page("stages/adapting.py")
    chart = next(s for s in specs(at) if "Memory for training" in str(s["layout"].get("title")))
    bars, sentence = chart["data"], chart["layout"]["meta"]
    columns = list(bars[0]["x"])
    assert columns == ["full fine-tuning", "LoRA"] and all(list(b["x"]) == columns for b in bars)
    totals = sum(drawn(b["y"]) for b in bars)
    for i, column in enumerate(columns):
        parts = ", ".join(f"{b['name']} {said(drawn(b['y'])[i])}" for b in bars)
        assert f"{column} {said(totals[i])} MiB ({parts})" in sentence, sentence
    assert f"LoRA needs {totals[1] / totals[0]:.1%} of full fine-tuning." in sentence, sentence


def test_the_embedding_map_says_where_the_looked_up_token_is_and_how_far_its_neighbours_lie_on_the_map():
    at = run_page("stages/embeddings.py")
    chart = next(s for s in specs(at) if any(t.get("name") == "looked up" for t in s["data"]))
    traces, sentence = {t["name"]: t for t in chart["data"]}, chart["layout"]["meta"]
    counts = ", ".join(f"{name} {len(t['x'])}" for name, t in traces.items())
    assert f"Points on the map: {counts}." in sentence, sentence
    asked = traces["looked up"]
    here = np.array([drawn(asked["x"])[0], drawn(asked["y"])[0]])
    assert f'"{asked["hovertext"][0]}" is at ({said(here[0])}, {said(here[1])})' in sentence, sentence
    near = traces["nearest neighbours"]
    points = np.stack([drawn(near["x"]), drawn(near["y"])], axis=1)
    away = np.hypot(*(points - here).T)
    order = np.argsort(away, kind="stable")
    named = [f'"{near["hovertext"][i]}" {said(away[i])} away' for i in order]
    assert ", ".join(named[:-1]) + " and " + named[-1] + "." in sentence, sentence


def test_the_knock_out_grid_says_which_heads_raise_the_loss_most_and_how_many_lower_it():
    at = run_page("stages/inside.py", look="Knock out heads")
    at.selectbox(key="ablation_guess").set_value((1, 2)).run()
    at.button(key="ablation_run").click().run()
    grid = next(s for s in specs(at) if "loss rises most" in s["layout"].get("meta", ""))
    trace, sentence = grid["data"][0], grid["layout"]["meta"]
    z = drawn(trace["z"])
    assert np.isfinite(z).all()  # every head measured
    flat = np.argsort(-z, axis=None, kind="stable")[:3]
    named = []
    for n, index in enumerate(flat):
        layer, head = np.unravel_index(index, z.shape)
        value = f"{z[layer, head]:+.3g}" + (" nats" if n == 0 else "")
        named.append(f"{trace['y'][layer]}, {trace['x'][head]} ({value})")
    assert f"rises most for {named[0]}, {named[1]} and {named[2]};" in sentence, sentence
    lower = int((z < 0).sum())
    assert f"{lower} of the {z.size} heads measured {'lowers' if lower == 1 else 'lower'} it." in sentence, sentence


def test_the_patching_grid_says_which_patches_restore_the_most_and_how_many_restore_more_than_half():
    at = run_page("stages/inside.py", look="Patch activations")  # the default pair's grid is drawn at once
    grid = next(s for s in specs(at) if "the most is restored by" in s["layout"].get("meta", ""))
    trace, sentence = grid["data"][0], grid["layout"]["meta"]
    z = drawn(trace["z"])
    finite = np.isfinite(z)
    order = [i for i in np.argsort(-np.where(finite, z, -np.inf), axis=None, kind="stable") if finite.flat[i]][:3]
    named = []
    for index in order:
        row, column = np.unravel_index(index, z.shape)
        named.append(f'{trace["y"][row]} at "{trace["x"][column]}" ({said(z[row, column])})')
    assert f"the most is restored by {', '.join(named[:-1])} and {named[-1]};" in sentence, sentence
    half = int((z[finite] > 0.5).sum())
    assert f"{half} of the {int(finite.sum())} patches" in sentence, sentence
