"""Defects a student found walking through the app: Home, Tokens, Inside the model, Loss & training."""

from llmviz.data import corpus
from llmviz.device import describe_device
from tests.test_app_pages import assert_clean, run_page


def test_one_cpu_thread_is_singular():
    # before: "CPU (1 threads)"
    assert describe_device("cpu", threads=1) == "CPU (1 thread)"
    assert describe_device("cpu", threads=2) == "CPU (2 threads)"


def test_home_shows_every_corpus_description_whole():
    """Before: the corpora were a dataframe whose description column was cut at the table's edge."""
    at = run_page()
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")
    for entry in corpus.list_corpora():
        assert entry.description in shown, entry.name
        assert entry.licence in shown, entry.name


def _in_page_order(node) -> list:
    """Every element under an AppTest node, in the order the page draws them."""
    found = []
    for child in getattr(node, "children", {}).values():
        found.append(child)
        found += _in_page_order(child)
    return found


def test_home_pipeline_arrows_lead_their_box():
    """Before: the last box of every row carried an arrow that pointed into the empty space after it. (The boxes are
    now rows of columns, each box a link to its stage; the arrows still lead their box.)"""
    import ui

    at = run_page()
    flow = [
        "arrow" if element.type == "markdown" and element.value == ":gray[→]" else "box"
        for element in _in_page_order(at.main)
        if (element.type == "markdown" and element.value == ":gray[→]")
        or (element.type == "caption" and element.value.startswith("stage "))
    ]
    assert flow.count("box") == len(ui.PIPELINE)
    assert flow[0] == "box"  # the first box has no arrow into it
    assert all(after == "box" for before, after in zip(flow, flow[1:]) if before == "arrow")  # each arrow leads a box
    assert flow[-1] == "box"  # nothing points past the last box


def test_backprop_check_counts_both_gradients():
    """Before: "all 131,072 entries of ∂L/∂W and ∂L/∂z" counted ∂L/∂W alone (V·C); with ∂L/∂z (V) it is V·C + V."""
    import torch

    from llmviz.training.losses import output_layer_gradient

    vocab, width = 7, 4
    grad = output_layer_gradient(torch.randn(width), torch.randn(vocab, width), target=2)
    assert grad.entries_compared == vocab * width + vocab  # 28 + 7, counted by hand


def test_training_page_states_the_backprop_count_of_the_shipped_head():
    from ui import models

    at = run_page("stages/training.py")
    head = models.shipped_gpt_or_stop()[0].lm_head.weight  # (V, C)
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
    from tests.test_page_interactions import by_label, session_jobs, train_on_names

    at = train_on_names()
    [first] = session_jobs(at)
    at.run()
    chart = by_label(at.multiselect, "Runs on the chart")
    assert chart.value == [first.label]
    by_label(at.slider, "Steps per runner").set_value(50)
    by_label(at.selectbox, "Optimizer race: model").set_value("mlp")
    by_label(at.button, "SGD vs momentum vs RMSprop vs Adam").click().run()
    runners = [job for job in session_jobs(at) if job.id != first.id]
    assert len(runners) == 4
    at.run()
    assert_clean(at)
    assert by_label(at.multiselect, "Runs on the chart").value == [first.label] + [job.label for job in runners]


def test_tokens_a_trained_bpe_joins_the_list_and_cl100k_stays():
    """Before: with a BPE trained, the default list was the first four (words, your BPE, picked, GPT-2): cl100k
    was silently gone."""
    from tests.test_app_pages import finish_jobs
    from tests.test_page_interactions import by_label

    at = run_page("stages/tokens.py", corpus="names")
    assert set(by_label(at.multiselect, "Tokenizers").value) >= {"gpt2", "cl100k"}
    by_label(at.slider, "Vocabulary size").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    assert set(by_label(at.multiselect, "Tokenizers").value) >= {"bpe", "gpt2", "cl100k"}


def test_tokens_empty_text_warns_and_keeps_bpe_training_and_windows():
    """Before: an empty text stopped the page after its warning: no BPE training, no input–target windows."""
    from tests.test_page_interactions import by_label, texts

    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.text_area, "Your text").set_value("").run()
    assert_clean(at)
    assert "Your text is empty" in texts(at.warning)
    headers = [h.value for h in at.header]  # the BPE lesson: the tab open by default
    assert any(h.startswith("2. Train your own BPE") for h in headers)
    assert at.button(key="train_bpe")
    at.session_state["tokens_tab"] = "Input–target pairs"  # the windows' tab
    at.run()
    assert_clean(at)
    headers = [h.value for h in at.header]
    assert any(h.startswith("4.") for h in headers)
    assert "first 300 characters of US census first names" in texts(at.info).replace("\\", "")
    assert at.dataframe, "the input–target windows are drawn"


def test_induction_probe_says_what_it_was_measured_on():
    """Before: section 4's "score 0.71" and section 2's 0.74 for the same head read as a contradiction: neither
    said it was measured on its own inputs."""
    from llmviz.interpret import induction

    model = induction.make_trainer(induction.InductionPreset(lines=20)).model.eval()
    lines = induction.probe_lines(count=3)  # (3, 32): 16 characters, repeated
    result = induction.probe(model, lines)
    assert (result.test_lines, result.half_length) == (3, 16)
    assert (
        "measured on the 3 test lines (16 random characters, repeated), their attention averaged"
        in induction.describe(result)
    )


def test_inside_says_what_the_head_scores_are_measured_on_and_that_train_it_picks_the_run():
    from tests.test_page_interactions import texts
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
    from tests.test_page_interactions import by_label

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
