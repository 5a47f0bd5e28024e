"""The Embeddings page under AppTest: bad vectors, unknown tokens, word2vec and a small d_model give clear
messages, never an exception."""

import json

import pytest
import torch

from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import assert_clean, by_label, finish_jobs, run_app, run_page, texts
from ui.stages import ROOT

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")


@pytest.mark.parametrize(
    "v2, message",
    [("1, 2", "different lengths"), ("0, 0, 0", "undefined"), ("0.1, x, 3", "not a number"), ("", "empty")],
)
def test_embeddings_bad_vectors(v2, message):
    at = run_page("stages/embeddings.py")
    by_label(at.text_input, "v₂").set_value(v2).run()
    assert_clean(at, errors_expected=True)
    assert message in texts(at.error)


def test_embeddings_single_sentence_and_unknown_tokens():
    at = run_page("stages/embeddings.py", embeddings_tab="Sentence embeddings")  # the MiniLM tab, opened
    by_label(at.text_area, "One sentence per line").set_value("☃☃☃").run()
    assert_clean(at)
    assert "at least two sentences" in texts(at.info)
    assert "[UNK]" in texts(at.info)
    by_label(at.text_area, "One sentence per line").set_value("").run()
    assert_clean(at)


def test_embeddings_word2vec_and_missing_words():
    at = run_page("stages/embeddings.py", corpus="names", embeddings_tab="Word2vec")  # every name occurs once
    by_label(at.slider, "Steps").set_value(100)
    finish_jobs(by_label(at.button, "Train word2vec").click().run())
    assert_clean(at, errors_expected=True)
    assert "fewer than two words" in texts(at.error)
    at = run_page("stages/embeddings.py", corpus="python-docs", embeddings_tab="Word2vec")
    by_label(at.slider, "Steps").set_value(100)
    finish_jobs(by_label(at.button, "Train word2vec").click().run())
    assert_clean(at)
    at.text_input(key="w2v_nn").set_value("zzzzqq").run()
    assert_clean(at)
    assert "not in the vocabulary" in texts(at.warning)


def assert_no_error_box(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("d_model", [2, 4, 6, 8, 10, 12])
def test_embeddings_small_d_model_keeps_the_page(d_model):
    at = run_page("stages/embeddings.py", embeddings_tab="Positions")  # the lesson's tab under the map
    by_label(at.slider, "d_model").set_value(d_model).run()
    assert_no_error_box(at)
    assert by_label(at.multiselect, "Dimensions").value == [d for d in (0, 1, 4, 10) if d < d_model]
    assert any("Token + position" in s.value for s in at.subheader), "the page goes on after the positions chart"


# ------------------------------------------------------------ the page opens on the map of the picked model's tokens


def test_the_page_opens_on_the_map_and_the_nearest_neighbours_of_a_common_word():
    at = run_page("stages/embeddings.py")
    assert_clean(at)
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    typed = at.text_input(key="words").value
    assert all(len(tokenizer.encode(" " + word)) == 1 for word in typed.split())  # every word one token
    looked_up = tokenizer.encode(at.text_input(key="gpt_nn").value)
    assert len(looked_up) == 1
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)  # the first chart: the map
    traces = {trace["name"]: trace for trace in chart["data"]}
    assert set(traces) == {"common token", "your tokens", "nearest neighbours", "looked up"}
    assert traces["looked up"]["customdata"] == looked_up
    # the neighbours, recomputed with PyTorch's own cosine over the whole table
    table = model.tok_emb.weight.detach()  # the GPT's token-embedding table (V, C)
    cosines = torch.nn.functional.cosine_similarity(table, table[looked_up[0]].unsqueeze(0), dim=-1)
    cosines[looked_up[0]] = -2  # the token itself is not its own neighbour
    expected = cosines.topk(10).indices.tolist()
    shown = next(d.value for d in at.dataframe if "cosine" in d.value.columns)
    assert shown["id"].tolist() == expected
    assert sorted(traces["nearest neighbours"]["customdata"]) == sorted(expected)


def test_a_names_model_compares_letters_and_looks_up_a_letter():
    """With a names model the page opened on the manual's words and " is", which it read as loose letters ("' is' is
    2 tokens for this tokenizer"): it compares the letters, vowels first, and looks up "a", each one token."""
    at = run_page("stages/embeddings.py", _picker_selected="shipped:names-transformer")
    assert_clean(at)
    _, tokenizer, _ = load_checkpoint(ROOT / "data" / "names-transformer")
    typed, query = at.text_input(key="words").value, at.text_input(key="gpt_nn").value
    assert typed.startswith("aeiou") and tokenizer.decode(tokenizer.encode(typed)) == typed
    assert query == "a" and len(tokenizer.encode(query)) == 1
    assert "tokens for this tokenizer" not in texts(at.warning)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    traces = {trace["name"]: trace for trace in chart["data"]}
    assert traces["looked up"]["customdata"] == tokenizer.encode("a")
    assert sorted(traces["your tokens"]["customdata"]) == sorted(
        set(tokenizer.encode(typed)) - set(tokenizer.encode("a")) - set(traces["nearest neighbours"]["customdata"])
    )


