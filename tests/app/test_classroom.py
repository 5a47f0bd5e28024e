"""Identity and the class view, headless: the logged-in user is the student; the teacher key opens the class view,
which lists every student's kept runs (from the lab's registry) and puts one on the teacher's projector."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

import llmviz.lab.service
from llmviz.jobs.kept_rows import snapshot_meta
from llmviz.jobs.runners import facts
from llmviz.lab.records import RunRecord
from llmviz.training.snapshots import state_of
from tests.support.jobs import small_trainer
from tests.support.pages import assert_clean, run_app
from ui import identity, link_params
from ui.text import literal_markdown

KEY = "a-teacher-key-for-tests"


def values(array) -> list[float]:
    """A Plotly trace's values as the browser gets them (numpy arrays travel as base64 with their dtype)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def _kept_run(student: str, run_id: str, name: str, best: float) -> None:
    lab = llmviz.lab.service.default_lab()
    lab.registry.records.ensure_student(student, name=name)
    trainer = small_trainer(steps=5)
    lab.registry.records.add_run(
        RunRecord(run_id, student, "training", f"run of {name}", "finished", total=5, step=5, model="char")
    )
    lab.registry.records.add_points(run_id, [(0, 3.3, 3.4), (5, 2.9, best)])
    meta = snapshot_meta(facts(trainer), "run")
    path, nbytes = lab.storage.write_snapshot(student, run_id, 5, state_of(trainer.model), meta)
    lab.registry.records.add_snapshot(run_id, 5, path, nbytes)


def test_the_logged_in_user_is_the_student(monkeypatch):
    user = {"is_logged_in": True, "iss": "https://idp.example", "sub": "alice", "email": "a@example"}
    monkeypatch.setattr(identity, "_logged_in_user", lambda: user)
    at = run_app("stages/tokens.py")
    assert_clean(at)
    assert at.session_state["_llmviz_session_id"] == identity.student_from_user(user)  # the jobs' owner
    assert identity.student_from_user(user).startswith("u-")
    assert identity.student_from_user({**user, "sub": "bob"}) != identity.student_from_user(user)


def test_without_a_login_each_browser_is_a_random_student():
    first, second = run_app("stages/tokens.py"), run_app("stages/tokens.py")
    ids = {at.session_state["_llmviz_session_id"] for at in (first, second)}
    assert len(ids) == 2 and all(i.startswith("s-") for i in ids)
    assert identity.valid_secret(first.session_state["_llmviz_student_secret"])
    assert first.session_state["_llmviz_student_secret"] not in first.session_state["_llmviz_session_id"]


def test_the_class_view_is_the_teachers_only(monkeypatch):
    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    _kept_run("s-classtest1", "ctrun1", "Ada", 2.5)
    _kept_run("s-classtest2", "ctrun2", "Grace", 2.1)
    student = run_app("stages/classroom.py", query={"teacher": "wrong"})
    assert any("is the teacher's" in info.value for info in student.info)
    assert not student.table
    teacher = run_app("stages/classroom.py", query={"teacher": KEY})
    assert_clean(teacher)
    assert "teacher" not in teacher.query_params  # the key leaves the address at once
    table = teacher.table[0].value
    mine = table[table["student"].isin(["Ada", "Grace"])]
    assert mine["student"].tolist() == ["Grace", "Ada"]  # by best validation loss
    assert mine["best validation loss"].tolist() == ["2.100", "2.500"]  # as text: a loss not measured yet is "–"
    teacher.selectbox(key="class_run").set_value(
        next(o for o in teacher.selectbox(key="class_run").options if o.endswith("ctrun1"))
    ).run()
    teacher.button(key="class_project").click().run()
    assert_clean(teacher)
    assert teacher.session_state["_picker_selected"] == "class:ctrun1"


def test_the_teacher_key_in_an_address_is_not_called_an_unknown_setting():
    """``?teacher=KEY`` opened the class view under "This link's settings were partly used: teacher is not a setting
    llmviz knows: ignored" (seen in chromium): the key is ui.identity's, like ``model`` and ``present``."""

    assert link_params.link_notices({"teacher": [KEY]}, {}, {}) == []
    assert link_params.link_notices({"teacher": [KEY], "zoom": ["3"]}, {}, {}) == [
        "zoom is not a setting llmviz knows: ignored."
    ]


