"""The Tuning page under AppTest: it opens on the shipped base, SFT and DPO models answering a held-out question, the
answers and the figures drawn from the library's own numbers (llmviz.lessons.tuning), and a typed question is
answered by all three."""

from __future__ import annotations

from llmviz.lessons import tuning
from tests.support.pages import assert_clean, by_label, run_page, texts


def test_the_page_opens_on_the_three_models_answering_a_held_out_question():
    at = run_page("stages/tuning.py")
    assert_clean(at)
    question = by_label(at.selectbox, "A held-out question").value
    assert question in tuning.example_prompts()
    assert "Greedy." in texts(at.caption)
    assert "The prompt, in the template" in texts(at.markdown)


def test_a_typed_question_is_answered_and_a_long_one_is_bounded():
    at = run_page("stages/tuning.py")
    by_label(at.text_input, "Your own question").set_value("What does the with statement do?").run()
    assert_clean(at)
    assert any("What does the with statement do?" in code.value for code in at.code)
