"""The Inside the model page under AppTest, and its logit lens charts (ui/panels/inside.py): a readable window of
positions, a legend, what the head scores are measured on, and the induction run."""

import pytest
import torch

from llmviz.interpret.lens import sequence_logit_lens
from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import JOB_TIMEOUT, assert_clean, by_label, run_app, run_page, texts
from tests.support.paths import DATA
from ui import charts
from ui.panels import inside_lens
from ui.stages import ROOT


def test_training_the_induction_run_again_keeps_both_runs_apart(fresh_session_jobs):
    """'Train it again' on Inside the model gave the new run the same label as the first: the Training page keys
    its runs by label, so the first run vanished from its chart, table and 'Download a run'."""
    from llmviz.jobs.default import default_manager

    at = run_app("stages/inside.py", look="Induction run")  # its tab (the page opens on the logit lens)
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
    at.switch_page(str(ROOT / "stages/training.py")).run()
    assert_clean(at)
    download = next(box for box in at.selectbox if box.label == "Download a run")
    assert sorted(download.options) == sorted(labels), (download.options, labels)


def test_inside_says_what_the_head_scores_are_measured_on_and_that_train_it_picks_the_run():
    from tests.support.pages import texts
    from ui import picker

    at = run_page("stages/inside.py", look="Head detectors")
    config = picker.shipped_default().model.config
    half = min(20, config.context_length // 2, config.vocab_size)  # model_head_scores' test input: half, twice
    shown = texts(at.markdown)
    assert f"{half} distinct random tokens of this model's vocabulary, repeated twice ({2 * half} tokens" in shown
    at = run_page("stages/inside.py", look="Induction run")  # the sections are tabs now (the page opens on the lens)
    assert "differ a little from the Head detectors tab's heatmap" in texts(at.markdown)
    assert "becomes the model picked in the sidebar" in texts(at.caption)


def test_induction_run_offers_the_model_picked_before_back():
    import time

    from llmviz.jobs.default import default_manager
    from tests.support.pages import by_label

    at = run_page("stages/inside.py", look="Induction run")
    before = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page").value
    at.button(key="induction_start").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    try:
        deadline = time.time() + JOB_TIMEOUT
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
    lens = sequence_logit_lens(model.eval(), ids, k=5)
    tokens = [tokenizer.printable(i) for i in ids]
    return lens, tokens, charts.unique_labels(tokens), tokenizer.printable


def test_the_window_stays_inside_the_sentence():
    assert inside_lens.window(32, 0) == range(0, 10)
    assert inside_lens.window(32, 40) == range(22, 32)
    assert inside_lens.window(4, 2) == range(0, 4)
    assert inside_lens.window(32, -3) == range(0, 10)


def test_the_grid_shows_a_window_in_14_px_type(shipped_lens):
    lens, tokens, columns, name = shipped_lens
    assert len(tokens) > inside_lens.WINDOW  # before: every one of the 32 positions in one chart, text about 6 px
    shown = inside_lens.window(len(tokens), 12)
    assert len(shown) == inside_lens.WINDOW and 12 in shown
    figure = inside_lens.grid_figure(lens, tokens, columns, name, shown)
    heat = figure.data[0]
    assert list(heat.x) == columns[shown.start : shown.stop] and list(heat.y) == lens.layer_names
    assert heat.textfont.size >= 14 and figure.layout.xaxis.tickfont.size >= 13
    # each cell: the top token after that layer at that position, and its probability as the colour
    top = lens.top_probs[:, shown.start : shown.stop, 0]
    assert torch.tensor(heat.z).allclose(top)
    last = [name(int(i)) for i in lens.top_ids[-1, shown.start : shown.stop, 0]]
    assert list(heat.text[-1]) == last


def test_the_per_layer_chart_has_a_legend_and_one_position_in_colour(shipped_lens):
    lens, tokens, columns, _ = shipped_lens
    positions = inside_lens.window(len(tokens), 0)
    figure = inside_lens.true_token_figure(lens, tokens, columns, positions, picked=3)
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
    assert any("logit lens" in h for h in headers)  # the page opens on the logit lens, and on it alone
    for tab in ("Head detectors", "Loss per token"):  # the other sections are tabs, run only when open
        at = run_page(PAGE, look=tab)
        assert not at.error, [e.value for e in at.error]
        headers += [h.value for h in at.header]
    assert any("logit lens" in h for h in headers) and any("Head detectors" in h for h in headers)
    assert any("loss on every token" in h for h in headers)


def test_a_new_sentence_follows_its_own_clearest_position_as_a_link_to_it_reopens():
    """Typing another sentence into the lens moves "Follow one position" to that sentence's clearest position, the one
    a link to the page reopens: the position kept from the sentence before stayed shown, while the link (which leaves
    a default out) reopened another (found by tests/browser/test_pages.py's Inside reopening)."""
    sentence = "The while loop repeats a block of code"
    at = run_page(PAGE)
    by_label(at.text_input, "A sentence").set_value(sentence).run()
    assert_clean(at)
    typed = by_label(at.selectbox, "Follow one position").value
    reopened = run_app(PAGE, {"lens_text": sentence})
    assert_clean(reopened)
    assert typed == by_label(reopened.selectbox, "Follow one position").value


def test_inside_page_survives_empty_and_odd_text():
    at = run_page(PAGE, lens_text="", loss_text="\x00\x01 ☃")
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]


