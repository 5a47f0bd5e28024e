"""Who the student is: a person, not a browser tab.

- **A browser secret.** On the first visit the browser gets a random secret of 192 bits in a cookie
  (``llmviz_student``, a year, ``SameSite=Lax``, set by a tiny script since Streamlit sets no cookies itself); every
  later page run reads it from ``st.context.cookies``. So a reload, a second tab, a link opened in the same browser
  and a restarted server are the same student. The secret is never in a link, a page, the database or a folder name:
  those hold the *student id*, a hash of it (:func:`student_from_secret`), from which the secret cannot be found, and a
  run id never opens a run of another student (every lookup is by student id *and* run id).
- **A login provider**, where the teacher configured one (Streamlit's ``st.login``, ``[auth]`` in
  ``.streamlit/secrets.toml``; docs/classroom.md): the logged-in user is the student (:func:`student_from_user`), on
  any browser.
- **The teacher**: a browser that opened any page with ``?teacher=<LLMVIZ_TEACHER_KEY>`` once is the teacher's (the
  key, right or wrong, leaves the address and the browser's history at once; the registry remembers the student id
  as a teacher). A wrong key is logged with its address and slows that browser's next guesses, and its address's
  other guessing browsers; a browser that sent no wrong key is heard at once (:class:`llmviz.lab.identity.Guesses`).
- **Limits**: one address makes at most ``LLMVIZ_NEW_STUDENTS_PER_MINUTE`` new students a minute
  (:class:`llmviz.lab.identity.NewStudents`); behind the proxies of ``LLMVIZ_TRUSTED_PROXIES`` the forwarded address
  counts.

The Streamlit-free half (secrets, student ids, the cookie's script, the limits) is :mod:`llmviz.lab.identity`; this
module only reads and sets the cookie and asks it.
- **A display name** the student may type (the class view shows it; nothing else depends on it).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import threading

import streamlit as st

from llmviz import settings
from llmviz.errors import client_text
from llmviz.lab.faults import LabUnavailable
from llmviz.lab.identity import (  # noqa: F401 - the names pages and tests use through ui.identity
    COOKIE,
    MAX_AGE_S,
    Guesses,
    NewStudents,
    cookie_script,
    new_secret,
    student_from_secret,
    student_from_user,
    valid_secret,
)
from llmviz.lab.service import default_lab
from ui import state, streamlit_private

logger = logging.getLogger(__name__)

_tabs: dict[str, set[str]] = {}  # student id → the tab (session) ids that have shown them a page
_tabs_lock = threading.Lock()
_new_students = NewStudents(0)  # its per_minute is read from the settings on each use
_guesses = Guesses()


def _logged_in_user() -> dict | None:
    try:
        user = st.user
        return dict(user.to_dict()) if hasattr(user, "to_dict") else dict(user)
    except (AttributeError, KeyError, RuntimeError, TypeError):  # no login configured: the browser secret decides
        return None


def _secret() -> str:
    """This browser's secret: kept in the session, read from the cookie, or made now (and the cookie set)."""
    secret = state.STUDENT_SECRET.get()
    if valid_secret(secret):
        return secret
    cookies = st.context.cookies if streamlit_private.script_run_context() is not None else {}
    found = cookies.get(COOKIE) if cookies else None
    secret = found if valid_secret(found) else new_secret()
    state.STUDENT_SECRET.set(secret)
    state.COOKIE_TO_SET.set(secret != found)
    return secret


def client_address() -> str | None:
    """The address this page run's browser connected from, the server's own machine included (behind the proxies of
    ``LLMVIZ_TRUSTED_PROXIES``, the address they forward); None where it is unknown (tests without a server)."""
    if streamlit_private.script_run_context() is None:
        return None
    return streamlit_private.remote_address()


def _admitted(student: str) -> bool:
    """May this session's address make ``student`` (new to the registry) now (``LLMVIZ_NEW_STUDENTS_PER_MINUTE``)?"""
    _new_students.per_minute = int(settings.get("LLMVIZ_NEW_STUDENTS_PER_MINUTE"))
    address = client_address()
    if _new_students.per_minute <= 0 or address is None:
        return True  # no limit, or no address known
    try:
        if default_lab().student(student) is not None:
            return True  # a student the lab knows: not a new one
    except LabUnavailable:  # the lab's database is out (logged once): it cannot tell, so nobody is turned away
        return True
    if _new_students.admit(address, student):
        return True
    logger.warning(
        "Refused a new student from %s: %d new students from that address in the last minute "
        "(LLMVIZ_NEW_STUDENTS_PER_MINUTE)",
        client_text(address),
        _new_students.per_minute,
    )
    return False


