"""Predict, then reveal: draws llmviz.quiz questions, keeps the session's score.

A page builds its questions with ``llmviz.quiz`` (from the live model and the student's text) and
calls :func:`section`. Each question: pick an answer, press Reveal; the first answer counts
for the score, the explanation shows the computation.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.quiz import Question, markdown_literal

_ANSWERS = "quiz_answers"  # question key → (page, chosen option index, correct?)


def score() -> tuple[int, int]:
    """(right, answered) over the whole session."""
    answers = st.session_state.get(_ANSWERS, {})
    return sum(1 for _, _, right in answers.values() if right), len(answers)


def _reveal(question: Question, page: str, widget_key: str) -> None:
    choice = st.session_state.get(widget_key)
    if choice is None:
        return
    answers = st.session_state.setdefault(_ANSWERS, {})
    if question.key not in answers:  # the first answer counts
        index = question.options.index(choice)
        answers[question.key] = (page, index, question.check(index))


def ask(question: Question, page: str, number: int) -> None:
    """One question: options, a Reveal button, then the verdict and the computation."""
    answers = st.session_state.get(_ANSWERS, {})
    widget_key = f"quiz_{page}_{question.key}"
    with st.container(border=True):
        st.markdown(f"**Q{number}.** {question.prompt}")
        revealed = question.key in answers
        choice = st.radio("Your prediction", question.options, index=None, key=widget_key, horizontal=True,
                          disabled=revealed, label_visibility="collapsed", format_func=markdown_literal)
        if not revealed:
            st.button("Reveal", key=f"{widget_key}_reveal", disabled=choice is None,
                      on_click=_reveal, args=(question, page, widget_key),
                      help="Commit to a guess first: the first answer counts for your score.")
            return
        _, index, right = answers[question.key]
        truth = question.options[question.answer]
        if right:
            st.success(f"Right: “{markdown_literal(truth)}”.", icon=":material/check_circle:")
        else:
            st.error(f"Not quite: you said “{markdown_literal(question.options[index])}”; the answer is "
                     f"“{markdown_literal(truth)}”.",
                     icon=":material/cancel:")
        st.markdown(question.explanation)


def section(page: str, build: Callable[[], list[Question]], title: str = "Predict, then reveal") -> None:
    """A page's questions, in an expander placed before the charts that give the answers away.

    ``build()`` makes the questions (only once the student asks for them, so a costly question,
    such as two short training runs, costs nothing until then); an LlmvizError becomes a notice.
    """
    right, answered = score()
    with st.expander(f"{title}: guess before you look", expanded=bool(st.session_state.get(f"quiz_open_{page}")),
                     icon=":material/quiz:"):
        st.caption("Each answer is computed from the model and your own settings, right now — never written "
                   "down in advance. The first answer you reveal counts. "
                   + (f"Your score this session: **{right} of {answered}**." if answered else ""))
        if not st.session_state.get(f"quiz_open_{page}"):
            st.button("Ask me", key=f"quiz_open_button_{page}", type="primary",
                      on_click=lambda: st.session_state.update({f"quiz_open_{page}": True}))
            return
        from ui import friendly_errors  # any other error: a message in the expander, never a traceback

        questions = None
        with friendly_errors("the questions"):
            try:
                questions = build()
            except LlmvizError as error:
                st.info(str(error))
        for number, question in enumerate(questions or [], start=1):
            ask(question, page, number)


@st.cache_data(show_spinner="Training twice for a few steps, for the learning-rate question…", max_entries=16)
def short_run_loss(text: str, model: str, optimizer: str, lr: float, seed: int, steps: int) -> float:
    """The mean training loss at the end of a short run (``inf`` when it diverged), cached per setting."""
    from llmviz.quiz import final_loss_after
    from llmviz.train import TrainConfig, Trainer, prepare_data

    config = TrainConfig(model=model, tokenizer="char", context_size=16, batch_size=8, steps=steps,
                         optimizer=optimizer, lr=lr, grad_clip=None, warmup_steps=0, schedule="constant",
                         eval_interval=steps, seed=seed)
    return final_loss_after(lambda rate: Trainer(config, prepare_data(text[:100_000], config)), steps)(lr)
