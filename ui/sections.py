"""Page sections as ``st.fragment`` s: a widget inside a section reruns that section alone.

    @sections.section("attention.toy")
    def toy_example():
        ...widgets and charts...
    toy_example()

With the environment variable ``LLMVIZ_TIMINGS=<file>`` set, every run of a section (the first,
inside the page's run, and each rerun of its own) appends one JSON line ``{"section", "seconds",
"rerun"}`` to that file, and :func:`timed_page` does the same for a whole page's script run: that
is how ``benchmarks/pages.py`` reads server time from a real browser session. A page's line also holds
``db_seconds`` and ``db_statements``: the time its own thread spent in database statements (the lab's
registry; SQLAlchemy's cursor events on every engine) and their number, which is how
``benchmarks/class_load.py`` reports the database's cost per open. Without the variable nothing is
measured or written.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable

import streamlit as st

from llmviz import settings
from ui import present, state
from ui.errors import friendly_errors

_LOCK = threading.Lock()
_IN_FRAGMENT = threading.local()  # marks fragment reruns (not part of a page run)
_DATABASE = threading.local()  # per thread: [seconds, statements] of database work since the page run began
_DATABASE_HOOKED: list[bool] = []


def _log(name: str, seconds: float, rerun: bool, **more: float) -> None:
    path = settings.get("LLMVIZ_TIMINGS")
    if not path:
        return
    with _LOCK, open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"section": name, "seconds": round(seconds, 5), "rerun": rerun, **more}) + "\n")


def _before_statement(conn, cursor, statement, parameters, context, executemany) -> None:
    _DATABASE.began = time.perf_counter()


def _after_statement(conn, cursor, statement, parameters, context, executemany) -> None:
    totals, began = getattr(_DATABASE, "totals", None), getattr(_DATABASE, "began", None)
    if totals is not None and began is not None:
        totals[0] += time.perf_counter() - began
        totals[1] += 1


def _count_database_time() -> None:
    """Once per process, while ``LLMVIZ_TIMINGS`` is set: time every database statement of every engine (the lab's
    registry), per thread, for :class:`timed_page`."""
    with _LOCK:
        if _DATABASE_HOOKED:
            return
        import sqlalchemy as sa

        sa.event.listen(sa.Engine, "before_cursor_execute", _before_statement)
        sa.event.listen(sa.Engine, "after_cursor_execute", _after_statement)
        _DATABASE_HOOKED.append(True)


def timed(name: str, function: Callable) -> Callable:
    """``function``, logging each call's server time under ``name`` when ``LLMVIZ_TIMINGS`` is set."""

    @functools.wraps(function)
    def logged(*args, **kwargs):
        if not settings.get("LLMVIZ_TIMINGS"):
            return function(*args, **kwargs)
        rerun = not getattr(_IN_FRAGMENT, "page", False)
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _log(name, time.perf_counter() - start, rerun)

    return logged


def guarded(function: Callable, what: str = "this section") -> Callable:
    """``function``, with any error shown by :func:`ui.errors.friendly_errors` (a message, never a traceback)."""

    @functools.wraps(function)
    def safe(*args, **kwargs):
        with friendly_errors(what):
            return function(*args, **kwargs)

    return safe


def section(name: str, what: str = "this section", run_every: float | None = None) -> Callable[[Callable], Callable]:
    """Decorator: the function becomes an ``st.fragment`` named ``name`` (for the timing log), rerun by itself every
    ``run_every`` seconds when given (a live section: :func:`ui.watch.refresh_seconds` picks the interval).

    An error in the section (its first run inside the page's run, or a rerun of its own) is shown in the
    section by :func:`ui.errors.friendly_errors`, ``what`` naming the step: the rest of the page keeps working and
    no traceback reaches the student. (Streamlit's st.stop and st.rerun are not errors and pass through.)
    """

    def wrap(function: Callable) -> Callable:
        return st.fragment(timed(name, guarded(function, what)), run_every=run_every)

    return wrap