@pytest.mark.parametrize("given", ["", "x", None])
def test_no_key_set_means_no_teacher(given, monkeypatch):
    monkeypatch.delenv("LLMVIZ_TEACHER_KEY", raising=False)
    assert not identity.is_teacher_key(given)


def test_a_parked_run_is_listed_and_resumed_on_the_training_page(fresh_session_jobs):
    from llmviz.jobs.default import default_manager
    from tests.support.jobs import TEXT
    from tests.support.pages import JOB_TIMEOUT

    at = run_app("stages/training.py")
    student = at.session_state["_llmviz_session_id"]
    lab = llmviz.lab.service.default_lab()
    lab.registry.records.ensure_student(student)
    trainer = small_trainer(steps=30)
    for _ in trainer.run(steps=10):
        pass
    digest, _ = lab.storage.write_upload(student, TEXT.encode())
    lab.registry.records.add_upload(student, digest, "text", len(TEXT))
    config = {**trainer.config.__dict__, "text_sha256": digest}
    lab.registry.records.add_run(
        RunRecord("parked1", student, "training", "parked run", "parked", total=30, step=10, config=config)
    )
    path, nbytes = lab.storage.write_snapshot(
        student, "parked1", 10, state_of(trainer.model), snapshot_meta(facts(trainer), "x")
    )
    lab.registry.records.add_snapshot("parked1", 10, path, nbytes)
    at.run()
    assert_clean(at)
    [kept_table] = [frame.value for frame in at.dataframe if "snapshots kept" in frame.value.columns]
    assert kept_table["state"].tolist()[0].startswith("parked")
    # kept with its snapshots only (as runs were before resume states): it resumes, and the page says how
    assert any("with its weights only" in c.value and "the optimizer starts afresh" in c.value for c in at.caption)
    at.button(key="run_resume_chosen_parked1").click().run()
    assert_clean(at)
    [job] = [j for j in default_manager().jobs(student) if j.id == "parked1"]  # the same run goes on
    assert job.wait(JOB_TIMEOUT)
    status = job.status()
    assert status.state.value == "finished" and status.step == 30 and status.losses[0][0] == 11


def test_a_run_another_app_process_trains_is_paused_and_stopped_from_this_one(fresh_session_jobs):
    """The student's second tab lands on this process: the run their first tab's process trains (a live process
    holds it) gets Pause/Resume/Stop here, asked through the lab's registry (tests/unit/jobs/test_lab_processes.py
    shows the holder acting on them)."""
    import subprocess
    import sys

    import psutil

    from llmviz.lab.holders import this_holder

    at = run_app("stages/training.py")
    student = at.session_state["_llmviz_session_id"]
    lab = llmviz.lab.service.default_lab()
    lab.registry.records.ensure_student(student)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # the other app process
    try:
        started = int(psutil.Process(other.pid).create_time())
        holder = f"{this_holder().split(':')[0]}:{other.pid}:{started}"
        lab.registry.records.add_run(
            RunRecord("elsewhere1", student, "training", "other tab's run", "running", 300, 40, holder=holder)
        )
        at.run()
        assert_clean(at)
        # the sidebar's progress on every page has it too, from the lab's record (not only this process's jobs)
        bars = [bar.proto.text for bar in at.sidebar.get("progress")]
        label = literal_markdown("other tab's run")
        said = f"{label}: training · step 40 of 300 (trained by another app process)"
        assert said in bars, bars  # the label as Markdown shows it literally (the local jobs' bars do the same)
        at.selectbox(key="kept_delete_choice").set_value("other tab's run · elsewhere1").run()
        at.button(key="run_pause_chosen_elsewhere1").click().run()
        assert_clean(at)
        assert lab.registry.mailbox.take_requests(holder) == [("elsewhere1", "pause")]
        lab.registry.records.update_run("elsewhere1", state="paused")
        at.run()
        at.button(key="run_resume_chosen_elsewhere1").click().run()
        assert lab.registry.mailbox.take_requests(holder) == [("elsewhere1", "resume")]
        at.button(key="run_stop_chosen_elsewhere1").click().run()
        assert lab.registry.mailbox.take_requests(holder) == [("elsewhere1", "stop")]
    finally:
        other.kill()
        other.wait()
    at.run()  # its process gone: the run shows interrupted, resumable, with no buttons for a live run
    assert lab.registry.records.run(student, "elsewhere1").state == "interrupted"
    assert not [b for b in at.button if b.key == "run_pause_chosen_elsewhere1"]