# ------------------------------------------------------------------ the interventions' tabs


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")
    return model.eval(), tokenizer


def test_knock_out_heads_reveals_every_heads_effect_after_a_guess(shipped):
    """Predict, then reveal: the grid appears when asked for; its numbers (in the caption) are those of plain PyTorch
    hooks on W_O's input; the guess is ranked; several heads knocked out together give the loss a hook gives."""
    from tests.support.interventions import ablated_loss
    from tests.support.pages import texts

    model, tokenizer = shipped
    at = run_page(PAGE, look="Knock out heads")
    assert "knocked out one after the other" in texts(at.caption) and not at.get("plotly_chart")
    at.selectbox(key="ablation_guess").set_value((1, 2)).run()
    at.button(key="ablation_run").click().run()
    assert_clean(at)
    ids = torch.tensor([tokenizer.encode(at.text_area(key="ablate_text").value)])
    clean = float(ablated_loss(model, ids, [])[0])
    heads = [(layer, head) for layer in range(model.config.n_layers) for head in range(model.config.n_heads)]
    effects = {pair: float(ablated_loss(model, ids, [pair])[0]) - clean for pair in heads}
    ranked = sorted(heads, key=lambda pair: effects[pair], reverse=True)
    caption = texts(at.caption)
    assert f"is {clean:.4f} nats with every head" in caption, caption
    top = ranked[0]
    assert f"Knocking out layer {top[0]}, head {top[1]} changes it most: {effects[top]:+.4f}" in caption, caption
    assert f"Your guess, **layer 1, head 2**, comes {ranked.index((1, 2)) + 1} of {len(heads)}" in texts(at.markdown)
    at.multiselect(key="knocked").set_value(["0.3", "2.1"]).run()
    assert_clean(at)
    after = float(ablated_loss(model, ids, [(0, 3), (2, 1)])[0])
    assert any(f"{after:.4f} - {clean:.4f}" in formula.value for formula in at.latex), [f.value for f in at.latex]


