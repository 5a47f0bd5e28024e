"""Picker options fit the sidebar's select box (ui/labels.py; the browser test measures them in chromium)."""

from ui import labels


def test_fit_keeps_what_fits_and_cuts_the_rest_with_an_ellipsis():
    assert labels.fit("Shipped RNN · names") == "Shipped RNN · names"
    long = "Run 12 · 14:03 · GPT micro (2 layers, d 64) · AdamW · lr 0.003 · Python reference manual"
    cut = labels.fit(long)
    assert cut.endswith("…") and long.startswith(cut[:-1]) and labels.text_width(cut) <= labels.PICKER_WIDTH
    assert labels.fit("語" * 40).endswith("…")  # characters not in the table count wide


def test_the_width_table_matches_what_chromium_draws():
    """Whole strings measured in chromium (a canvas with the select box's font, Source Sans 14 px): the table's sum
    is within a pixel or two, which the 4 px margin of PICKER_WIDTH covers (the browser test measures the options)."""
    measured = {"Shipped GPT · Python manual": 174, "Run 12 · names race: Transformer": 194, "mmmmmmmmmm": 116}
    for text, width in measured.items():
        assert abs(labels.text_width(text) - width) <= 2, text


def test_a_run_with_one_kept_snapshot_or_none_yet_says_where_it_is():
    """Issue 56: the sidebar said "Step 0 (the run has just started)" for an interrupted run whose only snapshot is
    step 178, and "Preparing… until its step 0 exists" for a run at step 62."""
    from llmviz.lab.records import RunRecord
    from llmviz.lab.views import RunView
    from ui import model_sources, picker_sidebar

    interrupted = RunView.of(RunRecord("r1", "s", "training", "GPT micro", "interrupted", 2000, 178, model="gpt"))
    entry = model_sources._run_entry(interrupted, 1, None, [178])
    assert entry.steps == (178,) and entry.family == "gpt" and "interrupted at step 178 of 2000" in entry.note
    assert picker_sidebar.step_caption(178, training=False) == "Step 178 (its only kept snapshot)."
    running = RunView.of(RunRecord("r2", "s", "training", "GPT micro", "running", 2000, 62, model="gpt"))
    pending = model_sources._run_entry(running, 2, None, [])
    assert pending.family == "pending" and "at step 62" in pending.note and "step 0" not in pending.note
    fresh = RunView.of(RunRecord("r3", "s", "training", "GPT micro", "queued", 2000, 0, model="gpt"))
    assert "until its step 0 exists" in model_sources._run_entry(fresh, 3, None, []).note
