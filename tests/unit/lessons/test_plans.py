"""Lesson files (issue 69 §3): a bad file is one line with its file, line and what is wrong; the shipped ones read."""

from __future__ import annotations

import pytest

from llmviz.cli.main import main
from llmviz.lessons import plans

GOOD = 'title = "Mine"\n\n[[step]]\nview = "tokens?text=Hi"\npoll = "token-count"\n\n[[step]]\nview = "sampling"\n'


@pytest.mark.parametrize(
    "text, line, says",
    [
        ('title = "Mine"\n[[step]]\nview = "tokens\n', 3, "illegal character"),  # TOML's own error, its line
        ('title = "Mine"\n[[step]]\nview = "tokens"\n[[step]]\nteacher = "x"\n', 4, "step 2 has no view"),
        ('title = "Mine"\n[[step]]\nview = "tokens"\n\n[[step]]\nview = "nowhere"\n', 6, "opens no page"),
        ('title = "Mine"\n[[step]]\nview = "https://evil.example/"\n', 3, "not another address"),
        ('title = "Mine"\n[[step]]\nview = "sampling"\ncolour = "red"\n', 4, "unknown key 'colour'"),
        ('title = "Mine"\n[[step]]\nview = "sampling"\npoll = "token-count"\n', 4, "not a question of the sampling"),
        ('title = "Mine"\n[[step]]\nview = "tokens"\nstudents = 3\n', 4, "students must be text"),
        ('title = 5\n[[step]]\nview = "tokens"\n', 1, "the title must be text"),
        ('about = "no title"\n[[step]]\nview = "tokens"\n', 1, "needs a title"),
        ('title = "Mine"\n', 1, "at least one [[step]]"),
        ('title = "Mine"\nsteps = []\n', 2, "unknown key 'steps'"),
    ],
)
def test_a_bad_lesson_is_one_line_with_its_line_number(text, line, says):
    with pytest.raises(plans.LessonError) as bad:
        plans.parse(text, "mine.toml")
    message = str(bad.value)
    assert message.startswith(f"mine.toml, line {line}: ") and says in message and "\n" not in message, message


def test_sizes_are_bounded_before_the_file_is_read(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text(GOOD + "#" * plans.MAX_BYTES)
    with pytest.raises(plans.LessonError, match="at most 64 KB"):
        plans.load(big)
    many = 'title = "Many"\n' + '[[step]]\nview = "tokens"\n' * (plans.MAX_STEPS + 1)
    with pytest.raises(plans.LessonError, match=rf"line {2 * plans.MAX_STEPS + 2}: a lesson has at most"):
        plans.parse(many, "many.toml")


def test_a_good_lesson_reads_its_steps_in_order_and_the_shipped_lessons_read():
    lesson = plans.parse(GOOD, "mine.toml")
    assert [(s.page, s.poll, s.title) for s in lesson.steps] == [
        ("tokens", "token-count", "Step 1"),
        ("sampling", None, "Step 2"),
    ]
    shipped = plans.shipped()
    assert [lesson.title for lesson in shipped.values()] == ["From text to the next token", "How a model learns"]
    first = shipped["1-text-to-next-token"]
    assert [step.page for step in first.steps][:1] == ["tokens"] and first.steps[-1].page == "sampling"
    assert {"tokens", "embeddings", "attention", "model", "sampling"} <= {step.page for step in first.steps}
    assert {"training", "tuning"} == {step.page for step in shipped["2-how-a-model-learns"].steps}


def test_the_command_line_checks_a_lesson_file(tmp_path, capsys):
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(GOOD)
    bad.write_text(GOOD.replace('"sampling"', '"sampling?x=1"\npoll = "no-such"'))
    assert main(["lesson", "check", str(good)]) == 0
    assert "Mine: 2 steps, 1 polls" in capsys.readouterr().out
    assert main(["lesson", "check", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (
        'error: bad.toml, line 9: step 2\'s poll "no-such" is not a question of the sampling page (greedy-next, '
        "tokens-kept, temperature-entropy)."
    )
    assert main(["lesson", "list"]) == 0
    assert "How a model learns" in capsys.readouterr().out