def test_patch_activations_draws_the_share_restored(shipped):
    from tests.support.interventions import patched_logits
    from tests.support.pages import texts

    model, tokenizer = shipped
    at = run_page(PAGE, look="Patch activations")  # the default pair's picture is drawn at once: no button pressed
    assert_clean(at)
    # issue 72 §7: the section opens on that picture, with no "Patch every one" button before it
    assert not [button for button in at.button if button.key == "patching_run"]
    clean = torch.tensor([tokenizer.encode(at.text_input(key="patch_clean").value)])
    corrupted = torch.tensor([tokenizer.encode(at.text_input(key="patch_corrupted").value)])
    with torch.no_grad():
        clean_logits, corrupted_logits = model(clean)[0][0, -1], model(corrupted)[0][0, -1]
    answer = int(clean_logits.argmax())  # the clean run's top token; the corrupted run's top other token
    wrong = next(token for token in corrupted_logits.argsort(descending=True).tolist() if token != answer)
    assert wrong == int(corrupted_logits.argmax())  # the corruption changes the answer
    assert [tokenizer.decode([t]) for t in (answer, wrong)] == [" function", " coroutine"]  # words, not a quote mark
    d_clean = float(clean_logits[answer] - clean_logits[wrong])
    d_corrupted = float(corrupted_logits[answer] - corrupted_logits[wrong])
    assert any(f"{d_clean:.3f} - ({d_corrupted:.3f})" in f.value for f in at.latex), [f.value for f in at.latex]
    first = next(i for i, (a, b) in enumerate(zip(clean[0].tolist(), corrupted[0].tolist())) if a != b)
    share = {}
    for layer in range(model.config.n_layers):
        for position in range(first + 1, clean.shape[1]):
            logits = patched_logits(model, clean, corrupted, "resid_pre", layer, position)[0, -1]
            share[(layer, position)] = (float(logits[answer] - logits[wrong]) - d_corrupted) / (d_clean - d_corrupted)
    layer, position = max(share, key=share.get)
    assert f"The most after the changed token: layer {layer}, " in texts(at.caption)
    assert f"({share[(layer, position)]:.2f})." in texts(at.caption)
    # another component: the student guesses first, the button draws it
    at.radio(key="patch_component").set_value("mlp.out").run()
    assert "Before you press: where do you expect the answer to be?" in texts(at.caption)
    # a corrupted prompt of another length: one line in the page, nothing else breaks
    at.text_input(key="patch_corrupted").set_value("The if statement").run()
    assert not at.exception and any("same number of tokens" in e.value for e in at.error)


def test_steering_with_alpha_zero_writes_the_same_text_and_says_how_long_the_direction_is(shipped):
    from tests.support.interventions import block_inputs
    from tests.support.pages import texts

    model, tokenizer = shipped
    at = run_page(PAGE, look="Steer", steer_alpha=0.0)
    plain, steered = [block.value for block in at.code][-2:]
    assert plain == steered and plain.startswith(at.text_input(key="steer_prompt").value)
    at.slider(key="steer_alpha").set_value(2.0).run()
    assert_clean(at)
    layer = at.slider(key="steer_layer").value

    def mean(lines):
        rows = [block_inputs(model, torch.tensor([tokenizer.encode(line)]))[layer][0] for line in lines.splitlines()]
        return torch.cat(rows).mean(0)

    direction = mean(at.text_area(key="steer_positive").value) - mean(at.text_area(key="steer_negative").value)
    assert f"|α · direction| = {2.0 * float(direction.norm()):.2f}" in texts(at.caption)
    at.radio(key="steer_kind").set_value("token").run()
    at.text_input(key="steer_token").set_value("two tokens here").run()
    assert not at.exception and any("Type one token" in e.value for e in at.error)


def test_a_sweep_too_large_for_the_page_runs_as_a_lab_job(shipped, fresh_session_jobs, monkeypatch):
    """GPT-2 and larger: the sweep is a job of the session (progress, Stop) and its grid appears when it ends, the
    same grid the page computes itself for a small model."""
    from llmviz.interpret import interventions
    from tests.support.pages import finish_jobs, session_jobs, texts

    at = run_page(PAGE, look="Knock out heads")
    at.button(key="ablation_run").click().run()
    in_page = [c for c in texts(at.caption).split(". ") if "nats with every head" in c]
    monkeypatch.setattr(interventions, "IN_PAGE_WORK", 0.0)  # every sweep is now "too large"
    at = run_page(PAGE, look="Knock out heads")
    at.button(key="ablation_run").click().run()
    [job] = session_jobs(at, kind="task")
    assert job.label.startswith("Knock out every head")
    finish_jobs(at)
    at.run()
    assert_clean(at)
    assert in_page and in_page[0] in texts(at.caption)
    # steering too: both texts written by a job, the same texts as in the page
    at = run_page(PAGE, look="Steer")
    at.button(key="steer_run").click().run()
    [writer] = [job for job in session_jobs(at, kind="task") if job.label.startswith("Steering")]
    finish_jobs(at)
    at.run()
    assert_clean(at)
    monkeypatch.undo()
    written = [block.value for block in at.code][-2:]
    at = run_page(PAGE, look="Steer")
    assert [block.value for block in at.code][-2:] == written


