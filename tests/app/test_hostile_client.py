"""What one hostile client can do to the server over Streamlit's own protocol (issue 72), checked against a real app
server (``benchmarks/_protocol_client.py`` speaks to it as a browser does, then sends what no browser would):

- every text a client controls that can reach the server's log (a section's fragment id, a widget's id and
  value, the address's query string, a page's name, an Origin header, a cookie) sent a thousand times writes a
  few kilobytes at most, escaped: no newline of a client's starts a line of the log
  (``llmviz.errors.ClientLogFilter`` on Streamlit's loggers and llmviz's refusals);
- a value no browser would send, given to every widget of every page and tab at once (an option the widget does not
  offer, a number out of its range, a text longer than its box, a value of another kind) runs no widget's callback
  with it (Tokens › Example's raised a ``KeyError``, a traceback per message): the page runs clean, says in one
  notice which settings it ignored, and the student's settings are all still there;
- wrong teacher keys from one address (a school's one public address) never keep the teacher out: the right key
  from a browser that sent no wrong key is taken at once, while the browsers that guessed wait (not even compared).
"""

from __future__ import annotations

import secrets
import time

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks._protocol_client import Student, Widget, _state
from tests.support.app_server import AppDidNotStart, start_app
from tests.support.asyncio_thread import run_coroutine
from tests.support.widget_walk import CASES, OPERATED, Case, Walker, problem_of
from ui.identity import COOKIE

pytestmark = pytest.mark.processes  # an app server of this test process

KEY = "a-long-teacher-key-for-hostile-tests"
FORGED_LINE = "2026-01-01 00:00:00.000 INFO streamlit: forged"  # what a client's newline would start a line with
TIMES = 1000
#: what a thousand forged messages of one kind may add to the log (ten lines of at most 500 characters, a count)
FEW_KB = 8_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``(url, log path)`` of a server of this module's own (its log is the tests' to read), with a teacher key."""
    folder = tmp_path_factory.mktemp("hostile-server")
    (folder / "runs").mkdir()
    env = {
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
        "LLMVIZ_TEACHER_KEY": KEY,
        "LLMVIZ_NEW_STUDENTS_PER_MINUTE": "0",  # every test is a new student (a browser of its own) from 127.0.0.1
    }
    try:
        app = start_app("app.py", env=env, log=folder / "server.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))
    yield app.url, folder / "server.log"
    app.stop()


def _log(path) -> str:
    return path.read_text(errors="replace")


def _browser() -> dict[str, str]:
    """The headers of a new browser: a student cookie of its own."""
    return {"Cookie": f"{COOKIE}={secrets.token_urlsafe(32)}"}


def _forged(n: int, size: int = 2_000) -> str:
    """The ``n``-th forged text: a newline and what would read as a log line of the server's, then padding."""
    return f"forged{n}\n{FORGED_LINE} {n}\n" + "x" * size


def _assert_bounded(text: str, what: str) -> None:
    assert len(text) < FEW_KB, f"{len(text):,} characters of log for {TIMES} forged {what}:\n{text[:3000]}"
    starts = [line for line in text.splitlines() if line.startswith(FORGED_LINE[:10]) or line.startswith("x" * 20)]
    assert starts == [], f"a client's newline started a line of the log ({what}): {starts[:3]}"


def _flood(url: str, log, what: str, send) -> str:
    """Open the Tokens page, let ``send(student)`` forge messages, rerun the page once (every forged message has been
    read then), and return what the log gained; the rerun must be clean."""
    before = len(_log(log))

    async def visit():
        async with Student(url, headers=_browser()) as student:
            await student.open("tokens")
            await send(student)
            return await student.rerun()

    rerun = run_coroutine(visit())
    assert rerun.status == "finished" and "exception" not in rerun.elements, rerun.errors
    text = _log(log)[before:]
    _assert_bounded(text, what)
    return text


def test_a_thousand_forged_fragment_ids_write_a_few_lines(server):
    """Streamlit logs a rerun for a section the session never drew with its id as sent: one connection wrote 807 MB
    of log in 11 s, and an id holding a newline wrote a line that read like the server's."""
    url, log = server

    async def send(student):
        for n in range(TIMES):
            message = student._rerun_message()
            message.rerun_script.fragment_id = _forged(n, 10_000)
            await student.socket.send(message.SerializeToString())

    text = _flood(url, log, "fragment ids", send)
    assert "does not exist anymore" in text and "forged0\\n2026-01-01" in text  # said once, escaped
    assert "… (10,0" in text  # cut, with its length said


