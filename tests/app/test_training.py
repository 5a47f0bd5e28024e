"""The Training page opens on a run's loss curve (or the Train button), and a run ends with its result."""

import base64
import json
import math
import re

import numpy as np

from llmviz.jobs.manager import default_manager
from tests.test_app_pages import assert_clean, run_page


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


def test_it_opens_on_the_picked_runs_curve_and_its_final_line(fresh_session_jobs):
    at = run_page("stages/training.py", corpus="names")
    at.selectbox(key="train_model").set_value("mlp")
    at.radio(key="keep_tokenizer").set_value("char")
    at.slider(key="steps").set_value(30)
    at.button(key="train").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
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
