"""Every picture has words (issue 70), Inside the model's other charts: the logit lens's p(true next token), the head
detectors, a feature's histogram, the loss change on every token after a knock-out (heads or features), the induction
run and an autoencoder run's curves. Each test reads the figure as the browser receives it and recomputes, here with
numpy on the drawn arrays, the numbers its sentence must say. The induction run and an autoencoder run need a lab run
to be drawn on the page: their figures are built here from made-up measurements by the panel's own figure function,
and the sentence is checked against that figure's drawn data."""

import re

import numpy as np
import plotly.graph_objects as go
import torch

from llmviz.interpret import induction
from llmviz.lessons import inside, words
from tests.support.pages import assert_clean, by_label, run_page
from tests.support.plotly_spec import drawn, specs
from ui.panels import inside_features, inside_induction


def said(value: float) -> str:
    """How a sentence writes a number (the wording's one rule, not the number)."""
    return words.number(float(value))


def chart_saying(at, part: str) -> dict:
    return next(s for s in specs(at) if part in s["layout"].get("meta", ""))


def change_told(trace: dict) -> tuple[str, str | None]:
    """What a loss-change chart's sentence must say, from its drawn bars: how many rise, the three that rise most (in
    nats, signed), and the largest fall."""
    change, labels = drawn(trace["y"]), list(trace["x"])
    rising = [i for i in np.argsort(-change, kind="stable") if change[i] > 0][:3]
    named = [f'"{labels[i]}" ({change[i]:+.3g}{" nats" if n == 0 else ""})' for n, i in enumerate(rising)]
    head = f"the loss rises on {int((change > 0).sum())} of the {len(change)} next tokens"
    if named:
        head += ", most when predicting " + (
            named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        )
    fall = None
    if (change < 0).any():
        low = int(np.argmin(change))
        fall = f'it falls most at "{labels[low]}" ({change[low]:+.3g}).'
    return head, fall


def test_the_lens_says_how_likely_the_true_next_token_is_layer_by_layer_and_the_detectors_name_the_best_heads():
    at = run_page("stages/inside.py")  # the page opens on the logit lens
    chart = chart_saying(at, "p(the true next token)")
    traces, sentence = chart["data"], chart["layout"]["meta"]
    picked, mean = traces[-1], next(t for t in traces if t["name"].startswith("mean over all"))
    layers, line, means = list(picked["x"]), drawn(picked["y"]), drawn(mean["y"])
    peak = int(np.argmax(line))
    assert (
        f'for "{picked["name"]}": {said(line[0])} at {layers[0]}, {said(line[-1])} at {layers[-1]}, highest '
        f"{said(line[peak])} at {layers[peak]}." in sentence
    ), sentence
    positions = int(re.search(r"mean over all (\d+) positions", mean["name"]).group(1))
    assert f"mean over all {positions} positions goes from {said(means[0])} at {layers[0]} to {said(means[-1])}" in (
        sentence
    ), sentence

    at.session_state["look"] = "Head detectors"
    at.run()
    assert_clean(at)
    grid = chart_saying(at, "score is highest for")
    trace, sentence = grid["data"][0], grid["layout"]["meta"]
    z = drawn(trace["z"])
    best = np.argsort(-z, axis=None, kind="stable")[:3]
    named = []
    for index in best:
        layer, head = np.unravel_index(index, z.shape)
        named.append(f"{trace['y'][layer]} {trace['x'][head]} ({said(z[layer, head])})")
    assert f"highest for {named[0]}, {named[1]} and {named[2]};" in sentence, sentence
    chance = float(re.search(r"scores about ([0-9.]+)", sentence).group(1))
    caption = next(c.value for c in at.caption if c.value.startswith("Highest: "))
    assert f"scores about {chance:.2f}" in caption  # the same chance level as the caption's
    assert f"{int((z > 2 * chance).sum())} of the {z.size} heads score more than twice that." in sentence, sentence


def test_knocking_out_heads_together_says_where_the_loss_rises_most():
    at = run_page("stages/inside.py", look="Knock out heads")
    at.multiselect(key="knocked").set_value(["0.3", "2.1"]).run()
    assert_clean(at)
    chart = chart_saying(at, "Without heads 0.3 and 2.1 the loss rises on")
    head, fall = change_told(chart["data"][0])
    sentence = chart["layout"]["meta"]
    assert head in sentence, (head, sentence)
    assert fall is None or fall in sentence, (fall, sentence)


