"""The class view: the teacher's page (behind LLMVIZ_TEACHER_KEY). Every student's runs, live, from the lab's
registry: a table, their curves on one chart, "show on the projector", stop or park a run. Wiring only: the numbers
are llmviz.lab.classroom's, the figures ui.panels.classroom's."""

import streamlit as st

from llmviz.lab.classroom import SORTS, thin_curve
from ui import charts, identity, joining, lab, model_sources, picker, sections, state, watch
from ui.panels import classroom, lessons
from ui.text import literal_markdown

st.title("The class")
if not identity.is_teacher():
    st.info(
        "This page is the teacher's: open any page once with `?teacher=` and the teacher key "
        "(`LLMVIZ_TEACHER_KEY`, docs/classroom.md) in this browser."
    )
    st.stop()
joining.card()  # the address students open, and its QR code

c1, c2, c3 = st.columns(3)
sort = c1.selectbox("Sort by", SORTS, key=state.widget("class_sort"))
log_x = c2.toggle("Log-scale steps", value=False, key=state.widget("class_log_x"))
validation = c3.toggle("Validation loss", value=False, key=state.widget("class_validation"))


@sections.section("classroom.now", run_every=watch.refresh_seconds(picker.session_id()))
def class_now() -> None:
    rows = lab.class_runs(sort)
    if rows is None:  # the lab cannot be read: said in one sentence (ui.lab)
        return
    if not rows:
        st.info("No student has trained a run yet.")
        return
    live = sum(row.state == "running" for row in rows)
    st.caption(f"{len({row.student for row in rows})} students · {len(rows)} runs · {live} training now")
    # a table of text that wraps: every column in view at 1400 px, the long run labels included (issue 72 item 7)
    st.table(classroom.class_table(rows), hide_index=True, height=classroom.table_height(len(rows)))
    st.download_button(
        "Download the class table (CSV)",
        classroom.class_csv(rows),
        file_name="class.csv",
        mime="text/csv",
        key=state.widget("class_csv"),
        on_click="ignore",
    )
    shown = rows[:20]  # the chart keeps to the best 20 (in the chosen order)
    curves = {run_id: thin_curve(points) for run_id, points in lab.class_curves([r.run_id for r in shown]).items()}
    charts.show(classroom.curves_figure(shown, curves, log_x, validation), key=state.widget("class_chart"))


def ask(student: str, run_id: str, action: str) -> None:
    """Stop's or Park's callback: asked through the lab, whichever app process trains the run."""
    st.toast(literal_markdown(lab.control(run_id, action, by="teacher", owner=student)))


class_now()

rows = lab.class_runs(sort) or []
if rows:  # (no heading over nothing: the live section above says no student has trained yet)
    st.subheader("One run")
    by_name = {f"{row.name} · {row.label} · {row.run_id}": row for row in rows}
    chosen = by_name[st.selectbox("Run", list(by_name), key=state.widget("class_run"))]
    d1, d2, d3 = st.columns(3)
    if d1.button("Show on the projector", key=state.widget("class_project"), type="primary"):
        model_sources.project(chosen.run_id, None)
        st.rerun()
    d2.button("Stop it", key=state.widget("class_stop"), on_click=ask, args=(chosen.student, chosen.run_id, "stop"))
    d3.button("Park it", key=state.widget("class_park"), on_click=ask, args=(chosen.student, chosen.run_id, "park"))
    st.caption(
        "Show on the projector: your picker (the sidebar) switches to this run at its newest kept step, on every "
        "page; its step slider moves through its kept steps. Stop keeps what it learned; Park frees its worker "
        "and memory and keeps its snapshots; the student reads that you parked it, and Resume trains it on."
    )

st.subheader("Teaching live")
st.caption(
    "**Lead** (above, on every page of yours): the students who follow see your page and settings. Ask the class "
    "under any page's Predict, then reveal question: their answers arrive under it, and here. A lesson walks the "
    "class through its steps: Next and Back move everyone who follows (docs/lessons.md says how to write one)."
)
lessons.starter()
lessons.kept_polls()