def test_the_class_legend_names_student_run_and_model_escaped_and_the_table_shows_no_none(monkeypatch):
    """Issue 56: a display name was drawn as HTML in the class chart (an <a> became a link, a <span style> covered
    the chart), four of one student's runs read the same cut text, and the table showed a raw None."""
    import html

    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    hostile = '<a href="https://evil.example/x">Ada</a>'
    lab = llmviz.lab.service.default_lab()
    lab.registry.records.ensure_student("s-classtest3", name=hostile)
    label = "GPT micro (2 layers, d 64) · AdamW · lr 0.003 · Python reference manual"
    for number in range(4):
        run_id = f"ctlegend{number}"
        lab.registry.records.add_run(
            RunRecord(
                run_id,
                "s-classtest3",
                "training",
                label + (f" #{number + 1}" if number else ""),
                "running",
                300,
                model="gpt",
            )
        )
        lab.registry.records.add_points(run_id, [(1, 3.0 - number / 10, None), (2, 2.9 - number / 10, None)])
    # newest first: the chart keeps 20 runs, and this process's lab holds earlier tests' runs too, whose validation
    # losses would rank them above these four (none measured)
    teacher = run_app("stages/classroom.py", query={"teacher": KEY}, class_sort="newest")
    assert_clean(teacher)
    table = teacher.table[0].value
    theirs = table[table["student"] == hostile]  # a table cell is text: the name as typed
    assert len(theirs) == 4 and "None" not in theirs.to_string() and set(theirs["best validation loss"]) == {"–"}
    chart = json.loads(teacher.get("plotly_chart")[0].proto.spec)
    names = [trace["name"] for trace in chart["data"] if "Ada&lt;/a&gt;" in trace["name"]]
    assert len(names) == 4 == len(set(names))  # four runs, four legend texts
    for name in names:
        assert "<" not in name and ">" not in name  # Plotly draws no tag from it
        student, _, model = html.unescape(name).split(" · ")[0], None, html.unescape(name).rsplit(" · ", 1)[1]
        assert student.startswith('<a href="') and student.endswith("Ada</a>") and model == "GPT"


def test_a_run_the_teacher_parked_opens_the_training_page_with_its_curve_and_who_parked_it(fresh_session_jobs):
    """Issue 56: after a park (or a restart) the Training page said "No run yet" above the run's own row, and a
    teacher's park read "stopped at step 401 of 2000". It opens on the run as the lab keeps it: its state with who
    parked it and at which step, and every point of its curve."""
    at = run_app("stages/training.py")
    student = at.session_state["_llmviz_session_id"]
    lab = llmviz.lab.service.default_lab()
    lab.registry.records.ensure_student(student)
    lab.registry.records.add_run(
        RunRecord(
            "parkedbyt",
            student,
            "training",
            "GPT micro · AdamW",
            "parked",
            2000,
            401,
            state_by="teacher",
            state_step=401,
        )
    )
    points = [(step, 4.0 - step / 1000, 4.1 - step / 1000 if step % 100 == 0 else None) for step in range(1, 402)]
    lab.registry.records.add_points("parkedbyt", points)
    at.run()
    assert_clean(at)
    said = [info.value for info in at.info]
    assert not [text for text in said if "No run yet" in text]
    assert any("parked by the teacher at step 401 of 2000" in text for text in said), said
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)  # the page's first picture: this run's curve
    [raw] = [trace for trace in chart["data"] if trace["name"].endswith("(per step)")]
    steps = values(raw["x"])
    assert steps[0] == 1 and steps[-1] == 401  # thinned for drawing (at most 600 rows): the ends always stay
    [validation] = [trace for trace in chart["data"] if trace["name"].endswith("(validation)")]
    assert values(validation["x"]) == [step for step, _, val in points if val is not None]  # every measured point
    assert at.button(key="run_resume_single_parkedbyt").label == "Resume"


