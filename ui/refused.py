"""The record of values a browser or a link gave a widget that the widget cannot take as they were.

``ui.streamlit_private_guard.guard_widget_states`` drops a widget value a browser sent that its widget cannot take (a
number where a text box's text was, a text longer than its box takes) and reports it to
:func:`refuse_widget_value` (installed by ``ui.routing``): one line in the server's log, and the widget's id kept for
the session's next page run, whose notice (``ui.share.links``) names the settings with ``ui.link_params.widget_name``.

``ui.streamlit_private.fit_link_values`` fits a link's number that is outside its widget's range to it
(``steps=5000`` on a slider of 10 to 2,000 is 2,000) and reports it, and any link value a widget dropped, to
:func:`link_value_fitted`, on whichever page run the widget is first drawn: :func:`link_sentences` gives the page
the one line each (``ui.share.links`` shows them).
"""

from __future__ import annotations

import logging
import math
import threading

from cachetools import LRUCache

from llmviz.errors import client_text
from ui import streamlit_private

logger = logging.getLogger(__name__)

_SESSIONS = 1_000  #: sessions remembered at most (least recently reported forgotten first)
_REFUSED: LRUCache[str, list[str]] = LRUCache(_SESSIONS)  # browser session id → the widgets it sent what was dropped
#: browser session id → {a link parameter its widget fitted or dropped: the sentence said of it (None: nothing)}
_LINKED: LRUCache[str, dict[str, str | None]] = LRUCache(_SESSIONS)
_LOCK = threading.Lock()
#: characters of a widget id kept: Streamlit's prefix (``$$ID-`` and a hash) and more of the key than a notice
#: names (``ui.link_params.widget_name`` shortens a key to 40 characters), never all of what a browser sent
_ID_CHARS = 300


def _session() -> str:
    context = streamlit_private.script_run_context()
    return context.session_id if context is not None else ""


def refuse_widget_value(widget_id: str, why: str) -> None:
    """A browser sent a value its widget cannot take (``ui.streamlit_private_guard.guard_widget_states`` dropped it):
    one line in the server's log, and a notice on this session's page (at most 8 widgets a page run)."""
    session = _session()
    logger.warning(
        "A browser sent a value %s cannot take (%s): ignored, it keeps its value", client_text(widget_id), why
    )
    with _LOCK:
        entries = _REFUSED.setdefault(session, [])
        if len(entries) < 8:
            entries.append(widget_id[:_ID_CHARS])


def refused_widgets() -> list[str]:
    """The ids of the widgets whose values this session's browser sent and could not be used since its last page
    run (emptied by reading)."""
    with _LOCK:
        return _REFUSED.pop(_session(), [])


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _same(asked: str, used: str) -> bool:
    """Does a link's text name the value used (a default written another way: 300 and 300.0)?"""
    if asked == used:
        return True
    try:
        return math.isclose(float(asked), float(used), rel_tol=1e-9, abs_tol=1e-12)
    except ValueError:
        return False


def link_sentence(name: str, asked: str, how: str | None, used: str) -> str | None:
    """The one line a page says about a link's value its widget fitted or dropped (None: nothing worth saying).

    >>> link_sentence("steps", "5000", "at most 2,000", "2,000")
    'The link asked for steps = “5000”; this page takes at most 2,000, so it uses 2,000.'
    >>> link_sentence("bpe_chars", "8", "at least 10,000 characters", "10,000 characters")
    'The link asked for bpe_chars = “8”; this page takes at least 10,000 characters, so it uses 10,000 characters.'
    >>> link_sentence("top_k", "abc", "dropped", "0")
    'The link asked for top_k = “abc”, which this page cannot use, so it uses 0.'
    >>> link_sentence("steps", "300.0", "dropped", "300") is None  # the default written another way
    True
    >>> link_sentence("bpe_chars", "10000", None, "10,000 characters") is None  # a choice written the short way
    True
    """
    if how is None or (how == "dropped" and _same(asked, used)):
        return None
    asked_for = f"The link asked for {_short(name, 30)} = “{_short(asked)}”"
    if how == "dropped":
        return f"{asked_for}, which this page cannot use, so it uses {_short(used) or 'its default'}."
    return f"{asked_for}; this page takes {how}, so it uses {_short(used)}."


def link_value_fitted(name: str, asked: str, how: str | None, used: str) -> None:
    """``ui.streamlit_private.fit_link_values`` fitted (``how``: "at most 2,000") or dropped (``how`` "dropped") the
    link's value ``asked`` of the parameter ``name``; the widget uses ``used`` (as a link writes it). Kept for this
    session's page run (at most 100 parameters)."""
    sentence = link_sentence(name, asked, how, used)
    with _LOCK:
        said = _LINKED.setdefault(_session(), {})
        if len(said) < 100:
            said[name] = sentence


def link_sentences() -> tuple[list[str], set[str]]:
    """The lines about the link that this session's page run has to say (emptied by reading), and every parameter
    its widgets fitted or dropped (``ui.link_params.link_notices`` says nothing more of those)."""
    with _LOCK:
        said = _LINKED.pop(_session(), {})
    return [sentence for sentence in said.values() if sentence], set(said)
