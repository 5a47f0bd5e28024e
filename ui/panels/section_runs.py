"""Lab runs a page's section starts, as one race, and finds again in the lab (never by a label, never in the browser's
session): the Adapting page's LoRA, fine-tuning, quantization-aware and memory comparisons, the Training page's races.
Each run keeps the section's note (its name, its start, what was asked: :func:`llmviz.lab.views.section_of`), so a new
tab, another of the student's browsers or a restarted server finds the section's runs in the lab
(:func:`ui.lab.section_starts`); the section draws those this process trains live while any trains, and once more when
they have ended, and names those it cannot draw here (trained before a restart, or by another app process).
"""

from __future__ import annotations

import streamlit as st

from llmviz.lab.live_status import Planned
from ui import lab, picker
from ui.panels import runs
from ui.text import literal_markdown


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


def started(section: str) -> list[dict]:
    """Each start of the section's runs that this process trains (or trained): ``{"jobs": {label: job}, **asked}``,
    oldest first, as the lab lists them."""
    found = []
    for start in lab.section_starts(section):
        jobs = {label: picker.runs().live(view.id) for label, view in start.runs.items()}
        jobs = {label: job for label, job in jobs.items() if job is not None}
        if jobs:
            found.append({**start.asked, "jobs": jobs})
    return found


def of_section(section: str) -> dict:
    """Every run the section started that this process trains (or trained), ``label → job``, oldest first."""
    return {label: job for entry in started(section) for label, job in entry["jobs"].items()}


def not_here(section: str) -> list[str]:
    """One line for each of the section's runs in the lab that this process does not hold (trained before the
    server restarted, or by another app process), oldest first: where the student finds it."""
    here = picker.runs()
    return [
        f"{literal_markdown(label)}: {_where(view)}"
        for start in lab.section_starts(section)
        for label, view in start.runs.items()
        if here.live(view.id) is None
    ]


def _where(view) -> str:
    """A run's state and step in words: "finished at step 20 of 20", "running, step 5 of 20"."""
    line = view.state_line
    return (
        f"{line} of {view.total}"
        if line.endswith(f"step {view.state_step}")
        else f"{line}, step {view.step} of {view.total}"
    )


def live(page: str, section: str, draw) -> None:
    """Draw the lab runs of ``page``'s section ``section`` with ``draw(runs)``, redrawn while any of them trains
    (``ui.panels.runs.live``: every 2 s for one watching tab, less often when many tabs watch) and still once they
    have all ended; then name the section's runs this process cannot draw (each is in the sidebar's picker and the
    Training page's Kept runs, with its curve)."""
    picker.on_this_page([job.id for job in of_section(section).values()])
    runs.live(
        lambda: draw(of_section(section)),
        active=lambda: any(job.changing for job in of_section(section).values()),
        name=f"{page}.{section}.runs",
    )
    if elsewhere := not_here(section):
        st.caption(
            "Also yours, kept in the lab but trained before the server restarted or by another of its processes, so "
            "not drawn here (each is in the sidebar's picker and in the Training page's Kept runs, with its curve): "
            + "; ".join(elsewhere)
            + "."
        )
