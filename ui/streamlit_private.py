"""The one module where llmviz relies on Streamlit's and Plotly's private parts (with item 8 in
:mod:`ui.streamlit_private_guard`), and the versions they were checked on.

Nothing public does these jobs in the pinned versions, so each is kept here, named, and checked by
``tests/app/test_streamlit_private.py``, which fails with a message naming the item when an upgrade breaks it:

1. ``QueryParams._initial_query_params`` (``streamlit.runtime.state.query_params``): the copy of the address as it
   was loaded, from which Streamlit seeds widgets bound to query parameters. When a shared link carries a value
   a page cannot use, :func:`reseed_widget_from_link` corrects that copy too, or the widget would start from it.
2. Streamlit's DOM: the ``data-testid`` values in :data:`STREAMLIT_TEST_IDS`, which presenter mode's CSS and
   script (:data:`PRESENTER_CSS`, :data:`PRESENTER_SCRIPT`) use to find the page's blocks, and the rule that draws
   a chart's own text readable (:func:`chart_text_style`, ``stPlotlyChart``).
3. Plotly's DOM and a private field: the modebar classes and ``gd._context.toImageButtonOptions`` in
   :data:`PLOTLY_PRIVATE`, which the SVG button (:data:`SVG_BUTTON_SCRIPT`) uses to reuse Plotly's own download.
4. ``streamlit.runtime`` (not in Streamlit's API reference, stable for years): the script run's context
   (:func:`script_run_context`: the browser session's id, the main script's path; :func:`fragment_rerun_main_script`:
   whether this run is a section's own rerun, ``fragment_ids_this_run``), whether a session is still
   connected (:func:`session_is_connected`, ``Runtime.is_active_session``), and the exception ``st.stop()``
   raises (:func:`stop_exception`).
5. ``QueryParams.set_corrected_value`` (reached through the private ``get_session_state``): Streamlit's own path
   for writing a corrected value of a bound widget into the address; :func:`write_link_value` uses it to cap a
   long text in the link.
6. ``SessionState._key_id_mapper`` and ``_new_widget_state.widget_metadata``: a widget's serializer, which
   :func:`as_in_link` uses to write an option widget's value as its label, as the address holds it.
7. ``QueryParams.is_bound`` (reached through the private ``get_session_state``): the link's parameters that a
   widget of this session is bound to; Streamlit refuses to set or clear those, so :func:`bound_link_params` lets
   the ``/home`` redirect keep the others.
8. ``SessionState.on_script_will_rerun`` and ``SessionState.register_widget``, with the widget states and metadata
   they hold: widget values a browser sends of the wrong kind, options a widget does not offer and texts longer than
   it takes are dropped before Streamlit keeps them (:func:`ui.streamlit_private_guard.guard_widget_states`, in a
   module of its own: :mod:`ui.streamlit_private_guard`).
9. Plotly's ``_validate=False`` argument of ``go.Figure`` (``BaseFigure._allow_disable_validation``): a figure
   built from plain dicts that llmviz's own builders make is not checked property by property again (most of
   the time a class's page open spent building heatmaps). :func:`unchecked_figure` uses it;
   ``tests/app/test_ui_builders.py`` checks every builder's figure against Plotly's checked one.
10. ``QueryParams._bindings_by_param`` with ``WidgetMetadata.deserializer(None)`` and ``.serializer``: the widgets
   of this session bound to the link and their defaults; :func:`link_values` writes the link as the browser does
   (a bound widget's value, unless it equals the widget's default), so a test can check that the link alone
   reproduces every setting.
11. uvicorn's ``ProxyHeadersMiddleware.trusted_hosts`` (uvicorn serves Streamlit's pages and websocket): uvicorn
   believes ``X-Forwarded-For`` from 127.0.0.1 by default, so one client on the server's machine could name itself
   five students. :func:`trust_forwarded_only_from` gives the running middleware the configured proxies instead
   (``LLMVIZ_TRUSTED_PROXIES``); with them it takes the right-most address of the header that is not one of them.
12. Custom Components v2's ``BidiComponentManager.register_from_manifest`` (``streamlit.components.v2``): what
   Streamlit does for an installed component package's manifest, done for a folder of llmviz
   (:func:`serve_component_folder`), so that the browser loads its JavaScript as ES modules
   (``/_stcore/bidi-components/<name>/<file>``, imports resolved beside it). Nothing public does it.
14. ``streamlit.logger._loggers`` and ``get_logger``: Streamlit's loggers and the function that makes them.
   Streamlit logs some of what a client sends as it came (a forged fragment id: 807 MB in 11 s from one connection;
   an id holding a newline wrote a line that read like the server's). :func:`filter_streamlit_logs` puts a filter
   (``llmviz.errors.ClientLogFilter``: bounded, escaped, repeats counted) on each of them, and on each made later.
15. ``SessionState._seed_widget_from_url`` with the serdes' ``min_value``/``max_value`` (slider, number input) and
   ``options``/``format_func`` (select slider): Streamlit seeds a bound widget from the link, and a number outside
   the widget's range fell back to the default without a word (``steps=5000`` became 300).
   :func:`fit_link_values` wraps it: such a number is fitted to the widget (:mod:`ui.linked_numbers`: ``steps=5000``
   becomes 2,000) and reported, as is a link's value the widget dropped.
"""

