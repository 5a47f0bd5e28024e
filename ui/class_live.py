"""The class answers together, on the app's side (issue 69): the view on a screen as a link, the teacher's polls and
lead asked through the lab's door (:mod:`llmviz.lab.teaching`), and the follower's move to the teacher's view.

Every call here goes to the lab (``ui.lab.service``); a refusal (:class:`~llmviz.lab.teaching.ClassRefusal`) or a
database fault (:class:`~llmviz.lab.faults.LabUnavailable`) is one sentence in the page, never a traceback. The
figures and boxes are :mod:`ui.panels.class_poll`'s.

**Following** moves a student's browser to the teacher's link (page and settings) with one navigation, the way the
student would open a copied link: a fresh page run whose widgets start from the link. Nothing of the student's lab
is touched (their runs and uploads belong to them, not to the browser's tab), and a student who stops following
stays where they are.
"""

from __future__ import annotations

import functools
import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import streamlit as st

from llmviz.lab.faults import LabUnavailable
from llmviz.lab.teaching import Asked, ClassRefusal, LeadView, PollView
from llmviz.lessons.plans import Lesson, LessonError, parse
from ui import identity, lab, state, streamlit_private
from ui.text import literal_markdown

LEAVE_OUT = ("present", "teacher")  # parameters of the teacher's screen that are not the view
REFRESH_S = 1.0  # how often a page reads the class's poll and the lead (two reads by key) while it takes part ...
IDLE_REFRESH_S = 3.0  # ... and while the class is idle (no poll on the screens, this page follows nobody)


def page_path() -> str:
    """The address of the page this run draws ("" for Home, at ``/``)."""
    return str(state.PAGE_PATH.get() or "")


def refresh_s(is_teacher: bool, found: LeadView | None, poll: PollView | None) -> float:
    """How often this page's class box reads the class again: every :data:`REFRESH_S` for the teacher, for a student
    who follows a lead that is on, and for every page while a poll is on the screens; every :data:`IDLE_REFRESH_S`
    otherwise. Eighty idle pages each read every second cost the server as much as a class clicking (each refresh is
    a section's run on the server): an idle class's box reads a third as often, and a new poll or lead reaches it
    within :data:`IDLE_REFRESH_S`; the next whole page run reads every second.

    >>> refresh_s(False, None, None), refresh_s(True, None, None)
    (3.0, 1.0)
    """
    live = is_teacher or (found is not None and found.leads_me) or poll is not None
    return REFRESH_S if live else IDLE_REFRESH_S


def link_of(path: str, params: dict[str, Any]) -> str:
    """A relative link to page ``path`` with ``params`` (a value or a list of values each).

    >>> link_of("sampling", {"temperature": "0.2", "tokenizers": ["gpt2", "char"]})
    'sampling?temperature=0.2&tokenizers=gpt2&tokenizers=char'
    >>> link_of("", {})
    './'
    """
    pairs = [(name, str(v)) for name, value in params.items() for v in (value if isinstance(value, list) else [value])]
    query = urllib.parse.urlencode(pairs)
    return (path or "./") + (f"?{query}" if query else "")


def view_link() -> str:
    """This screen's view as a link: its page, every setting bound to the link, and the link's other parameters
    (the model), without presenter mode or a teacher key."""
    params: dict[str, Any] = {}
    try:
        bound = streamlit_private.bound_link_params()
        params = {name: st.query_params.get_all(name) for name in st.query_params if name not in bound}
        params |= streamlit_private.link_values()
    except Exception as error:  # noqa: BLE001 - the view is then the page alone; the log says why
        streamlit_private.logger.warning("Could not read this view's settings for a link: %s", error)
    return link_of(page_path(), {name: value for name, value in params.items() if name not in LEAVE_OUT})


def ask_lab(do: Callable[[Any, str], Any], otherwise: Any = None) -> Any:
    """``do(the lab, this student)`` from a button's callback; a refusal or a fault of the lab is one sentence (a
    toast: a callback of a refreshing section draws nothing else) and ``otherwise``."""
    door = lab.service()
    if door is None:
        return otherwise
    try:
        return do(door, lab.student())
    except (ClassRefusal, LabUnavailable) as said:
        st.toast(literal_markdown(str(said)), icon=":material/groups:")
        return otherwise


def quietly(do: Callable[[Any, str], Any], otherwise: Any = None) -> Any:
    """``do(the lab, this student)`` for a refreshing section: a fault there is said by the page that needs it."""
    try:
        return do(lab.service(), lab.student()) if lab.service() is not None else otherwise
    except (ClassRefusal, LabUnavailable):
        return otherwise


def teacher() -> bool:
    return identity.is_teacher()


# ---------------------------------------------------------------------------- polls


def ask_class(page: str, key: str, prompt: str, options: tuple[str, ...], answer: int, explanation: str) -> None:
    """The teacher's "Ask the class" (a button's callback): the question, as this page computed it on this view,
    becomes the class's poll."""
    asked = Asked(key, prompt, tuple(options), answer, explanation)
    if ask_lab(lambda door, who: door.teaching.open_poll(who, page, asked, view_link())) is not None:
        st.toast("The question is on every student's page: their answers arrive below it.")


