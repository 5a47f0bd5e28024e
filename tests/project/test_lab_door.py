"""The app reads a student's runs through one door (issue 56 §1): ``ui/lab.py`` asks the lab's service
(:mod:`llmviz.lab.service`); no page, panel or the picker reaches the registry's tables, a job manager's keeper or a
run's files. Pages reached ``manager().keeper.lab.registry`` in ten places, and the Training page said "No run yet"
above the run the registry kept."""

import re

from tests.support.paths import ROOT

REACHING = re.compile(r"\.registry\b|keeper\.lab|\.keeper\b|\.storage\b")


def lines_of_the_app(pattern: re.Pattern) -> list[str]:
    """``path:line: code`` of every line in ``ui/`` and ``stages/`` that ``pattern`` finds."""
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in ("ui", "stages")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]


def test_no_page_panel_or_picker_reaches_past_the_lab_door():
    reaching = lines_of_the_app(REACHING)
    assert reaching == [], "ask ui.lab (the lab's service) instead:\n" + "\n".join(reaching)


JOBS = re.compile(r"^\s*(from llmviz\.jobs\b|import llmviz\.jobs\b)|default_manager|\bmanager\(\)")


def test_no_page_panel_or_picker_holds_a_job_manager_or_a_job():
    """A run training in this process is read, started and controlled through the lab's door to its live runs
    (``picker.runs()``: :class:`llmviz.lab.live.StudentRuns`, read-only :class:`~llmviz.lab.live.LiveRun` views), never
    from the jobs layer (issue 56 §1: pages drew this process's runs from its jobs in 45 places). No page imports
    ``llmviz.jobs`` at all (issue 68 §6): a task's loop is library code (``llmviz.training.tasks``)."""
    reaching = lines_of_the_app(JOBS)
    assert reaching == [], "ask picker.runs() (llmviz.lab.live) instead:\n" + "\n".join(reaching)


def test_a_live_run_is_a_view_without_controls():
    """What a page gets of a live run cannot pause, stop or forget it (a control goes through the door, which records
    who changed it), nor reach the job behind it by a public name."""
    from llmviz.lab.live import LiveRun

    public = {name for name in dir(LiveRun) if not name.startswith("_")}
    assert public == {"id", "label", "kind", "created", "info", "result", "checkpoint", "snapshots", "changing",
                      "paused", "ended", "status"}  # fmt: skip
