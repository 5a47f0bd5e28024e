"""Lab runs a page's section starts, as one race, and finds again by their ids (never by a label): the Adapting page's
LoRA, fine-tuning, quantization-aware and memory comparisons. The section keeps the ids it started in
``state.LAB_RUNS`` (with what was asked), draws them live while any trains, and once more when they have ended.
"""

from __future__ import annotations

import streamlit as st

from llmviz.lab.live_status import Planned
from ui import picker, state
from ui.panels import runs


def submit(section: str, steps: int, *runners: tuple[str, object, object], **asked) -> None:
    """Start ``(label, build, footprint)`` runs to compare as one race (one worker, a step of each in turn): each is
    built in the worker by ``build()``, never here (a picked GPT-2 travels with the runs), after the server has
    checked that their ``footprint`` fits. The comparison counts once in the student's share of the server; a
    refusal is kept beside the section's button (``ui.panels.runs.refusal``). A label this session already has gets
    a number (" #2"), so a second set of runs is drawn beside the first, not in its place. The section keeps the ids
    it started (with what was ``asked``): it finds its runs by id, never by a label."""
    planned = [(runs.unique_label(label), Planned(build, needs, steps)) for label, build, needs in runners]
    started = runs.start(section, lambda: picker.runs().submit_race(planned))
    if started:
        kept = state.LAB_RUNS.get(section, default=[])
        state.LAB_RUNS.set([*kept, {"ids": {job.label: job.id for job in started}, **asked}], section)
        st.rerun(scope="app")


def started(section: str) -> list[dict]:
    """Each start of the section's runs that still exists: ``{"jobs": {label: job}, **asked}``, oldest first."""
    found = []
    for entry in state.LAB_RUNS.get(section, default=[]):
        jobs = {label: picker.runs().live(job_id) for label, job_id in entry["ids"].items()}
        jobs = {label: job for label, job in jobs.items() if job is not None}
        if jobs:
            found.append({**entry, "jobs": jobs})
    return found


def of_section(section: str) -> dict:
    """Every run the section started, ``label → job``, oldest first."""
    return {label: job for entry in started(section) for label, job in entry["jobs"].items()}


def live(page: str, section: str, draw) -> None:
    """Draw the lab runs of ``page``'s section ``section`` with ``draw(runs)``, redrawn while any of them trains
    (``ui.panels.runs.live``: every 2 s for one watching tab, less often when many tabs watch) and still once they
    have all ended."""
    picker.on_this_page([job.id for job in of_section(section).values()])
    runs.live(
        lambda: draw(of_section(section)),
        active=lambda: any(job.changing for job in of_section(section).values()),
        name=f"{page}.{section}.runs",
    )
