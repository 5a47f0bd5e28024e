"""The Serving page under AppTest: batching (each request's wait, and tokens/s as a median of repeats) and the
block tables of paged attention."""

import json
import re
import statistics

import pytest

import llmviz.lessons.serving
from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import assert_clean, finish_jobs, run_page
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, tokenizer


def test_the_batching_chart_shows_each_requests_wait_and_its_speed_as_a_median_of_repeats(shipped):
    """Issue 28 item 6: waiting time per request, both policies, on one chart. Per-request tokens/s was one
    wall-clock sample (reruns of the same schedule gave 95/280, 309/673, 528/263 tokens/s): the page shows each
    policy's tokens/s as the median of several runs with its spread, and no single sample."""
    model, tokenizer = shipped
    at = finish_jobs(run_page("stages/serving.py", serving_part="Batching"))  # served in a worker
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    batching = next(c for c in charts if c["layout"].get("title", {}).get("text", "").startswith("Steps each request"))
    traces = {trace["name"]: trace for trace in batching["data"]}
    assert batching["layout"]["scattermode"] == "group"
    expected = llmviz.lessons.serving.batching(
        model, tokenizer, 2, (24, 4, 16, 6, 10, 4)
    )  # the page's six requests, two slots
    for policy, result in expected.items():
        assert traces[f"{policy}: wait"]["y"] == [r.wait_steps for r in result.requests]
        assert traces[f"{policy}: finished"]["y"] == [r.finish_step for r in result.requests]
        assert traces[f"{policy}: finished"]["offsetgroup"] == policy  # over its own bar, not on the other's dot
    assert not [name for name in traces if "tokens/s" in name]  # no single wall-clock sample per request
    table = next(frame.value for frame in at.dataframe if "policy" in frame.value.columns)
    assert sorted(table["policy"]) == ["continuous", "static"]
    for shown in table["tokens/s: median (lowest–highest)"]:
        median, low, high, runs = re.fullmatch(r"([\d,]+) \(([\d,]+)–([\d,]+), (\d+) runs\)", shown).groups()
        number = [float(value.replace(",", "")) for value in (median, low, high)]
        assert int(runs) == llmviz.lessons.serving.BATCHING_REPEATS >= 3 and number[1] <= number[0] <= number[2], shown
    rate = llmviz.lessons.serving.Rate((3.0, 9.0, 4.0, 100.0, 5.0))  # the median and the extremes, by hand
    assert (rate.median, rate.low, rate.high) == (statistics.median([3, 4, 5, 9, 100]), 3.0, 100.0) == (5, 3, 100)


def test_the_block_table_chart_names_whole_blocks():
    """Seen in the browser: a one-row block chart had ticks at −0.5, 0, 0.5 and its axis title ran over the chart's
    title; then a stray x-axis title "+ column". Rows are named by the blocks they hold, columns are whole numbers
    ("+ n" from the row's first block), and neither axis has a title."""
    at = run_page("stages/serving.py", serving_part="Paged attention")
    at.text_input(key="page_lengths").set_value("13, 5, 22, 9, 40").run()  # 4 + 2 + 6 + 3 + 10 = 25 blocks of 4
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    blocks = next(c for c in charts if c["layout"]["title"]["text"].startswith("Physical blocks"))
    assert blocks["layout"]["yaxis"]["ticktext"] == ["blocks 0–15", "blocks 16–31"]
    assert blocks["layout"]["yaxis"]["tickvals"] == [0, 1]
    assert blocks["layout"]["xaxis"]["tickvals"] == list(range(16))
    assert blocks["layout"]["xaxis"]["ticktext"] == [f"+{n}" for n in range(16)]
    assert not blocks["layout"]["yaxis"].get("title", {}).get("text")
    assert not blocks["layout"]["xaxis"].get("title", {}).get("text")


def test_it_opens_on_the_kv_cache_and_asks_about_its_bytes():
    at = run_page("stages/serving.py")
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert charts[0]["layout"]["title"]["text"] == "The KV cache while generating"
    assert [t.label for t in at.tabs] == ["The KV cache", "Paged attention", "Batching"]
    at.button(key="quiz_ask_serving").click().run()
    assert_clean(at)
    assert any("KV cache" in m.value for m in at.markdown)


def test_the_kv_cache_picture_has_controls_and_lines_for_other_ways_to_store_it(shipped):
    """Issue 50 §9: Serving opened on a straight line with no control. Under the picture: how many tokens to write,
    and the same cache in bfloat16 and with one key/value head, their bytes a token by hand
    (2 · layers · key/value heads · head size · bytes a number)."""
    model, _ = shipped
    config = model.config
    at = run_page("stages/serving.py")
    assert_clean(at)

    def kv_chart():
        charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
        return next(c for c in charts if c["layout"]["title"]["text"] == "The KV cache while generating")

    traces = {trace["name"].split(":")[0]: trace for trace in kv_chart()["data"]}
    by_hand = {
        "bfloat16 (2 bytes a number)": 2 * config.n_layers * config.kv_heads * config.head_dim * 2,
        "one key/value head (multi-query)": 2 * config.n_layers * 1 * config.head_dim * 4,
    }
    assert model.lm_head.weight.dtype.itemsize == 4  # the shipped GPT keeps float32
    for name, per_token in by_hand.items():
        assert traces[name]["y"] == [per_token * n for n in traces[name]["x"]], name
    measured = traces["measured (the cache's tensors)"]
    assert measured["y"][-1] == 2 * config.n_layers * config.kv_heads * config.head_dim * 4 * measured["x"][-1]
    written = measured["x"][-1] - measured["x"][0]
    at.slider(key="kv_growth_tokens").set_value(120).run()
    assert_clean(at)
    longer = {trace["name"]: trace for trace in kv_chart()["data"]}["measured (the cache's tensors)"]
    assert longer["x"][-1] - longer["x"][0] == written + 60  # 60 tokens more written (none stopped early)
    at.multiselect(key="kv_variants").set_value([]).run()
    assert [t["name"] for t in kv_chart()["data"]] == ["measured (the cache's tensors)", "formula"]