from __future__ import annotations

import functools
import logging
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from ui import linked_numbers

logger = logging.getLogger(__name__)

# The versions every item below was checked on (requirements.txt pins the same). Plotly's JavaScript is the
# plotly.js that Streamlit bundles in its frontend (streamlit/static/static/js/PlotlyChart.*.js).
PINNED = {"streamlit": "1.67.0", "plotly": "7.1.0"}

# 2. what presenter mode's CSS and script look for in Streamlit's page
STREAMLIT_TEST_IDS = (
    "stMainBlockContainer",
    "stVerticalBlock",
    "stElementContainer",
    "stLayoutWrapper",
    "stHeading",
    "stCaptionContainer",
    "stMarkdownContainer",
    "stPlotlyChart",
    "stDataFrame",
    "stTabs",
    "stTabPanel",
)
# 3. what the SVG button looks for in Plotly's chart (classes, attributes, the private config field)
PLOTLY_PRIVATE = (
    "js-plotly-plot",
    "modebar-group",
    "modebar-btn",
    "data-title",
    "Download plot",
    "_context",
    "toImageButtonOptions",
)


def linked_boxes_style(picture: str) -> str:
    """CSS that makes every bordered box inside the container ``picture`` (a CSS selector, ``.st-key-…``) that holds
    an ``st.page_link`` one link: the link's area is stretched over the whole box (a pseudo-element), the pointer and
    a hover colour say so, and the label wraps instead of being cut. It relies on Streamlit's DOM: the
    ``stVerticalBlock``, ``stElementContainer``, ``stPageLink`` and ``stPageLink-NavLink`` test ids."""
    link = '[data-testid="stElementContainer"] [data-testid="stPageLink"]'
    box = f'{picture} [data-testid="stVerticalBlock"]:has(> {link})'
    return f"""<style>
{picture} [data-testid="stVerticalBlock"] {{ position: relative; }}
{picture} [data-testid="stElementContainer"]:has([data-testid="stPageLink"]), {picture} [data-testid="stPageLink"],
{picture} [data-testid="stPageLink"] > div {{ position: static; }}
{picture} [data-testid="stPageLink-NavLink"]::after {{ content: ""; position: absolute; inset: 0; z-index: 1; }}
{box}:hover {{ background: #eef3ff; }}
{picture} [data-testid="stPageLink-NavLink"] * {{
  white-space: normal; overflow: visible; text-overflow: clip; word-break: normal; overflow-wrap: normal; }}
{picture} [data-testid="stPageLink-NavLink"] {{ padding-left: 0.25rem; padding-right: 0.25rem; }}
{picture} [data-testid="stPageLink-NavLink"] p {{ font-weight: 600; }}
</style>"""


