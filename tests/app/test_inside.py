"""The Inside the model page under AppTest, and its logit lens charts (ui/panels/lens.py): a readable window of
positions, a legend, what the head scores are measured on, and the induction run."""

import pytest
import torch
from streamlit.testing.v1 import AppTest

import ui
from llmviz.interpret import lens as lenses
from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import TIMEOUT, assert_clean, run_page
from tests.support.paths import DATA
from ui import charts
from ui.panels import lens as lens_ui


def run_app(path: str, query: dict | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(ui.ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(str(ui.ROOT / path)).run()
    return at


def test_training_the_induction_run_again_keeps_both_runs_apart(fresh_session_jobs):
    """'Train it again' on Inside the model gave the new run the same label as the first: the Training page keys
    its runs by label, so the first run vanished from its chart, table and 'Download a run'."""
    from llmviz.jobs.manager import default_manager

    at = run_app("stages/inside.py")
    at.button(key="induction_start").click().run()
    manager, owner = default_manager(), at.session_state["_llmviz_session_id"]
    for _ in range(2):
        for job in manager.jobs(owner):
            job.stop()
            assert job.wait(timeout=120)
        at.run()
        if len(manager.jobs(owner)) == 1:
            at.button(key="induction_again").click().run()
    labels = [job.label for job in manager.jobs(owner)]
    assert len(labels) == 2 and len(set(labels)) == 2, labels
    at.switch_page(str(ui.ROOT / "stages/training.py")).run()
    assert_clean(at)
    download = next(box for box in at.selectbox if box.label == "Download a run")
    assert sorted(download.options) == sorted(labels), (download.options, labels)


def test_inside_says_what_the_head_scores_are_measured_on_and_that_train_it_picks_the_run():
    from tests.support.pages import texts
    from ui import models

    at = run_page("stages/inside.py")
    config = models.shipped_gpt_or_stop()[0].config
    half = min(20, config.context_length // 2, config.vocab_size)  # model_head_scores' test input: half, twice
    shown = texts(at.markdown)
    assert f"{half} distinct random tokens of this model's vocabulary, repeated twice ({2 * half} tokens" in shown
    assert "differ a little from section 2's heatmap" in shown
    assert "becomes the model picked in the sidebar" in texts(at.caption)


def test_induction_run_offers_the_model_picked_before_back():
    import time

    from llmviz.jobs.manager import default_manager
    from tests.support.pages import by_label

    at = run_page("stages/inside.py")
    before = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page").value
    at.button(key="induction_start").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    try:
        deadline = time.time() + 120
        while job.snapshots is None or not job.snapshots.steps():
            assert time.time() < deadline
            time.sleep(0.2)
        at.run()
        assert_clean(at)
        assert next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page").value == f"run:{job.id}"
        by_label(at.button, "Back to the model picked before").click().run()
        assert_clean(at)
        assert next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page").value == before
    finally:
        job.stop()
        assert job.wait(timeout=60)


SENTENCE = "The for statement is used to iterate over the elements of a sequence such as a string tuple or list"


@pytest.fixture(scope="module")
def shipped_lens():
    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")
    ids = tokenizer.encode(SENTENCE)[:32]
    lens = lenses.sequence_logit_lens(model.eval(), ids, k=5)
    tokens = [tokenizer.printable(i) for i in ids]
    return lens, tokens, charts.unique_labels(tokens), tokenizer.printable


def test_the_window_stays_inside_the_sentence():
    assert lens_ui.window(32, 0) == range(0, 10)
    assert lens_ui.window(32, 40) == range(22, 32)
    assert lens_ui.window(4, 2) == range(0, 4)
    assert lens_ui.window(32, -3) == range(0, 10)


def test_the_grid_shows_a_window_in_14_px_type(shipped_lens):
    lens, tokens, columns, name = shipped_lens
    assert len(tokens) > lens_ui.WINDOW  # before: every one of the 32 positions in one chart, text about 6 px
    figure = lens_ui.grid_figure(lens, tokens, columns, name, lens_ui.window(len(tokens), 12))
    heat = figure.data[0]
    assert list(heat.x) == columns[12:22] and list(heat.y) == lens.layer_names
    assert heat.textfont.size >= 14 and figure.layout.xaxis.tickfont.size >= 13
    # each cell: the top token after that layer at that position, and its probability as the colour
    top = lens.top_probs[:, 12:22, 0]
    assert torch.tensor(heat.z).allclose(top)
    last = [name(int(i)) for i in lens.top_ids[-1, 12:22, 0]]
    assert list(heat.text[-1]) == last


def test_the_per_layer_chart_has_a_legend_and_one_position_in_colour(shipped_lens):
    lens, tokens, columns, _ = shipped_lens
    positions = lens_ui.window(len(tokens), 0)
    figure = lens_ui.true_token_figure(lens, tokens, columns, positions, picked=3)
    assert figure.layout.showlegend is True
    named = [trace for trace in figure.data if trace.showlegend is not False]
    assert len(named) == 3  # the other positions (one entry), the mean, the picked one
    picked = figure.data[-1]
    assert picked.name == f"{columns[3]} → {tokens[4]}" and picked.line.width >= 4
    assert torch.tensor(picked.y).allclose(lens.true_probs[:, 3])
    mean = next(trace for trace in figure.data if trace.name.startswith("mean"))
    expected = [sum(row) / len(row) for row in lens.true_probs.tolist()]  # over every position, not only the window
    assert list(mean.y) == pytest.approx(expected)
    assert len(figure.data) == len(positions) + 1  # the window's positions and the mean: not ~20 lines


PAGE = "stages/inside.py"


def test_inside_page_default_path_has_no_error():
    at = run_page(PAGE)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    headers = [h.value for h in at.header]
    assert any("logit lens" in h for h in headers) and any("Head detectors" in h for h in headers)
    assert any("loss on every token" in h for h in headers)


def test_inside_page_survives_empty_and_odd_text():
    at = run_page(PAGE, lens_text="", loss_text="\x00\x01 ☃")
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
