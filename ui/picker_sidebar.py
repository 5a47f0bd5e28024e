"""The model picker in the sidebar (:mod:`ui.picker` is what it picks from): the box every page shows, the step slider
over a run's kept snapshots, and the panel of the student's runs while they train. Importing it registers the
built-in sources (:mod:`ui.model_sources`); ``ui`` imports it for every page (``ui.shared_sidebar.sidebar``)."""

from __future__ import annotations

import time

import streamlit as st

from ui import hub, identity, lab, model_sources, sections, state, watch  # noqa: F401 - model_sources registers the sources
from ui.labels import fit
from ui.picker import DEFAULT_KEY, _pick, _refuse, entries, runs, session_id, shown_on_page
from ui.sources import Entry
from ui.text import literal_markdown

# ---------------------------------------------------------------------------- the sidebar widget


def _model_widget_key() -> str:
    return state.widget("picker_model_", state.PICKER_VERSION.get())


def _remember_model(widget_key: str) -> None:
    if widget_key != _model_widget_key():
        # a picker drawn before select() redrew it: a browser that had not yet seen the new one (a click on
        # the page menu right after Train) sends its old value, which must not undo the new pick
        return
    key = state.value(widget_key)
    if not isinstance(key, str):  # no choice (the box emptied: a client's clear_cache): keep the current pick
        return
    listed = entries()
    entry = next((e for e in listed if e.key == key), None)
    if entry is None:  # the browser sent a label it saw before (labels can change between runs): map it back
        entry = next((e for e in listed if key.startswith(e.label)), None)
        if entry is None:
            return  # keep the current pick
        key = entry.key
    if entry is not None and not entry.available:  # listed so people know it exists; picking it explains why not
        _refuse(entry)
        return
    state.PICKED.set(key)


def _remember_step(widget_key: str, base: str, last: int) -> None:
    if widget_key != state.STEP_WIDGET.get():
        return  # an older step slider (the run has grown since): its value is stale
    value = state.value(widget_key)
    if not isinstance(value, int):  # no value: keep the step picked
        return
    state.PICKED_STEPS.setdefault()[base] = None if value >= last else value
    state.STEP_MOVED.set(True)  # the slider's fragment redraws the whole page with this step


def sidebar() -> None:
    """The picker in the shared sidebar (app.py draws it on every page)."""
    state.NOT_READY_SAID.pop()  # a new page run: a model that is not ready is said again, once
    state.LAB_FAULT_SAID.pop()  # and a lab that cannot be read (ui.lab)
    state.SESSION_ID.set(session_id())  # lets tests find this session's jobs
    identity.keep_cookie()  # the browser keeps its student identity (a cookie, set on the first visit)
    identity.login_offer()  # a Log in button where the teacher configured a login provider
    listed = [entry for entry in entries()]
    by_key = {entry.key: entry for entry in listed}
    chosen = _chosen(by_key)
    if not listed:
        return
    version = state.PICKER_VERSION.get()
    widget_key = _model_widget_key()
    options = list(by_key)
    st.selectbox(
        "Model shown on every page",
        options,
        index=options.index(chosen),
        # every option fits the box (its whole label and what it is are in the caption under it)
        format_func=lambda k: fit(by_key[k].label if by_key[k].available else f"{by_key[k].label} (unavailable)"),
        key=widget_key,
        on_change=_remember_model,
        args=(widget_key,),
        help="Pages show this model: a shipped one, or one of your runs (train one on the Training page).",
    )
    _captions(by_key[chosen])
    hub.sidebar_progress(chosen, _pick)  # a pretrained model being downloaded: its progress and a Cancel button
    state.MODEL_USED.set(False)  # until a page section asks current()
    if by_key[chosen].steps:
        job = runs().live(chosen.split(":", 1)[1])
        following = job is not None and job.changing and state.PICKED_STEPS.get().get(chosen) is None
        interval = watch.refresh_seconds(session_id()) if following else None
        st.fragment(_step_slider_timed, run_every=interval)(chosen, version, by_key[chosen].steps)


def _chosen(by_key: dict[str, Entry]) -> str:
    """The key the picker shows: the one picked, unless it is unavailable here (said) or no longer listed (the
    shipped GPT, else the first listed); a notice waiting from an earlier pick is said first."""
    chosen = state.PICKED.get(default=DEFAULT_KEY)
    if chosen in by_key and not by_key[chosen].available:  # set by a link or an old session state
        _refuse(by_key[chosen])
        chosen = DEFAULT_KEY
    notice = state.PICKER_NOTICE.pop()
    if notice:
        st.info(notice)
    if chosen not in by_key:
        chosen = DEFAULT_KEY if DEFAULT_KEY in by_key else next(iter(by_key), DEFAULT_KEY)
        state.PICKED.set(chosen)
    return chosen


def _captions(entry: Entry) -> None:
    """Under the box: the picked entry's whole label where the box cuts it, and what it is."""
    if fit(entry.label) != entry.label and entry.note != literal_markdown(entry.label):
        st.caption(literal_markdown(entry.label))  # the whole label (the box shows its start)
    if entry.note:
        st.caption(entry.note)


def _step_slider_timed(chosen: str, version: int, listed: tuple[int, ...] = ()) -> None:
    begin = time.perf_counter()
    try:  # it reruns on its own: a bug there is a message (sections.guarded), never a traceback
        sections.timed("sidebar.step", sections.guarded(_step_slider, "the step slider"))(chosen, version, listed)
    finally:
        watch.record(session_id(), "sidebar.step", time.perf_counter() - begin)


