"""Every page runs headless under Streamlit's AppTest with no exception."""

import re

import pytest
from streamlit.testing.v1 import AppTest

import ui

TIMEOUT = 180  # importing torch and building models takes seconds on a small CPU


def run_page(path: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(ui.ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if path is not None:
        at.switch_page(str(ui.ROOT / path)).run()
    # the default path: no exception, and no error box either (friendly_errors turns any
    # exception into st.error, so "no exception" alone would pass a broken page)
    assert_clean(at)
    return at


def open_tab(at: AppTest, param: str, name: str) -> AppTest:
    """Open the tab ``name`` of a page's lessons (``ui.sections.parts``: ``param`` is its link parameter, which a
    bound widget reads back from the address after the first run) and run the page."""
    at.query_params[param] = name
    at.session_state[param] = name
    return at.run()


def finish_jobs(at: AppTest, timeout: float = 180) -> AppTest:
    """Wait for the jobs this AppTest session started (BPE, word2vec, a run: they train in worker processes,
    outside the script run), then run the page again, as the live section's refresh would."""
    from llmviz.jobs.manager import default_manager

    for job in default_manager().jobs(at.session_state["_llmviz_session_id"]):
        assert job.wait(timeout), job
    return at.run()


def assert_clean(at: AppTest, errors_expected: bool = False):
    """No exception; and no st.error unless the test provoked one on purpose."""
    assert not at.exception, [e.value for e in at.exception]
    if not errors_expected:
        assert not at.error, [e.value for e in at.error]


STAGES = [stage for stage in ui.PIPELINE if stage.exists]


@pytest.mark.parametrize("stage", STAGES, ids=[s.key for s in STAGES])
def test_page_runs(stage):
    at = run_page(stage.path)
    assert_clean(at)
    assert at.title, "every page has a title"
    # formulas: a thousands separator is {,} (math mode puts a space after a bare comma: '10, 000')
    bare = [f.value for f in at.latex if re.search(r"\d,\d{3}(?!\d)", f.value)]
    assert not bare, bare


def test_home_shows_device_and_corpus():
    at = run_page()
    assert_clean(at)
    assert "llmviz" in at.title[0].value
    labels = [m.label for m in at.metric]
    assert "Computing on" in labels and "Characters" in labels


def test_sidebar_undownloaded_corpus_warns_not_crashes():
    at = run_page(corpus="tinyshakespeare")
    assert_clean(at)
    assert at.warning, "an undownloaded corpus gives a clear message"


def test_sidebar_upload_choice_without_file():
    at = run_page(corpus="upload")
    assert_clean(at)
    assert at.info


@pytest.mark.parametrize("stage", STAGES, ids=[s.key for s in STAGES])
def test_a_page_file_run_on_its_own_says_to_run_the_app(stage):
    at = AppTest.from_file(str(ui.ROOT / stage.path), default_timeout=60)
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
        for path in sorted((ui.ROOT / "stages").glob("*.py"))
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
    module = runpy.run_path(str(ui.ROOT / "app.py"), run_name="__mp_main__")
    assert callable(module["main"])
