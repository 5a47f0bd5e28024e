"""Who a student is, without Streamlit: browser secrets and the student ids made from them, a logged-in user's id,
the cookie's script, and the two limits on what one address may try (new students a minute, teacher-key guesses).

``ui.identity`` sets and reads the cookie, and asks these functions; nothing here reads a request.

- **A browser secret** (:func:`new_secret`): 192 random bits, kept in the browser's ``llmviz_student`` cookie. A
  cookie that is not one this module made (:func:`valid_secret`: empty, too short, too long, another alphabet) is
  replaced by a new secret, so a damaged cookie costs one new student, not a new student on every reload.
- **The student id** (:func:`student_from_secret`, :func:`student_from_user`): a hash, from which the secret cannot
  be found; the registry, folders and pages hold only this.
- **New students per address** (:class:`NewStudents`): a client that sends a new cookie on every connection makes a
  new student each time, each with its own share of the queue; ``LLMVIZ_NEW_STUDENTS_PER_MINUTE`` bounds how many one
  address may make a minute.
- **Teacher-key guesses** (:class:`Guesses`): each wrong key from a browser doubles how long that browser's next one
  waits before it is even compared (1 s, 2 s, 4 s … at most :data:`Guesses.LONGEST_S`), and so do its address's
  wrong keys for every browser there that guessed wrong; a browser that sent no wrong key (the teacher's, behind a
  school's one address) is heard at once.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from cachetools import FIFOCache, LRUCache

from llmviz.lab.storage import safe_name

COOKIE = "llmviz_student"
MAX_AGE_S = 365 * 86400
SECRET_PATTERN = "^[A-Za-z0-9_-]{32,64}$"  # token_urlsafe(24) is 32 characters: 192 bits
_SECRET = re.compile(SECRET_PATTERN)


def new_secret() -> str:
    """A fresh browser secret: 192 random bits, URL-safe.

    >>> len(new_secret()), new_secret() != new_secret()
    (32, True)
    """
    return secrets.token_urlsafe(24)


def valid_secret(value: object) -> bool:
    """Is ``value`` a secret this module made (so a crafted cookie cannot be a path, a name or a huge string)?

    >>> valid_secret(new_secret()), valid_secret("alice"), valid_secret("../" * 20), valid_secret("")
    (True, False, False, False)
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
    """The script that keeps ``secret`` in the browser's cookie when the browser holds no secret this module made
    (none, or an empty or malformed one: replaced); a valid one is never replaced, so a second tab opened at the same
    moment keeps the first one's.

    >>> script = cookie_script("A" * 32, secure=False)
    >>> "max-age=31536000" in script, "[A-Za-z0-9_-]{32,64}" in script
    (True, True)
    """
    if not valid_secret(secret):
        raise ValueError("not a secret made by llmviz.lab.identity")
    flags = f"path=/; max-age={MAX_AGE_S}; SameSite=Lax" + ("; Secure" if secure else "")
    pattern = "/" + SECRET_PATTERN.replace("^", f"^{COOKIE}=") + "/"
    return (
        '<span data-llmviz-identity="1"></span><script>'
        f"if (!document.cookie.split('; ').some(c => {pattern}.test(c)))"
        f" {{ document.cookie = '{COOKIE}={secret}; {flags}'; }}"
        "</script>"
    )


class NewStudents:
    """How many new students each address made in the last minute, and whether it may make one more.

    ``per_minute`` ≤ 0: no limit. A student admitted once is not counted again (their other tabs and reloads);
    addresses and students remembered are bounded (the oldest forgotten first).

    >>> now = [0.0]
    >>> limit = NewStudents(2, clock=lambda: now[0])
    >>> [limit.admit("10.0.0.5", s) for s in ("s-a", "s-b", "s-a", "s-c")], limit.admit("10.0.0.6", "s-c")
    ([True, True, True, False], True)
    >>> round(limit.wait_s("10.0.0.5"))
    60
    >>> now[0] = 60.0
    >>> limit.admit("10.0.0.5", "s-d")
    True
    """

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic, remembered: int = 100_000):
        self.per_minute = per_minute
        self.clock = clock
        # address → when its new students were made, the least recently seen address forgotten first
        self._made: LRUCache[str, deque[float]] = LRUCache(maxsize=remembered)
        self._admitted: FIFOCache[str, None] = FIFOCache(maxsize=remembered)  # the oldest admitted forgotten first
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> deque[float]:
        times = self._made.setdefault(address, deque())  # seen now: the last to be forgotten
        while times and now - times[0] >= 60:
            times.popleft()
        return times

    def admit(self, address: str | None, student: str) -> bool:
        """May ``address`` make the new student ``student`` now (counted when it may)?"""
        if self.per_minute <= 0 or not address:
            return True
        now = self.clock()
        with self._lock:
            if student in self._admitted:
                return True
            times = self._recent(address, now)
            if len(times) >= self.per_minute:
                return False
            times.append(now)
            self._admitted[student] = None
            return True

    def wait_s(self, address: str) -> float:
        """Seconds until ``address`` may make another new student."""
        with self._lock:
            times = self._recent(address, self.clock())
            return 0.0 if len(times) < self.per_minute else max(0.0, 60 - (self.clock() - times[0]))


