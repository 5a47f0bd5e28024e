// Presenter mode (ui/present.py): groups the main column's blocks into slides; slide 0 is the title and introduction
// with the slide of the page's key picture (its first chart, or ui.sections.key_picture). Shows one slide; within
// it, reveals the text blocks (markdown paragraphs, captions,
// equations) one Next at a time. P.count() and P.goto(i) serve the tests.
// No '<' before a letter anywhere in this file: Streamlit's HTML sanitizer would drop it.
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
  function inner(el) {  // a plain container (an st.fragment, st.container), or st.tabs' open tab: its vertical block
    if (testid(el) === 'stTabs') {  // the other tabs' panels are marked inactive (or not drawn: lazy tabs)
      var panels = Array.prototype.filter.call(el.querySelectorAll('[data-testid="stTabPanel"]'), function (panel) {
        return !panel.hidden && !panel.hasAttribute('data-st-inactive')
          && panel.closest('[data-testid="stTabs"]') === el;
      });
      var block = panels.length ? panels[0].firstElementChild : null;
      return block && testid(block) === 'stVerticalBlock' ? block : null;
    }
    if (testid(el) !== 'stLayoutWrapper') return null;
    var first = el.firstElementChild;
    return first && testid(first) === 'stVerticalBlock' ? first : null;
  }
  function holdsHeading(el) {
    var block = inner(el); if (!block) return false;
    return Array.prototype.some.call(block.children, function (c) { return isHeading(c) || holdsHeading(c); });
  }
  var QUIZ = '[class*="st-key-questions_"]';  // the page's "Predict, then reveal" questions (ui/panels/quiz.py)
  function isQuiz(el) { return !!(el.matches(QUIZ) || el.querySelector(QUIZ)); }
  function holdsQuiz(el) {  // a section's container with questions inside it (not the questions' own container)
    var block = inner(el);
    return !!block && !block.matches(QUIZ) && !!block.querySelector(QUIZ);
  }
  // the teacher's class box (ui/panels/class_poll.py: the Lead switch, a lesson's Back and Next) is on every slide
  var CLASS_BOX = '.st-key-live_lead';
  function leaves(block, wrappers) {  // the blocks a slide is made of: a section's fragment is opened up
    var out = [];
    Array.prototype.forEach.call(block.children, function (child) {
      if (child.querySelector(CLASS_BOX)) return;  // no slide's: never hidden
      if (holdsHeading(child) || holdsQuiz(child)) {
        wrappers.push(child); out = out.concat(leaves(inner(child), wrappers));
      }
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
  var PICTURE = '[data-testid="stPlotlyChart"], [class*="st-key-picture_"]';  // a page's key picture
  function layout() {
    var r = root(); if (!r) return { groups: [], wrappers: [] };
    var wrappers = [];
    var groups = [[]];
    var all = leaves(r, wrappers);
    // the questions are the last slide (a class checks itself at the end): the first opens on the picture
    var quiz = all.filter(isQuiz);
    all.filter(function (leaf) { return !isQuiz(leaf); }).concat(quiz).forEach(function (leaf) {
      if ((isHeading(leaf) || (isQuiz(leaf) && leaf === quiz[0])) && groups[groups.length - 1].length) groups.push([]);
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
    // the first slide opens on the page's picture: the title and introduction join the slide that holds it, or the
    // first section where there is none (a tab of tables and formulas); the questions stay the last slide
    var first = -1;
    merged.some(function (group, i) {
      if (group.some(isQuiz)) return false;
      if (group.some(function (leaf) { return !!(leaf.querySelector(PICTURE) || leaf.closest(PICTURE)); })) first = i;
      return first >= 0;
    });
    if (first < 0 && merged.length > 2) first = 1;  // (the questions, last, are never the second of three)
    if (first > 0) merged.splice(0, first + 1, [].concat.apply([], merged.slice(0, first + 1)));
    return { groups: merged, wrappers: wrappers };
  }
  function sections() { return layout().groups; }
  function steps(group) {  // text blocks revealed one at a time (not the first: the section's heading)
    var out = [];
    group.forEach(function (block, i) {
      // the picture stays
      if (i === 0 || isHeading(block) || block.querySelector(PICTURE) || block.closest(PICTURE)) return;
      var text = block.querySelector(
        '[data-testid="stCaptionContainer"], [data-testid="stMarkdownContainer"] p, .katex-display');
      var widget = block.querySelector(
        '[data-testid="stPlotlyChart"], [data-testid="stDataFrame"], input, textarea, button');
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
    var title = document.createElement('span'); title.id = 'llmviz-title';  // the page's title (its h1 is hidden)
    var where = document.createElement('span'); where.id = 'llmviz-where';
    var next = document.createElement('button'); next.id = 'llmviz-next'; next.type = 'button';
    next.textContent = 'Next \u25b6';
    b.appendChild(title); b.appendChild(back); b.appendChild(where); b.appendChild(next);
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
    var h1 = document.querySelector('[data-testid="stMainBlockContainer"] h1');
    b.querySelector('#llmviz-title').textContent = h1 ? h1.textContent.trim() : '';
    b.querySelector('#llmviz-where').textContent = 'section ' + (P.section + 1) + ' of ' + groups.length +
      (P.revealed < hidden.length ? ' · Next shows ' + (hidden.length - P.revealed) + ' more ' +
      (hidden.length - P.revealed === 1 ? 'note' : 'notes') + ' first' : '');
    b.querySelector('#llmviz-where').title = 'Next reveals this slide\'s explanations one at a time, then moves on';
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
    document.querySelectorAll('[data-llmviz-hidden]').forEach(function (e) {
      e.removeAttribute('data-llmviz-hidden');
    });
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
