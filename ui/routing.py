"""Every page runs under app.py's ``st.navigation``: app.py marks its runs, and a page reached any other way
reruns through app.py once, or says how to start the app."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import streamlit as st

from ui import internals, state
from ui.stages import ROOT


@contextlib.contextmanager
def router_run():
    """Marks a run that went through app.py (see :func:`ensure_router`)."""
    state.ROUTER_RUNNING.set(True)
    try:
        yield
    finally:
        state.ROUTER_RUNNING.pop()


RUN_APP_MESSAGE = ("This page is one stage of llmviz and needs the app around it (the shared sidebar and "
                   "navigation). Start the app with `streamlit run app.py` and open this page from its menu.")


def _main_script_is_a_page() -> bool:
    ctx = internals.script_run_context()
    main = getattr(ctx, "main_script_path", None) if ctx is not None else None
    return bool(main) and Path(main).resolve().parent == ROOT / "pages"


def ensure_router() -> None:
    """Make sure a page runs under app.py's ``st.navigation``.

    Streamlit decides once per server process whether the app uses the old ``pages/``
    folder convention; until app.py has called ``st.navigation`` once, a visit straight to
    ``/tokens`` would run the page file alone, without the shared sidebar. When that
    happens, switch the process to ``st.navigation`` and run again through app.py — once.
    A page file started on its own (``streamlit run pages/home.py``) has no app.py to run
    through: it says so and stops instead of rerunning forever.
    """
    if state.ROUTER_RUNNING.get():
        state.ROUTER_RETRIED.pop()
        return
    if _main_script_is_a_page() or state.ROUTER_RETRIED.get():
        state.ROUTER_RETRIED.pop()
        st.info(RUN_APP_MESSAGE)
        st.stop()
    state.ROUTER_RETRIED.set(True)
    internals.route_pages_through_navigation()
    st.rerun()


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
        raw = os.environ.get("LLMVIZ_PAGE_TORCH_THREADS", "1").strip()
        wanted = int(raw) if raw.isdigit() and int(raw) > 0 else 1
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