def class_poll(names: bool = False) -> PollView | None:
    """The poll on the class's screens as this browser may see it."""
    return quietly(lambda door, who: door.teaching.class_poll(who, names=names and teacher()))


def send_answer(poll_id: int, widget_key: str, options: tuple[str, ...]) -> None:
    """A student's choice (a radio's callback) goes to the lab as the index of the option chosen."""
    chosen = state.value(widget_key)
    if chosen not in options:
        return

    def answer(door, who: str) -> str:
        door.keep_student(who)  # a student who has trained nothing yet joins the class's record as they answer
        return door.teaching.answer(who, poll_id, options.index(chosen))

    ask_lab(answer)  # the poll's box says the answer is in (a refusal: a toast)


def poll_action(poll_id: int, action: str) -> None:
    """Close, reveal or end the poll (the teacher's buttons)."""
    ask_lab(lambda door, who: getattr(door.teaching, f"{action}_poll")(who, poll_id))


def poll_csv(poll_id: int, names: bool) -> str:
    """The poll's CSV for the teacher's download ("" when refused)."""
    return ask_lab(lambda door, who: door.teaching.poll_csv(who, poll_id, names=names), "") or ""


def polls() -> list:
    """Every poll the class kept, newest first (the teacher's list)."""
    return ask_lab(lambda door, who: door.teaching.polls(who), []) or []


# ---------------------------------------------------------------------------- the lead


def lead() -> LeadView | None:
    """The teacher's lead as this student sees it (None when the lab cannot be read)."""
    return quietly(lambda door, who: door.teaching.lead(who))


def set_lead(**values) -> LeadView | None:
    """The teacher moves the lead (on or off, a view, a lesson's step)."""
    return ask_lab(lambda door, who: door.teaching.set_lead(who, **values))


def switch_lead(widget_key: str) -> None:
    """The Lead switch's callback: on (at this view) or off."""
    set_lead(active=bool(state.value(widget_key)), link=view_link())


def follow(following: bool) -> None:
    """A student stops following the teacher, or follows again (then goes to the teacher's view at once)."""

    def keep(door, who: str) -> LeadView:
        door.keep_student(who)  # a student who has trained nothing yet joins the class's record
        return door.teaching.follow(who, following)

    if ask_lab(keep) is not None and following:
        state.LEAD_SEEN.set(-1)  # back to the teacher's view at once


def lead_here() -> None:
    """The teacher's screen while the lead is on: the view on it becomes the followers' (a change of page or of a
    setting moves them)."""
    found = lead()
    if found is None or not found.active or page_path() == "classroom":  # the class view is the teacher's own
        return
    here = view_link()
    if here != found.link:
        set_lead(link=here)


def go_script(link: str, version: str) -> str:
    """The script that takes a browser to ``link`` (relative to the app's address, so a proxy's path prefix is
    kept), unless it is there already; ``version`` makes each move a new element (a script runs once as drawn). The
    same move drawn again (:func:`follow_now` draws it on every refresh until the page goes) starts no second
    navigation: the page's window remembers the version it went to, in memory only (nothing is kept in the browser).

    >>> "location.replace" in go_script("tokens?text=a", "3")
    True
    >>> "</script>" in go_script("tokens?text=</script><b>", "3").removesuffix("</script>")  # cannot close the tag
    False
    """
    return (
        f"<script>/* lead {_in_script(version)} */(function () {{"
        f"var target = new URL({_in_script(link)}, window.location.href);"
        "if (target.pathname === window.location.pathname && target.search === window.location.search) { return; }"
        f"if (window.llmvizLeadGoing === {_in_script(version)}) {{ return; }}"
        f"window.llmvizLeadGoing = {_in_script(version)};"
        "window.location.replace(target.href);"
        "})();</script>"
    )


def _in_script(text: str) -> str:
    """``text`` as a JavaScript string inside a ``<script>`` element: JSON with ``<``, ``>`` and ``&`` escaped, so that
    nothing in it can end the element (a link holds what was typed into the view's text boxes).

    >>> print(_in_script("a</script>&"))
    "a\\u003c/script\\u003e\\u0026"
    """
    return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def link_page(link: str) -> str:
    """The page a link opens.

    >>> link_page("tokens?text=a"), link_page("./?seed=1")
    ('tokens', '')
    """
    return link.split("?", 1)[0].strip("./")


