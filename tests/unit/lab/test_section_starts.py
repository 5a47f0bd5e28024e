"""Issue 68 §2: a page section finds the runs it started in the lab (``Lab.section_starts``), never in the browser's
session: grouped by start with what was asked, the student's own only, after a restart too, and a deleted run gone."""

from __future__ import annotations

import functools

import pytest

from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import Planned
from llmviz.lab.service import Lab
from llmviz.training import footprint
from llmviz.training.dataset import vocab_bound
from llmviz.training.trainer import build_trainer
from tests.support.lab_process import TEXT, config


def _race(manager: JobManager, student: str, labels: list[str], section: tuple[str, dict] | None):
    chosen = config(5)
    needs = footprint.of_config(chosen, vocab_bound(TEXT, chosen), text_bytes=len(TEXT))
    planned = Planned(functools.partial(build_trainer, TEXT, chosen), needs, 5)
    jobs = manager.submit_race(student, [(label, planned) for label in labels], section=section)
    assert all(job.wait(120) for job in jobs)
    return jobs


def test_a_sections_starts_come_back_grouped_with_what_was_asked_for_their_student_only(tmp_path, database_url):
    manager = JobManager(max_running=2, lab=Lab.at(tmp_path, url=database_url))
    try:
        first = _race(manager, "ann", ["LoRA", "full"], ("qat", {"bits": 4}))
        second = _race(manager, "ann", ["LoRA #2", "full #2"], ("qat", {"bits": 8}))
        _race(manager, "ann", ["other"], ("lora", {}))
        _race(manager, "ann", ["no section"], None)
        _race(manager, "bo", ["his"], ("qat", {"bits": 4}))
        manager.keeper.flush()
        lab = Lab.at(tmp_path, url=database_url)  # a restarted server: only the record
        starts = lab.section_starts("ann", "qat")
        assert [(s.id, {k: v.id for k, v in s.runs.items()}, s.asked) for s in starts] == [
            (first[0].id, {"LoRA": first[0].id, "full": first[1].id}, {"bits": 4}),
            (second[0].id, {"LoRA #2": second[0].id, "full #2": second[1].id}, {"bits": 8}),
        ]
        assert [view.state for s in starts for view in s.runs.values()] == ["finished"] * 4
        assert [list(s.runs) for s in lab.section_starts("ann", "lora")] == [["other"]]
        assert [list(s.runs) for s in lab.section_starts("bo", "qat")] == [["his"]]
        assert lab.section_starts("cy", "qat") == []
        lab.control("ann", first[1].id, "delete")
        assert [list(s.runs) for s in lab.section_starts("ann", "qat")] == [["LoRA"], ["LoRA #2", "full #2"]]
        lab.control("ann", first[0].id, "delete")
        assert [s.id for s in lab.section_starts("ann", "qat")] == [second[0].id]
    finally:
        manager.shutdown()


def test_a_note_that_is_not_a_small_json_object_is_refused_before_anything_is_recorded(tmp_path):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    try:
        for asked in ({"x": object()}, {"x": "a" * 2000}, {"x": float("nan")}):
            with pytest.raises(ValueError, match="small JSON object"):
                _race(manager, "ann", ["run"], ("qat", asked))
        assert manager.lab.runs("ann") == [] and manager.jobs("ann") == []
    finally:
        manager.shutdown()
