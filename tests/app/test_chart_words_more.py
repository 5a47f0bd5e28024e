"""Every picture has words (issue 70), the other pages' charts: Serving's block tables and batching, Adapting's
quantization, spectra and bars, Embeddings', Tokens', the Model page's. Each test reads the figure as the browser
receives it and recomputes, here with numpy on the drawn arrays, the numbers its sentence must say."""

import numpy as np

from llmviz.lessons import words
from tests.support.pages import assert_clean, finish_jobs, run_page
from tests.support.plotly_spec import drawn, specs


def said(value: float) -> str:
    """How a sentence writes a number (the wording's one rule, not the number)."""
    return words.number(float(value))


def titled(at, start: str) -> dict:
    return next(s for s in specs(at) if ((s["layout"].get("title") or {}).get("text") or "").startswith(start))


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
