"""One student cannot break the class: the server's answers to a link and to widget values that a browser would never
send, checked over Streamlit's own protocol (``benchmarks/_protocol_client.py``: a websocket, as a browser talks to
the server) against a server started for this module, whose log the tests read.

- ``/home?seed=42`` (a bound parameter on the home route) opens the home page with the seed, never Streamlit's
  "This app has encountered an error";
- a widget value of the wrong kind (text for the seed's number input), sent after the page opened or with the
  first message, gives one line in the server's log and a notice on the page, never a traceback; the page runs
  with the value the widget had, and the next rerun is clean;
- the protocol client itself: it opens a page, counts its deltas and flips a toggle inside a section (a fragment
  rerun), as chromium does (``benchmarks/class_load.py --validate`` compares the two).
"""

from __future__ import annotations

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks._protocol_client import Student
from tests.support.app_server import AppDidNotStart, start_app
from tests.support.asyncio_thread import run_coroutine

pytestmark = pytest.mark.browser

REFUSED_LINE = "A browser sent a value"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``(url, log path)`` of a server of its own (the shared one's log is not the tests' to read)."""
    folder = tmp_path_factory.mktemp("safety-server")
    (folder / "runs").mkdir()
    env = {
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
        "LLMVIZ_SESSION_TIMEOUT": "3",
    }
    try:
        app = start_app("app.py", env=env, log=folder / "server.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))
    yield app.url, folder / "server.log"
    app.stop()


def _run(coroutine):
    return run_coroutine(coroutine)


def _log(path) -> str:
    return path.read_text(errors="replace")


def test_home_route_with_a_bound_parameter_opens_home_with_it(server):
    url, log = server

    async def visit():
        async with Student(url) as student:
            opened = await student.open("home", "seed=42")
            return opened, student.values[student.widget("seed").id], dict(student.query)

    opened, seed, query = _run(visit())
    assert opened.status == "finished" and opened.errors == []
    assert "exception" not in opened.elements
    assert seed == 42  # the sidebar's seed came from the link
    assert query == {"seed": ["42"]}  # and the address (now the home page's) still carries it
    assert "Cannot clear query parameters" not in _log(log)


STEP_BY_STEP = "attention_tab=Step+by+step"  # the Attention tab that holds the causal-mask toggle


def test_a_forged_widget_value_is_one_log_line_and_a_notice(server):
    url, log = server
    before = _log(log).count(REFUSED_LINE)

    async def forge():
        async with Student(url) as student:
            await student.open("attention", STEP_BY_STEP)
            seed = student.values[student.widget("seed").id]
            forged = await student.set_widget("seed", "not a number", whole_page=True, kind="string_value")
            student.widgets[student.widget("seed").id].kind = "int_value"  # an honest browser again
            student.values[student.widget("seed").id] = seed
            clean = await student.set_widget("mask", False)
            again = await student.set_widget("scale", False, whole_page=True)
            return forged, clean, again

    forged, clean, again = _run(forge())
    assert forged.status == "finished" and forged.errors == [] and "exception" not in forged.elements
    assert any("This browser sent a value" in alert and "random seed" in alert for alert in forged.alerts)
    for later in (clean, again):  # the bad value was never kept: later runs are clean, without the notice
        assert later.errors == [] and "exception" not in later.elements
        assert not any("This browser sent a value" in alert for alert in later.alerts)
    text = _log(log)
    assert text.count(REFUSED_LINE) == before + 1
    assert "Traceback" not in text and "invalid literal" not in text


def test_a_forged_value_in_the_first_message_is_refused_too(server):
    """A browser sends no widget value with its first message; a forged one may, for a widget that has not been
    drawn yet (Streamlit checks it when the widget is drawn)."""
    url, log = server

    async def forge():
        async with Student(url) as first:
            await first.open("attention")
            seed_id = first.widget("seed").id  # a widget's id is the same in every session
        state = WidgetState(id=seed_id, string_value="forty-two")
        async with Student(url) as student:
            opened = await student.open("attention", STEP_BY_STEP, states=[state])
            rerun = await student.set_widget("mask", False)
            return opened, rerun

    opened, rerun = _run(forge())
    assert opened.status == "finished" and opened.errors == [] and "exception" not in opened.elements
    assert rerun.errors == []
    assert "Traceback" not in _log(log)


def test_the_protocol_client_opens_a_page_and_flips_a_toggle_in_a_section(server):
    url, _ = server

    async def visit():
        async with Student(url) as student:
            opened = await student.open("attention", STEP_BY_STEP)
            flipped = await student.set_widget("mask", False)
            return opened, flipped, student.widget("mask")

    opened, flipped, mask = _run(visit())
    assert opened.status == "finished" and opened.deltas > 50 and "plotly_chart" in opened.elements
    assert mask.fragment_id  # the toggle lives in a section: only that section reruns
    assert flipped.status == "fragment finished" and 0 < flipped.deltas < opened.deltas
    assert flipped.errors == []


def test_a_forged_array_of_the_wrong_kind_is_refused_too(server):
    """A select slider holds its options' labels (strings): numbers sent for it passed Streamlit's deserializer and
    broke the page when it drew the slider again ("must be real number, not str")."""
    url, log = server

    async def forge():
        async with Student(url) as student:
            await student.open("training")
            forged = await student.set_widget("lr", [5.0], whole_page=True, kind="double_array_value")
            student.widgets[student.widget("lr").id].kind = "string_array_value"
            student.values[student.widget("lr").id] = ["0.003"]
            again = await student.set_widget("batch", [8.0], whole_page=True)
            return forged, again

    forged, again = _run(forge())
    for run in (forged, again):
        assert run.status == "finished" and run.errors == [] and "exception" not in run.elements
    assert any("This browser sent a value" in alert for alert in forged.alerts)
    assert "must be real number" not in _log(log)


def test_clear_cache_from_a_client_then_a_widget_change_keeps_the_page(server):
    """A client's ``clear_cache`` emptied the model picker's value: the next widget change crashed the page in
    ``ui.picker_sidebar._remember_model`` ('NoneType' object has no attribute 'startswith')."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    url, log = server

    async def clear_then_change():
        async with Student(url) as student:
            await student.open("sampling")
            message = BackMsg()
            message.clear_cache = True
            await student.socket.send(message.SerializeToString())
            changed = await student.set_widget("temperature", [1.5], whole_page=True)
            again = await student.set_widget("top_p", [1.0], whole_page=True)
            return changed, again

    for run in _run(clear_then_change()):
        assert run.status == "finished" and run.errors == [] and "exception" not in run.elements
    assert "startswith" not in _log(log)


