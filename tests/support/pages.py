"""Running the app's pages headless under Streamlit's AppTest, and reading what they show."""

from streamlit.testing.v1 import AppTest

from ui.stages import PIPELINE, ROOT

TIMEOUT = 180  # importing torch and building models takes seconds on a small CPU
# How long a test waits for a job it started to end: a bound that only a hung job reaches. A loaded 2-core machine
# (a whole suite beside other work) runs a 7-runner race of 50 steps in minutes, not the seconds it takes alone.
JOB_TIMEOUT = 600

STAGES = [stage for stage in PIPELINE if stage.exists]


def run_page(path: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if path is not None:
        at.switch_page(str(ROOT / path)).run()
    # the default path: no exception, and no error box either (friendly_errors turns any
    # exception into st.error, so "no exception" alone would pass a broken page)
    assert_clean(at)
    return at


def run_app(path: str, query: dict | None = None, **state) -> AppTest:
    """A fresh session (AppTest) that opens ``path`` with these link parameters and session values (unlike
    :func:`run_page`, it asserts nothing: tests of refusals and hostile links look at what went wrong)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    return at.switch_page(str(ROOT / path)).run()


def open_tab(at: AppTest, param: str, name: str) -> AppTest:
    """Open the tab ``name`` of a page's lessons (``ui.sections.parts``: ``param`` is its link parameter, which a
    bound widget reads back from the address after the first run) and run the page."""
    at.query_params[param] = name
    at.session_state[param] = name
    return at.run()


def computed(at: AppTest, name: str) -> AppTest:
    """The result of a page's computation in a worker (``ui.panels.task_jobs.computed``): its button pressed when it has
    one (a result another test of this process already computed is shown at once, with no button), then its job
    waited for."""
    if [button for button in at.button if button.key == f"task_start_{name}"]:
        at.button(key=f"task_start_{name}").click().run()
    return finish_jobs(at)


def finish_jobs(at: AppTest, timeout: float = JOB_TIMEOUT) -> AppTest:
    """Wait for the jobs this AppTest session started (BPE, word2vec, a run: they train in worker processes,
    outside the script run), then run the page again, as the live section's refresh would."""
    from llmviz.jobs.default import default_manager

    for job in default_manager().jobs(at.session_state["_llmviz_session_id"]):
        assert job.wait(timeout), job
    return at.run()


def assert_clean(at: AppTest, errors_expected: bool = False):
    """No exception; and no st.error unless the test provoked one on purpose."""
    assert not at.exception, [e.value for e in at.exception]
    if not errors_expected:
        assert not at.error, [e.value for e in at.error]


def by_label(widgets, label):
    matches = [w for w in widgets if w.label == label]
    assert matches, f"no widget labelled {label!r}: {[w.label for w in widgets]}"
    return matches[0]


def texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def finished_labels(at: AppTest, steps: int) -> list[str]:
    """The labels of the runs whose final line the page draws ("**label** · finished after ``steps`` steps …"),
    sorted, unescaped from their Markdown."""
    import re

    lines = [re.sub(r"\\(.)", r"\1", str(m.value)) for m in at.markdown]
    return sorted(line.split("**")[1] for line in lines if f"finished after {steps} steps" in line)


def session_jobs(at, kind="train"):
    """The jobs of the AppTest's browser session, each waited for until it ends."""
    from llmviz.jobs.default import default_manager

    found = [
        job
        for job in default_manager().jobs(at.session_state["_llmviz_session_id"])
        if kind is None or job.kind == kind
    ]
    for job in found:
        assert job.wait(timeout=JOB_TIMEOUT), job
    return found


def train_on_names(model: str = "mlp", sample_every: int | None = None):
    """The Training page on the names corpus with a character-level ``model`` trained for 20 steps (Train pressed)."""
    at = run_page("stages/training.py", corpus="names")
    by_label(at.selectbox, "Model").set_value(model)
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Steps").set_value(20)
    if sample_every is not None:
        by_label(at.slider, "Sample every (steps)").set_value(sample_every)
    at.button(key="train").click().run()
    return at
