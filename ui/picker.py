"""THE model picker: one place in the shared sidebar decides which model every page shows.

Pages ask :func:`current` for a :class:`ModelView` (and :func:`baseline` for the same run at step 0);
they never load models themselves. Entries come from a registry of *sources* (:func:`register_source`):

- ``shipped:<name>``   the checkpoints in data/ (the shipped GPT is the default),
- ``pretrained:minilm`` the pretrained all-MiniLM-L6-v2 encoder (when its package is installed),
- ``run:<run_id>@<step>`` this browser session's training runs, at any kept snapshot step,
- ``dir:<name>``       checkpoint folders (or .safetensors files) under ``runs/`` or env ``LLMVIZ_RUNS_DIR``.

A new kind of model (e.g. GPT-2 from the Hugging Face hub) is one more :class:`Source` registered with
:func:`register_source`: it lists its :class:`Entry`\\ s and loads a key into a :class:`ModelView`.

Every model handed out is cached with ``st.cache_resource`` keyed by what fixes its weights (a run's id and step, a
checkpoint's files' signature), is in eval mode with gradients off, and is shared between pages and sessions: never
mutate it. A page caching anything computed from a model keys it on ``view.content_key``, which changes whenever the
weights do.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import streamlit as st

from llmviz import settings
from llmviz.errors import LlmvizError, log_failure
from llmviz.lab.live import LiveRun, StudentRuns, student_runs
from ui import hub, identity, state, streamlit_private
from ui.sources import SOURCES, Entry, ModelView, NotReady
from ui.text import literal_markdown

SHIPPED_GPT = "gpt-python-docs"
DEFAULT_KEY = f"shipped:{SHIPPED_GPT}"


# ---------------------------------------------------------------------------- session and jobs


def tab_id() -> str:
    """The browser tab (Streamlit session) this script run belongs to."""
    ctx = streamlit_private.script_run_context()
    return ctx.session_id if ctx is not None else "no-session"


def session_id() -> str:
    """The owner of this page run's jobs: the *student* (:mod:`ui.identity`: the browser's secret, or the logged-in
    user), so every tab, reload and link of one student shows the same runs, and a restarted server too (the lab,
    :mod:`llmviz.lab`, keeps them)."""
    if streamlit_private.script_run_context() is None:
        return "no-session"
    student = identity.student_id()
    identity.register_tab(student, tab_id())
    return student


def client_id() -> str:
    """Whose shares (runs, queue, memory) this page run counts in: the student (``LLMVIZ_SHARE_BY=student``, the
    default; ``session`` is its old name), or the address of their computer (``address``: every browser of one
    computer shares one share, Streamlit's ``st.context.ip_address``; the student where the address is unknown)."""
    if settings.get("LLMVIZ_SHARE_BY") != "address":
        return session_id()
    address = st.context.ip_address if streamlit_private.script_run_context() is not None else None
    if not streamlit_private.address_believed(tab_id()):  # connected before the app said whom to trust (ui.routing)
        address = None
    return f"address {address}" if isinstance(address, str) and address else session_id()  # (AppTest: a mock)


def _session_alive(owner: str) -> bool | None:
    """Has the student ``owner`` a tab connected to this server (Streamlit's own answer for each of their tabs)?"""
    return identity.student_alive(owner)


def runs() -> StudentRuns:
    """This student's runs in this process (:mod:`llmviz.lab.live`): the pages' one door to a run training here, to
    every submit and every control; its shares count :func:`client_id` (students, not tabs). What the lab keeps of
    every run, from any process, is :mod:`ui.lab`'s."""
    return student_runs(session_id(), client_id(), liveness=_session_alive)


def my_runs(kind: str | None = "train") -> list[LiveRun]:
    """This student's runs training (or trained) in this process, of ``kind`` (None: every kind)."""
    return runs().live_runs(kind)


# ---------------------------------------------------------------------------- keys


_KEY = re.compile(r"^(?P<prefix>[a-z0-9_-]+):(?P<name>[^@]+)(?:@(?P<step>\d{1,9}))?$")


def parse_key(key: str) -> tuple[str, int | None] | None:
    """``"run:ab12@50"`` → ``("run:ab12", 50)``; None for anything malformed.

    >>> parse_key("run:ab12@50"), parse_key("shipped:gpt-python-docs"), parse_key("../etc")
    (('run:ab12', 50), ('shipped:gpt-python-docs', None), None)
    """
    match = _KEY.match(key or "")
    if not match:
        return None
    step = match.group("step")
    return f"{match.group('prefix')}:{match.group('name')}", int(step) if step is not None else None


def load(key: str) -> ModelView:
    """The :class:`ModelView` of any key (raises :class:`LlmvizError` when it cannot be had)."""
    parsed = parse_key(key)
    if parsed is None or parsed[0].split(":", 1)[0] not in SOURCES:
        raise LlmvizError(f"Unknown model {key!r}.")
    base, step = parsed
    return SOURCES[base.split(":", 1)[0]].load(base, step)


def entries() -> list[Entry]:
    out = []
    for source in list(SOURCES.values()):
        try:
            out.extend(source.entries())
        except Exception as error:  # noqa: BLE001 - one broken source must not take the picker down
            log_failure(f"listing the models of {type(source).__name__}", error)
    return out


# ---------------------------------------------------------------------------- the contract


def _refuse(entry: Entry) -> None:
    """An entry listed as unavailable was picked: keep the current pick (or the default) and say why."""
    state.PICKER_NOTICE.set(f"{entry.label} is not available here: {entry.note} The shipped GPT stays selected.")
    state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)  # redraw the picker on the kept pick
    if state.PICKED.get(default=DEFAULT_KEY) == entry.key:
        state.PICKED.set(DEFAULT_KEY)


