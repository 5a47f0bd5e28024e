"""Streamlit helpers shared by the pages, each part a module of its own, imported from where it is defined
(``from ui.shared_sidebar import settings``, ``from ui import routing``); this package re-exports nothing:

- :mod:`ui.stages` — the app's stages (``PIPELINE``) and the repository ``ROOT``;
- :mod:`ui.shared_sidebar` — the shared sidebar, its :class:`Settings` and the chosen corpus's text;
- :mod:`ui.routing` — every page runs under app.py's navigation;
- :mod:`ui.widgets` — values that survive navigation, page headers, index sliders;
- :mod:`ui.state` — every name kept in a browser session's state (slots and widget keys), declared once;
- :mod:`ui.errors` — failures shown without a traceback.

Only rendering lives here and in ``stages/``; every number comes from ``llmviz``.
"""