def test_a_features_histogram_and_its_knock_out_say_their_numbers():
    at = run_page("stages/inside.py", look="Features", lazy_feature_knockout=True)
    feature = by_label(at.number_input, "Feature").value
    chart = chart_saying(at, f"Feature {feature} fires on")
    trace, sentence = chart["data"][0], chart["layout"]["meta"]
    centres, counts = drawn(trace["x"]), drawn(trace["y"])
    common, top = int(np.argmax(counts)), int(np.nonzero(counts)[0].max())
    assert (
        f"fires on {said(counts.sum())} tokens here; most often near {said(centres[common])} ({said(counts[common])} "
        f"tokens), at most near {said(centres[top])}." in sentence
    ), sentence
    knocked = chart_saying(at, "Without feature")
    head, fall = change_told(knocked["data"][0])
    assert head in knocked["layout"]["meta"], (head, knocked["layout"]["meta"])
    assert fall is None or fall in knocked["layout"]["meta"]


def test_the_induction_runs_chart_says_the_heads_score_and_both_losses_from_the_first_step_to_the_last():
    """Drawn only once an induction run has snapshots: its figure is built here from made-up probe results, with the
    panel's own function, and the sentence the panel passes is checked against that figure's drawn lines."""

    def probe(step, score, first, repeated):
        scores = {"induction": torch.tensor([[0.0, 0.0], [0.01, score]]), "previous token": torch.zeros(2, 2)}
        return induction.ProbeResult(step, scores, first, repeated)

    curve = [probe(0, 0.02, 4.2, 4.1), probe(200, 0.21, 3.5, 2.0), probe(400, 0.63, 3.3, 0.9)]
    knocked = [probe(s, 0.0, 4.2, loss) for s, loss in ((0, 4.1), (200, 3.4), (400, 3.2))]
    figure = go.Figure(inside_induction.phase_chart(curve, None, knocked, "layer 1, head 1")).to_plotly_json()
    lines = {t["name"]: t for t in figure["data"]}
    score = drawn(lines["induction · layer 1 head 1"]["y"])
    repeated = drawn(lines["loss on the repeated half"]["y"])
    first = drawn(lines["loss on the first half"]["y"])
    out = drawn(lines["repeated half, layer 1, head 1 knocked out"]["y"])
    steps = [int(s) for s in drawn(lines["loss on the first half"]["x"])]
    sentence = inside_induction.phase_sentence(curve, knocked, 1, 1)  # what the page passes as the chart's words
    assert (
        f"From step {steps[0]} to step {steps[-1]}, the induction score of layer 1, head 1 goes from {said(score[0])} "
        f"to {said(score[-1])}; the loss on the repeated half from {said(repeated[0])} to {said(repeated[-1])} nats, "
        f"on the first half from {said(first[0])} to {said(first[-1])}." in sentence
    ), sentence
    assert f"the repeated half's loss is {said(out[-1])} at step {steps[-1]}." in sentence, sentence


def test_an_autoencoder_runs_curves_say_their_last_values():
    """Drawn only while an autoencoder run of the session exists: its figure is built here from made-up rows with
    the panel's own function, and the sentence is checked against the figure's drawn lines."""
    rows = [
        {"step": s, "variance explained": v, "L0": l0, "dead": d, "mse": 0.1, **losses}
        for s, v, l0, d, losses in (
            (1, 0.2, 40.0, 0, {"clean loss": 2.0, "spliced-in loss": 3.5, "zeroed loss": 6.0}),
            (2, 0.6, 22.5, 3, {"clean loss": None, "spliced-in loss": None, "zeroed loss": None}),
            (3, 0.83, 12.25, 5, {"clean loss": 2.0, "spliced-in loss": 2.4, "zeroed loss": 6.0}),
            (4, 0.91, 11.0, 7, {"clean loss": None, "spliced-in loss": None, "zeroed loss": None}),
        )
    ]
    figure = inside_features.curves_figure(rows).to_plotly_json()
    by_name = {t["name"]: t for t in figure["data"]}
    last = {name: float(drawn(by_name[name]["y"])[-1]) for name in ("variance explained", "L0")}
    dead = drawn(by_name["dead"]["y"])
    step = int(drawn(by_name["L0"]["x"])[-1])
    sentence = inside.sae_curve_words(rows)
    assert (
        f"At step {step}: variance explained {said(last['variance explained'])}, L0 {said(last['L0'])} features per "
        f"token, {said(dead[-1])} dead features." in sentence
    ), sentence
    loss = {n: by_name[n] for n in ("clean loss", "spliced-in loss", "zeroed loss")}
    measured = int(drawn(loss["clean loss"]["x"])[-1])
    clean, spliced, zeroed = (float(drawn(t["y"])[-1]) for t in loss.values())
    assert (
        f"Loss at step {measured}: {said(clean)} clean, {said(spliced)} with x̂ spliced in, {said(zeroed)} zeroed."
        in sentence
    ), sentence