def select(key: str) -> None:
    """Choose a model programmatically (links, buttons); an unknown key falls back to the shipped GPT
    with a notice on the next :func:`current`."""
    parsed = parse_key(key)
    known = {entry.key: entry for entry in entries()}
    if parsed is not None and parsed[0] in known and not known[parsed[0]].available:
        state.PICKED.set(DEFAULT_KEY)
        _refuse(known[parsed[0]])  # listed but not here (GPT-2 offline): say why, as the entry does
        return
    if parsed is None or parsed[0] not in known:
        state.PICKED.set(DEFAULT_KEY)
        state.PICKER_NOTICE.set(
            "That model is a training run of another student (a run opens only for the student who trained it), "
            "so the shipped GPT is shown."
            if parsed is not None and parsed[0].startswith("run:")
            else "That model is not on this server, so the shipped GPT is shown."
        )
    else:
        base, step = parsed
        state.PICKED.set(base)
        steps = known[base].steps  # a run's, or a shipped model's kept steps
        if steps:
            state.PICKED_STEPS.setdefault()[base] = None if step is None or step >= steps[-1] else step
    state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)


def _pick(key: str | None) -> None:
    """Pick ``key`` (None: the shipped GPT); the picker is drawn anew on it."""
    if key is not None:
        select(key)
        return
    state.PICKED.set(DEFAULT_KEY)
    state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)


def offer_bigger_model(reason: str, page: str) -> None:
    """For a page where a bigger pretrained model shows the lesson better than the picked one: ``reason`` in a note,
    and one button per offered model (GPT-2 small, SmolLM2-135M) that shows it, or downloads it (with its size; the
    sidebar shows the progress and can cancel it), or, offline, says how to get it. Nothing when one is picked.
    ``page`` names the page (it keeps the buttons of two pages apart). Not in presenter mode: a slide keeps to its
    picture (the teacher picks a model in the sidebar)."""
    from ui import present

    if present.enabled():
        return
    hub.offer(reason, state.PICKED.get(default=DEFAULT_KEY), _pick, page)


def selected_key() -> str:
    """The key :func:`current` will resolve (base key plus ``@step`` for runs)."""
    base = state.PICKED.get(default=DEFAULT_KEY)
    step = state.PICKED_STEPS.get().get(base)  # set for a model with steps (a run, a shipped model that keeps some)
    return base if step is None else f"{base}@{step}"


def current(mark: bool = True) -> ModelView:
    """What the shared sidebar picker selects (default: the shipped GPT).

    A run that follows its newest snapshot resolves to the step the sidebar slider shows, so a snapshot
    taken while the page draws never makes the page disagree with the sidebar.
    """
    if mark:  # this page draws the picked model: following a run redraws it
        state.MODEL_USED.set(True)
    key = selected_key()
    if key.startswith("run:") and "@" not in key and key in state.SHOWN_NEWEST.get():
        key = f"{key}@{state.SHOWN_NEWEST.get()[key]}"
    try:
        return load(key)
    except NotReady as error:  # keep the pick: a run appears once its step 0 exists, a download once it is done
        # said once a page run, by the first section that draws the model (not where a link asks for its address)
        if mark and state.NOT_READY_SAID.get() != str(error):
            state.NOT_READY_SAID.set(str(error))
            st.info(f"{error} The shipped GPT is shown until then.")
        return shipped_default()
    except LlmvizError as error:
        if key != DEFAULT_KEY:
            state.PICKED.set(DEFAULT_KEY)
            state.PICKER_VERSION.set(state.PICKER_VERSION.get() + 1)  # redraw the picker on the default
            st.info(f"{error} The shipped GPT is shown.")  # a run deleted or damaged, GPT-2 not downloaded: why
        return shipped_default()


