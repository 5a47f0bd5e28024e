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
  key leaves the address at once; the registry remembers the student id as a teacher).
- **A display name** the student may type (the class view shows it; nothing else depends on it).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import secrets
import threading
from collections.abc import Mapping

import streamlit as st

from llmviz import settings
from llmviz.lab.health import LabUnavailable
from llmviz.lab.service import default_lab
from ui import state, streamlit_private

COOKIE = "llmviz_student"
MAX_AGE_S = 365 * 86400
_SECRET = re.compile(r"^[A-Za-z0-9_-]{32,64}$")  # token_urlsafe(24) is 32 characters: 192 bits

_tabs: dict[str, set[str]] = {}  # student id → the tab (session) ids that have shown them a page
_tabs_lock = threading.Lock()


def new_secret() -> str:
    """A fresh browser secret: 192 random bits, URL-safe.

    >>> len(new_secret()), new_secret() != new_secret()
    (32, True)
    """
    return secrets.token_urlsafe(24)


def valid_secret(value: object) -> bool:
    """Is ``value`` a secret this module made (so a crafted cookie cannot be a path, a name or a huge string)?

    >>> valid_secret(new_secret()), valid_secret("alice"), valid_secret("../" * 20)
    (True, False, False)
    """
    return isinstance(value, str) and bool(_SECRET.match(value))


def student_from_secret(secret: str) -> str:
    """The student id of a browser secret: a hash (a folder name, a database key), never the secret itself.

    >>> student_from_secret("A" * 32)
    's-b0cf14dd25766605c6177d345c848518'
    """
    return "s-" + hashlib.sha256(f"llmviz-student:{secret}".encode()).hexdigest()[:32]


def student_from_user(user: Mapping[str, object]) -> str | None:
    """The student id of a logged-in user (``st.user`` as a mapping), None when nobody is logged in: the provider's
    issuer and subject (stable for one person), else their e-mail address.

    >>> student_from_user({"is_logged_in": False}) is None
    True
    >>> student_from_user({"is_logged_in": True, "iss": "https://accounts.google.com", "sub": "1234"})
    'u-f170624ebefa96fc696650cec22fb4d4'
    """
    if not user.get("is_logged_in"):
        return None
    subject = user.get("sub") or user.get("email")
    if not subject:
        return None
    issuer = user.get("iss") or ""
    return "u-" + hashlib.sha256(f"llmviz-user:{issuer}:{subject}".encode()).hexdigest()[:32]


def cookie_script(secret: str, secure: bool) -> str:
    """The script that keeps ``secret`` in the browser's cookie (only when it has none: a second tab opened at the
    same moment never replaces the first one's).

    >>> "max-age=31536000" in cookie_script("A" * 32, secure=False)
    True
    """
    if not valid_secret(secret):
        raise ValueError("not a secret made by ui.identity")
    flags = f"path=/; max-age={MAX_AGE_S}; SameSite=Lax" + ("; Secure" if secure else "")
    return (
        '<span data-llmviz-identity="1"></span><script>'
        f"if (!document.cookie.split('; ').some(c => c.startsWith('{COOKIE}=')))"
        f" {{ document.cookie = '{COOKIE}={secret}; {flags}'; }}"
        "</script>"
    )


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


def student_id() -> str:
    """The student this page run is for (see the module's docstring). Cheap: cached in the session."""
    known = state.STUDENT_ID.get()
    if isinstance(known, str):
        return known
    user = _logged_in_user()
    student = (student_from_user(user) if user else None) or student_from_secret(_secret())
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
    """Is ``given`` the teacher key (``LLMVIZ_TEACHER_KEY``; never, when it is unset)?

    >>> is_teacher_key("anything")  # no key set
    False
    """
    key = settings.get("LLMVIZ_TEACHER_KEY")
    return bool(key) and isinstance(given, str) and hmac.compare_digest(given.encode(), str(key).encode())


def take_teacher_key() -> bool:
    """A ``?teacher=KEY`` in the address makes this browser the teacher's (the key leaves the address in the same
    page run, right or wrong: :func:`ui.share.links` drops every parameter that is not a setting; the lab's registry
    remembers the student id as the teacher's, so later visits and restarts need no key); returns whether this
    session is the teacher's."""
    if "teacher" in st.query_params:  # ui.share takes every parameter it does not know out of the address
        given = st.query_params.get("teacher")
        if is_teacher_key(given):
            state.TEACHER.set(True)
            with contextlib.suppress(LabUnavailable):  # the lab's database is out: this session is the teacher's
                default_lab().registry.ensure_student(student_id(), teacher=True)
    return is_teacher()


def is_teacher() -> bool:
    """Is this page run the teacher's? Only while a teacher key is set (``LLMVIZ_TEACHER_KEY``): unsetting it ends
    every teacher's rights."""
    if not settings.get("LLMVIZ_TEACHER_KEY"):
        return False
    if state.TEACHER.get() is None:
        try:
            found = default_lab().registry.student(student_id())
        except LabUnavailable:  # the lab's database is out (said once): not the teacher's until it answers
            return False
        state.TEACHER.set(bool(found and found["teacher"]))
    return bool(state.TEACHER.get())


def display_name() -> str:
    """The name this student typed ("" when none, or while the lab's database is out)."""
    try:
        found = default_lab().registry.student(student_id())
    except LabUnavailable:
        return ""
    return str(found["name"]) if found else ""


def set_display_name(name: str) -> None:
    """Keep the name the student typed (at most 40 characters, one line), shown in the teacher's class view."""
    clean = " ".join(str(name).split())[:40]
    default_lab().registry.ensure_student(student_id(), name=clean)


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