def chart_text_style(colour: str) -> str:
    """CSS that draws a Plotly chart's own text (tick labels, axis and colour-bar titles, a legend, a note on the
    plot) in ``colour``, over the inline fill Streamlit's theme gives it (#808495, 3.7:1 on white: under WCAG AA's
    4.5:1; measured on a screenshot, axe-core does not read Plotly's SVG). A rule of the page, not of each figure:
    setting each axis's colours on the figure (validated by Plotly) cost 4-70 ms a chart, and the theme's own
    colours override a template's. A number written in a cell or on a bar keeps Plotly's contrast with its fill.
    It relies on Streamlit's DOM: the ``stPlotlyChart`` test id.

    >>> "fill: #5c5f6a !important" in chart_text_style("#5c5f6a")
    True
    """
    parts = (".xtick text", ".ytick text", ".g-xtitle text", ".g-ytitle text", ".cbaxis text", ".cbtitle text")
    parts += (".legendtext", ".annotation-text")
    chart = '[data-testid="stPlotlyChart"]'
    return "<style>" + ", ".join(f"{chart} {part}" for part in parts) + f" {{ fill: {colour} !important; }}</style>"


def replace_initial_value(params, name: str, kept: list[str] | None) -> None:
    """1. In Streamlit's ``QueryParams``, make widgets bound to ``name`` start from ``kept`` (``None``: from
    their own default) instead of the value the address was loaded with."""
    initial = params._initial_query_params
    if kept is None:
        initial.pop(name, None)
    else:
        initial[name] = list(kept)


def reseed_widget_from_link(name: str, kept: list[str] | None) -> None:
    """1. :func:`replace_initial_value` for this session. Should an upgrade move the field, the link's value is
    still corrected in the address (by the caller); the widget may then start from the old value, and the
    server's log says why."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            replace_initial_value(params, name, kept)
    except Exception as error:  # noqa: BLE001 - a link must never break a page; the log tells the maintainer
        logger.warning(
            "Could not reseed the widget bound to %r from the link (Streamlit's private "
            "QueryParams._initial_query_params changed? see ui/streamlit_private.py): %s",
            name,
            error,
        )


def remote_address() -> str | None:
    """13. The address this run's browser connected from, loopback included (``st.context.ip_address`` says None
    for 127.0.0.1 and ::1, so every client on the server's own machine would be no address at all); behind the
    proxies of ``LLMVIZ_TRUSTED_PROXIES``, the forwarded one. None without a request (AppTest)."""
    try:
        from streamlit.runtime.context import _get_client_context

        client = _get_client_context()
        found = getattr(client, "remote_ip", None) if client is not None else None
    except Exception as error:  # noqa: BLE001 - then Streamlit's public answer
        logger.warning("Could not read the connection's address (streamlit.runtime.context changed?): %s", error)
        import streamlit as st

        found = st.context.ip_address
    return found if isinstance(found, str) and found else None


def forget_query_param(name: str) -> None:
    """12. Take ``name`` out of this run's copy of the address without telling the browser (``del st.query_params``
    would: the browser then pushes a new history entry without it, and the one with it stays a Back away). The
    teacher key's caller takes it out of the browser's address itself, with ``history.replaceState``."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            params._query_params.pop(name, None)
            context = script_run_context()
            if context is not None:  # what the run reports as its address (AppTest reads it)
                context.query_string = urllib.parse.urlencode(params._query_params, doseq=True)
    except Exception as error:  # noqa: BLE001 - then the public way, which leaves a history entry behind
        logger.warning("Could not forget %r quietly (QueryParams._query_params changed?): %s", name, error)
        import streamlit as st

        st.query_params.pop(name, None)


