"""The one module where llmviz relies on Streamlit's and Plotly's private parts, and the versions it was checked on.

Nothing public does these jobs in the pinned versions, so each is kept here, named, and checked by
``tests/test_internals.py``, which fails with a message naming the item when an upgrade breaks it:

1. ``PagesManager.uses_pages_directory`` (``streamlit.runtime.pages_manager``): a class flag Streamlit sets once
   per server process. Until app.py has called ``st.navigation``, a visit straight to ``/tokens`` runs the page
   file alone (the old ``pages/`` folder convention). :func:`route_pages_through_navigation` sets it the way
   ``st.navigation`` itself does (``streamlit/commands/navigation.py``), so the rerun goes through app.py.
2. ``QueryParams._initial_query_params`` (``streamlit.runtime.state.query_params``): the copy of the address as it
   was loaded, from which Streamlit seeds widgets bound to query parameters. When a shared link carries a value
   a page cannot use, :func:`reseed_widget_from_link` corrects that copy too, or the widget would start from it.
3. Streamlit's DOM: the ``data-testid`` values in :data:`STREAMLIT_TEST_IDS`, which presenter mode's CSS and
   script (:data:`PRESENTER_CSS`, :data:`PRESENTER_SCRIPT`) use to find the page's blocks.
4. Plotly's DOM and a private field: the modebar classes and ``gd._context.toImageButtonOptions`` in
   :data:`PLOTLY_PRIVATE`, which the SVG button (:data:`SVG_BUTTON_SCRIPT`) uses to reuse Plotly's own download.
5. ``streamlit.runtime`` (not in Streamlit's API reference, stable for years): the script run's context
   (:func:`script_run_context`: the browser session's id, the main script's path), whether a session is still
   connected (:func:`session_is_connected`, ``Runtime.is_active_session``), and the exception ``st.stop()``
   raises (:func:`stop_exception`).
6. ``QueryParams.set_corrected_value`` (reached through the private ``get_session_state``): Streamlit's own path
   for writing a corrected value of a bound widget into the address; :func:`write_link_value` uses it to cap a
   long text in the link.
7. ``SessionState._key_id_mapper`` and ``_new_widget_state.widget_metadata``: a widget's serializer, which
   :func:`as_in_link` uses to write an option widget's value as its label, as the address holds it.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("llmviz")

# The versions every item below was checked on (requirements.txt pins the same). Plotly's JavaScript is the
# plotly.js that Streamlit bundles in its frontend (streamlit/static/static/js/PlotlyChart.*.js).
PINNED = {"streamlit": "1.67.0", "plotly": "7.1.0"}

# 3. what presenter mode's CSS and script look for in Streamlit's page
STREAMLIT_TEST_IDS = ("stMainBlockContainer", "stVerticalBlock", "stElementContainer", "stLayoutWrapper",
                      "stHeading", "stCaptionContainer", "stMarkdownContainer", "stPlotlyChart", "stDataFrame")
# 4. what the SVG button looks for in Plotly's chart (classes, attributes, the private config field)
PLOTLY_PRIVATE = ("js-plotly-plot", "modebar-group", "modebar-btn", "data-title", "Download plot",
                  "_context", "toImageButtonOptions")


def route_pages_through_navigation() -> None:
    """1. From now on this server process routes every page through ``st.navigation`` (app.py)."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


def replace_initial_value(params, name: str, kept: list[str] | None) -> None:
    """2. In Streamlit's ``QueryParams``, make widgets bound to ``name`` start from ``kept`` (``None``: from
    their own default) instead of the value the address was loaded with."""
    initial = params._initial_query_params
    if kept is None:
        initial.pop(name, None)
    else:
        initial[name] = list(kept)


def reseed_widget_from_link(name: str, kept: list[str] | None) -> None:
    """2. :func:`replace_initial_value` for this session. Should an upgrade move the field, the link's value is
    still corrected in the address (by the caller); the widget may then start from the old value, and the
    server's log says why."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            replace_initial_value(params, name, kept)
    except Exception as error:  # noqa: BLE001 - a link must never break a page; the log tells the maintainer
        logger.warning("Could not reseed the widget bound to %r from the link (Streamlit's private "
                       "QueryParams._initial_query_params changed? see ui/internals.py): %s", name, error)


def script_run_context():
    """5. The current script run's context (``.session_id``, ``.main_script_path``), or None outside a run."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return get_script_run_ctx()


