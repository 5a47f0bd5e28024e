"""Streamlit helpers shared by the pages. Each part is a module of its own; this package gathers their names,
so pages write ``ui.settings()``, ``ui.friendly_errors(...)``, ``ui.keep(...)``:

- :mod:`ui.stages` — the app's stages (``PIPELINE``) and the repository ``ROOT``;
- :mod:`ui.shared_sidebar` — the shared sidebar, its :class:`Settings` and the chosen corpus's text;
- :mod:`ui.routing` — every page runs under app.py's navigation;
- :mod:`ui.widgets` — values that survive navigation, page headers, index sliders;
- :mod:`ui.state` — every name kept in a browser session's state (slots and widget keys), declared once;
- :mod:`ui.errors` — failures shown without a traceback.

Only rendering lives here and in ``stages/``; every number comes from ``llmviz``.
"""

from __future__ import annotations

from ui.corpora import UPLOAD
from ui.errors import friendly_errors
from ui.routing import (
    RUN_APP_MESSAGE,
    ensure_router,
    freeze_long_lived_objects,
    page_torch_threads,
    redirect,
    router_run,
    start_server_once,
)
from ui.shared_sidebar import Settings, corpus_text, settings, sidebar
from ui.stages import MOVED, PIPELINE, ROOT, Stage
from ui.widgets import bounded_slider, index_slider, keep, page_header

__all__ = [
    "MOVED",
    "PIPELINE",
    "ROOT",
    "RUN_APP_MESSAGE",
    "UPLOAD",
    "Settings",
    "Stage",
    "corpus_text",
    "bounded_slider",
    "ensure_router",
    "freeze_long_lived_objects",
    "friendly_errors",
    "index_slider",
    "keep",
    "page_header",
    "page_torch_threads",
    "router_run",
    "start_server_once",
    "redirect",
    "settings",
    "sidebar",
]