def script_run_context():
    """4. The current script run's context (``.session_id``, ``.main_script_path``), or None outside a run."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return get_script_run_ctx()


def fragment_rerun_main_script() -> str | None:
    """4. In a section's own rerun (an ``st.fragment`` rerun: only that function runs, not the main script), the
    path of the server's main script; None in a whole run or outside a run."""
    ctx = script_run_context()
    if ctx is None or not getattr(ctx, "fragment_ids_this_run", None):
        return None
    return str(ctx.main_script_path)


def session_is_connected(session_id: str) -> bool | None:
    """4. Is this browser session still connected to the server? None when no Streamlit server runs (tests)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    return Runtime.instance().is_active_session(session_id)


def stop_exception() -> type[BaseException]:
    """4. The exception ``st.stop()`` raises (a page that stops has ended normally)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    return StopException


def write_link_value(name: str, value: str) -> None:
    """5. Write a bound widget's parameter into the address, as Streamlit does for a value it corrected."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            if params.has_param(name) and params.get_all(name) == [value]:
                return
            params.set_corrected_value(name, value, "string_value")
    except Exception as error:  # noqa: BLE001 - the page goes on; the address keeps the longer text
        logger.warning(
            "Could not shorten %r in the address (Streamlit's QueryParams.set_corrected_value "
            "changed? see ui/streamlit_private.py): %s",
            name,
            error,
        )


def bound_link_params() -> set[str]:
    """7. The address's parameters that a widget of this session is bound to (empty when that cannot be read)."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            return {name for name in list(params) if params.is_bound(name)}
    except Exception as error:  # noqa: BLE001 - the redirect then keeps every parameter and Streamlit decides
        logger.warning("Could not read which parameters are bound (see ui/streamlit_private.py): %s", error)
        return set()


def as_in_link(name: str, value):
    """6. A bound widget's value as the address writes it: an option widget (selectbox, radio, multiselect) its
    label ("GPT micro (2 layers, d 64)"), a slider its number; the value itself when that cannot be found."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        internal = get_session_state()._state
        widget_id = internal._key_id_mapper.get_id_from_key(name)
        metadata = internal._new_widget_state.widget_metadata.get(widget_id)
        if metadata is not None and metadata.value_type in ("string_value", "string_array_value"):
            serialized = metadata.serializer(value)
            return list(serialized) if isinstance(serialized, list | tuple) else serialized
    except Exception as error:  # noqa: BLE001 - a notice then quotes the value itself
        logger.warning(
            "Could not read how the address writes %r (Streamlit's widget metadata changed? see "
            "ui/streamlit_private.py): %s",
            name,
            error,
        )
    return value


def link_values(session_state=None) -> dict[str, str | list[str]]:
    """10. The link's parameters for the widgets this session has bound to it, as the browser writes them: each
    bound widget's serialized value, left out when it equals the widget's default (Streamlit's frontend leaves
    those out of the address). ``session_state``: Streamlit's internal ``SessionState`` (default: this run's)."""
    if session_state is None:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        session_state = get_session_state()._state
    from streamlit.runtime.state.query_params import _coerce_value_for_query_url

    link: dict[str, str | list[str]] = {}
    params = session_state.query_params
    metadata_of = session_state._new_widget_state.widget_metadata
    for name, binding in list(params._bindings_by_param.items()):
        metadata = metadata_of.get(binding.widget_id)
        if metadata is None or name not in session_state:
            continue
        value = session_state[name]
        if value == metadata.deserializer(None):
            continue
        link[name] = _coerce_value_for_query_url(metadata.serializer(value), metadata.value_type)
        if isinstance(link[name], list) and len(link[name]) == 1:
            link[name] = link[name][0]  # a slider's one value, as the address writes it
    return link


def trust_forwarded_only_from(proxies: tuple[str, ...] | list[str]) -> int:
    """11. Believe ``X-Forwarded-For`` only on connections from ``proxies`` (addresses or networks; none: never).

    Sets uvicorn's middleware of this process (found among the live objects: Streamlit builds it before any page
    runs) and ``FORWARDED_ALLOW_IPS`` (read by a server made later, and by ``run.py app`` before it starts one).
    Returns how many middlewares were set (0: none found, the log says so)."""
    import gc
    import os

    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(proxies)
    try:
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware, _TrustedHosts
    except ImportError as error:
        logger.warning("X-Forwarded-For: uvicorn's proxy middleware is not where it was (see item 11): %s", error)
        return 0
    # type(), not isinstance(): a lazy module among the objects warns when its __class__ is read
    found = [thing for thing in gc.get_objects() if type(thing) is ProxyHeadersMiddleware]
    for middleware in found:
        middleware.trusted_hosts = _TrustedHosts(list(proxies))
    _CONNECTED_BEFORE_TRUST.update(_session_ids())
    return len(found)


_CONNECTED_BEFORE_TRUST: set[str] = set()  # sessions whose address uvicorn read before it was told whom to trust


def _session_ids() -> set[str]:
    """4. The ids of the sessions this server has now (empty without a server: tests)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return set()
    try:
        return {info.session.id for info in Runtime.instance()._session_mgr.list_sessions()}
    except Exception as error:  # noqa: BLE001 - then every session's address is used as uvicorn gave it
        logger.warning("Could not list the server's sessions (see item 11): %s", error)
        return set()