def session_is_connected(session_id: str) -> bool | None:
    """5. Is this browser session still connected to the server? None when no Streamlit server runs (tests)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    return Runtime.instance().is_active_session(session_id)


def stop_exception() -> type[BaseException]:
    """5. The exception ``st.stop()`` raises (a page that stops has ended normally)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    return StopException


def write_link_value(name: str, value: str) -> None:
    """6. Write a bound widget's parameter into the address, as Streamlit does for a value it corrected."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:
            if params.has_param(name) and params.get_all(name) == [value]:
                return
            params.set_corrected_value(name, value, "string_value")
    except Exception as error:  # noqa: BLE001 - the page goes on; the address keeps the longer text
        logger.warning("Could not shorten %r in the address (Streamlit's QueryParams.set_corrected_value "
                       "changed? see ui/internals.py): %s", name, error)


def as_in_link(name: str, value):
    """7. A bound widget's value as the address writes it: an option widget (selectbox, radio, multiselect) its
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
        logger.warning("Could not read how the address writes %r (Streamlit's widget metadata changed? see "
                       "ui/internals.py): %s", name, error)
    return value


# 3. Presenter mode (ui/present.py): bigger type, and one slide at a time.
PRESENTER_CSS = """
<style>
html { font-size: 18px; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 3.6rem 3rem 2rem 3rem; }
[data-testid="stMainBlockContainer"] h1 { font-size: 2.2rem; }
[data-testid="stMainBlockContainer"] h2 { font-size: 1.8rem; }
[data-testid="stMainBlockContainer"] p, [data-testid="stMainBlockContainer"] li { font-size: 1.2rem; }
[data-testid="stCaptionContainer"] p { font-size: 1.1rem; }
[data-llmviz-hidden="1"] { display: none !important; }
#llmviz-present-bar { position: fixed; left: 50%; transform: translateX(-50%); top: 8px; z-index: 1000000;
  display: flex; gap: .5rem;
  align-items: center; background: rgba(255,255,255,.95); border: 1px solid #ced4da; border-radius: 10px;
  padding: 4px 10px; box-shadow: 0 2px 8px rgba(0,0,0,.15); font-family: sans-serif; font-size: 18px; }
#llmviz-present-bar button { font-size: 18px; padding: 2px 16px; border-radius: 8px; border: 1px solid #4c6ef5;
  background: #4c6ef5; color: white; cursor: pointer; }
#llmviz-present-bar button[disabled] { opacity: .4; cursor: default; }
</style>
"""