def test_a_thousand_forged_widget_ids_and_values_write_a_few_lines(server):
    url, log = server

    async def send(student):
        message = student._rerun_message()
        seed = student.widget("seed").id
        for n in range(TIMES):  # a bare name (no widget's id) each, and a text where the seed's number is
            forged = _forged(n, 500)
            message.rerun_script.widget_states.widgets.append(WidgetState(id=forged, string_value=forged))
        message.rerun_script.widget_states.widgets.append(WidgetState(id=seed, string_value=_forged(TIMES)))
        await student.socket.send(message.SerializeToString())
        forged_run = await student._run(time.perf_counter(), "")  # run (a rerun sent at once would replace it)
        assert "exception" not in forged_run.elements, forged_run.errors
        assert any("This browser sent a value" in alert for alert in forged_run.alerts)

    text = _flood(url, log, "widget ids and values", send)
    assert "A browser sent a value" in text and "forged0\\n2026-01-01" in text


def test_a_thousand_forged_addresses_and_page_names_write_a_few_lines(server):
    url, log = server

    async def send(student):
        for n in range(TIMES):
            message = student._rerun_message()
            # more parameters than Streamlit takes (it logs that), one of them a newline and a teacher key's guess
            message.rerun_script.query_string = f"teacher={_forged(n, 10)}&" + "a=1&" * 1_000
            message.rerun_script.page_name = _forged(n, 100)
            message.rerun_script.page_script_hash = ""
            await student.socket.send(message.SerializeToString())

    _flood(url, log, "query strings and page names", send)