def address_believed(session_id: str) -> bool:
    """11. Was this session's address read under :func:`trust_forwarded_only_from`'s rule? The sessions that
    connected before the first page run set it (a server started by ``streamlit run`` without
    ``FORWARDED_ALLOW_IPS``) may carry a forwarded address uvicorn believed by default: they count as themselves."""
    return session_id not in _CONNECTED_BEFORE_TRUST


def filter_streamlit_logs(flt) -> int:
    """14. Put the ``logging.Filter`` ``flt`` on every logger Streamlit has made (uvicorn's and websockets' among
    them) and on each it makes later; returns how many it has now (0: not found, the log says so)."""
    try:
        import streamlit.logger as streamlit_logger

        made = streamlit_logger._loggers
        original = streamlit_logger.get_logger
    except (ImportError, AttributeError) as error:
        logger.warning("Streamlit's log is not filtered (see ui/streamlit_private.py, item 14): %s", error)
        return 0
    if flt not in _STREAMLIT_FILTERS:
        _STREAMLIT_FILTERS.append(flt)
    if not getattr(original, "_llmviz_filtered", False):

        @functools.wraps(original)
        def get_logger(name: str):
            found = original(name)
            for each in _STREAMLIT_FILTERS:  # every filter given so far, on a logger made later
                if each not in found.filters:
                    found.addFilter(each)
            return found

        get_logger._llmviz_filtered = True  # type: ignore[attr-defined]
        streamlit_logger.get_logger = get_logger
    for found in list(made.values()):
        if flt not in found.filters:
            found.addFilter(flt)
    return len(made)


_STREAMLIT_FILTERS: list = []  # 14. the filters filter_streamlit_logs was given (each logger made later gets them)


# 9. figures from plain dicts, not checked again
def unchecked_figure(data: list[dict], layout: dict):
    """9. ``go.Figure(data=data, layout=layout)`` without Plotly's property-by-property check (the dicts come from
    llmviz's builders, whose figures the tests compare with checked ones); checked when Plotly no longer offers
    the switch."""
    import plotly.graph_objects as go

    if getattr(go.Figure, "_allow_disable_validation", False):
        return go.Figure(data=data, layout=layout, _validate=False)
    return go.Figure(data=data, layout=layout)