def follow_now(found: LeadView | None) -> bool:
    """A follower's page: when the teacher's lead is on, this student follows it, and it changed since this page
    last moved, the script that takes the browser to the teacher's view; whether it was drawn. A fresh page (a
    follower's move ends in a new page run) that already shows the lead's view counts as moved: it is where
    following took it (a student who opened another page, or the lead's page at other settings, is moved).

    The same script is drawn again on each refresh (:data:`KEEP_ASKING` at most) while this page is still not at
    the lead's view (:func:`shows`: the page, and every setting the link names): a script that reached the browser
    took it to a new page, a new session, so this one's was lost. Under load it often is: a refreshing section's run
    can be followed by the next before its elements were sent, and Streamlit drops what the next run redraws (in
    the 80-student benchmark, 34 of 160 moves were never drawn). Once the page is seen at the view, it is not asked
    again: a follower may change a setting there."""
    if found is None or not found.leads_me or teacher():
        return False
    seen = state.LEAD_SEEN.get()
    if seen is None:
        seen = found.version if shows(view_link(), found.link) else -1
        state.LEAD_SEEN.set(seen)
    drawn = state.LEAD_ASKED.get(default=KEEP_ASKING)  # (no move asked by this page yet)
    if seen == found.version:
        if drawn >= KEEP_ASKING:
            return False
        if shows(view_link(), found.link):  # (read only while a move is asked, not every second of every page)
            state.LEAD_ASKED.set(KEEP_ASKING)  # it is there: what changes from now on is the student's
            return False
        drawn += 1
    else:
        drawn = 0
    state.LEAD_SEEN.set(found.version)
    state.LEAD_ASKED.set(drawn)
    st.html(go_script(found.link, str(found.version)), unsafe_allow_javascript=True)
    return True


KEEP_ASKING = 10  # refreshes that draw a move again while the page is still not at the lead's view


# ---------------------------------------------------------------------------- lessons


@functools.lru_cache(maxsize=8)
def _parsed(plan: str, name: str) -> Lesson:
    return parse(plan, name)


def lesson_of(found: LeadView | None) -> Lesson | None:
    """The lesson the lead walks through (None when none runs, or its file no longer reads)."""
    if found is None or not found.lesson or not found.plan:
        return None
    try:
        return _parsed(found.plan, f"{found.lesson}.toml")
    except LessonError as error:
        streamlit_private.logger.warning("the running lesson no longer reads: %s", error)
        return None


def start_lesson(plan: str, name: str) -> None:
    """The teacher starts a lesson (its file's text, checked already): the lead goes on at its first step, and the
    teacher's own page goes there."""
    lesson = _parsed(plan, f"{name}.toml")
    moved = set_lead(active=True, lesson=lesson.name, plan=plan, step=0, link=lesson.steps[0].view)
    if moved is not None:
        send_teacher(lesson.steps[0].view)


def move_lesson(step: int) -> None:
    """Next or Back: the lead and its followers go to step ``step`` (the one after or before the step the buttons
    were drawn at: a click the browser sends twice, as a refreshing section's rerun can, still moves one step), and
    so does the teacher."""
    found = lead()
    lesson = lesson_of(found)
    if found is None or lesson is None:
        return
    step = min(max(step, 0), len(lesson.steps) - 1)
    view = lesson.steps[step].view
    if set_lead(step=step, link=view) is not None and not shows(view_link(), view):
        send_teacher(view)  # (a step on the view already shown moves nobody's page: no reload, no lost click)


def shows(here: str, link: str) -> bool:
    """The view ``here`` (:func:`view_link`) already shows ``link``: the same page, and each setting ``link`` names
    at the value it names (the other settings of ``here`` are the page's own).

    >>> shows("tokens?text=a+b&show_ids=1", "tokens?text=a+b")
    True
    >>> shows("tokens?text=a+b", "tokens?text=a+c"), shows("tokens?text=a", "sampling?text=a")
    (False, False)
    """
    (path, _, query), (wanted_path, _, wanted) = here.partition("?"), link.partition("?")
    if path.strip("./") != wanted_path.strip("./"):
        return False
    have = urllib.parse.parse_qs(query, keep_blank_values=True)
    return all(
        have.get(name) == values for name, values in urllib.parse.parse_qs(wanted, keep_blank_values=True).items()
    )


def end_lesson() -> None:
    """The lesson ends; the lead stays where it is."""
    set_lead(lesson=None, plan=None, step=0)


def send_teacher(link: str) -> None:
    """The teacher's own page goes to ``link`` next (:func:`go_teacher`, in the class's box)."""
    state.LEAD_GO.set(link)
    state.LEAD_GO_TRIES.pop()


def go_teacher() -> None:
    """After Start, Next or Back: the teacher's own page goes to the step's view. The script is drawn on each refresh
    (:data:`KEEP_ASKING` at most, one navigation: see :func:`go_script`) while this page is still not at that view: a
    script drawn in a section's run that the next refresh replaced before its elements were sent was lost, and the
    teacher stayed a step behind."""
    link = state.LEAD_GO.get()
    if link is None:
        return
    drawn, version = state.LEAD_GO_TRIES.get(default=(0, f"teacher-{time.time()}"))  # not a number: not a lead
    if drawn >= KEEP_ASKING or shows(view_link(), link):
        state.LEAD_GO.pop()
        state.LEAD_GO_TRIES.pop()
        return
    state.LEAD_GO_TRIES.set((drawn + 1, version))
    st.html(go_script(link, version), unsafe_allow_javascript=True)
