"""The record of widget values a browser sent that a widget cannot take.

``ui.streamlit_private.guard_widget_states`` drops such a value before Streamlit reads it (a number where a text
box's text was, a text longer than its box takes) and reports it to :func:`refuse_widget_value` (installed by
``ui.routing``): one line in the server's log, and the widget's id kept for the session's next page run, whose
notice (``ui.share.links``) names the settings with ``ui.share.widget_name``.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from llmviz.errors import client_text
from ui import streamlit_private

logger = logging.getLogger(__name__)

_REFUSED: OrderedDict[str, list[str]] = OrderedDict()  # browser session id → the widgets it sent what was dropped
_REFUSED_LOCK = threading.Lock()
_REFUSED_SESSIONS = 1_000  #: sessions remembered at most (each is emptied by its next page run)
#: characters of a widget id kept: Streamlit's prefix (``$$ID-`` and a hash) and more of the key than a notice
#: names (``ui.share.widget_name`` shortens a key to 40 characters), never all of what a browser sent
_ID_CHARS = 300


def refuse_widget_value(widget_id: str, why: str) -> None:
    """A browser sent a value its widget cannot take (``ui.streamlit_private.guard_widget_states`` dropped it):
    one line in the server's log, and a notice on this session's page (at most 8 widgets a page run)."""
    context = streamlit_private.script_run_context()
    session = context.session_id if context is not None else ""
    logger.warning(
        "A browser sent a value %s cannot take (%s): ignored, it keeps its value", client_text(widget_id), why
    )
    with _REFUSED_LOCK:
        entries = _REFUSED.setdefault(session, [])
        if len(entries) < 8:
            entries.append(widget_id[:_ID_CHARS])
        while len(_REFUSED) > _REFUSED_SESSIONS:
            _REFUSED.popitem(last=False)


def refused_widgets() -> list[str]:
    """The ids of the widgets whose values this session's browser sent and could not be used since its last page
    run (emptied by reading)."""
    context = streamlit_private.script_run_context()
    with _REFUSED_LOCK:
        return _REFUSED.pop(context.session_id if context is not None else "", [])