class Guesses:
    """Wrong teacher keys, by browser and by address, so that guessing is slowed and the teacher is never kept out.

    - A browser that has sent no wrong key is always heard at once: the teacher's, however many wrong keys other
      browsers behind the same address (a school's one public address) sent.
    - A browser's n-th wrong key in a row makes its next key wait 2ⁿ⁻¹ s before it is even compared (at most
      :data:`LONGEST_S`); and while its address's wrong keys (all its browsers' together, doubling the same way)
      make that address wait, such a browser waits that long too: a student who keeps many cookies gets one guess
      from each while the guessing goes on. A browser without its cookie is a new student, and one address makes
      at most ``LLMVIZ_NEW_STUDENTS_PER_MINUTE`` of those a minute (:class:`NewStudents`).
    - A right key clears its browser's count (not its address's: the guessing there goes on being slowed).

    >>> now = [0.0]
    >>> guesses = Guesses(clock=lambda: now[0])
    >>> guesses.wrong("10.0.0.5", "pupil"), guesses.wrong("10.0.0.5", "pupil"), guesses.wait_s("10.0.0.5", "pupil")
    (1.0, 2.0, 2.0)
    >>> guesses.wait_s("10.0.0.5", "teacher"), guesses.count("10.0.0.5")  # another browser: heard at once
    (0.0, 2)
    >>> now[0] = 2.0
    >>> guesses.wrong("10.0.0.5", "other pupil"), guesses.wait_s("10.0.0.5", "pupil")  # the address's 3rd: 4 s
    (1.0, 4.0)
    """

    LONGEST_S = 300.0

    def __init__(self, clock: Callable[[], float] = time.monotonic, remembered: int = 10_000):
        self.clock = clock
        # address, or (address, browser) → (wrong in a row, heard again at); the least recently used forgotten first
        self._wrong: LRUCache[object, tuple[int, float]] = LRUCache(maxsize=remembered)
        self._lock = threading.Lock()

    def _wait(self, key: object) -> float:
        return max(0.0, self._wrong.get(key, (0, 0.0))[1] - self.clock())

    def wait_s(self, address: str, browser: str) -> float:
        """Seconds before a key from ``browser`` at ``address`` is compared (0: now; always 0 for a browser that has
        sent no wrong key)."""
        with self._lock:
            if (address, browser) not in self._wrong:
                return 0.0
            return max(self._wait((address, browser)), self._wait(address))

    def count(self, address: str, browser: str | None = None) -> int:
        """Wrong keys in a row from ``address`` (from ``browser`` there, when given)."""
        with self._lock:
            return self._wrong.get(address if browser is None else (address, browser), (0, 0.0))[0]

    def wrong(self, address: str, browser: str) -> float:
        """A wrong key from ``browser`` at ``address``: returns how long that browser's next key waits at least."""
        with self._lock:
            waits = [self._count_wrong(key) for key in ((address, browser), address)]
        return waits[0]

    def _count_wrong(self, key: object) -> float:
        count = self._wrong.get(key, (0, 0.0))[0] + 1
        wait = min(self.LONGEST_S, 2.0 ** (count - 1))
        self._wrong[key] = (count, self.clock() + wait)
        return wait

    def right(self, address: str, browser: str) -> None:
        with self._lock:
            self._wrong.pop((address, browser), None)


def student_key(owner: str) -> str:
    """The folder-safe name under which ``owner``'s runs are kept: the owner itself when it is one (a student id),
    else a hash of it.

    >>> student_key("3f2a-b1"), student_key("address 10.0.0.7")
    ('3f2a-b1', 'o-b133130630af203cdf7aa6f9')
    """
    try:
        return safe_name(owner)
    except ValueError:
        return "o-" + hashlib.sha256(owner.encode()).hexdigest()[:24]
