"""Every page under AppTest: it runs with no exception and no error box, at every widget's extremes, while a run
trains, with a section that fails; it speaks to students in their words; and the app starts nothing in a worker."""

import logging
import re
import time

import pytest
import torch
from streamlit.testing.v1 import AppTest

from llmviz.data import corpus
from tests.support.pages import JOB_TIMEOUT, STAGES, TIMEOUT, assert_clean, by_label, run_page, texts
from ui.stages import PIPELINE, ROOT

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")


@pytest.mark.parametrize("stage", STAGES, ids=[s.key for s in STAGES])
def test_page_runs(stage):
    at = run_page(stage.path)
    assert_clean(at)
    assert at.title, "every page has a title"
    # formulas: a thousands separator is {,} (math mode puts a space after a bare comma: '10, 000')
    bare = [f.value for f in at.latex if re.search(r"\d,\d{3}(?!\d)", f.value)]
    assert not bare, bare


@pytest.mark.parametrize("stage", STAGES, ids=[s.key for s in STAGES])
def test_a_page_file_run_on_its_own_says_to_run_the_app(stage):
    at = AppTest.from_file(str(ROOT / stage.path), default_timeout=60)
    at.run()  # before: ensure_router reran the page forever and this timed out
    assert not at.exception, [e.value for e in at.exception]
    assert any("streamlit run app.py" in i.value for i in at.info), [i.value for i in at.info]
    assert not at.error


def test_pages_make_their_sections_with_ui_sections():
    """A page's sections are made by ui.sections.section (a named st.fragment, in the timing log that the browser
    tests read to prove a widget reruns only its own section), never by st.fragment directly."""
    import re

    offenders = [
        f"{path.name}:{number}"
        for path in sorted((ROOT / "stages").glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(r"@st\.fragment|st\.fragment\(", line)
    ]
    assert not offenders, f"use @sections.section(name): {offenders}"


def test_the_first_page_run_freezes_the_long_lived_objects():
    """After a page run, what was alive (torch, the modules, the shipped model) is out of the collector's reach,
    so Python's full collections no longer walk it while holding the GIL (ui.routing.freeze_long_lived_objects)."""
    import gc

    run_page("stages/home.py")
    assert gc.get_freeze_count() > 100_000


def test_app_py_imported_by_a_worker_process_draws_and_starts_nothing(monkeypatch):
    """A worker process started while a script run had installed app.py as the server's __main__ imports it as
    '__mp_main__' (multiprocessing's preparation of the child). It ran the whole app outside any script run and,
    still bootstrapping, tried to start a forkserver of its own (RuntimeError in a classroom benchmark's log): the
    app is drawn only when Streamlit runs the script as '__main__'."""
    import runpy

    import streamlit as st

    def refuse(*args, **kwargs):
        raise AssertionError("app.py drew the app when imported as __mp_main__")

    monkeypatch.setattr(st, "set_page_config", refuse)
    module = runpy.run_path(str(ROOT / "app.py"), run_name="__mp_main__")
    assert callable(module["main"])


def test_every_page_shows_a_run_while_it_trains():
    """A run picked while it trains in the background: every page draws it with no error box, and the run goes on.
    (The browser tour in tests/browser/test_lab.py visits the pages whose views change with the run; this covers
    all.)"""

    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value("gpt-mini")
    by_label(at.slider, "Steps").set_value(2000)
    by_label(at.slider, "Sample every (steps)").set_value(0)
    at.button(key="train").click().run()
    assert_clean(at)
    from llmviz.jobs.default import default_manager

    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    deadline = time.time() + JOB_TIMEOUT
    while job.status().step < 2:  # snapshots at steps 0, 1, 2: "step 0 vs step N" has something to compare
        assert time.time() < deadline and not job.status().done, job.status().describe()
        time.sleep(0.1)
    try:
        for stage in STAGES:
            at.switch_page(str(ROOT / stage.path)).run()
            assert_clean(at)
            shared = next(s for s in at.sidebar.selectbox if s.label == "Model shown on every page")
            assert shared.value == f"run:{job.id}", stage.key
            assert job.status().state == "running", (stage.key, job.status().describe())
            if stage.key == "attention":
                assert "Step 0 vs step N" in [h.value for h in at.subheader]
    finally:
        job.stop()
        assert job.wait(timeout=60)


def assert_no_error_box(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


STUDENT_FACING = sorted([*(ROOT / "stages").glob("*.py"), *(ROOT / "ui").rglob("*.py"), ROOT / "app.py"])


PROJECT_WORDS = re.compile(r"seed[ -]?0\d\d|seed's|lecture \d+|\bseeds?/", re.IGNORECASE)


@pytest.mark.parametrize("path", STUDENT_FACING, ids=lambda p: p.name)
def test_no_page_names_the_project_source_documents(path):
    found = [line.strip() for line in path.read_text().splitlines() if PROJECT_WORDS.search(line)]
    assert not found, found


@pytest.mark.parametrize("stage", [s for s in PIPELINE if s.exists], ids=lambda s: s.key)
def test_rendered_pages_never_say_seed_or_lecture(stage):
    at = run_page(stage.path)
    assert_no_error_box(at)
    shown = " ".join(
        texts(getattr(at, kind))
        for kind in ("markdown", "caption", "info", "warning", "success", "header", "subheader", "latex", "title")
    )
    assert not PROJECT_WORDS.search(shown), PROJECT_WORDS.search(shown)


def set_extremes(at, end: str) -> list[str]:
    """Push every enabled slider and bounded number input to its ``end`` ("min"/"max").

    Select-sliders are left alone: AppTest only knows their formatted labels, not their values."""
    moved = []
    for widget in [*at.slider, *at.number_input]:
        if widget.disabled or getattr(widget, end, None) is None:
            continue
        value = getattr(widget, end)
        value = int(value) if isinstance(widget.value, int) else value  # the proto keeps bounds as floats
        widget.set_value((widget.min, widget.max) if isinstance(widget.value, tuple) else value)
        moved.append(f"{widget.label}={value}")
    return moved


PAGES = [s for s in PIPELINE if s.exists]


@pytest.mark.parametrize("end", ["min", "max"])
@pytest.mark.parametrize("stage", PAGES, ids=lambda s: s.key)
def test_every_widget_at_its_extremes_shows_no_error_box(stage, end):
    at = run_page(stage.path)
    assert_no_error_box(at)
    moved = set_extremes(at, end)
    at.run()
    assert not at.exception, ([e.value for e in at.exception], moved)
    assert not at.error, ([e.value for e in at.error], moved)
    if stage.key == "model":  # the custom sizes too
        by_label(at.selectbox, "Preset").set_value("custom").run()
        set_extremes(at, end)
        at.run()
        assert not at.exception
        # the only error a custom size can show is a head count that does not divide the width
        assert all("not divisible" in e.value for e in at.error), [e.value for e in at.error]


def shown(elements) -> str:
    """What the browser shows of Markdown elements (their source escapes punctuation)."""
    return re.sub(r"\\(.)", r"\1", texts(elements))


POINTERS = re.compile(
    r"chapter|\bch\. ?\d|textbook|lecture|\bseed 0\d|bertviz|\bthe book\b|from scratch|write-up|"
    r"worked version|as \w+ draws it|homework",
    re.IGNORECASE,
)


def shown_strings(path):
    """Every string literal of a source file (f-string parts included) that can reach a page: docstrings are not shown,
    nor are web addresses (a corpus's source names the file it comes from)."""
    import ast

    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if "github.com/" not in node.value and "://" not in node.value:
                yield node.lineno, node.value


def test_pages_point_to_no_material_students_never_saw():
    """No "chapter 3" of a book, no "the textbook's arithmetic slips", no "as BertViz draws it": say what is shown."""
    sources = [
        *sorted((ROOT / "stages").glob("*.py")),
        *sorted((ROOT / "ui").rglob("*.py")),
        *sorted((ROOT / "llmviz").rglob("*.py")),
        ROOT / "app.py",
    ]
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}"
        for path in sources
        for line, text in shown_strings(path)
        if POINTERS.search(text)
    ]
    assert not found, "\n".join(found)

    for entry in corpus.list_corpora():  # what the Home page's table and the sidebar show of each corpus
        assert not POINTERS.search(f"{entry.title} {entry.description}"), entry