def lazy(label: str, key: str, *, expanded: bool = False, help_text: str | None = None):
    """An expander whose content runs only while it is open: returns its container when open, else None.

        if (box := sections.lazy("Step 0 vs step N", "attention_before_after")):
            with box:
                draw_the_comparison()

    Most students never open the secondary parts of a page (a comparison, a second model, a grid of every
    head); drawn inside a lazy expander they cost nothing until opened. Opening it reruns its section (or the
    page, outside a section); the widget ``lazy_<key>`` holds whether it is open (tests set it)."""
    box = st.expander(label, expanded=expanded, key=state.widget("lazy_", key), on_change="rerun")
    if box.open:
        if help_text:
            box.caption(help_text)
        return box
    return None


def lazy_tabs(
    labels: list[str],
    binding: dict,
    link_params: dict[str, tuple[str, ...]] | None = None,
    presenter_all: bool = True,
) -> list:
    """Tabs whose content runs only while chosen: one container per label, None for the tabs not shown.

        lessons = sections.lazy_tabs(["Masks", "Shapes"], share.bind("attention_tab"), {"Masks": ("mask",)})
        if (box := lessons[0]) is not None:
            with box:
                draw_the_masks()

    A page opens on its key picture; its lessons and secondary parts sit under it as tabs, one click away, and
    only the chosen one costs anything. ``binding`` is ``share.bind(name)`` for a link parameter declared in
    :data:`ui.share.PARAMS`: the chosen tab is in the address (its label; the first tab leaves it out), so a
    copied link opens the same tab, and a test picks one by setting that key to a label. ``link_params``: the link
    parameters each tab's widgets read; a link that carries one of them and names no tab opens that tab (once a
    session), so an older link (``?query_heads=8``) still opens on what it set. In presenter mode every part is
    drawn, one after another: a class walks through them slide by slide (a slide starts at each heading, which a
    tab would hide); ``presenter_all=False`` keeps the tabs there too (presenter mode makes the open tab's
    headings its slides)."""
    if presenter_all and present.enabled():
        return [st.container() for _ in labels]
    key = binding["key"]
    opened = state.LINK_TABS.setdefault()
    if link_params and key not in opened and not state.has_value(key):
        carried = state.LINK_INITIAL.get() or {}
        wanted = [label for label, names in link_params.items() if key not in carried and set(names) & set(carried)]
        if wanted:
            state.set_value(key, wanted[0])
    opened.add(key)
    tabs = st.tabs(labels, **{"on_change": "rerun", **binding})
    return [tab if tab.open else None for tab in tabs]


def key_picture(page: str):
    """The container of a page's key picture: what a student sees first, before any lesson.

    ``tests/support/page_size.py`` measures, on every page (``tests/browser/test_pages.py``), the words a student
    reads before the first picture: this container (for a picture drawn in HTML: token chips, boxes) or the first
    chart."""
    return st.container(key=state.widget("picture_", page))


def parts(
    parts: dict[str, Callable[[], None]], link: dict, link_params: dict[str, tuple[str, ...]] | None = None
) -> str:
    """A page's lessons as tabs, one click away from its key picture: :func:`lazy_tabs` with one function per tab.

        sections.parts({"Quantization": quantize, "Memory": memory}, share.bind("adapting_part"))

    Only the open tab's part runs, in presenter mode too. Each part draws its own heading (presenter mode starts a
    slide there). Returns the open tab's name.
    """
    opened = None
    for (name, draw), box in zip(parts.items(), lazy_tabs(list(parts), link, link_params, presenter_all=False)):
        if box is not None:
            with box:
                draw()
            opened = opened or name
    return opened or next(iter(parts))


class timed_page:
    """Context manager around a whole page's script run (app.py: ``with sections.timed_page() as timer``)."""

    def __init__(self, name: str = "app"):
        self.name = name

    def __enter__(self):
        if settings.get("LLMVIZ_TIMINGS"):
            _count_database_time()
        _DATABASE.totals = [0.0, 0]
        self.start = time.perf_counter()
        _IN_FRAGMENT.page = True
        return self

    def __exit__(self, *exc):
        _IN_FRAGMENT.page = False
        database, statements = _DATABASE.totals
        _DATABASE.totals = None
        _log(
            f"page:{self.name}",
            time.perf_counter() - self.start,
            False,
            db_seconds=round(database, 6),
            db_statements=statements,
        )
        return False
