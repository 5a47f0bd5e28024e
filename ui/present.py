"""Presenter mode: a page on a projector, one section at a time.

Turned on by the sidebar switch or by ``?present=1`` in the address (so a teacher can bookmark it).
It changes only how a page is shown, never what it computes:

* bigger type, in charts too (``ui.charts.show`` reads :func:`chart_scale`; chart heights stay, so that a
  slide fits a 1280×720 screen);
* the sidebar starts collapsed (app.py asks :func:`requested` before ``st.set_page_config``);
* one slide at a time, with Back / Next buttons in a bar at the top, where it covers no chart (also ← → and
  PageUp / PageDown, which is what a presentation clicker sends); within a slide the explanatory text
  (captions and paragraphs) appears one step at a time before Next moves on.

A slide is one idea: a new one starts at every ``st.header`` and ``st.subheader``, also inside a
section's ``st.fragment`` (the script opens up a container that holds a heading), and a slide with
nothing but a heading joins the next one. So a page splits an idea off by giving it a subheader, and
keeps controls on the slide of the chart they change by drawing them after the same heading.
``tests/test_browser_presenter.py`` measures every slide of every page at 1280×720.
"""

from __future__ import annotations

import streamlit as st

_STATE = "present_mode"


def requested() -> bool:
    """Is presenter mode asked for by the address (``?present=1``)?"""
    return st.query_params.get("present", "") in {"1", "true", "on", "yes"}


def enabled() -> bool:
    """Is presenter mode on for this session (switch or address)?"""
    state = st.session_state
    if _STATE not in state:
        return requested()
    return bool(state[_STATE])


def _sync_url() -> None:
    if st.session_state.get(_STATE):
        st.query_params["present"] = "1"
    else:
        st.query_params.pop("present", None)


def switch() -> bool:
    """The sidebar switch; returns whether presenter mode is on."""
    if _STATE not in st.session_state:
        st.session_state[_STATE] = requested()
    on = st.toggle("Presenter mode", key=_STATE, on_change=_sync_url,
                   help="For a projector: bigger type and charts, one section at a time (Next / Back, or the "
                        "arrow keys), the explanations one step at a time. The address gets ?present=1.")
    if on and not requested():
        st.query_params["present"] = "1"
    return on


CSS = """
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

# Groups the main column's blocks into slides (see the module docstring); everything before the first
# heading (title, intro) is slide 0. Shows one slide; within it, reveals the text blocks (markdown
# paragraphs, captions, equations) one Next at a time. P.count() and P.goto(i) serve the tests.
# (No '<' before a letter in the script: the HTML sanitizer would drop it.)
SCRIPT = """
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


def apply() -> None:
    """Draw presenter mode's styles and section navigation when it is on (app.py, before the page)."""
    if not enabled():
        return
    st.html(CSS)
    st.html('<span data-llmviz-present-on="1"></span>' + SCRIPT, unsafe_allow_javascript=True)


def chart_scale() -> float:
    """How much bigger a chart's type is drawn (1 outside presenter mode): Plotly's 12 px becomes 16 px, a
    heatmap's 11 px token labels 15 px (and none smaller than 14 px)."""
    return 1.35 if enabled() else 1.0
