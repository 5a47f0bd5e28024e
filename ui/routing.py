"""Every page runs under app.py's ``st.navigation``: app.py marks its runs, and a stage script started on its own
says how to start the app."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import streamlit as st

from llmviz import settings
from llmviz.errors import configure_logging, filter_client_logs
from ui import joining, refused, state, streamlit_private, streamlit_private_guard


@contextlib.contextmanager
def router_run():
    """Marks a run that went through app.py (see :func:`ensure_router`)."""
    state.ROUTER_RUNNING.set(True)
    try:
        yield
    finally:
        state.ROUTER_RUNNING.pop()


RUN_APP_MESSAGE = (
    "This page is one stage of llmviz and needs the app around it (the shared sidebar and "
    "navigation). Start the app with `streamlit run app.py` and open this page from its menu."
)


def routed() -> bool:
    """Is this script run app.py's? A whole run marks itself (:func:`router_run`). A section's own rerun (an
    ``st.fragment``: a widget inside it changed) runs only that section's function, not app.py, so the mark is not
    there: it is app.py's when the server's main script is app.py (``streamlit run app.py``; a stage started on its
    own has itself as its main script)."""
    if state.ROUTER_RUNNING.get():
        return True
    main_script = streamlit_private.fragment_rerun_main_script()
    return main_script is not None and _is_app_script(main_script)


def _is_app_script(path: str) -> bool:
    """Is ``path`` this repository's app.py?

    >>> from ui.stages import ROOT
    >>> _is_app_script(str(ROOT / "app.py")), _is_app_script(str(ROOT / "stages" / "home.py"))
    (True, False)
    """
    from ui.stages import ROOT

    try:
        return Path(path).resolve() == (ROOT / "app.py").resolve()
    except (OSError, ValueError):
        return False


def ensure_router() -> None:
    """A stage script started on its own (``streamlit run stages/home.py``) has no app.py around it: say how to
    start the app and stop. Under app.py (every visit, also straight to ``/tokens``: ``st.navigation`` is the only
    router), and in a section's own rerun of a page app.py drew (:func:`routed`), this does nothing."""
    if not routed():
        st.info(RUN_APP_MESSAGE)
        st.stop()


def redirect(page):
    """A hidden page that goes to ``page`` keeping the link's parameters: ``/home`` (a link people type or share) to
    the home page, which lives at ``/`` (``/home?seed=42`` opens ``/?seed=42``), and a stage that moved
    (``ui.stages.MOVED``: ``/adapt?lora_rank=8`` opens Adapting with rank 8). app.py calls it before the sidebar
    draws: Streamlit refuses to clear or set a parameter bound to a widget, and a parameter some widget of this
    session bound already (a session that was open before) is left to that widget."""

    def _redirect() -> None:
        bound = streamlit_private.bound_link_params()
        st.switch_page(page, query_params={n: st.query_params.get_all(n) for n in st.query_params if n not in bound})

    _redirect.__name__ = f"redirect_to_{page.url_path or 'home'}"  # each hidden page a function of its own name
    return _redirect


_STARTED = False
#: llmviz's loggers whose every message is about something a client sent (a forged value, a teacher key, an address)
CLIENT_LOGGERS = ("ui.refused", "ui.identity")


def start_server_once() -> None:
    """Once per server process: one log handler for llmviz and ui (on stderr, beside Streamlit's), a filter on
    Streamlit's loggers and llmviz's :data:`CLIENT_LOGGERS` (``llmviz.errors.ClientLogFilter``: what a client sent
    is bounded and escaped, and one message repeated is counted), one warning
    line for each ``LLMVIZ_*`` variable whose value cannot be used (its default is used instead), the check of
    the widget values browsers send (``ui.streamlit_private_guard.guard_widget_states``), a link's values fitted to
    their widgets (``ui.streamlit_private.fit_link_values``), and the proxies whose
    ``X-Forwarded-For`` is believed (``LLMVIZ_TRUSTED_PROXIES``: none by default)."""
    global _STARTED
    if not _STARTED:
        _STARTED = True
        configure_logging()
        # what a client sent, as Streamlit and llmviz's refusals log it: bounded, escaped, a repeat counted
        client_logs = filter_client_logs(*(logging.getLogger(name) for name in CLIENT_LOGGERS))
        streamlit_private.filter_streamlit_logs(client_logs)
        for problem in settings.problems():
            logging.getLogger(__name__).warning(problem)
        # a widget value of the wrong kind, or a text longer than its widget takes: one line, no traceback
        streamlit_private_guard.guard_widget_states(refused.refuse_widget_value, state.MAX_WIDGET_TEXT)
        # a link's number outside its widget's range is fitted to it, and a value a widget drops is said, in words
        streamlit_private.fit_link_values(refused.link_value_fitted)
        # a forwarded address only from a configured proxy: a client on this machine cannot name itself N students
        streamlit_private.trust_forwarded_only_from(settings.get("LLMVIZ_TRUSTED_PROXIES") or ())
        # the address students open from their own machines, for the teacher at the terminal (llmviz.address)
        print(joining.start_line(), flush=True)


_PAGE_THREADS_SET = False


def page_torch_threads() -> int:
    """Once per server process: the torch threads that page script runs use (``LLMVIZ_PAGE_TORCH_THREADS``,
    default 1). A page computes on small tensors, and every session's script run is a thread of its own: with
    several torch threads each of them would start its own OpenMP team, which then spins on the server's few
    cores while twenty students open pages. Training is not affected: it runs in worker processes that set
    their own threads. Returns the number in force."""
    global _PAGE_THREADS_SET
    import torch

    if not _PAGE_THREADS_SET:
        _PAGE_THREADS_SET = True
        wanted = settings.get("LLMVIZ_PAGE_TORCH_THREADS")
        torch.set_num_threads(min(wanted, os.cpu_count() or 1))
    return torch.get_num_threads()


_FROZEN = False


def freeze_long_lived_objects() -> None:
    """Once per server process, after its first page run: ``gc.freeze()`` moves every object alive then (torch,
    Streamlit, the modules, the first models loaded: about 370,000 objects) out of the garbage collector's reach.
    Python's automatic full collections walked all of them while holding the GIL, about 0.2 s each, pausing every
    session's run and the server's event loop; afterwards they only walk what is newer (measured: 0.19 s → 0.00 s
    for ``gc.collect(2)`` with the shipped GPT loaded). Those objects live as long as the server anyway."""
    global _FROZEN
    if not _FROZEN:
        import gc

        _FROZEN = True
        gc.collect()  # the first run's garbage goes first: nothing collectable is frozen
        gc.freeze()
