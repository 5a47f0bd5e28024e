"""The class view's teaching parts: start a lesson (a shipped one, or a file of the teacher's own, whose first error
is one line with its line number) and download any kept poll's answers as CSV. The calls are :mod:`ui.class_live`'s,
the lessons :mod:`llmviz.lessons.plans`'."""

from __future__ import annotations

import streamlit as st

from llmviz.lessons import plans
from ui import class_live, state
from ui.text import literal_markdown


def starter() -> None:
    """Pick a shipped lesson or upload one, see its steps, start it for the class."""
    try:
        shipped = plans.shipped()
    except plans.LessonError as error:  # a shipped file broken by an edit: said, and the teacher's own still works
        st.error(literal_markdown(str(error)))
        shipped = {}
    choices = {lesson.title: name for name, lesson in shipped.items()}
    c1, c2 = st.columns(2)
    picked = c1.selectbox("Lesson", list(choices), key=state.widget("lesson_pick"))
    upload = c2.file_uploader(
        "Or a lesson file of your own (TOML)",
        type=["toml"],
        key=state.widget("lesson_file"),
        max_upload_size=1,
        help="docs/lessons.md: a title, then one [[step]] per view, with sentences and an optional poll.",
    )
    name, plan = (
        (choices[picked], (plans.SHIPPED / f"{choices[picked]}.toml").read_text("utf-8")) if picked else ("", "")
    )
    if upload is not None:
        data = upload.getvalue()
        if len(data) > plans.MAX_BYTES:
            st.error(f"{literal_markdown(upload.name)}: a lesson file is at most {plans.MAX_BYTES // 1024} KB.")
            return
        name, plan = upload.name.rsplit(".", 1)[0][:60], data.decode("utf-8", errors="replace")
    if not plan:
        return
    try:
        lesson = plans.parse(plan, f"{name}.toml")
    except plans.LessonError as error:
        st.error(literal_markdown(str(error)), icon=":material/error:")
        return
    st.markdown(f"**{literal_markdown(lesson.title)}**: {literal_markdown(lesson.about)}")
    st.dataframe(
        {
            "step": list(range(1, len(lesson.steps) + 1)),
            "title": [step.title for step in lesson.steps],
            "view": [step.view for step in lesson.steps],
            "poll": [step.poll or "" for step in lesson.steps],
        },
        hide_index=True,
    )
    st.button(
        "Start the lesson",
        key=state.widget("lesson_start"),
        type="primary",
        on_click=class_live.start_lesson,
        args=(plan, name),
        help="The lead goes on at step 1: every student who follows goes there, and so do you.",
    )


def kept_polls() -> None:
    """Every poll the class kept, and one's answers as CSV (names only when asked)."""
    kept = class_live.polls()
    if not kept:
        st.caption("No poll yet: Ask the class under a page's Predict, then reveal question.")
        return
    labels = {f"{poll.id}. {poll.page}: {poll.prompt[:80]} ({poll.state})": poll.id for poll in kept}
    c1, c2 = st.columns([3, 1])
    chosen = labels[c1.selectbox("Poll", list(labels), key=state.widget("polls_pick"))]
    names = c2.toggle("With names", key=state.widget("polls_names"))
    st.download_button(
        "Download its answers (CSV)",
        class_live.poll_csv(chosen, names),
        file_name=f"poll-{chosen}.csv",
        mime="text/csv",
        key=state.widget("polls_csv"),
    )
