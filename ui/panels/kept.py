"""A student's kept runs (:mod:`ui.lab`): the table of them, their disk use against the quota, Delete (which asks
once), the controls of the chosen one, and which run the Training page opens on. One run is drawn by
:func:`ui.panels.run_view.draw`, the same whoever trains it.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from llmviz.lab.service import TASK
from llmviz.lab.views import RunView
from llmviz.training import footprint
from ui import identity, lab, picker, state
from ui.lab import state_text
from ui.panels import run_view, runs
from ui.text import literal_markdown

KEPT_COLUMNS = ("run", "state", "steps", "best validation loss", "snapshots kept")
RESULT_PAGES = {"bpe": "Tokens", "word2vec": "Embeddings"}  # where a kept task's result is shown again


def kept_rows(views: list[RunView], steps_by_run: dict[str, list[int]]) -> list[dict]:
    """The table of a student's kept runs.

    >>> from llmviz.lab.records import RunRecord
    >>> rows = kept_rows([RunView.of(RunRecord("a", "s", "training", "GPT micro", "interrupted", total=300, step=120,
    ...                                        best_val_loss=2.4567))], {"a": [0, 100, 120]})
    >>> rows[0]["state"][:37], rows[0]["steps"], rows[0]["best validation loss"], rows[0]["snapshots kept"]
    ('interrupted at step 120 of 300: the s', '120 of 300', '2.457', '0, 100, 120')
    """
    return [
        {
            "run": view.label,
            "state": state_text(view),
            "steps": f"{view.step} of {view.total}",
            "best validation loss": f"{view.best_val_loss:.3f}" if view.best_val_loss is not None else "–",
            "snapshots kept": _kept_files(view, steps_by_run.get(view.id, [])),
        }
        for view in views
    ]


def _kept_files(view: RunView, steps: list[int]) -> str:
    """What the table says a run keeps: its snapshots' steps, or a task's result (its page shows it).

    >>> from llmviz.lab.records import RunRecord
    >>> _kept_files(RunView.of(RunRecord("b", "s", "task", "BPE tokenizer", "finished", config={"task": "bpe"})), [40])
    'its result (the Tokens page)'
    """
    if view.kind != TASK:
        return ", ".join(map(str, steps)) or "none"
    return f"its result (the {RESULT_PAGES.get(view.config.get('task'), 'its own')} page)" if steps else "none"


def disk_line() -> None:
    """The student's disk use against their quota (snapshots, optimizer states for Resume, uploaded texts)."""
    usage = lab.disk()
    if usage is None:
        return
    share = usage.used / usage.quota if usage.quota else 0.0
    st.progress(
        min(1.0, share),
        text=f"Your kept runs and files take {footprint.size_text(usage.used)} of your "
        f"{footprint.size_text(usage.quota)}"
        + (": the oldest snapshots are thinned to make room for new ones." if share > 0.9 else "."),
    )


def _delete(run_id: str) -> None:
    """Delete's callback: the first press asks, the second (on the same run) deletes."""
    if state.DELETE_ASKED.get() != run_id:
        state.DELETE_ASKED.set(run_id)
        return
    state.DELETE_ASKED.pop()
    state.RUN_REFUSED.set(lab.control(run_id, "delete"), "kept_delete")


def _name_box() -> None:
    name = identity.display_name()
    typed = st.text_input(
        "Your name for the teacher's class view (optional)",
        value=name,
        max_chars=40,
        key=state.widget("student_name"),
        help="Your runs are kept for this browser (or your login) whatever you type; the name only tells the "
        "teacher whose runs they are.",
    )
    if typed != name:
        identity.set_display_name(typed)


def kept_runs_panel() -> None:
    """The student's kept runs (every app process's, earlier servers'), their disk use, and Resume / Delete for
    one of them. Each is in the sidebar's picker at its kept steps."""
    if lab.service() is None:
        return
    _name_box()
    found = lab.kept_runs()
    said = state.RUN_REFUSED.pop("kept_delete")
    if said:  # a deletion done is a success; a refusal or a fault (nothing changed) is a warning, never green
        if said.endswith("is deleted, with its curve and snapshots."):
            st.success(literal_markdown(said))
        else:
            lab.warn(said)
    if not found:
        disk_line()
        return
    st.markdown(
        "**Kept runs**: your runs, as the lab keeps them (the sidebar's picker shows each at its kept steps), and "
        "what your tasks made (a BPE tokenizer, word vectors: their page shows the newest)."
    )
    st.dataframe(pd.DataFrame(kept_rows(found, lab.snapshots_by_run()), columns=list(KEPT_COLUMNS)), hide_index=True)
    disk_line()
    by_label = {f"{view.label} · {view.id}": view for view in found}
    d1, d2, d3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    chosen = by_label.get(d1.selectbox("A kept run", list(by_label), key=state.widget("kept_delete_choice")))
    if chosen is None:
        return
    asked = state.DELETE_ASKED.get() == chosen.id
    d2.button(
        "Yes, delete it" if asked else "Delete it",
        key=state.widget("kept_delete"),
        type="primary" if asked else "secondary",
        on_click=_delete,
        args=(chosen.id,),
    )
    if asked:
        d3.button("Cancel", key=state.widget("kept_delete_cancel"), on_click=state.DELETE_ASKED.pop)
        st.warning(
            f"Delete **{literal_markdown(chosen.label)}** with its curve and {len(lab.snapshots(chosen.id))} kept "
            "snapshot(s)? Press the button again to delete it (Cancel keeps it); nothing else is changed."
        )
    if chosen.resumable or (chosen.live and picker.runs().live(chosen.id) is None):
        run_view.controls(chosen.id, "chosen")  # a run this process trains has its controls with its live curve
    elif chosen.resume_note:
        st.caption(chosen.resume_note)


def _wanted_ids(picked: str, focus: str | None) -> list[str]:
    """The runs asked for, first to last: the sidebar's pick ``picked`` when it is a run (``run:<id>@...``), then the
    run trained here last (``focus``; ``""`` when none).

    >>> _wanted_ids("run:r7@2", "r3")
    ['r7', 'r3']
    >>> _wanted_ids("gpt2", None)
    ['']
    """
    picked = picked.split("@")[0]
    wanted = [picked.removeprefix("run:")] if picked.startswith("run:") else []
    wanted.append(focus or "")
    return wanted


def focused_id(raced: set[str]) -> str | None:
    """The run the Training page opens on: the run picked in the sidebar, else the one trained here last, else the
    student's newest training run, as the lab keeps it (this app process's, another's, an earlier server's), else
    this process's newest run (the lab cannot be read). ``raced``: race runners (the tab Races draws them)."""
    wanted = _wanted_ids(picker.selected_key(), state.TRAINING_FOCUS.get())
    autoencoders = state.SAE_RUNS.setdefault()
    kept = [view for view in lab.runs() if view.id not in raced and view.id not in autoencoders]
    live = [job.id for job in runs.runs() if job.id not in raced]
    known = {view.id for view in kept} | set(live)
    found = next((run_id for run_id in wanted if run_id in known), None)
    if found is not None:
        return found
    newest = [view.id for view in kept if view.kind == "training"] or live[::-1]
    return newest[0] if newest else None