def test_with_the_lab_unreadable_the_pages_go_on_and_say_so_once(monkeypatch):
    """Issue 56: with the registry unreadable every page showed the generic error after 6-19 s. A page that needs a
    kept run says so in one sentence; the rest of it, and the pages that need none, go on."""
    from llmviz.lab.service import LabUnavailable

    def unreadable():
        raise LabUnavailable("The lab's database cannot be read (it is damaged).")

    monkeypatch.setattr("ui.lab.default_lab", unreadable)
    for page in ("stages/training.py", "stages/attention.py", "stages/sampling.py"):
        at = run_app(page)
        assert not at.exception, page
        sentences = [w.value for w in at.warning if "cannot be read" in w.value]
        assert len(sentences) <= 1, sentences  # once per page run, not once per question
    training = run_app("stages/training.py")
    assert [w.value for w in training.warning if "cannot be read" in w.value] == [
        "The lab's database cannot be read (it is damaged). What needs no kept run goes on; your runs are back as soon "
        "as the lab is."
    ]
    # the page itself goes on (the shipped GPT's recorded curve), and says no "No run yet": the runs are kept, only
    # not readable now
    assert training.get("plotly_chart") and not any("No run yet" in info.value for info in training.info)


def test_the_server_line_counts_the_runs_every_app_process_trains(fresh_session_jobs):
    """Issue 56: with two processes, "On this server: N run(s) training" counted only its own. It counts the runs
    holding one of the machine's slots in the lab's registry, whichever process trains them."""
    from llmviz.lab.holders import this_holder

    at = run_app("stages/training.py")
    lab = llmviz.lab.service.default_lab()
    before = lab.registry.slots.training_count()
    lab.registry.records.ensure_student("s-elsewhere-1")
    # trained by another app process (a live holder: this test's own process stands in for it)
    lab.registry.records.add_run(
        RunRecord("slot1", "s-elsewhere-1", "training", "run elsewhere", "running", 300, 40, holder=this_holder())
    )
    assert lab.registry.slots.claim("slot1", max_running=8)
    try:
        at.run()
        assert_clean(at)
        line = next(c.value for c in at.caption if c.value.startswith("On this server:"))
        assert line.startswith(f"On this server: {before + 1} run(s) training"), line
    finally:
        lab.registry.slots.free("slot1")


def test_a_run_this_process_trains_reads_parked_by_the_teacher_with_resume_on_top_and_resumed_draws_its_whole_curve(
    fresh_session_jobs,
):
    """Issue 68: the teacher's Park reached the student as "stopped at step 691 of 2000 … everything learned so far is
    kept" with no Resume at the top (the run's job here drew it, not the lab's record), and after Resume the live chart
    started at the resume step. One function draws a run from the lab's view: parked by the teacher with Resume right
    under it, then, once resumed, one curve from step 1 while it trains."""
    from llmviz.jobs.default import default_manager
    from llmviz.lab.identity import student_key
    from tests.support.lab_process import submit, wait_for

    at = run_app("stages/training.py")
    owner = at.session_state["_llmviz_session_id"]
    student, lab = student_key(owner), llmviz.lab.service.default_lab()
    manager = default_manager()

    def here(condition) -> bool:  # the student's tab is open all along (a page run's heartbeat, however slow the
        manager.heartbeat(owner)  # machine: a student gone for 30 s has their runs parked "when you left")
        return condition()

    job = submit(manager, owner, 10_000_000)
    assert wait_for(lambda: here(lambda: job.status().step > 5 and lab.run(student, job.id) is not None), 120)
    assert lab.control(student, job.id, "park", by="teacher").endswith("after its current step.")
    assert wait_for(lambda: here(lambda: lab.run(student, job.id).state == "parked"), 120)
    parked = lab.run(student, job.id)
    at.run()
    assert_clean(at)
    said = [info.value for info in at.info]
    at_step = parked.state_step if parked.state_step is not None else parked.step  # where the park acted (the record)
    assert any(f"parked by the teacher at step {at_step} of" in text for text in said), said
    assert not any("everything learned so far is kept" in caption.value for caption in at.caption)
    at.button(key=f"run_resume_single_{job.id}").click().run()
    assert_clean(at)
    [again] = [j for j in manager.jobs(owner) if j.id == job.id and not j.ended]  # the same run goes on
    assert wait_for(lambda: here(lambda: again.status().step > parked.step + 5), 120)
    at.run()
    assert_clean(at)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)  # the page's first picture: this run's curve
    [raw] = [trace for trace in chart["data"] if trace["name"].endswith("(per step)")]
    steps = values(raw["x"])
    assert steps[0] == 1 and steps[-1] > parked.step  # the whole history while it trains, not from the resume step
    marks = [shape for shape in chart["layout"].get("shapes", []) if shape.get("type") == "line"]
    assert [shape["x0"] for shape in marks if shape.get("line", {}).get("dash") == "dot"] == list(
        lab.run(student, job.id).resumes
    )
    lab.control(student, job.id, "stop")