# Groups the main column's blocks into slides (see ui/present.py's docstring); everything before the first
# heading (title, intro) is slide 0. Shows one slide; within it, reveals the text blocks (markdown
# paragraphs, captions, equations) one Next at a time. P.count() and P.goto(i) serve the tests.
# (No '<' before a letter in the script: the HTML sanitizer would drop it.)
PRESENTER_SCRIPT = """
<script>
(function () {
  if (window.__llmvizPresent) { window.__llmvizPresent.refresh(); return; }
  var P = { section: 0, revealed: 0, page: location.pathname };
  window.__llmvizPresent = P;
  function root() {
    var main = document.querySelector('[data-testid="stMainBlockContainer"]');
    return main ? main.querySelector('[data-testid="stVerticalBlock"]') : null;
  }
  function toTop() {  // the main column scrolls inside Streamlit's own scroller, not the window
    window.scrollTo(0, 0);
    var el = document.querySelector('[data-testid="stMainBlockContainer"]');
    for (; el; el = el.parentElement) { if (el.scrollTop) el.scrollTop = 0; }
  }
  function testid(el) { return (el && el.getAttribute && el.getAttribute('data-testid')) || ''; }
  function isHeading(el) {  // an st.header or st.subheader of its own (not one inside columns)
    return testid(el) === 'stElementContainer' &&
      !!el.querySelector('[data-testid="stHeading"] h2, [data-testid="stHeading"] h3');
  }
  function inner(el) {  // a plain container (an st.fragment, st.container): its vertical block
    if (testid(el) !== 'stLayoutWrapper') return null;
    var first = el.firstElementChild;
    return first && testid(first) === 'stVerticalBlock' ? first : null;
  }
  function holdsHeading(el) {
    var block = inner(el); if (!block) return false;
    return Array.prototype.some.call(block.children, function (c) { return isHeading(c) || holdsHeading(c); });
  }
  function leaves(block, wrappers) {  // the blocks a slide is made of: a section's fragment is opened up
    var out = [];
    Array.prototype.forEach.call(block.children, function (child) {
      if (holdsHeading(child)) { wrappers.push(child); out = out.concat(leaves(inner(child), wrappers)); }
      else out.push(child);
    });
    return out;
  }
  function substantive(leaf) {  // draws something besides a heading (a script or an empty slot does not)
    if (isHeading(leaf) || leaf.querySelector('[data-llmviz-present-on]')) return false;
    if (leaf.querySelector('canvas, svg, img, input, textarea, button, iframe, table')) return true;
    var text = leaf.textContent.length;
    leaf.querySelectorAll('script, style').forEach(function (s) { text -= s.textContent.length; });
    return text > 0 && leaf.textContent.trim().length > 0;
  }
  // Slides: a new one at every st.header and st.subheader (one idea each), the title and introduction
  // first; a slide holding nothing but headings joins the next one (no lone heading on the screen).
  function layout() {
    var r = root(); if (!r) return { groups: [], wrappers: [] };
    var wrappers = [];
    var groups = [[]];
    leaves(r, wrappers).forEach(function (leaf) {
      if (isHeading(leaf) && groups[groups.length - 1].length) groups.push([]);
      groups[groups.length - 1].push(leaf);
    });
    var merged = [];
    groups.forEach(function (group) {
      var last = merged[merged.length - 1];
      if (last && !last.some(substantive)) { merged[merged.length - 1] = last.concat(group); }
      else merged.push(group);
    });
    if (merged.length > 1 && !merged[merged.length - 1].some(substantive)) {
      var tail = merged.pop(); merged[merged.length - 1] = merged[merged.length - 1].concat(tail);
    }
    return { groups: merged, wrappers: wrappers };
  }
  function sections() { return layout().groups; }
  function steps(group) {  // text blocks revealed one at a time (not the first: the section's heading)
    var out = [];
    group.forEach(function (block, i) {
      if (i === 0 || isHeading(block)) return;
      var text = block.querySelector('[data-testid="stCaptionContainer"], [data-testid="stMarkdownContainer"] p, .katex-display');
      var widget = block.querySelector('[data-testid="stPlotlyChart"], [data-testid="stDataFrame"], input, textarea, button');
      if (text && !widget) out.push(block);
    });
    return out;
  }
  function bar() {
    var b = document.getElementById('llmviz-present-bar');
    if (b) return b;
    b = document.createElement('div'); b.id = 'llmviz-present-bar';
    var back = document.createElement('button'); back.id = 'llmviz-back'; back.type = 'button';
    back.textContent = '\u25c0 Back';
    var where = document.createElement('span'); where.id = 'llmviz-where';
    var next = document.createElement('button'); next.id = 'llmviz-next'; next.type = 'button';
    next.textContent = 'Next \u25b6';
    b.appendChild(back); b.appendChild(where); b.appendChild(next);
    document.body.appendChild(b);
    b.querySelector('#llmviz-back').addEventListener('click', function () { P.back(); });
    b.querySelector('#llmviz-next').addEventListener('click', function () { P.next(); });
    return b;
  }
  P.refresh = function () {
    if (!document.querySelector('[data-llmviz-present-on]')) { P.off(); return; }
    if (P.page !== location.pathname) { P.page = location.pathname; P.section = 0; P.revealed = 0; }
    var found = layout(); var groups = found.groups; if (!groups.length) return;
    P.section = Math.max(0, Math.min(P.section, groups.length - 1));
    var marked = [];
    function mark(block, hide) { block.setAttribute('data-llmviz-hidden', hide ? '1' : '0'); marked.push(block); }
    groups.forEach(function (group, i) {
      group.forEach(function (block) {
        if (block.querySelector('[data-llmviz-present-on]')) return;
        mark(block, i !== P.section);
      });
    });
    var hidden = steps(groups[P.section]);
    hidden.forEach(function (block, i) { if (i >= P.revealed) mark(block, true); });
    found.wrappers.reverse().forEach(function (wrapper) {  // a section's container: hidden when all it holds is
      var kids = Array.prototype.slice.call(inner(wrapper).children);
      mark(wrapper, kids.every(function (k) { return k.getAttribute('data-llmviz-hidden') === '1'; }));
    });
    document.querySelectorAll('[data-llmviz-hidden]').forEach(function (e) {  // left over from an earlier layout
      if (marked.indexOf(e) < 0) e.removeAttribute('data-llmviz-hidden');
    });
    var b = bar();
    b.querySelector('#llmviz-where').textContent = 'section ' + (P.section + 1) + ' of ' + groups.length +
      (P.revealed < hidden.length ? ' · ' + (hidden.length - P.revealed) + ' more' : '');
    b.querySelector('#llmviz-back').disabled = P.section === 0 && P.revealed === 0;
    b.querySelector('#llmviz-next').disabled = P.section === groups.length - 1 && P.revealed >= hidden.length;
  };
  P.next = function () {
    var groups = sections(); var hidden = groups.length ? steps(groups[P.section]) : [];
    if (P.revealed < hidden.length) { P.revealed += 1; }
    else if (P.section < groups.length - 1) { P.section += 1; P.revealed = 0; toTop(); }
    P.refresh();
  };
  P.back = function () {
    if (P.revealed > 0) { P.revealed = 0; }
    else if (P.section > 0) { P.section -= 1; P.revealed = 1e9; toTop(); }
    P.refresh();
  };
  P.count = function () { return sections().length; };
  P.goto = function (index) {  // slide ``index``, every step revealed (tests and measurements)
    P.section = index; P.revealed = 1e9; P.refresh(); toTop();
  };
  P.off = function () {
    document.querySelectorAll('[data-llmviz-hidden]').forEach(function (e) { e.removeAttribute('data-llmviz-hidden'); });
    var b = document.getElementById('llmviz-present-bar'); if (b) b.remove();
  };
  document.addEventListener('keydown', function (event) {
    if (!document.querySelector('[data-llmviz-present-on]')) return;
    var tag = (event.target && event.target.tagName) || '';
    if (tag === 'INPUT' || tag === 'TEXTAREA' || (event.target && event.target.isContentEditable)) return;
    if (event.key === 'ArrowRight' || event.key === 'PageDown') { P.next(); event.preventDefault(); }
    if (event.key === 'ArrowLeft' || event.key === 'PageUp') { P.back(); event.preventDefault(); }
  });
  var pending = null;
  new MutationObserver(function () {
    if (pending) return;
    pending = setTimeout(function () { pending = null; P.refresh(); }, 60);
  }).observe(document.body, { childList: true, subtree: true });
  P.refresh();
})();
</script>
"""


