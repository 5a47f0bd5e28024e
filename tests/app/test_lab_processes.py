"""A student's run across two real app processes, over Streamlit's own protocol (issue 68 §8): the student trains on
process A, the teacher parks the run from the class view on process B (the run's worker is A's: the park crosses
the processes through the lab's mailbox), and the student's page on A and a new tab of theirs on B both read
"parked by the teacher at step N" with Resume right under it; Resume on B trains the same run on, and the page's
live chart draws its whole history from step 1 with the step it was resumed at marked.

The tabs rerun their page where a browser's timer would rerun its live section: a state is waited for, never a
time."""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks._class_client import ClassTab, cookie_of
from llmviz.lab.service import Lab
from tests.support.asyncio_thread import run_coroutine
from tests.support.class_servers import class_server
from tests.support.class_servers import until as _until
from tests.support.plotly_spec import drawn
from ui.identity import new_secret

pytestmark = pytest.mark.slow  # real app servers

KEY = "a-teacher-key-for-the-run-across-processes"


class RunTab(ClassTab):
    """A tab that also keeps each Plotly chart's data as the server sent it."""

    def __init__(self, url: str, cookie: str) -> None:
        super().__init__(url, cookie)
        self.charts: list[dict] = []

    def _seen(self, message, run) -> None:
        super()._seen(message, run)
        if message.WhichOneof("type") == "delta" and message.delta.WhichOneof("type") == "new_element":
            element = message.delta.new_element
            if element.WhichOneof("type") == "plotly_chart":
                self.charts.append(json.loads(element.plotly_chart.spec))

    def forget(self) -> None:
        super().forget()
        self.charts.clear()


def server(folder, name: str):
    return class_server(folder, name, KEY)


async def until(tab, found, what: str, timeout: float = 300.0):
    """:func:`tests.support.class_servers.until`, with a run's time to train past its park."""
    return await _until(tab, found, what, timeout)


def parked_with_resume(tab: RunTab, line: str, run_id: str) -> bool:
    """The page says the teacher parked the run, and draws its Resume."""
    return any(line in text for text in tab.texts) and any(
        b.id.endswith(f"-run_resume_single_{run_id}") for b in tab.buttons.values()
    )


def per_step(tab: RunTab) -> tuple[list, list]:
    """The first chart's per-step curve (its steps) and its dotted marks (the steps a run was resumed at)."""
    for chart in tab.charts:
        traces = [t for t in chart.get("data", []) if str(t.get("name", "")).endswith("(per step)")]
        if traces:
            marks = [
                s["x0"] for s in chart.get("layout", {}).get("shapes", []) if s.get("line", {}).get("dash") == "dot"
            ]
            return drawn(traces[0]["x"]).tolist(), marks
    return [], []


def test_the_teachers_park_crosses_the_processes_and_the_resumed_run_draws_its_whole_curve(tmp_path):
    (tmp_path / "runs").mkdir()
    a, b = server(tmp_path, "a"), server(tmp_path, "b")
    lab = Lab.at(tmp_path / "runs")  # the test reads the lab's database beside the servers
    secrets = {name: new_secret() for name in ("teacher", "ann")}

    async def scenario() -> None:
        ann = RunTab(a.url, cookie_of(secrets["ann"]))
        opened = await ann.open("training", "steps=2000")
        assert opened.errors == []
        await ann.press("train")
        [row] = await until(ann, lambda: [r for r in lab.class_runs() if r.step >= 20], "her run past step 20")

        teacher = RunTab(b.url, cookie_of(secrets["teacher"]))
        assert (await teacher.open("classroom", f"teacher={KEY}")).errors == []
        await teacher.choose("class_run", f"{row.name} · {row.label} · {row.run_id}")
        parked = await teacher.press("class_park")
        assert parked.errors == [] and any("after its current step" in toast for toast in teacher.toasts), (
            teacher.toasts
        )
        await until(ann, lambda: lab.run(row.student, row.run_id).state == "parked", "the run parked on A")
        view = lab.run(row.student, row.run_id)
        step = view.state_step if view.state_step is not None else view.step
        line = f"parked by the teacher at step {step} of"
        await until(ann, lambda: parked_with_resume(ann, line, row.run_id), "her open tab on A: parked, Resume")
        assert not any("everything learned so far is kept" in text for text in ann.texts)

        tab_b = RunTab(b.url, cookie_of(secrets["ann"]))  # a new tab of hers, served by B
        assert (await tab_b.open("training")).errors == []
        assert parked_with_resume(tab_b, line, row.run_id), tab_b.texts[-8:]
        resumed = await tab_b.press(f"run_resume_single_{row.run_id}")
        assert resumed.errors == []
        await until(
            tab_b, lambda: lab.run(row.student, row.run_id).step > step + 10, "the run trained on past the park"
        )
        steps, marks = await until(tab_b, lambda: (found := per_step(tab_b)) and found[0] and found, "the live chart")
        assert lab.run(row.student, row.run_id).state == "running"  # the chart drawn was the live run's
        assert steps[0] == 1 and steps[-1] > step, (steps[:3], steps[-3:], step)  # its whole history
        assert marks == list(lab.run(row.student, row.run_id).resumes)
        lab.control(row.student, row.run_id, "stop")
        for tab in (ann, teacher, tab_b):
            await tab.close()

    try:
        run_coroutine(asyncio.wait_for(scenario(), 900))
    finally:
        lab.registry.dispose()
        a.stop()
        b.stop()
    for app in (a, b):
        assert "Traceback" not in app.log_path.read_text(errors="replace")
