"""Lab runs a page's section starts, as one race, and finds again in the lab (never by a label, never in the browser's
session): the Adapting page's LoRA, fine-tuning, quantization-aware and memory comparisons, the Training page's races.
Each run keeps the section's note (its name, its start, what was asked: :func:`llmviz.lab.views.section_of`), so a new
tab, another of the student's browsers or a restarted server finds the section's runs in the lab
(:func:`ui.lab.section_starts`); the section draws those this process trains live while any trains, and once more when
they have ended, and the others (trained before a restart, or by another app process) from the lab's record.
"""

from __future__ import annotations

import streamlit as st

from llmviz.lab.live_status import Planned
from ui import lab, picker
from ui.panels import runs


def submit(section: str, steps: int, *runners: tuple[str, object, object], **asked) -> None:
    """Start ``(label, build, footprint)`` runs to compare as one race (one worker, a step of each in turn): each is
    built in the worker by ``build()``, never here (a picked GPT-2 travels with the runs), after the server has
    checked that their ``footprint`` fits. The comparison counts once in the student's share of the server; a
    refusal is kept beside the section's button (``ui.panels.runs.refusal``). A label this session already has gets
    a number (" #2"), so a second set of runs is drawn beside the first, not in its place. Each run keeps the
    section's name and what was ``asked`` in the lab, where the section finds it again."""
    planned = [(runs.unique_label(label), Planned(build, needs, steps)) for label, build, needs in runners]
    started = runs.start(section, lambda: picker.runs().submit_race(planned, section=(section, asked)))
    if started:
        st.rerun(scope="app")


def drawable(views: dict) -> dict:
    """``label → run`` for a start's ``label → RunView``: live where this process holds the run, else as the lab
    keeps it (:class:`llmviz.lab.kept_run.KeptRun`: its curve, state and kept snapshots, read-only)."""
    return {label: picker.runs().live(view.id) or lab.kept_run(view) for label, view in views.items()}


def started(section: str) -> list[dict]:
    """Each start of the section's runs: ``{"jobs": {label: run}, **asked}``, oldest first, as the lab lists them."""
    return [{**start.asked, "jobs": drawable(start.runs)} for start in lab.section_starts(section) if start.runs]


def of_section(section: str) -> dict:
    """Every run the section started, ``label → run``, oldest first."""
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