def student_id() -> str:
    """The student this page run is for (see the module's docstring). Cheap: cached in the session. A browser whose
    address made too many new students in the last minute sees one sentence and nothing else (``st.stop``)."""
    known = state.STUDENT_ID.get()
    if isinstance(known, str):
        return known
    user = _logged_in_user()
    from_user = student_from_user(user) if user else None
    student = from_user or student_from_secret(_secret())
    if from_user is None and not _admitted(student):
        wait = _new_students.wait_s(client_address() or "")
        st.error(
            f"Too many new students came from your computer's address in the last minute: reload this page in "
            f"{max(1, round(wait))} s. (A browser that keeps its cookie is one student.)"
        )
        st.stop()
    state.STUDENT_ID.set(student)
    return student


def keep_cookie() -> None:
    """Set the cookie in a browser that opened this session without one, on the session's first page run only (a
    later run of an old tab never puts its secret back into a browser whose cookie was cleared meanwhile)."""
    student_id()
    secret = state.STUDENT_SECRET.get()
    if state.COOKIE_TO_SET.get() and valid_secret(secret):
        state.COOKIE_TO_SET.set(False)
        secure = str(st.context.url or "").startswith("https://") if streamlit_private.script_run_context() else False
        st.html(cookie_script(secret, secure), unsafe_allow_javascript=True)


def register_tab(student: str, tab: str) -> None:
    """The tab ``tab`` shows ``student``'s pages (for :func:`student_alive`)."""
    with _tabs_lock:
        _tabs.setdefault(student, set()).add(tab)


def student_alive(student: str) -> bool | None:
    """Has ``student`` a tab connected to this server? None when nothing can tell (no Streamlit runtime: tests)."""
    with _tabs_lock:
        tabs = list(_tabs.get(student, ()))
    answers = [streamlit_private.session_is_connected(tab) for tab in tabs]
    if any(answers):
        return True
    if any(answer is None for answer in answers) or not answers:
        return None
    with _tabs_lock:
        _tabs.pop(student, None)  # every tab has gone: the manager's heartbeat clock decides
    return False


def is_teacher_key(given: object) -> bool:
    """Is ``given`` the teacher key (``LLMVIZ_TEACHER_KEY``; never, when it is unset or shorter than 16 characters)?

    >>> is_teacher_key("anything")  # no key set
    False
    """
    key = settings.get("LLMVIZ_TEACHER_KEY")
    if not key or not isinstance(given, str):
        return False
    # digests of the same length: the comparison takes the same time whatever was given, its length included
    return hmac.compare_digest(_digest(given), _digest(str(key)))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


#: what a page runs in the browser to take ``?teacher=…`` out of the current history entry (replaceState: Back never
#: shows the key), now, every 50 ms for 30 s and every second after that for as long as the tab is open: Streamlit's
#: frontend keeps its own copy of the address (the server forgot the key without telling it, see
#: ``streamlit_private.forget_query_param``) and may write that copy, key included, into the history again on a later
#: run (a rerun long after the first 30 s, or a first run slowed by a busy machine): that entry is cleaned too
HISTORY_SCRIPT = (
    '<span data-llmviz-history="1"></span><script>'
    "{ const clean = () => { const u = new URL(window.location.href);"
    " if (u.searchParams.has('teacher')) { u.searchParams.delete('teacher');"
    " window.history.replaceState(window.history.state, '', u.toString()); } };"
    " clean(); const fast = setInterval(clean, 50);"
    " setTimeout(() => { clearInterval(fast); setInterval(clean, 1000); }, 30000); }"
    "</script>"
)