# 4. The SVG download button.
# Adds an "SVG" button next to Plotly's camera in every chart's toolbar: it asks Plotly's own
# download for format svg (the camera keeps PNG at 2×). Installed once per page by app.py.
SVG_BUTTON_SCRIPT = """
<script>
(function () {
  if (window.__llmvizSvg) return;
  window.__llmvizSvg = true;
  function add() {
    document.querySelectorAll('.js-plotly-plot .modebar-group').forEach(function (group) {
      var camera = group.querySelector('.modebar-btn[data-title^="Download plot"]');
      if (!camera || group.querySelector('.llmviz-svg')) return;
      var button = document.createElement(camera.tagName.toLowerCase());
      if (button.tagName === 'BUTTON') button.type = 'button';
      button.className = 'modebar-btn llmviz-svg';
      button.setAttribute('rel', 'tooltip');
      button.setAttribute('data-title', 'Download plot as SVG');
      button.setAttribute('data-testid', 'llmviz-svg-button');
      button.style.cssText = 'font:bold 9px sans-serif;line-height:18px;padding:3px 4px;cursor:pointer;color:#7a7a7a;border:0;background:none';
      button.textContent = 'SVG';
      button.addEventListener('click', function () {
        var gd = group.closest('.js-plotly-plot');
        var options = gd._context.toImageButtonOptions || {};
        var saved = Object.assign({}, options);
        gd._context.toImageButtonOptions = Object.assign({}, options, { format: 'svg', scale: 1 });
        camera.click();
        setTimeout(function () { gd._context.toImageButtonOptions = saved; }, 0);
      });
      group.insertBefore(button, camera.nextSibling);
    });
  }
  var pending = null;
  new MutationObserver(function () {
    if (pending) return;
    pending = setTimeout(function () { pending = null; add(); }, 100);
  }).observe(document.body, { childList: true, subtree: true });
  add();
})();
</script>
"""