def test_yes_delete_it_while_the_lab_is_locked_says_so_in_one_sentence_and_changes_nothing(
    fresh_session_jobs, monkeypatch
):
    """Issue 68: **Yes, delete it** in a 15 s lock ended in Streamlit's generic error (``OperationalError`` from a path
    outside the fault classifier). It goes through the one control path: the lab's sentence, and the run as it was
    (every control under a real lock, Resume included: tests/unit/lab/test_controls.py)."""
    from llmviz.lab.faults import SENTENCES
    from llmviz.lab.service import LabUnavailable

    at = run_app("stages/training.py")
    student = at.session_state["_llmviz_session_id"]
    _kept_run(student, "keptlocked", "Ann", 2.5)
    lab = llmviz.lab.service.default_lab()
    at.run()

    def locked(*_args, **_kwargs):
        raise LabUnavailable(SENTENCES["locked"])

    monkeypatch.setattr(type(lab), "delete_run", locked)
    at.selectbox(key="kept_delete_choice").select(
        next(o for o in at.selectbox(key="kept_delete_choice").options if "keptlocked" in o)
    ).run()
    at.button(key="kept_delete").click().run()  # asks first
    at.button(key="kept_delete").click().run()  # Yes, delete it
    assert_clean(at)
    shown = [element.value for element in [*at.success, *at.warning, *at.caption, *at.info]]
    assert any(literal_markdown(SENTENCES["locked"]) in text for text in shown), shown
    assert lab.run(student, "keptlocked") is not None  # nothing was deleted


def joining_card(at) -> tuple[list[str], list[str]]:
    """The address cards drawn (st.code in the keyed container) and the QR pictures (inline SVG) of a page run."""
    codes = [c.value for c in at.code]
    pictures = [h.proto.body for h in at.get("html") if "QR code of" in h.proto.body]
    return codes, pictures


@pytest.mark.parametrize("page", ["stages/home.py", "stages/classroom.py"])
def test_the_teacher_sees_the_address_students_open_and_students_do_not(page, monkeypatch):
    """Home and the class view show the teacher the address students open (LLMVIZ_PUBLIC_URL here: the proxy's),
    as text and as a QR code named for a screen reader; a student's Home shows neither."""
    import segno

    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    monkeypatch.setenv("LLMVIZ_PUBLIC_URL", "http://llm.school.example:8080/")
    teacher = run_app(page, query={"teacher": KEY})
    assert_clean(teacher)
    codes, pictures = joining_card(teacher)
    assert "http://llm.school.example:8080" in codes
    assert len(pictures) == 1 and 'alt="QR code of http://llm.school.example:8080"' in pictures[0]
    # the picture is the address's QR code: the same modules segno draws for it
    expected = segno.make("http://llm.school.example:8080", error="m").svg_inline(scale=5, border=4)
    drawn = base64.b64decode(pictures[0].split("base64,", 1)[1].split('"', 1)[0]).decode()
    modules = expected.split(' d="', 1)[1].split('"', 1)[0]  # the dark modules' path
    assert ' d="' + modules + '"' in drawn

    student = run_app("stages/home.py", query={"teacher": "wrong"})
    assert_clean(student)
    assert joining_card(student) == ([], [])
    assert not any("Students join at" in m.value for m in student.markdown)


def test_without_a_proxy_the_teacher_sees_this_machines_lan_address(monkeypatch):
    from llmviz.address import lan_address

    monkeypatch.setenv("LLMVIZ_TEACHER_KEY", KEY)
    monkeypatch.delenv("LLMVIZ_PUBLIC_URL", raising=False)
    teacher = run_app("stages/home.py", query={"teacher": KEY})
    assert_clean(teacher)
    found = lan_address()
    if found is None:  # no network but loopback here: the card says students cannot reach the server
        assert any("cannot reach" in m.value for m in teacher.markdown)
    else:
        assert joining_card(teacher)[0] == [f"http://{found}:8501"]
