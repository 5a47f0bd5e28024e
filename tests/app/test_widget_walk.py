"""Every widget of every page and tab, operated once on a real server over Streamlit's protocol (issue 57 item 5:
Inside › Features broke on every interaction while its first-screen test passed; issue 60: the walk in chromium cost
half the browser tests' time, its drawing most of it).

On each page of app.py's navigation and each of its tabs (``tests/support/widget_walk.py``, the pages the chromium
walk visits), a student opens the page and the walk gives each widget of the main area a new value the way a browser
sends it — the next option of a selectbox or radio, a slider one step along, a number input one step, a ticked box,
a word more in a text box, a pressed button (one that starts long work, or one that is not a lesson's, is left alone)
— in the widget's own section when it lives in one, so Streamlit reruns that section alone, as AppTest cannot. After
each the run must end with no exception drawn and no "Something went wrong" or "needs the app around it" box. A
widget that appears after another is operated in its turn; the walk fails on a widget kind it does not know, so a
new kind is not passed over. Home's sidebar (the corpus, the seed, the device…) is walked the same way.

What the browser draws of it (the expanders, the pictures, a widget that moved under a rerun) is the chromium walk's:
``tests/browser/test_widget_walk.py``, in the browser lane (``-m extended``), which CI runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._protocol_client import Run, Widget
from tests.support.app_server import start_app
from tests.support.asyncio_thread import run_coroutine
from tests.support.widget_walk import (
    CASES,
    LEFT_ALONE,
    LONG_WORK,
    MAIN,
    MOST_WIDGETS,
    NEVER,
    NO_WIDGETS,
    OPERATED,
    PAGES,
    SIDEBAR,
    Case,
    Drawn,
    Walker,
    problem_of,
)

pytestmark = pytest.mark.processes  # an app server of this test process


def next_value(drawn: Drawn, now: Any) -> Any:
    """The value a student's next move gives a widget: another option, one step along, a word more; None when it has
    nowhere to go.

    >>> from streamlit.proto.Element_pb2 import Element
    >>> box = Element().checkbox
    >>> next_value(Drawn("checkbox", box, "", 0), False)
    True
    >>> slider = Element().slider
    >>> slider.min, slider.max, slider.step = 0, 3, 1
    >>> next_value(Drawn("slider", slider, "", 0), [3.0]), next_value(Drawn("slider", slider, "", 0), [1.0, 2.0])
    ([2.0], [2.0, 2.0])
    """
    proto, kind = drawn.proto, drawn.kind
    if kind == "checkbox":
        return not now
    if kind in ("selectbox", "radio"):
        others = [option for option in proto.options if option != now]
        return others[0] if others else None
    if kind == "multiselect":
        return list(now[:-1]) if now else list(proto.options[:1]) or None
    if kind == "slider" and proto.options:  # a select slider: the next label (the one before at the end)
        at = list(proto.options).index(now[0]) if now and now[0] in proto.options else 0
        step = 1 if at + 1 < len(proto.options) else -1
        return [proto.options[at + step], *now[1:]] if len(proto.options) > 1 else None
    if kind == "slider":
        first = now[0] + proto.step if now[0] + proto.step <= proto.max else now[0] - proto.step
        return [first, *now[1:]] if proto.min <= first <= proto.max else None
    if kind == "number_input":
        up = now + proto.step
        value = up if not proto.has_max or up <= proto.max else now - proto.step
        if proto.has_min and value < proto.min:
            return None
        return int(value) if proto.data_type == proto.INT else value
    if kind in ("text_input", "text_area"):
        typed = (now + " the").strip() if now else "the cat sat"
        return typed[: proto.max_chars] if proto.max_chars else typed
    return None


async def walk(url: str, case: Case, root: int = MAIN) -> list[str]:
    """Open the case's page and operate each widget of ``root`` (the main area, or the sidebar) once; returns what
    was done. Fails at the first run that draws an exception, a crash box or a widget kind the walk does not know."""
    done: list[str] = []
    async with Walker(url) as student:
        opened = await student.open(case.path, case.query.lstrip("?"))
        assert problem_of(opened) is None, f"{case.name} on opening: {problem_of(opened)}"
        visited: set[str] = set()
        while len(done) < MOST_WIDGETS:
            todo = [
                i for i in student.order if i in student.current and i not in visited and student.drawn[i].root == root
            ]
            if not todo:
                break
            widget_id = todo[0]
            visited.add(widget_id)
            what, run = await operate(student, widget_id)
            done.append(what)
            if run is None:  # left alone, with the reason
                continue
            problem = problem_of(run)
            assert problem is None, f"{case.name}: after {what}: {problem}\n(before it: {done[:-1]})"
    return done


async def operate(student: Walker, widget_id: str) -> tuple[str, Run | None]:
    """Operate one widget as a student would: (what was done, the run it caused), or (why not, None)."""
    drawn = student.drawn[widget_id]
    label = getattr(drawn.proto, "label", "")
    what = f"{drawn.kind} {label!r}"
    if drawn.proto.disabled if hasattr(drawn.proto, "disabled") else False:
        return f"{what}: disabled", None
    if drawn.kind == "button":
        if NEVER.search(label) or LONG_WORK.search(label):
            return f"{what}: left alone", None
        button = student.buttons.get(widget_id)
        return (f"{what}: pressed", await student.press_button(button, either=True)) if button else (what, None)
    if drawn.kind not in OPERATED:
        return f"{what}: left alone ({LEFT_ALONE[drawn.kind]})", None
    widget: Widget | None = student.widgets.get(widget_id)
    if widget is None:  # a selectbox with nothing chosen: the first option
        options = list(getattr(drawn.proto, "options", []))
        if not options:
            return what, None
        widget = Widget(widget_id, "string_value", None, drawn.fragment_id, drawn.proto.query_param_key, label)
        student.widgets[widget_id] = widget
        value = options[0]
    else:
        value = next_value(drawn, student.values.get(widget_id, widget.value))
    if value is None:
        return f"{what}: nowhere to go", None
    return f"{what}: {value!r}"[:160], await student.set_value(widget, value, either=True)


@pytest.fixture(scope="module")
def walk_server(tmp_path_factory):
    """One app server for this test process's walk cases (its own runs and cache folders, the Hub offline)."""
    folder = tmp_path_factory.mktemp("walk-server")
    env = {
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
        "LLMVIZ_NEW_STUDENTS_PER_MINUTE": "0",  # every case is a new student from 127.0.0.1
        "LLMVIZ_SESSION_TIMEOUT": "3",  # a case's runs (a race it started) end 3 s after its session closed
    }
    server = start_app("app.py", env=env, log=folder / "server.log")
    yield server
    server.stop()
    log = (folder / "server.log").read_text()
    assert "Traceback" not in log, log[log.index("Traceback") :][:3000]


def test_the_walks_visit_every_page_of_the_navigation():
    """Both walks (this one and the chromium one) visit the pages of app.py's navigation, every one."""
    from ui.stages import PIPELINE

    assert set(PAGES) == {"" if stage.key == "text" else stage.key for stage in PIPELINE if stage.exists}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_widget_once(walk_server, case):
    done = run_coroutine(walk(walk_server.url, case))
    print(f"{case.name}: {len(done)} widgets", *done, sep="\n  ")  # with -s: what the walk did
    assert done or (case.path, case.tab) in NO_WIDGETS, "the walk found no widget: the page drew none"


def test_every_sidebar_widget_once(walk_server):
    """The shared sidebar on Home (the corpus, the seed, the device, presenter mode…): each reruns the page."""
    done = run_coroutine(walk(walk_server.url, Case("", None, None), root=SIDEBAR))
    assert len(done) >= 3, done