def _check_teacher_key(given: object) -> bool:
    """Is ``given`` the key? A browser that sent no wrong key is always heard at once (the teacher's, whatever other
    browsers behind its address tried); one that did waits as :class:`llmviz.lab.identity.Guesses` says before its
    next key is even compared. Wrong keys are logged with the address."""
    address = client_address()
    if address is None:  # no request behind this run (tests without a server): nothing to slow down
        return is_teacher_key(given)
    browser = _browser()
    if browser is None:  # a new student past LLMVIZ_NEW_STUDENTS_PER_MINUTE (its page then says so): not heard
        logger.warning("A teacher key from %s was not checked: too many new students from it", client_text(address))
        return False
    wait = _guesses.wait_s(address, browser)
    if wait > 0:
        logger.warning(
            "A teacher key from %s was not checked: that browser sent %d wrong keys in a row, its next is heard in "
            "%.0f s",
            client_text(address),
            _guesses.count(address, browser),
            wait,
        )
        return False
    if is_teacher_key(given):
        _guesses.right(address, browser)
        return True
    if settings.get("LLMVIZ_TEACHER_KEY"):
        waits = _guesses.wrong(address, browser)
        logger.warning(
            "A wrong teacher key from %s (%d wrong from that address; that browser's next is heard after %.0f s)",
            client_text(address),
            _guesses.count(address),
            waits,
        )
    return False


def _browser() -> str | None:
    """This run's student id without stopping the page (:func:`student_id` stops it past the new students' limit,
    which here comes before the page's navigation): None for a new student its address may not make now. A browser
    that throws its cookie away is a new student each time: at most so many guesses a minute from one address."""
    known = state.STUDENT_ID.get()
    if isinstance(known, str):
        return known
    user = _logged_in_user()
    from_user = student_from_user(user) if user else None
    student = from_user or student_from_secret(_secret())
    return student if from_user is not None or _admitted(student) else None


def take_teacher_key() -> bool:
    """A ``?teacher=KEY`` in the address makes this browser the teacher's (the lab's registry remembers the student
    id as the teacher's, so later visits and restarts need no key); returns whether this session is the teacher's.

    The key, right or wrong, leaves the address at once, and the browser's history too: this run's copy of the
    address forgets it without telling the browser (which would push a new history entry, leaving the key one Back
    away), and a script replaces the current history entry with the address without it."""
    if "teacher" in st.query_params and state.TEACHER_KEY_SEEN.get() == st.query_params.get("teacher"):
        # the browser sends its old address once more (its own copy, not its history): now that the script has
        # replaced the history entry, telling the browser pushes nothing
        st.query_params.pop("teacher", None)
    elif "teacher" in st.query_params:
        given = st.query_params.get("teacher")
        streamlit_private.forget_query_param("teacher")
        state.TEACHER_KEY_SEEN.set(str(given or ""))
        if streamlit_private.script_run_context() is not None:
            st.html(HISTORY_SCRIPT, unsafe_allow_javascript=True)
        if _check_teacher_key(given):
            state.TEACHER.set(True)
            with contextlib.suppress(LabUnavailable):  # the lab's database is out: this session is the teacher's
                default_lab().keep_student(student_id(), teacher=True)
    return is_teacher()


def is_teacher() -> bool:
    """Is this page run the teacher's? Only while a teacher key is set (``LLMVIZ_TEACHER_KEY``): unsetting it ends
    every teacher's rights."""
    if not settings.get("LLMVIZ_TEACHER_KEY"):
        return False
    if state.TEACHER.get() is None:
        try:
            found = default_lab().student(student_id())
        except LabUnavailable:  # the lab's database is out (said once): not the teacher's until it answers
            return False
        state.TEACHER.set(bool(found and found["teacher"]))
    return bool(state.TEACHER.get())


def display_name() -> str:
    """The name this student typed ("" when none, or while the lab's database is out)."""
    try:
        found = default_lab().student(student_id())
    except LabUnavailable:
        return ""
    return str(found["name"]) if found else ""


def set_display_name(name: str) -> None:
    """Keep the name the student typed (at most 40 characters, one line), shown in the teacher's class view."""
    clean = " ".join(str(name).split())[:40]
    try:
        default_lab().keep_student(student_id(), name=clean)
    except LabUnavailable as fault:  # the lab's database went out meanwhile: the name is kept once it is back
        st.warning(f"{fault} Your name is not kept yet: type it again once the lab is back.")


def login_configured() -> bool:
    """Has the teacher configured a login provider (``[auth]`` in ``.streamlit/secrets.toml``)?"""
    try:
        return st.secrets.load_if_toml_exists() and "auth" in st.secrets
    except FileNotFoundError:  # no secrets file at all
        return False


def login_offer() -> None:
    """A **Log in** button where a login provider is configured and nobody is logged in yet (the logged-in user is
    then the student, on any browser)."""
    if not login_configured():
        return
    user = _logged_in_user()
    if user and user.get("is_logged_in"):
        return
    if st.button("Log in", key=state.widget("login"), help="Log in to keep your runs under your account, anywhere."):
        st.login()