def test_a_character_level_run_says_once_in_the_page_that_it_cannot_read_the_text(fresh_session_jobs, caplog):
    """The issue: after the induction run the server's console printed 26 lines of "encoding the Inside page's text
    failed" (its tokenizer knows 62 characters and the newline; the default sentence has quotes and spaces). Now the
    lens opens on a text the run reads (a name) and, for a sentence of the manual typed in, says in the page that it
    cannot read it; nothing is logged."""
    import logging
    import time

    from llmviz.jobs.default import default_manager
    from tests.support.pages import texts

    at = run_page("stages/inside.py", look="Induction run")
    at.button(key="induction_start").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    try:
        deadline = time.time() + 120
        while job.snapshots is None or not job.snapshots.steps():
            assert time.time() < deadline
            time.sleep(0.2)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            at.session_state["look"] = "Logit lens"  # the first tab: the link then carries no look= at all
            at.query_params.pop("look", None)
            at.run()
            assert at.text_input(key="lens_text").value == "charlotte"
            at.text_input(key="lens_text").set_value('The "while" statement').run()  # quotes and spaces
            for _ in range(3):  # the page redrawn, as a live refresh would
                at.run()
        assert_clean(at)
        assert "This model's tokenizer cannot read that text" in texts(at.caption)
        assert not [r for r in caplog.records if "encoding" in r.getMessage()], [r.getMessage() for r in caplog.records]
    finally:
        job.stop()
        assert job.wait(timeout=60)


def test_a_link_with_only_a_tabs_settings_opens_that_tab():
    """A link made before the tabs (or by hand) carries a section's settings and no ``look``: it opens the tab that
    reads them, as the other pages' lessons do."""
    at = run_app(PAGE, query={"patch_clean": "A list is a", "patch_corrupted": "A tuple is a"})
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["look"] == "Patch activations"
    assert at.text_input(key="patch_clean").value == "A list is a"


# ------------------------------------------------------------------ the Features tab (a sparse autoencoder's)
def shipped_browser():
    """The shipped GPT, its shipped autoencoder and the browser's corpus index, computed here with the library."""
    from llmviz.interpret import sae
    from llmviz.lessons.inside import feature_corpus, feature_corpus_ids

    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")
    loaded = sae.load(DATA / "gpt-python-docs-sae", model)
    ids = feature_corpus_ids(tokenizer, (DATA / "python-manual.txt").read_text(encoding="utf-8"))
    return model, tokenizer, loaded, feature_corpus(model, loaded.sae, loaded.hook, ids)


def test_the_features_tab_opens_on_the_shipped_autoencoders_browser_and_a_picked_feature_shows_its_contexts():
    from llmviz.interpret import features
    from tests.support.pages import by_label, texts

    model, tokenizer, loaded, corpus = shipped_browser()
    opening = corpus.order[0]  # the most readable feature (tests/unit/lessons/test_inside_features.py)
    at = run_page("stages/inside.py", look="Features")
    assert by_label(at.selectbox, "Autoencoder").value == "shipped"
    assert by_label(at.number_input, "Feature").value == opening
    shown = texts(at.markdown)
    assert (
        f"**Feature {opening}** fires on {float(corpus.index.frequency[opening]):.2%} of the corpus's tokens" in shown
    )
    assert f"1,024 features at blocks.2.resid_post, read on {corpus.index.tokens:,} tokens" in texts(at.caption)
    table = at.dataframe[0].value
    assert table["feature"].tolist()[:5] == corpus.order[:5]
    # another feature picked: its own top contexts, with the activation of each token as the chip's title
    other = corpus.order[3]
    by_label(at.number_input, "Feature").set_value(other).run()
    assert_clean(at)
    top = features.contexts(loaded.sae, corpus.acts, corpus.ids, corpus.index, other, count=1)[0]
    shown = texts(at.markdown)
    assert f"**Feature {other}** fires on" in shown
    assert f'title="activation {top.values[top.peak]:.3f}"' in shown