def is_gpt(view: ModelView) -> bool:
    """Whether the picked model is a GPT (llmviz's GPT: shipped, a run, GPT-2, a Llama-family model)."""
    return view.family == "gpt" and hasattr(getattr(view.model, "config", None), "n_layers")


def gpt_or_note(view: ModelView, needs: str) -> bool:
    """True when ``view`` is a GPT; otherwise one note saying what this section needs (``needs``: "the logit lens reads
    a GPT's residual stream") and what to pick instead, and False."""
    if is_gpt(view):
        return True
    # a names model with blocks and heads called "not a GPT" contradicted the page that drew them: say what it is
    what = (
        "is a small character-level model (the kind the names lessons train), not one of llmviz's GPTs"
        if view.family == "charlevel"
        else "is not a GPT"
    )
    st.info(
        f"{needs[:1].upper() + needs[1:]}; **{literal_markdown(view.label)}** {what}. Pick the shipped GPT or one of "
        "your GPT runs in the sidebar."
    )
    return False


def shipped_default() -> ModelView:
    """The shipped GPT, or a warning that ends the page here when data/ lacks it."""
    try:
        return load(DEFAULT_KEY)
    except LlmvizError:
        st.warning(
            f"The shipped GPT (data/{SHIPPED_GPT}) is missing: run scripts/train_shipped_models.sh to re-create it."
        )
        st.stop()


def baseline(view: ModelView | None = None) -> ModelView | None:
    """``view`` (default: the picked model) at step 0, for "step 0 vs step N" views; None when it is not a run."""
    view = view or current()
    steps = view.meta.get("snapshot_steps") or []
    if view.run_id is None and not (view.key.startswith("shipped:") and steps and steps[0] == 0):
        return None
    try:
        return load(f"run:{view.run_id}@0" if view.run_id is not None else f"{view.key.split('@')[0]}@0")
    except LlmvizError:
        return None


def before_after(
    render: Callable[[ModelView, str], None], *, what: str = "this view", view: ModelView | None = None
) -> None:
    """Draw ``render(view, column_key)`` twice, side by side: the run at step 0 and at its step N.

    ``view``: the model the page shows (default: the picked one; a page that shows another, e.g. the shipped
    GPT instead of an encoder, passes it). ``column_key`` ("step0" / "stepN") keeps widget keys apart. When
    the view is not a run, one column says how to get a comparison and the other shows the view.
    """
    view = view or current()
    start = baseline(view)
    left, right = st.columns(2)
    with left:
        if start is None:
            st.info(
                f"Train a run on the Training page and pick it in the sidebar to compare {what} at step 0 "
                "(random weights) with a later step."
            )
        else:
            st.markdown(f"**Step 0** (initial weights) · {literal_markdown(start.label.rsplit(' · ', 1)[0])}")
            render(start, "step0")
    with right:
        st.markdown(f"**{'Step ' + str(view.step) if view.step is not None else literal_markdown(view.label)}**")
        render(view, "stepN")


# ---------------------------------------------------------------------------- what each page shows of the lab


def page_of_this_run() -> str:
    """The page this script run draws (its script hash): the sidebar leaves a page's own runs to the page."""
    ctx = streamlit_private.script_run_context()
    return getattr(ctx, "page_script_hash", "") if ctx is not None else ""


def on_this_page(job_ids: list[str], reset: bool = False) -> None:
    """Record the runs this page draws live, so the sidebar does not report them a second time, at other moments
    (it names them and says their progress is on the page). ``reset``: a page's first call in its run."""
    page = page_of_this_run()
    found = state.RUNS_ON_PAGE.get()
    kept = set(found["ids"]) if found and found["page"] == page and not reset else set()
    state.RUNS_ON_PAGE.set({"page": page, "ids": kept | set(job_ids)})


def shown_on_page() -> set[str]:
    """The ids of the runs the page drawn now shows live (for the sidebar)."""
    found = state.RUNS_ON_PAGE.get()
    return set(found["ids"]) if found and found["page"] == page_of_this_run() else set()
