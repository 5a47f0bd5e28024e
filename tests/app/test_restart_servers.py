"""A restart of real app servers loses nothing (issue 49 §6): three students, each a browser identity (the
``llmviz_student`` cookie of :mod:`ui.identity`, sent with the websocket as a browser does), get a run into a state
through the Training page (one training, one paused, one finished); the server (``streamlit run app.py``) is stopped
with SIGTERM and a new one started on the same runs folder and database; each student's page lists their run, and
only theirs, at its steps; the one that was training shows interrupted and Resume continues it with its optimizer's
state. Then that server is killed (SIGKILL) while the resumed run trains, and a third one still lists every run.

No browser: Streamlit's own protocol over a websocket (``benchmarks/_protocol_client.py``), so the test costs three
servers' starts and page runs and a few seconds of training: about 35 CPU-s (40 s on a 2-core machine)."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import time
import urllib.parse

import numpy as np
import pyarrow
import pytest

from benchmarks._protocol_client import FINISHED, Run, Student
from llmviz.lab.service import Lab
from tests.support.app_server import AppDidNotStart, AppServer, start_app
from tests.support.asyncio_thread import run_coroutine
from ui.identity import COOKIE, new_secret, student_from_secret

pytestmark = pytest.mark.slow  # three app servers and their first page runs

SMALL = {  # a tiny run: GPT nano on characters of the names corpus, no samples
    "corpus": "US census first names",
    "train_model": "GPT nano (2 layers, d 32)",
    "train_tokenizer": "char",
    "batch": 8,
    "train_context": 16,
    "sample_every": 0,
    "steps": 10,
}
LONG = {**SMALL, "train_model": "GPT micro (2 layers, d 64)", "batch": 32, "train_context": 64, "steps": 2000}
KEPT = "A kept run"  # the Training page's choice of a kept run ("<label> · <run id>")


class Tab(Student):
    """One student's browser tab: the protocol client with the student's cookie, keeping what the page drew that
    this test reads (each select box's options, each table's rows, the text)."""

    def __init__(self, url: str, secret: str):
        super().__init__(url, timeout_s=300, headers={"Cookie": f"{COOKIE}={secret}"})
        self.options: dict[str, list[str]] = {}
        self.tables: list[list[dict]] = []
        self.texts: list[str] = []
        self.charts: list[dict] = []

    def _seen(self, message, run) -> None:
        super()._seen(message, run)
        if message.WhichOneof("type") != "delta" or message.delta.WhichOneof("type") != "new_element":
            return
        element = message.delta.new_element
        kind = element.WhichOneof("type")
        if kind == "selectbox":
            self.options[element.selectbox.label] = list(element.selectbox.options)
        elif kind == "dataframe" and element.dataframe.arrow_data.data:
            self.tables.append(pyarrow.ipc.open_stream(element.dataframe.arrow_data.data).read_all().to_pylist())
        elif kind == "markdown":
            self.texts.append(element.markdown.body)
        elif kind == "alert":
            self.texts.append(element.alert.body)
        elif kind == "plotly_chart":
            self.charts.append(json.loads(element.plotly_chart.spec))

    async def press(self, label: str):
        """Click the (first) button labelled ``label``; returns once its run (its fragment's, if it lives in one)
        ends."""
        button = next(b for b in self.buttons.values() if b.label == label)
        if not button.fragment_id:
            return await self.click(label)
        message = self._click_message(button)
        began = time.perf_counter()
        await self.socket.send(message.SerializeToString())
        return await self._fragment_or_page(began, button.fragment_id)

    async def _fragment_or_page(self, began: float, fragment_id: str) -> Run:
        """Read messages until the fragment's run finished, or the whole page's run it asked for (a live section whose
        run starts or ends reruns the page: :func:`ui.panels.runs.live`)."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        run = Run(0.0, 0, [], "")
        while True:
            data = await asyncio.wait_for(
                self.socket.recv(), timeout=max(1.0, began + self.timeout_s - time.perf_counter())
            )
            message = ForwardMsg()
            message.ParseFromString(data)
            self._seen(message, run)
            if message.WhichOneof("type") == "script_finished" and message.script_finished in FINISHED:
                whole = message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY
                if whole or fragment_id in message.metadata.run.fragment_ids:
                    run.seconds, run.status = time.perf_counter() - began, FINISHED[message.script_finished]
                    return run

    def _click_message(self, button):
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        from benchmarks._protocol_client import _state

        message = BackMsg()
        rerun = message.rerun_script
        rerun.query_string = urllib.parse.urlencode(self.query, doseq=True)
        rerun.page_script_hash = self.page_hash
        rerun.fragment_id = button.fragment_id
        rerun.widget_states.widgets.extend(_state(self.widgets[i], v) for i, v in self.values.items())
        rerun.widget_states.widgets.append(WidgetState(id=button.id, trigger_value=True))
        for name, value in self._context().items():
            setattr(rerun.context_info, name, value)
        return message


def values(array) -> list[float]:
    """A Plotly trace's values as the browser gets them (numpy arrays travel as base64 with their dtype)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def server(folder) -> AppServer:
    env = {
        "HF_HUB_OFFLINE": "1",
        "LLMVIZ_RUNS_DIR": str(folder / "runs"),
        "LLMVIZ_CACHE_DIR": str(folder / "cache"),
        "LLMVIZ_SESSION_TIMEOUT": "600",  # a student whose tab is closed between two steps of the test stays
        "LLMVIZ_MAX_JOBS": "2",
        "LLMVIZ_TORCH_THREADS": "1",
        "LLMVIZ_WATCH_BUDGET": "4",
    }
    try:
        return start_app("app.py", env=env, log=folder / f"server-{time.monotonic_ns()}.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))


def end(app: AppServer, how: signal.Signals) -> None:
    """Send ``how`` to the server and wait for it to exit (SIGTERM: its exit handlers run)."""
    if app.process.poll() is None:
        app.process.send_signal(how)
        app.process.wait(timeout=60)
    app.stop()


async def wait_for(predicate, timeout: float = 180.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout:.0f} s")
        await asyncio.sleep(0.2)


async def train(url: str, secret: str, settings: dict) -> None:
    """The student opens Training with ``settings`` in its link and presses Train."""
    async with Tab(url, secret) as tab:
        opened = await tab.open("training", urllib.parse.urlencode(settings))
        assert opened.errors == [], opened.errors
        pressed = await tab.click("train")
        assert pressed.errors == [], pressed.errors


async def pause(url: str, secret: str) -> None:
    """The student presses Pause under their run's live curve."""
    async with Tab(url, secret) as tab:
        await tab.open("training", urllib.parse.urlencode({"corpus": SMALL["corpus"]}))
        await tab.press("Pause")


async def kept_page(url: str, secret: str) -> Tab:
    """The student's Training page (its socket closed again), with what it drew."""
    tab = Tab(url, secret)
    opened = await tab.open("training", urllib.parse.urlencode({"corpus": SMALL["corpus"]}))
    assert opened.errors == [], opened.errors
    return tab


def kept_rows(tab: Tab) -> list[dict]:
    [rows] = [table for table in tab.tables if table and "snapshots kept" in table[0]]
    return rows


def test_three_students_find_their_runs_after_the_server_is_stopped_and_started(tmp_path):
    secrets = {name: new_secret() for name in ("ann", "bob", "cy")}
    students = {name: student_from_secret(secret) for name, secret in secrets.items()}
    (tmp_path / "runs").mkdir()
    registry = Lab.at(tmp_path / "runs").registry  # the test reads the lab's database beside the servers

    def run_of(name: str):
        found = [run for run in registry.records.runs(students[name]) if run.kind == "training"]
        return found[-1] if found else None

    async def before_the_restart(url: str) -> None:
        await train(url, secrets["cy"], SMALL)  # cy's run: 10 steps, finished
        await wait_for(lambda: run_of("cy") is not None and run_of("cy").state == "finished", what="cy's run ended")
        await train(url, secrets["bob"], LONG)  # bob's: paused after a few steps
        await wait_for(lambda: run_of("bob") is not None and run_of("bob").step >= 3, what="bob's steps")
        await pause(url, secrets["bob"])
        await wait_for(lambda: run_of("bob").state == "paused", what="bob's run paused")
        await train(url, secrets["ann"], LONG)  # ann's: training when the server stops
        await wait_for(lambda: run_of("ann") is not None and run_of("ann").step >= 3, what="ann's steps")

    first = server(tmp_path)
    try:
        run_coroutine(before_the_restart(first.url))
        assert run_of("ann").state == "running"
    finally:
        end(first, signal.SIGTERM)  # stopped in order, as a teacher stops the server
    ids = {name: run_of(name).id for name in students}
    steps = {name: run_of(name).step for name in students}
    assert run_of("ann").step < 2000 and steps["cy"] == 10

    async def after_the_restart(url: str) -> dict[str, Tab]:
        tabs = {}
        for name, secret in secrets.items():
            tabs[name] = await kept_page(url, secret)
            await tabs[name].close()
        ann = await kept_page(url, secrets["ann"])  # ann presses Resume
        resumed = await ann.press("Resume")  # under the run the page opens on
        assert resumed.errors == [], resumed.errors
        await ann.close()
        return tabs

    second = server(tmp_path)
    try:
        tabs = run_coroutine(after_the_restart(second.url))
        for name, tab in tabs.items():
            [choice] = tab.options[KEPT]  # their run, and no one else's
            assert choice.endswith(f" · {ids[name]}")
            [row] = kept_rows(tab)
            assert row["steps"] == f"{steps[name]} of {2000 if name != 'cy' else 10}"
        assert kept_rows(tabs["cy"])[0]["state"] == "finished after 10 steps"
        for name in students:  # the Training page opens on the run the lab keeps, with every point of its curve
            assert not [text for text in tabs[name].texts if "No run yet" in text], name
            first = tabs[name].charts[0]  # the page's first picture: the run it opens on
            [raw] = [t for t in first["data"] if t.get("name", "").endswith("(per step)")]
            kept = registry.records.curve(ids[name])
            assert len(kept) == steps[name] and values(raw["x"]) == [step for step, *_ in kept], name
            assert values(raw["y"]) == pytest.approx([loss for _, loss, _ in kept], rel=1e-6), name
        for name in ("ann", "bob"):  # training or paused when the server stopped: interrupted, resumable
            assert kept_rows(tabs[name])[0]["state"].startswith("interrupted")
            assert registry.records.resume_state(ids[name])[0] == steps[name]  # its optimizer's state at its last step
        said = " ".join(tabs["ann"].texts)
        assert f"Resume trains it on from step {steps['ann']} with its optimizer's state" in said
        assert registry.records.run(students["bob"], ids["ann"]) is None  # a run id alone opens nothing of another's
        [resumed] = registry.records.runs(students["ann"])  # one run, one history: the same run goes on
        again = resumed.id
        assert again == ids["ann"] and resumed.resumes == [steps["ann"]]
        run_coroutine(
            wait_for(lambda: registry.records.run(students["ann"], again).step >= steps["ann"] + 3, what="resume")
        )
        curve = [step for step, *_ in registry.records.curve(again)]
        assert curve == list(range(1, len(curve) + 1))  # one curve from its first step, its resume marked
    finally:
        end(second, signal.SIGKILL)  # killed outright while ann's resumed run trains

    third = server(tmp_path)
    try:
        tabs = run_coroutine(after_kill(third.url, secrets))
        assert tabs["ann"] == [ids["ann"]]  # one run, one history: the resumed run, interrupted again
        assert tabs["bob"] == [ids["bob"]] and tabs["cy"] == [ids["cy"]]
        assert registry.records.run(students["ann"], again).state == "interrupted"
    finally:
        third.stop()


async def after_kill(url: str, secrets: dict[str, str]) -> dict[str, list[str]]:
    """Each student's kept run ids, as their Training page offers them."""
    listed = {}
    for name, secret in secrets.items():
        tab = await kept_page(url, secret)
        await tab.close()
        listed[name] = [choice.rsplit(" · ", 1)[1] for choice in tab.options[KEPT]]
    return listed