def test_the_features_tab_searches_a_text_and_keeps_a_label_out_of_the_shipped_files():
    from llmviz.interpret import features
    from tests.support.pages import by_label, texts

    model, tokenizer, loaded, _ = shipped_browser()
    at = run_page("stages/inside.py", look="Features")
    text = 'The "while" statement'
    by_label(at.text_input, "Text").set_value(text).run()
    assert_clean(at)
    found = features.search(model, loaded.sae, loaded.hook, tokenizer.encode(text), top=5)
    assert f"Strongest on this text: **{found.overall[0][0]}** {found.overall[0][1]:.2f}" in texts(at.markdown)
    feature = by_label(at.number_input, "Feature").value
    box = next(t for t in at.text_input if t.label == f"Your label for feature {feature}")
    box.set_value("a keyword").run()
    assert_clean(at)
    row = at.dataframe[0].value.set_index("feature")
    assert feature not in row.index or row.loc[feature, "label"] == "a keyword"
    assert not (DATA / "gpt-python-docs-sae" / "labels.json").exists()  # the shipped autoencoder is read-only


def test_the_features_tab_refuses_an_autoencoder_for_another_model_with_the_librarys_reason(tmp_path, monkeypatch):
    from llmviz.training.checkpoint import save_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer
    from tests.support.pages import texts

    trainer = Trainer.from_text(
        "hello world\n" * 40,
        TrainConfig(model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=1),
    )
    for _ in trainer.run():
        pass
    folder = tmp_path / "runs"
    save_checkpoint(folder / "tiny", trainer)
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(folder))
    at = run_page("stages/inside.py", look="Features", _picker_selected="dir:tiny")
    warned = texts(at.warning)
    assert "This autoencoder is for another model: Layer 2 does not exist" in warned, warned
    assert not at.dataframe  # no browser drawn for it


def test_steering_and_knocking_out_a_feature_in_the_features_tab():
    from llmviz.interpret.features import knock_out
    from llmviz.lessons.inside import DEFAULT_LOSS_TEXT, knockout_default
    from tests.support.pages import texts

    model, tokenizer, loaded, _ = shipped_browser()
    at = run_page("stages/inside.py", look="Features", lazy_feature_steer=True, lazy_feature_knockout=True)
    feature = next(n for n in at.number_input if n.label == "Feature").value
    assert f"With α = 10 × feature {feature}'s direction at blocks.2.resid_post" in texts(at.markdown)
    ids = tokenizer.encode(DEFAULT_LOSS_TEXT)
    knocked = knockout_default(model, loaded.sae, loaded.hook, ids)  # the strongest feature on the text
    result = knock_out(model, loaded.sae, loaded.hook, ids, [knocked], "subtract")
    before, after = float(result.before.mean()), float(result.after.mean())
    assert f"{after:.4f} - {before:.4f} = {after - before:+.4f}" in texts(at.latex)