def _step_slider(chosen: str, version: int, listed: tuple[int, ...] = ()) -> None:
    """The picked run's step slider. While the run trains and the slider follows its newest snapshot, this part
    of the sidebar refreshes on its own (cheap), and the page is drawn again only when it shows the picked model
    and a newer snapshot exists. A kept run (no job in this process: an earlier server's, another process's, the
    teacher's projector) slides over the ``listed`` steps the lab keeps."""
    job = runs().live(chosen.split(":", 1)[1]) if chosen.startswith("run:") else None
    live = job.snapshots.steps() if job is not None and job.snapshots is not None and job.info is not None else []
    steps = sorted({*listed, *live})  # the lab's kept steps and, while this process trains it, its newest ones
    if not steps:
        return
    stored = state.PICKED_STEPS.get().get(chosen)
    value = steps[-1] if stored is None else min(steps, key=lambda s: (abs(s - stored), s))
    step_key = state.widget("picker_step_", chosen, version, len(steps), steps[-1])
    shown = state.SHOWN_NEWEST.setdefault()
    page_step = shown.get(chosen)
    shown[chosen] = steps[-1]
    state.STEP_WIDGET.set(step_key)
    if len(steps) > 1:
        label, words = _slider_words(chosen)
        st.select_slider(
            label,
            steps,
            value=value,
            key=step_key,
            on_change=_remember_step,
            args=(step_key, chosen, steps[-1]),
            help=words,
        )
    else:
        st.caption(step_caption(steps[0], job is not None and not job.ended))
    if state.STEP_MOVED.pop(default=False) or (
        stored is None and page_step is not None and page_step != steps[-1] and state.MODEL_USED.get()
    ):
        # the student moved the slider, or the followed run has a newer snapshot than the page shows
        state.FOLLOWING.set(stored is None)
        st.rerun(scope="app")


def _slider_words(chosen: str) -> tuple[str, str]:
    """The step slider's label and help: a run's snapshots, or the steps a shipped (or saved) model keeps.

    >>> _slider_words("shipped:names-transformer")[0]
    'Step (kept in training)'
    """
    if chosen.startswith(("run:", "class:")):
        return (
            "Step (snapshot of the run)",
            "The run keeps its weights at steps 0, 1, 2, 5, 10, 20, 50, … and its newest step. The last position "
            "follows the run while it trains.",
        )
    return (
        "Step (kept in training)",
        "This model keeps its weights at these steps of its training: move it to watch the model learn.",
    )


def step_caption(step: int, training: bool) -> str:
    """The step slider's words when a run has one snapshot.

    >>> step_caption(0, True), step_caption(178, False)
    ('Step 0 (the run has just started).', 'Step 178 (its only kept snapshot).')
    """
    if step == 0 and training:
        return "Step 0 (the run has just started)."
    return f"Step {step} (its only kept snapshot)."


def _jobs_panel_body(in_fragment: bool = False, elsewhere: list | None = None) -> None:
    """The progress bars (``elsewhere``: the lab's live runs of this student on other app processes, when the
    caller read them already this page run; else read here, as every refresh of the fragment does)."""
    mine = runs()
    mine.heartbeat()
    here = mine.live_runs(None)
    active = []
    on_page = shown_on_page()
    for job in here:
        status = job.status()  # one status read per run per refresh
        if not status.done:
            active.append(job)
            if job.id in on_page:  # the page draws it live: one report of its progress, not two at other moments
                st.caption(f"{literal_markdown(job.label)}: {status.state}; its progress is on this page.")
            else:
                st.progress(status.fraction, text=f"{literal_markdown(job.label)}: {status.describe()}")
    if elsewhere is None:
        elsewhere = lab.live_elsewhere({job.id for job in here})  # the lab's record of them
    for view in elsewhere:
        active_elsewhere = f"{literal_markdown(view.label)}: {lab.state_text(view)} (trained by another app process)"
        st.progress(min(1.0, view.step / max(1, view.total)), text=active_elsewhere)
    finished = state.ACTIVE_JOBS.setdefault()
    now_active = {job.id for job in active}
    if (
        in_fragment and finished - now_active
    ):  # a run ended since the last look: redraw the page so its last step is pickable
        state.ACTIVE_JOBS.set(now_active)
        st.rerun(scope="app")
    state.ACTIVE_JOBS.set(now_active)


def _jobs_panel_timed() -> None:
    from ui.errors import friendly_errors

    begin = time.perf_counter()
    try:
        with friendly_errors("the progress of your runs"):
            sections.timed("sidebar.jobs", _jobs_panel_body)(in_fragment=True)
    finally:
        watch.record(session_id(), "sidebar.jobs", time.perf_counter() - begin)


def jobs_panel() -> None:
    """Progress of this session's running jobs in the sidebar, refreshed while any runs (every 2 s for one
    watching tab, less often when many watch: :mod:`ui.watch`). The refresh also tells the job manager this
    browser session is still here."""
    here = runs().live_runs(None)
    elsewhere = lab.live_elsewhere({job.id for job in here})  # one query of the lab per page run
    if any(job.changing for job in here) or elsewhere:
        st.fragment(_jobs_panel_timed, run_every=watch.refresh_seconds(session_id()))()
    else:
        _jobs_panel_body(elsewhere=elsewhere)