def test_a_thousand_forged_headers_and_cookies_write_a_few_lines(server):
    """An Origin header no page of this server has is refused, and logged by Streamlit as sent; a cookie is never
    logged. (A header cannot hold a newline: HTTP refuses it before Streamlit sees it.)"""
    url, log = server
    origin = "http://forged.example/" + "o" * 4_000

    async def send(student):
        import websockets

        for n in range(TIMES // 5):  # a connection each: fewer, it is the same message
            headers = {"Origin": f"{origin}{n}", "Cookie": f"{COOKIE}={'c' * 3_000}{n}; other={'d' * 3_000}"}
            try:
                socket = await websockets.connect(
                    student.stream, subprotocols=["streamlit"], additional_headers=headers, open_timeout=30
                )
                await socket.close()
            except (OSError, websockets.exceptions.WebSocketException):
                pass  # refused, as it should be

    text = _flood(url, log, "Origin headers and cookies", send)
    assert "Rejecting WebSocket connection" in text and "c" * 100 not in text


FORGED_OPTION = "not an option\n2026-01-01 forged"
REFUSED_NOTICE = "This browser sent a value"


def forged_value(drawn) -> tuple[str, object] | None:
    """What a hostile client sends for a drawn widget instead of what its browser could: (the widget state's field,
    the value); None when nothing it takes is out of bounds (a text box without a limit takes any text).

    >>> from streamlit.proto.Element_pb2 import Element
    >>> from tests.support.widget_walk import Drawn
    >>> slider = Element().slider
    >>> slider.max, slider.default[:] = 3, [1.0]
    >>> forged_value(Drawn("slider", slider, "", 0)), forged_value(Drawn("radio", Element().radio, "", 0))[0]
    (('double_array_value', [1000003.0]), 'string_value')
    """
    proto, kind = drawn.proto, drawn.kind
    if kind in ("selectbox", "radio"):
        return "string_value", FORGED_OPTION
    if kind == "multiselect" or (kind == "slider" and proto.options):
        return "string_array_value", [FORGED_OPTION]
    if kind == "slider":
        return "double_array_value", [proto.max + 1e6] * max(1, len(proto.default))
    if kind == "number_input":
        return ("int_value", -(10**12)) if proto.data_type == proto.INT else ("double_value", float("nan"))
    if kind == "checkbox":
        return "string_value", FORGED_OPTION  # a text where a tick is
    if kind in ("text_input", "text_area") and proto.max_chars:
        return "string_value", "x" * (proto.max_chars + 1)
    return None


async def forge_every_widget(url: str, case: Case) -> tuple[list[str], object, object]:
    """Open the case's page, then rerun it with a forged value for every widget it drew (main area and sidebar) in
    one message; then rerun it as the browser holds it. Returns (the widgets forged, the forged run, the rerun)."""
    async with Walker(url) as student:
        student.timeout_s = 180  # a page's first open on a cold server (Tuning loads three models) on a busy machine
        opened = await student.open(case.path, case.query.lstrip("?"))
        assert problem_of(opened) is None, f"{case.name} on opening: {problem_of(opened)}"
        held = dict(student.values)
        message = student._rerun_message()
        states = message.rerun_script.widget_states.widgets
        forged: list[str] = []
        for widget_id in [i for i in student.order if i in student.current and student.drawn[i].kind in OPERATED]:
            value = forged_value(student.drawn[widget_id])
            if value is None:
                continue
            kept = [state for state in states if state.id != widget_id]
            del states[:]
            states.extend(kept)
            states.append(_state(Widget(widget_id, value[0], value[1], "", ""), value[1]))
            forged.append(f"{student.drawn[widget_id].kind} {getattr(student.drawn[widget_id].proto, 'label', '')!r}")
        began = time.perf_counter()
        await student.socket.send(message.SerializeToString())
        forged_run = await student._run(began, "")
        student.values = {i: v for i, v in held.items() if i in student.widgets}  # what the browser still holds
        return forged, forged_run, await student.rerun()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_forged_value_for_every_widget_runs_no_callback_with_it(server, case):
    url, log = server
    forged, forged_run, rerun = run_coroutine(forge_every_widget(url, case))
    assert forged_run.status == "finished" and problem_of(forged_run) is None, (
        f"{case.name}: forged {forged}: {problem_of(forged_run)}"
    )
    if any(not what.startswith(("slider", "number_input")) for what in forged):
        # a number out of its range is put back to the widget's default by Streamlit itself, silently
        assert any(REFUSED_NOTICE in alert for alert in forged_run.alerts), f"{case.name}: no notice for {forged}"
    assert rerun.status == "finished" and problem_of(rerun) is None, problem_of(rerun)
    assert not any(REFUSED_NOTICE in alert for alert in rerun.alerts)  # the browser's own values: all taken
    assert "Traceback" not in _log(log)


def test_a_forged_example_keeps_the_students_text(server):
    """Tokens › Example: its callback replaces the text box's text; a forged example changes nothing."""
    url, _ = server

    async def visit():
        async with Walker(url) as student:
            await student.open("tokens")
            await student.set_widget("text", "my own words", whole_page=True)
            forged = await student.set_widget("example", FORGED_OPTION, whole_page=True)
            text = student.drawn[student.widget("text").id].proto
            return forged, text.set_value, text.value

    forged, text_set, text = run_coroutine(visit())
    assert problem_of(forged) is None and any(REFUSED_NOTICE in alert for alert in forged.alerts)
    assert not text_set or text == "my own words"


class Tab(Student):
    """A browser tab that keeps the pages its menu shows (a teacher's shows the class view, hidden for others)."""

    def __init__(self, url: str) -> None:
        super().__init__(url, headers=_browser())
        self.pages: set[str] = set()

    def _seen(self, message, run) -> None:
        super()._seen(message, run)
        if message.WhichOneof("type") == "navigation":
            self.pages = {page.url_pathname for page in message.navigation.app_pages if not page.is_hidden}

    async def try_key(self, key: str):
        """Send ``?teacher=key`` with a rerun of the page, as a reload of the address with it does."""
        self.query = {"teacher": [key]}
        return await self.rerun()


def test_wrong_teacher_keys_from_one_address_never_keep_the_teacher_out(server):
    """Behind a school's one public address, a student's wrong keys delayed the teacher's right one for up to 5
    minutes (each wrong key doubled the wait of the whole address). Now: ten browsers guess (each heard once, the
    address's wait doubling to minutes), one of them keeps guessing; the teacher's browser, from the same address,
    is let in at once by its first key; the guessers, even with the right key now, are not heard."""
    url, log = server
    before = len(_log(log))

    async def visit():
        guessers = [Tab(url) for _ in range(10)]
        try:
            for n, guesser in enumerate(guessers):
                await guesser.open("", f"teacher=a-wrong-guess-number-{n:03d}")
            for n in range(20):  # the first guesser goes on (not compared: it waits)
                await guessers[0].try_key(f"another-wrong-guess-{n:03d}")
            async with Tab(url) as teacher:
                opened = await teacher.open("classroom", f"teacher={KEY}")  # its first page run: no wait
                teacher_pages = set(teacher.pages)
            late = [await guesser.try_key(KEY) for guesser in guessers[:2]]  # the right key, from a guesser
            return teacher_pages, opened, late, [set(guesser.pages) for guesser in guessers[:2]]
        finally:
            for guesser in guessers:
                await guesser.close()

    teacher_pages, opened, late, guesser_pages = run_coroutine(visit())
    assert "classroom" in teacher_pages and problem_of(opened) is None, "the teacher's right key was not taken"
    assert all(problem_of(run) is None for run in late)
    assert all("classroom" not in pages for pages in guesser_pages), "a guesser got in during its wait"
    lines = _log(log)[before:].splitlines()
    assert sum("A wrong teacher key from '127.0.0.1'" in line for line in lines) >= 1
    assert sum("was not checked" in line for line in lines) >= 1
    assert KEY not in "\n".join(lines)  # the key is never logged