def test_an_autoencoder_trained_in_the_features_tab_is_a_lab_run_and_the_browser_opens_on_it(fresh_session_jobs):
    from llmviz.jobs.default import default_manager
    from llmviz.lab.identity import student_key
    from llmviz.lab.service import default_lab
    from tests.support.pages import by_label, texts

    at = run_page("stages/inside.py", look="Features", lazy_sae_train=True)
    by_label(at.selectbox, "Hook point").set_value("blocks.1.resid_post")
    by_label(at.select_slider, "Dictionary size").set_value(256)
    by_label(at.slider, "Steps").set_value(50)
    at.run()
    at.button(key="sae_train").click().run()
    assert_clean(at)
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    kept = default_lab().runs(student_key(at.session_state["_llmviz_session_id"]), None)
    assert next(row.kind for row in kept if row.id == job.id) == "autoencoder"  # from its first row, before it is built
    assert job.wait(timeout=JOB_TIMEOUT) and job.status().state.value == "finished", job.status().describe()
    at.run()
    assert_clean(at)
    assert by_label(at.selectbox, "Autoencoder").value == f"run:{job.id}"  # the browser shows it once it ends
    assert "256 features at blocks.1.resid_post" in texts(at.caption)
    models = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page")
    assert not any("SAE" in str(option) for option in models.options), models.options  # not a model to pick
    assert len(job.status().metrics) == 50 and job.status().metrics[-1].spliced is not None
    at.switch_page(str(ROOT / "stages/training.py")).run()  # the Training page lists models' runs only
    assert_clean(at)
    assert not any(box.label == "Download a run" and box.options for box in at.selectbox)
    # a reload after a restart: no job in memory, nothing in the tab's state; the lab's record opens it again. A
    # restart writes the lab's last rows first (close_for_restart); without it, the keeper writes them within its
    # next second (CI's whole suite reloaded within that second: the row still said "running at step 0")
    default_manager().keeper.flush()
    default_manager().sessions.end_session(at.session_state["_llmviz_session_id"])
    at.session_state["inside_sae_runs"] = {}
    at.switch_page(str(ROOT / "stages/inside.py")).run()
    assert_clean(at)
    box = by_label(at.selectbox, "Autoencoder")
    assert any(option.startswith("Yours: SAE blocks.1.resid_post") for option in box.options), box.options
    box.set_value(f"run:{job.id}").run()
    assert_clean(at)
    assert "256 features at blocks.1.resid_post" in texts(at.caption)


def test_the_features_tab_reads_the_corpus_picked_in_the_sidebar():
    from llmviz.data.corpus import info, load
    from llmviz.lessons.inside import feature_corpus, feature_corpus_ids
    from tests.support.pages import texts

    model, tokenizer, loaded, _ = shipped_browser()
    at = run_page("stages/inside.py", look="Features", corpus="names")
    corpus = feature_corpus(model, loaded.sae, loaded.hook, feature_corpus_ids(tokenizer, load("names")))
    index = corpus.index
    assert f"read on {index.tokens:,} tokens of {info('names').title}" in texts(at.caption)
    assert at.dataframe[0].value["feature"].tolist()[:5] == corpus.order[:5]


def test_a_hostile_features_link_is_bounded_not_a_traceback():
    """A feature beyond the dictionary opens the browser on its opening feature; a search text longer than the box
    is cut to 2,000 characters by the link, and one longer than the context is read up to the context with a note
    (it was an error box: "The search text is 500 tokens long")."""
    from tests.support.pages import by_label, texts

    at = run_app("stages/inside.py", query={"look": "Features", "feature": "5000", "feature_search": "x" * 2500})
    assert_clean(at)
    assert 0 <= by_label(at.number_input, "Feature").value < 1024
    assert len(by_label(at.text_input, "Text").value) == 2000
    assert "Only the first 128 of its 500 tokens are shown." in texts(at.caption)