def fit_link_values(report: Callable[[str, str, str | None, str], None]) -> bool:
    """15. Once per server process: a number a link gives a bound widget outside what it takes is fitted to it
    (:func:`ui.linked_numbers.fitted_link_value`) instead of falling back to the default, and
    ``report(name, asked, how, used)`` is
    called for each link value the widget fitted (``how``: "at most 2,000", or None when only written the short way)
    or dropped (``how`` "dropped"; ``used``: the widget's default as the link writes it). Returns whether it is in
    place (False, with a warning in the log, should an upgrade have changed what it wraps)."""
    if _FITTING:
        _FITTING[0] = report
        return True
    try:
        from streamlit.runtime.state.session_state import SessionState

        original = SessionState._seed_widget_from_url
    except (ImportError, AttributeError) as error:
        logger.warning("A link's numbers are not fitted to their widgets (ui/streamlit_private.py, item 15): %s", error)
        return False

    @functools.wraps(original)
    def seed(self, metadata, user_key, widget_id, url_value):
        asked = url_value[-1] if isinstance(url_value, list) and url_value else url_value
        fitted = None
        if isinstance(asked, str) and not (isinstance(url_value, list) and len(url_value) != 1):  # one value only
            fitted = linked_numbers.fitted_link_value(getattr(metadata.deserializer, "__self__", None), asked)
        if fitted is not None:
            url_value = [fitted[0]] if isinstance(url_value, list) else fitted[0]
        seeded = original(self, metadata, user_key, widget_id, url_value)
        try:
            if fitted is not None and seeded:
                self.query_params.set_corrected_value(user_key, metadata.serializer(fitted[1]), metadata.value_type)
                used = f"{fitted[1]:,}" if fitted[0] == str(fitted[1]) else fitted[0]  # 2,000; an option's label
                _FITTING[0](user_key, asked, fitted[2], used)
            elif not seeded and isinstance(asked, str) and asked:
                default = metadata.serializer(metadata.deserializer(None))
                default = default[0] if isinstance(default, list) and len(default) == 1 else default
                _FITTING[0](user_key, asked, "dropped", str(default))
        except Exception as error:  # noqa: BLE001 - the widget is seeded; only the word about it is lost
            logger.warning("Could not report the link's %r (ui/streamlit_private.py, item 15): %s", user_key, error)
        return seeded

    SessionState._seed_widget_from_url = seed
    _FITTING.append(report)
    return True


_FITTING: list[Callable[[str, str, str | None, str], None]] = []  # 15. the report of fit_link_values


# 2. and 3. The scripts and styles themselves live in ui/static/: presenter mode's CSS and script, the SVG button.
_STATIC = Path(__file__).resolve().parent / "static"
PRESENTER_CSS = "<style>\n" + (_STATIC / "presenter.css").read_text(encoding="utf-8") + "</style>\n"
PRESENTER_SCRIPT = "<script>\n" + (_STATIC / "presenter.js").read_text(encoding="utf-8") + "</script>\n"
SVG_BUTTON_SCRIPT = "<script>\n" + (_STATIC / "svg_button.js").read_text(encoding="utf-8") + "</script>\n"


# 12. a folder served as a Custom Components v2 component's assets
def serve_component_folder(package: str, name: str, folder: Path) -> str:
    """Serve ``folder``'s files as the assets of the component ``package.name`` (returned), on the manager that
    the running server reads (or a throwaway one without a server): its ``js`` and ``css`` may then be file names
    in ``folder``, which the browser loads from ``/_stcore/bidi-components/<package.name>/``. Idempotent; call it
    before ``st.components.v2.component`` and before each mount (AppTest gives each test a runtime of its own)."""
    from streamlit.components.v2.get_bidi_component_manager import get_bidi_component_manager
    from streamlit.components.v2.manifest_scanner import ComponentConfig, ComponentManifest

    key = f"{package}.{name}"
    manager = get_bidi_component_manager()
    if manager.get_component_asset_root(key) is None:  # once: registering again would blank the definition a while
        folder = folder.resolve()
        config = ComponentConfig(name, asset_dir=folder.name)
        manager.register_from_manifest(ComponentManifest(name=package, version="1", components=[config]), folder.parent)
    return key
