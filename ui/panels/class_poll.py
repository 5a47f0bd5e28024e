"""The class's poll and the teacher's lead, drawn: the teacher's live chart of the answers (with the count and a
sentence in words), a student's question on the teacher's view with their answer, the model's answer beside it once
revealed, and the Lead switch / Follow buttons. The numbers and the rules are the lab's (:mod:`llmviz.lab.teaching`),
the calls :mod:`ui.class_live`'s.

A page's refreshing section (:func:`live_box`, an ``st.fragment`` rerun every second while the class is live, every
few seconds while it is idle: :func:`ui.class_live.refresh_s`) reads the poll and the lead;
what it draws is plain functions (:func:`student_poll`, :func:`teacher_poll`, :func:`lead_bar`) that a test calls
outside the fragment (AppTest runs no fragment on its own).
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from llmviz.lab.teaching import LeadView, PollView
from llmviz.lessons.quiz import markdown_literal
from ui import charts, class_live, state
from ui.chart_text import number
from ui.text import literal_markdown

RIGHT, OTHER, YOURS = "#2ca02c", "#8c9bab", "#1f77b4"


def words(view: PollView) -> str:
    """The answers in one sentence (a screen reader's, and everyone's under the chart).

    >>> print(words(PollView(1, "tokens", "q", "?", ("3", "4"), "tokens", "open", None, None, "", {1: 2}, 2)))
    2 students answered: 0 chose “3”, 2 chose “4”.
    """
    if not view.answered:
        return "No student has answered yet."
    chosen = ", ".join(f"{view.counts.get(i, 0)} chose “{option}”" for i, option in enumerate(view.options))
    who = "student" if view.answered == 1 else "students"
    sentence = f"{number(view.answered)} {who} answered: {chosen}."
    if view.answer is not None and view.revealed:
        sentence += f" The model's answer is “{view.options[view.answer]}”."
    return sentence


def poll_figure(view: PollView) -> go.Figure:
    """One bar per choice, its height the students who chose it; the model's answer green once revealed."""
    colours = [RIGHT if view.revealed and i == view.answer else OTHER for i in range(len(view.options))]
    counts = [view.counts.get(i, 0) for i in range(len(view.options))]
    figure = go.Figure(
        go.Bar(
            x=[f"{option[:30]} " for option in view.options],  # a space: Plotly never reads "4" as a number axis
            y=counts,
            marker_color=colours,
            text=counts,
            textposition="outside",
            name="students",
            hovertemplate="%{x}: %{y} students<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"The class's answers: {view.answered} answered",
        height=300,
        margin=dict(l=40, r=10, t=50, b=40),
        yaxis=dict(title="students", rangemode="tozero", dtick=max(1, max(counts, default=1) // 5)),
        showlegend=False,
    )
    return figure


def teacher_poll(view: PollView) -> None:
    """The teacher's projector: the question, the answers arriving as a chart with the count, and the controls."""
    st.markdown(f"**Asked the class** ({view.state}): {view.prompt}")
    charts.show(poll_figure(view), key=state.widget("live_chart"), words=words(view))  # its sentence, read aloud
    st.caption(literal_markdown(words(view)))
    c1, c2, c3, c4 = st.columns(4)
    c1.button(
        "Close",
        key=state.widget("live_close"),
        disabled=not view.open,
        on_click=class_live.poll_action,
        args=(view.id, "close"),
        help="No more answers; each student's last one is kept.",
    )
    c2.button(
        "Reveal",
        key=state.widget("live_reveal"),
        type="primary",
        disabled=view.revealed,
        on_click=class_live.poll_action,
        args=(view.id, "reveal"),
        help="Closes the poll and shows every student the model's answer beside their own.",
    )
    c3.button(
        "End",
        key=state.widget("live_end"),
        on_click=class_live.poll_action,
        args=(view.id, "end"),
        help="Takes the poll off the students' screens; it is kept for its CSV (the class view lists every poll).",
    )
    names = c4.toggle("Show names", key=state.widget("live_names"), help="Who answered what: only on your screen.")
    st.download_button(
        "Download the answers (CSV)",
        class_live.poll_csv(view.id, names),
        file_name=f"poll-{view.id}.csv",
        mime="text/csv",
        key=state.widget("live_csv"),
        help="The question, your view, the model's answer and every answer (with names when Show names is on).",
    )
    if names:
        named = class_live.class_poll(names=True)
        for value, people in sorted(((named.names or {}) if named else {}).items()):
            st.markdown(f"“{markdown_literal(view.options[value])}”: " + ", ".join(map(literal_markdown, people)))
    if view.revealed and view.explanation:
        st.markdown(view.explanation)


def student_poll(view: PollView) -> None:
    """A student's poll: the question on the teacher's view, their answer (changeable until closed), and once
    revealed the model's answer beside their own."""
    st.markdown(f"**The teacher asks the class:** {view.prompt}")
    if class_live.page_path() != class_live.link_page(view.link):
        st.caption(f"The question is about the teacher's view: [open it]({view.link}).")
    widget_key = state.widget("live_answer_", view.id)
    st.radio(
        "Your answer",
        view.options,
        index=view.mine,
        key=widget_key,
        horizontal=True,
        disabled=not view.open,
        format_func=markdown_literal,
        on_change=class_live.send_answer,
        args=(view.id, widget_key, view.options),
    )
    if view.open and view.mine is not None:
        st.caption(
            f"Your answer “{markdown_literal(view.options[view.mine])}” is in: change it until the teacher closes "
            "the poll. Other students do not see it."
        )
    elif view.open:
        st.caption("Your answer is sent as you pick it. Other students do not see it.")
    elif view.revealed and view.answer is not None:
        model = markdown_literal(view.options[view.answer])
        if view.mine is None:
            st.info(f"The model's answer: “{model}”. You did not answer.", icon=":material/quiz:")
        elif view.mine == view.answer:
            st.success(f"The model's answer: “{model}”; yours: the same.", icon=":material/check_circle:")
        else:
            st.error(
                f"The model's answer: “{model}”; yours: “{markdown_literal(view.options[view.mine])}”.",
                icon=":material/cancel:",
            )
        st.markdown(view.explanation)
        st.caption(literal_markdown(words(view)))
    else:
        st.caption("The poll is closed: the teacher reveals the model's answer next.")


def lead_bar(found: LeadView | None) -> None:
    """A student's line while the teacher leads: following (Stop following), or not (Follow the teacher); in a
    lesson, the step and its sentences for the students."""
    if found is None or not found.active:
        return
    lesson = class_live.lesson_of(found)
    if lesson is not None and found.following:
        step = lesson.steps[min(found.step, len(lesson.steps) - 1)]
        st.markdown(
            f"**{literal_markdown(lesson.title)}**, step {found.step + 1} of {len(lesson.steps)}: "
            f"{literal_markdown(step.title)}"
        )
        if step.students:
            st.caption(literal_markdown(step.students))
    c1, c2 = st.columns([4, 1])
    if found.following:
        c1.caption("You follow the teacher: your page shows the teacher's. Your own runs and files stay yours.")
        c2.button("Stop following", key=state.widget("live_unfollow"), on_click=class_live.follow, args=(False,))
    else:
        c1.caption("The teacher is leading the class; you explore on your own.")
        c2.button(
            "Follow the teacher",
            key=state.widget("live_follow"),
            type="primary",
            on_click=class_live.follow,
            args=(True,),
        )


def lead_switch(found: LeadView | None) -> None:
    """The teacher's Lead switch: on, the students who follow see the teacher's page and settings. It shows the
    lead's row (another tab of the teacher, a lesson started, may have changed it)."""
    key = state.widget("live_lead")
    state.set_value(key, bool(found and found.active))
    st.toggle(
        "Lead",
        key=key,
        on_change=class_live.switch_lead,
        args=(key,),
        help="On: every student who follows sees your page and settings within a second or two.",
    )


def lesson_bar(found: LeadView | None) -> None:
    """The teacher's line while a lesson runs: the step, its sentences for the teacher, Back, Next and End."""
    lesson = class_live.lesson_of(found)
    if found is None or lesson is None:
        return
    step = lesson.steps[min(found.step, len(lesson.steps) - 1)]
    st.markdown(
        f"**{literal_markdown(lesson.title)}**, step {found.step + 1} of {len(lesson.steps)}: "
        f"{literal_markdown(step.title)}"
        + (" · this step has a poll: Ask the class under its question" if step.poll else "")
    )
    if step.teacher:
        st.caption(literal_markdown(step.teacher))
    c1, c2, c3 = st.columns(3)
    c1.button(
        "Back",
        key=state.widget("lesson_back_", found.step),  # a key per step: see Next
        disabled=found.step == 0,
        on_click=class_live.move_lesson,
        args=(found.step - 1,),
    )
    c2.button(
        "Next",
        # a key per step: a click the browser sends again after the bar was drawn at the next step (a refreshing
        # section's rerun can) reaches no button, instead of this one's callback: one click moved the class two steps
        key=state.widget("lesson_next_", found.step),
        type="primary",
        disabled=found.step >= len(lesson.steps) - 1,
        on_click=class_live.move_lesson,
        args=(found.step + 1,),  # the step after this one, not "one more": a click sent twice moves once
    )
    c3.button("End the lesson", key=state.widget("lesson_end"), on_click=class_live.end_lesson)


def class_now() -> None:
    """What the class's live box draws this second (the fragment's body, a plain function for the tests). The
    teacher's chart of a poll asked on this page is drawn under its question instead (:func:`asked_here`), on the
    questions' slide in presenter mode."""
    found = class_live.lead()
    if class_live.teacher():
        lead_switch(found)
        lesson_bar(found)
        if state.LEAD_GO.present():
            class_live.go_teacher()  # Start, Next or Back: this page goes to the step's view first
        elif found is not None and found.active:
            class_live.lead_here()
        view = class_live.class_poll()
        if view is not None and view.page != class_live.page_path():
            with st.container(border=True, key=state.widget("live_poll")):
                teacher_poll(view)
        return
    class_live.follow_now(found)
    lead_bar(found)
    view = class_live.class_poll()
    if view is not None:
        with st.container(border=True, key=state.widget("live_poll")):
            student_poll(view)


def live_box() -> None:
    """Every page's box: the class's poll and the lead, read again every second while this page takes part (the
    teacher's, a follower's, any while a poll is on the screens), every few seconds while the class is idle; how
    often is decided at each whole page run (:func:`ui.class_live.refresh_s`)."""
    every = class_live.refresh_s(class_live.teacher(), class_live.lead(), class_live.class_poll())
    st.fragment(class_now, run_every=every)()


def ask_button(page: str, question) -> None:
    """The teacher's "Ask the class" under a predict-then-reveal question: the question, as this page computed it on
    the teacher's view, goes on every student's page."""
    st.button(
        "Ask the class",
        key=state.widget("live_ask_", question.key),
        icon=":material/groups:",
        on_click=class_live.ask_class,
        args=(
            class_live.page_path() or page,
            question.key,
            question.prompt,
            question.options,
            question.answer,
            question.explanation,
        ),
        help="Every student's page shows this question on your view; their answers arrive here as a chart.",
    )


@st.fragment(run_every=class_live.REFRESH_S)
def asked_here(question_key: str) -> None:
    """The teacher's live chart under the question the class is answering (read again every second)."""
    view = class_live.class_poll()
    if view is not None and view.question == question_key:
        teacher_poll(view)
