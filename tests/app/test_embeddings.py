"""The Embeddings page under AppTest: bad vectors, unknown tokens, word2vec and a small d_model give clear
messages, never an exception."""

import pytest

from tests.support.pages import assert_clean, by_label, finish_jobs, run_page, texts

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
    at = run_page("stages/embeddings.py", lazy_embeddings_minilm=True)  # the MiniLM part, opened
    by_label(at.text_area, "One sentence per line").set_value("☃☃☃").run()
    assert_clean(at)
    assert "at least two sentences" in texts(at.info)
    assert "[UNK]" in texts(at.info)
    by_label(at.text_area, "One sentence per line").set_value("").run()
    assert_clean(at)


def test_embeddings_word2vec_and_missing_words():
    at = run_page("stages/embeddings.py", corpus="names")  # every name occurs once: no word repeats
    by_label(at.slider, "Steps").set_value(100)
    finish_jobs(by_label(at.button, "Train word2vec").click().run())
    assert_clean(at, errors_expected=True)
    assert "fewer than two words" in texts(at.error)
    at = run_page("stages/embeddings.py", corpus="python-docs")
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
    at = run_page("stages/embeddings.py")
    by_label(at.slider, "d_model").set_value(d_model).run()
    assert_no_error_box(at)
    assert by_label(at.multiselect, "Dimensions").value == [d for d in (0, 1, 4, 10) if d < d_model]
    assert any("Token + position" in s.value for s in at.subheader), "the page goes on after the positions chart"
