"""Text boxes that take a long paste and say what the page uses of it.

Streamlit's text box drops a change longer than its ``max_chars`` without a word: a student who pasted 6,000
characters into Attention's 5,000-character sentence saw nothing happen. A box here is given room for a paste
:data:`PASTE_ROOM` times longer than what its page uses (:func:`room`; the server refuses anything longer than the
box before it is read, ``ui.streamlit_private_guard.text_problem``), and the page reads the first characters it uses,
saying so under the box (:func:`used`) — the cut is made before anything is tokenized.
"""

from __future__ import annotations

import streamlit as st

from ui import link_params, share, state

#: how many times the characters a page uses its box takes, so that a longer paste lands (and is cut, said)
PASTE_ROOM = 10


def room(limit: int) -> int:
    """``max_chars`` for a box whose page uses ``limit`` characters.

    >>> room(5_000), room(500)
    (50000, 5000)
    """
    return limit * PASTE_ROOM


def used(text: str, limit: int, what: str = "The text", where=st) -> str:
    """The first ``limit`` characters of ``text``, the part the page uses; when ``text`` is longer, one line under
    the box (in ``where``) says so (``what``: how the page names the text)."""
    if len(text) <= limit:
        return text
    where.caption(f"{what} is {len(text):,} characters long: this page uses its first {limit:,}.")
    return text[:limit]


def text_input(label: str, value: str, limit: int, what: str = "The text", *, where=st, **options) -> str:
    """A text box (``where``: ``st`` or a column) that takes a paste up to :func:`room` and returns the part the page
    uses (:func:`used`), with the link's note when it is bound to a link's text (``ui.share.carried_note``: what the
    address carries of it, and what the page uses): ``st.text_input``'s other ``options`` as they are."""
    held = where.text_input(label, value, max_chars=room(limit), **options)
    return _used_and_noted(held, limit, what, where, options.get("key"))


def text_area(label: str, value: str, limit: int, what: str = "The text", *, where=st, **options) -> str:
    """:func:`text_input`'s text area."""
    held = where.text_area(label, value, max_chars=room(limit), **options)
    return _used_and_noted(held, limit, what, where, options.get("key"))


def _used_and_noted(held: str, limit: int, what: str, where, key: str | None) -> str:
    text = used(held, limit, what, where)
    if key in link_params.PARAMS and link_params.PARAMS[key][0] == "text":  # bound to a link's text (ui.share.bind)
        share.carried_note(key, where, uses=limit)
    return text


def held(key: str, default: str, limit: int) -> str:
    """The part of box ``key``'s text the page uses (its first ``limit`` characters, :func:`used`), read where the
    box is not drawn (a panel of another section, a second model side by side); the box says what it cut."""
    return str(state.value(key, default) or "")[:limit]