def test_step_0_vs_step_n_is_offered_only_where_the_model_has_steps():
    at = run_page("stages/embeddings.py")
    assert not [h.value for h in at.subheader if h.value.startswith("Step 0 vs step N")]


def test_the_lessons_are_tabs_under_the_map():
    at = run_page("stages/embeddings.py")
    assert [tab.label for tab in at.tabs] == ["Cosine similarity", "Positions", "Word2vec", "Sentence embeddings"]
    assert [h.value[:2] for h in at.header] == ["1.", "2."]


def test_two_of_your_tokens_are_worked_out_and_the_map_names_what_you_asked_about():
    """Issue 50 §10: two chosen words got no worked arithmetic, and the looked-up word and a neighbour had no label
    on the map. A cell of the cosine matrix is worked out (PyTorch's cosine of the two table rows), and every
    looked-up and neighbour point carries its label."""
    at = run_page("stages/embeddings.py")
    assert_clean(at)
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    table = model.tok_emb.weight.detach().double()  # (V, C)
    ids = list(dict.fromkeys(tokenizer.encode(at.text_input(key="words").value)))[:24]
    at.selectbox(key="cos_a").set_value(2)
    at.selectbox(key="cos_b").set_value(5).run()
    assert_clean(at)
    cosine = float(torch.nn.functional.cosine_similarity(table[ids[2]], table[ids[5]], dim=0))
    dot = float(table[ids[2]] @ table[ids[5]])
    worked = texts(at.latex)
    assert f"= {dot:.4f}" in worked and f"= {cosine:.4f}" in worked, worked
    assert f"{table.shape[1]} terms" in worked  # the sum runs over every dimension
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)  # the map
    traces = {trace["name"]: trace for trace in chart["data"]}
    # the token asked about and its nearest neighbour are always named (the other neighbours where a label has room:
    # labels never overlap, tests/browser/test_layout.py)
    for group, named in (("looked up", None), ("nearest neighbours", 1)):
        labels = traces[group]["text"][:named]
        assert all(labels), (group, labels)
        assert labels == [tokenizer.printable(i) for i in traces[group]["customdata"]][:named]


def test_a_label_by_the_maps_edge_points_inward():
    """The looked-up token and its neighbours are always named: by the plot's edge the label points inward."""
    from ui.panels.embeddings import inward_place

    box = ((0.0, 1.0), (0.0, 1.0))
    assert inward_place(0.95, 0.5, *box) == "top left" and inward_place(0.02, 0.97, *box) == "bottom right"
    assert inward_place(0.5, 0.5, *box) == "top center"


def test_word_vectors_come_back_in_a_new_session_of_their_student_only():
    """A reload (a new session of the same student) gives back the word vectors they trained, from the lab's kept
    file, with the explorer drawn on them; another student gets none (issue 56)."""
    import secrets

    from llmviz.jobs.default import default_manager

    student, other = (f"kept-w2v-{secrets.token_hex(6)}" for _ in range(2))
    at = run_app("stages/embeddings.py", corpus="python-docs", embeddings_tab="Word2vec", _llmviz_student_id=student)
    by_label(at.slider, "Steps").set_value(100)
    finish_jobs(by_label(at.button, "Train word2vec").click().run())
    assert_clean(at)
    corpus_name, trained, asked = at.session_state["w2v"]
    default_manager().keeper.flush()  # the keeper's next pass (once a second) writes it
    again = run_app("stages/embeddings.py", corpus="python-docs", embeddings_tab="Word2vec", _llmviz_student_id=student)
    assert_clean(again)
    name, kept, steps = again.session_state["w2v"]
    assert (name, steps, kept.step, kept.vocabulary.words) == (
        corpus_name,
        asked,
        trained.step,
        trained.vocabulary.words,
    )
    assert torch.equal(kept.model.center.weight, trained.model.center.weight)
    assert any(f"for {trained.step} steps" in caption.value for caption in again.caption)  # the explorer is drawn
    stranger = run_app(
        "stages/embeddings.py", corpus="python-docs", embeddings_tab="Word2vec", _llmviz_student_id=other
    )
    assert_clean(stranger)
    assert "w2v" not in stranger.session_state
