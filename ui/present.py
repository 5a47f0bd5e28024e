"""Presenter mode: a page on a projector, one section at a time.

Turned on by the sidebar switch or by ``?present=1`` in the address (so a teacher can bookmark it).
It changes only how a page is shown, never what it computes:

* bigger type, and bigger charts (``ui.charts.show`` reads :func:`enabled`);
* the sidebar starts collapsed (app.py asks :func:`requested` before ``st.set_page_config``);
* one section (an ``st.header``) at a time, with Back / Next buttons (also ← → and PageUp /
  PageDown, which is what a presentation clicker sends); within a section the explanatory text
  (captions and paragraphs) appears one step at a time before Next moves on.

The sectioning happens in the browser, over whatever the page drew, so pages need no change and
stay the same whether their sections are ``st.fragment`` s or not.
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
html { font-size: 20px; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 1.5rem 3rem 5rem 3rem; }
[data-testid="stMainBlockContainer"] h1 { font-size: 2.4rem; }
[data-testid="stMainBlockContainer"] h2 { font-size: 2.0rem; }
[data-testid="stMainBlockContainer"] p, [data-testid="stMainBlockContainer"] li { font-size: 1.25rem; }
[data-testid="stCaptionContainer"] p { font-size: 1.15rem; }
[data-llmviz-hidden="1"] { display: none !important; }
#llmviz-present-bar { position: fixed; right: 1.2rem; bottom: 1rem; z-index: 1000000; display: flex; gap: .5rem;
  align-items: center; background: rgba(255,255,255,.95); border: 1px solid #ced4da; border-radius: 10px;
  padding: .35rem .6rem; box-shadow: 0 2px 8px rgba(0,0,0,.15); font-family: sans-serif; font-size: 18px; }
#llmviz-present-bar button { font-size: 18px; padding: .2rem .9rem; border-radius: 8px; border: 1px solid #4c6ef5;
  background: #4c6ef5; color: white; cursor: pointer; }
#llmviz-present-bar button[disabled] { opacity: .4; cursor: default; }
</style>
"""

# Groups the main column's top-level blocks into sections, each starting at a block that holds an
# h2 (st.header); everything before the first one (title, intro) is section 0. Shows one section;
# (No '<' before a letter in the script: the HTML sanitizer would drop it.)
# within it, reveals the text blocks (markdown paragraphs, captions, equations) one Next at a time.
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
  function sections() {
    var r = root(); if (!r) return [];
    var groups = [[]];
    Array.prototype.forEach.call(r.children, function (child) {
      if (child.querySelector('h2') && groups[groups.length - 1].length) groups.push([]);
      groups[groups.length - 1].push(child);
    });
    return groups;
  }
  function steps(group) {  // text blocks revealed one at a time (not the first: the section's heading)
    var out = [];
    group.forEach(function (block, i) {
      if (i === 0) return;
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
    var groups = sections(); if (!groups.length) return;
    P.section = Math.max(0, Math.min(P.section, groups.length - 1));
    groups.forEach(function (group, i) {
      group.forEach(function (block) {
        if (block.querySelector('[data-llmviz-present-on]')) return;
        block.setAttribute('data-llmviz-hidden', i === P.section ? '0' : '1');
      });
    });
    var hidden = steps(groups[P.section]);
    hidden.forEach(function (block, i) { if (i >= P.revealed) block.setAttribute('data-llmviz-hidden', '1'); });
    var b = bar();
    b.querySelector('#llmviz-where').textContent = 'section ' + (P.section + 1) + ' of ' + groups.length +
      (P.revealed < hidden.length ? ' · ' + (hidden.length - P.revealed) + ' more' : '');
    b.querySelector('#llmviz-back').disabled = P.section === 0 && P.revealed === 0;
    b.querySelector('#llmviz-next').disabled = P.section === groups.length - 1 && P.revealed >= hidden.length;
  };
  P.next = function () {
    var groups = sections(); var hidden = groups.length ? steps(groups[P.section]) : [];
    if (P.revealed < hidden.length) { P.revealed += 1; }
    else if (P.section < groups.length - 1) { P.section += 1; P.revealed = 0; window.scrollTo(0, 0); }
    P.refresh();
  };
  P.back = function () {
    if (P.revealed > 0) { P.revealed = 0; }
    else if (P.section > 0) { P.section -= 1; P.revealed = 1e9; window.scrollTo(0, 0); }
    P.refresh();
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
    """How much bigger charts are drawn (1 outside presenter mode)."""
    return 1.35 if enabled() else 1.0
