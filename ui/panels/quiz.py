"""Predict, then reveal: draws llmviz.lessons.quiz questions, keeps the session's score.

A page builds its questions with ``llmviz.lessons.quiz`` (from the live model and the student's text) and
calls :func:`section`. Each question: pick an answer, press Reveal; the first answer counts
for the score, the explanation shows the computation.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.lessons.quiz import Question, markdown_literal
from ui import class_live, state
from ui.panels import class_poll


def score() -> tuple[int, int]:
    """(right, answered) over the whole session."""
    answers = state.QUIZ_ANSWERS.get()
    return sum(1 for _, _, right in answers.values() if right), len(answers)


def _reveal(question: Question, page: str, widget_key: str) -> None:
    choice = state.value(widget_key)
    if choice not in question.options:  # none yet (or a label no browser was shown: ui.streamlit_private refuses it)
        return
    answers = state.QUIZ_ANSWERS.setdefault()
    if question.key not in answers:  # the first answer counts
        index = question.options.index(choice)
        answers[question.key] = (page, index, question.check(index))


def ask(question: Question, page: str, number: int) -> None:
    """One question: options, a Reveal button, then the verdict and the computation."""
    answers = state.QUIZ_ANSWERS.get()
    widget_key = state.widget("quiz_choice_", page, question.key)
    with st.container(border=True):
        st.markdown(f"**Q{number}.** {question.prompt}")
        if class_live.teacher():  # the teacher asks the class this question, and sees the answers arrive here
            class_poll.ask_button(page, question)
            class_poll.asked_here(question.key)
        revealed = question.key in answers
        choice = st.radio(
            "Your prediction",
            question.options,
            index=None,
            key=widget_key,
            horizontal=True,
            disabled=revealed,
            label_visibility="collapsed",
            format_func=markdown_literal,
        )
        if not revealed:
            st.button(
                "Reveal",
                key=state.widget("quiz_reveal_", page, question.key),
                disabled=choice is None,
                on_click=_reveal,
                args=(question, page, widget_key),
                help="Commit to a guess first: the first answer counts for your score.",
            )
            return
        _, index, right = answers[question.key]
        truth = question.options[question.answer]
        if right:
            st.success(f"Right: “{markdown_literal(truth)}”.", icon=":material/check_circle:")
        else:
            st.error(
                f"Not quite: you said “{markdown_literal(question.options[index])}”; the answer is "
                f"“{markdown_literal(truth)}”.",
                icon=":material/cancel:",
            )
        st.markdown(question.explanation)


def section(page: str, build: Callable[[], list[Question]], title: str = "Predict, then reveal") -> None:
    """A page's questions, in an expander placed before the charts that give the answers away.

    ``build()`` makes the questions (only once the student asks for them, so a costly question,
    such as two short training runs, costs nothing until then); an LlmvizError becomes a notice.
    """
    right, answered = score()
    # its key marks the questions for presenter mode, which shows them last (ui/static/presenter.js)
    with (
        st.container(key=state.widget("questions_", page)),
        st.expander(
            f"{title}: guess before you look", expanded=bool(state.QUIZ_OPEN.get(page)), icon=":material/quiz:"
        ),
    ):
        st.caption(
            "Each answer is computed from the model and your own settings, right now — never written "
            "down in advance. The first answer you reveal counts. "
            + (f"Your score this session: **{right} of {answered}**." if answered else "")
        )
        if not state.QUIZ_OPEN.get(page):
            st.button(
                "Ask me",
                key=state.widget("quiz_ask_", page),
                type="primary",
                on_click=lambda: state.QUIZ_OPEN.set(True, page),
            )
            return
        from ui.errors import friendly_errors  # any other error: a message in the expander, never a traceback

        questions = None
        with friendly_errors("the questions"):
            try:
                questions = build()
            except QuizPending as pending:
                st.progress(pending.fraction, text=str(pending))
                st.button(
                    "Show the questions",
                    key=state.widget("quiz_pending_", page),
                    help="The runs train in the background; this looks again.",
                )
            except LlmvizError as error:
                st.info(str(error))
        for number, question in enumerate(questions or [], start=1):
            ask(question, page, number)


class QuizPending(LlmvizError):
    """A question's computation is still running as a job of this session (shown with its progress)."""

    def __init__(self, message: str, fraction: float):
        super().__init__(message)
        self.fraction = fraction


_RESULTS: dict[tuple, tuple[float, float]] = {}  # (setting) → the two losses: shared, every session computes the same


def short_run_losses(text: str, model: str, optimizer: str, lr: float, seed: int, steps: int) -> tuple[float, float]:
    """The final losses of two short runs at ``lr`` and ``10 × lr``, trained as a job of this browser session
    (a worker process, counted in the session's share of the server like any run); raises :class:`QuizPending`
    while they train. Results are kept per setting for everybody: the same setting never trains twice."""
    import functools

    from llmviz.data.corpus import text_key
    from llmviz.lessons.quiz import learning_rate_pair
    from ui import picker

    setting = (text_key(text[:100_000]), model, optimizer, lr, seed, steps)  # the text's content, never its name
    if setting in _RESULTS:
        return _RESULTS[setting]
    mine = picker.runs()
    jobs = state.QUIZ_JOBS.setdefault()
    job = mine.live(jobs.get(setting, ""))
    if job is None:
        job = mine.submit_task(
            functools.partial(
                learning_rate_pair, text=text[:100_000], model=model, optimizer=optimizer, lr=lr, seed=seed, steps=steps
            ),
            label="quiz: two short runs",
            total=2 * steps,
        )
        jobs[setting] = job.id
    status = job.status()
    if status.done:
        if job.result is None:
            raise LlmvizError(f"The two short runs for this question did not finish ({status.describe()}).")
        _RESULTS[setting] = tuple(job.result)
        return _RESULTS[setting]
    raise QuizPending(
        f"Training twice for {steps} steps to answer the learning-rate question: {status.describe()}", status.fraction
    )