def test_the_lens_says_why_its_embedding_row_predicts_the_token_it_reads():
    """Issue 50 §10: the logit lens's first row predicted each token itself at p ≈ 1, unexplained. By hand: the
    embedding (token + position) through the final LayerNorm and the tied head, softmax; the page says how often that
    row echoes the token, and why (the head is the embedding table)."""
    from llmviz.lessons.inside import DEFAULT_SENTENCE

    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")
    model.eval()
    ids = tokenizer.encode(DEFAULT_SENTENCE)[:32]
    with torch.no_grad():
        x = model.tok_emb.weight[ids] + model.pos_emb.weight[: len(ids)]  # (T, d)
        probs = torch.softmax(
            torch.nn.functional.layer_norm(x, (x.shape[-1],), model.ln_f.scale, model.ln_f.shift, model.ln_f.eps)
            @ model.tok_emb.weight.T,
            dim=-1,
        )
    top = probs.argmax(dim=-1)  # (T,)
    itself = top == torch.tensor(ids)
    assert model.lm_head.weight is model.tok_emb.weight and bool(itself.float().mean() >= 0.5)
    at = run_page("stages/inside.py")
    assert_clean(at)
    lens_text = " ".join(m.value for m in at.markdown)
    share = float(itself.float().mean())
    assert f"predicts the token it reads at {share:.0%} of positions" in lens_text, lens_text[:600]
    assert f"(p ≈ {float(probs[itself, top[itself]].mean()):.2f})" in lens_text
    assert "**tied** to its embedding" in lens_text


def test_a_pair_whose_corruption_keeps_the_answer_is_said_in_words_not_drawn(shipped):
    """Issue 50 §6: the default pair ('for' / 'if') made the same token most likely after both prompts (a plain
    forward pass says so), and the page drew shares of 2.88 and −0.65 under "1 = brings the clean answer back". Such
    a pair is now said in words, with no grid; the default pair's corruption changes the answer."""
    from llmviz.lessons.inside import DEFAULT_CLEAN, DEFAULT_CORRUPTED

    model, tokenizer = shipped

    def top(text: str) -> int:
        with torch.no_grad():
            return int(model(torch.tensor([tokenizer.encode(text)]))[0][0, -1].argmax())

    old_clean, old_corrupted = (
        'The "for" statement is used to iterate over the elements of a',
        'The "if" statement is used to iterate over the elements of a',
    )
    assert top(old_clean) == top(old_corrupted) and top(DEFAULT_CLEAN) != top(DEFAULT_CORRUPTED)
    at = run_app(PAGE, query={"look": "Patch activations", "patch_clean": old_clean, "patch_corrupted": old_corrupted})
    assert any("does not change the answer" in w.value for w in at.warning), [w.value for w in at.warning]
    at.button(key="patching_run").click().run()
    assert_clean(at)
    assert not [c for c in at.get("plotly_chart") if "restored" in c.proto.spec]  # no shares drawn
    assert any("does not change the answer" in w.value for w in at.warning)
    default = run_page(PAGE, look="Patch activations")
    assert not [w for w in default.warning if "does not change the answer" in w.value]


@pytest.mark.parametrize(
    ("look", "label", "key", "kind"),
    [
        ("Logit lens", "A sentence", "lens_text", "text_input"),
        ("Loss per token", "Any text", "loss_text", "text_area"),
        ("Knock out heads", "Text", "ablate_text", "text_area"),
        ("Patch activations", "Clean prompt", "patch_clean", "text_input"),
        ("Steer", "Prompt", "steer_prompt", "text_input"),
    ],
)
def test_a_paste_longer_than_the_inside_page_uses_lands_and_is_cut_with_a_word(look, label, key, kind):
    """The Inside page's boxes dropped a paste longer than their max_chars without a word (noticed with Attention's):
    each takes ten times what the page uses (ui.boxes) and the page uses the first part, saying so under the box."""
    from llmviz.lessons.inside import TEXT_LIMITS

    limit = TEXT_LIMITS[key]
    at = run_page("stages/inside.py", look=look)
    box = by_label(getattr(at, kind), label)
    assert box.proto.max_chars == 10 * limit
    box.set_value("the cat sat on the mat. " * (limit // 24 + 10)).run()
    assert_clean(at, errors_expected=True)  # a text longer than the model reads: "shorten it", one line
    pasted = len("the cat sat on the mat. " * (limit // 24 + 10))
    assert f"is {pasted:,} characters long: this page uses its first {limit:,}." in texts(at.caption)