def _page_with_a_broken_section():
    import streamlit as st

    from ui import sections
    from ui.panels import quiz

    @sections.section("demo.broken")
    def broken() -> None:
        st.write("drawn before the error")
        raise TypeError("'tokenizers.Encoding' object is not iterable")

    st.session_state["quiz_open_demo"] = True
    quiz.section("demo", lambda: [][1])  # a question builder that fails
    broken()
    st.write("the rest of the page")


def test_a_section_that_fails_shows_a_message_and_the_page_goes_on():
    at = AppTest.from_function(_page_with_a_broken_section, default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]  # no traceback reaches the student
    errors = shown(at.error)
    assert "Something went wrong in this section: TypeError" in errors, errors
    assert "Something went wrong in the questions: IndexError" in errors, errors
    assert "the rest of the page" in texts(at.markdown)


def _page_that_fails():
    import streamlit as st

    from ui.errors import friendly_errors

    with friendly_errors("the demo step"):
        st.write("before")
        {}["missing key"]  # noqa: B018 - a bug in a page's section


def test_a_page_error_is_one_friendly_line_and_a_logged_traceback(caplog):
    with caplog.at_level(logging.INFO, logger="llmviz"):
        at = AppTest.from_function(_page_that_fails, default_timeout=30).run()
    assert not at.exception
    from ui.text import literal_markdown  # the page escapes Markdown in messages

    assert [e.value for e in at.error] == [
        f"Something went wrong in the demo step: {literal_markdown(line)}" for line in ["KeyError: 'missing key'"]
    ]
    page_text = " ".join(str(element.value) for element in at.main if hasattr(element, "value"))
    assert "Traceback" not in page_text
    assert "Traceback (most recent call last)" in caplog.text and "the demo step failed" in caplog.text


@pytest.mark.parametrize("page", ["stages/sampling.py", "stages/attention.py"])
def test_a_page_rerun_leaves_the_global_generator_alone(page):
    from tests.support.pages import run_page

    torch.manual_seed(4242)
    run_page(page)  # the sidebar's seed (1337, deterministic pages on) is passed down, never seeded globally
    assert torch.initial_seed() == 4242