def test_a_forged_widget_state_named_like_a_bare_key_is_refused(server):
    """A widget state whose id is a bare key (``steer_token``, not Streamlit's ``$$ID-…``) made Streamlit raise
    KeyError on the page's first read of its session state: a 55-line traceback and a broken page."""
    url, log = server
    before = _log(log).count(REFUSED_LINE)

    async def forge():
        async with Student(url) as student:
            opened = await student.open("inside", states=[WidgetState(id="steer_token", string_value="x")])
            rerun = await student.set_widget("seed", 7, whole_page=True)
            return opened, rerun

    opened, rerun = _run(forge())
    for run in (opened, rerun):
        assert run.status == "finished" and run.errors == [] and "exception" not in run.elements
    text = _log(log)
    assert text.count(REFUSED_LINE) == before + 1 and "Traceback" not in text


def test_a_forged_megabyte_of_text_is_refused_before_any_page_reads_it(server):
    """Inside › Steer's text areas had no max_chars: a forged 20 MB value was tokenized in the script thread (4-6 s a
    rerun; here 1 MB, under the websocket's own message limit). Every text a browser sends is checked against its
    widget's bound first (``ui.state.MAX_WIDGET_TEXT`` when the widget has no max_chars), whatever the page."""
    url, log = server

    async def forge():
        async with Student(url) as student:
            await student.open("sampling")
            kept = student.values[student.widget("prompt").id]
            forged = await student.set_widget("prompt", "x" * 1_000_000, whole_page=True)
            student.values[student.widget("prompt").id] = kept  # an honest browser again
            again = await student.set_widget("top_p", [1.0], whole_page=True)
            return forged, again

    forged, again = _run(forge())
    assert forged.status == "finished" and forged.errors == [] and forged.seconds < 30
    assert any("This browser sent a value" in alert and "Sampling: the prompt" in alert for alert in forged.alerts)
    assert again.errors == [] and not any("This browser sent a value" in alert for alert in again.alerts)
    assert "1,000,000 characters" in _log(log)


def test_forged_widget_ids_are_logged_bounded_escaped_and_once(server):
    """A forged widget id was logged verbatim (issue 57): five 10 MB ids wrote 50 MB of log in 1.7 s, and an id holding
    a newline wrote a line of its own that read like the server's ("llmviz ERROR …"). Every id is now at most 200
    characters in the log, escaped; the same refusal again within a minute is counted, not logged (and of refusals
    alike, ten a minute are logged: tests/app/test_hostile_client.py sends a thousand)."""
    url, log = server
    before = len(_log(log))
    forged_line = "2026-01-01 00:00:00,000 llmviz ERROR ui.pages: the database is gone"
    # the newline first: of refusals alike, ten a minute are logged (llmviz.errors.ClientLogFilter), the rest counted
    ids = [f"steer_token\n{forged_line}"] * 3 + [f"big{n}-" + "x" * 1_000_000 for n in range(5)]

    async def forge():
        async with Student(url) as student:
            runs = [await student.open("inside", states=[WidgetState(id=ids[0], string_value="x")])]
            for forged_id in ids[1:]:
                runs.append(await student.open("inside", states=[WidgetState(id=forged_id, string_value="x")]))
            return runs

    for run in _run(forge()):
        assert run.status == "finished" and run.errors == [] and "exception" not in run.elements
    text = _log(log)[before:]
    assert len(text) < 20_000, f"{len(text):,} characters of log for eight forged ids"
    assert forged_line not in text.splitlines() and not any(line.startswith("2026-01-01") for line in text.splitlines())
    assert "\\n2026-01-01" in text  # the first id, escaped (the big ones after it may be counted, not logged)
    assert text.count("steer_token") == 1  # the same forged id three times: logged once (the rest counted)
