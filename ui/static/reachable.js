// Every region that scrolls sideways can be reached and scrolled with the keyboard (WCAG 2.1.1; axe-core's
// scrollable-region-focusable): a wide formula (.katex-display) or code block wider than its column gets
// tabindex=0, the role of a region and a name a screen reader reads ("formula: ..." with the formula's LaTeX).
// Every chart's text alternative (ui.chart_text: its title and key numbers, in the figure's layout.meta) is written
// after the chart as a paragraph a screen reader reads and the screen does not show (.llmviz-chart-text).
// A skip link, the first stop of the keyboard on every page (WCAG 2.4.1), shown while it has the focus: Enter moves
// the focus to the page's key picture (ui.sections.key_picture's container, or else the page's first chart), past
// the sidebar and the page's words; a page with no picture, to its main column.
// Installed once per page by app.py (ui.charts.install_export), beside the SVG button.
(function () {
  if (window.__llmvizReachable) return;
  window.__llmvizReachable = true;
  var SCROLLERS = '.katex-display, [data-testid="stCode"] pre';
  function name(node) {
    var tex = node.querySelector('annotation[encoding="application/x-tex"]');
    if (tex) return 'formula: ' + tex.textContent.trim().slice(0, 200);
    return 'code: ' + node.textContent.trim().slice(0, 80);
  }
  function mark() {
    document.querySelectorAll(SCROLLERS).forEach(function (node) {
      var wide = node.scrollWidth > node.clientWidth;
      if (wide && !node.hasAttribute('tabindex')) {
        node.setAttribute('tabindex', '0');
        node.setAttribute('role', 'region');
        node.setAttribute('aria-label', name(node));
        node.setAttribute('data-llmviz-reachable', '1');
      } else if (!wide && node.getAttribute('data-llmviz-reachable') === '1') {
        ['tabindex', 'role', 'aria-label', 'data-llmviz-reachable'].forEach(function (a) { node.removeAttribute(a); });
      }
    });
  }
  var HIDDEN = 'position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;'
    + 'clip:rect(0 0 0 0);white-space:nowrap;border:0';
  function describe() {
    document.querySelectorAll('.js-plotly-plot').forEach(function (plot) {
      var said = plot.layout && typeof plot.layout.meta === 'string' ? plot.layout.meta : null;
      if (!said) return;
      var holder = plot.parentNode;
      var text = holder.querySelector(':scope > .llmviz-chart-text');
      if (!text) {
        text = document.createElement('p');
        text.className = 'llmviz-chart-text';
        text.style.cssText = HIDDEN;
        holder.appendChild(text);
      }
      if (text.textContent !== said) text.textContent = said;
    });
  }
  var PICTURE = '[class*="st-key-picture_"], [data-testid="stPlotlyChart"]';
  function keyPicture() {
    var main = document.querySelector('[data-testid="stMainBlockContainer"]');
    return main ? (main.querySelector(PICTURE) || main) : null;
  }
  function skipTo(event) {
    event.preventDefault();
    var target = keyPicture();
    if (!target) return;
    if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
    target.setAttribute('data-llmviz-skipped', '1');
    target.scrollIntoView({ block: 'start' });
    target.focus({ preventScroll: true });
  }
  var SKIP_STYLE = '.llmviz-skip{position:fixed;left:8px;top:-100px;z-index:1000200;padding:8px 14px;'
    + 'background:#fff;color:#3b5bdb;border:2px solid #3b5bdb;border-radius:6px;'
    + 'font:600 16px "Source Sans Pro",sans-serif;text-decoration:underline}'
    + '.llmviz-skip:focus{top:8px;outline:3px solid #0e1117;outline-offset:2px}'
    + '[data-llmviz-skipped]:focus{outline:3px solid #3b5bdb;outline-offset:4px}';
  function skipLink() {
    if (document.getElementById('llmviz-skip')) return;
    var style = document.createElement('style');
    style.textContent = SKIP_STYLE;
    document.head.appendChild(style);
    var link = document.createElement('a');
    link.id = 'llmviz-skip';
    link.className = 'llmviz-skip';
    link.href = '#';
    link.textContent = 'Skip to the picture';
    link.addEventListener('click', skipTo);
    link.addEventListener('focus', function () {  // a page with no picture: its main column
      var target = keyPicture();
      var main = document.querySelector('[data-testid="stMainBlockContainer"]');
      link.textContent = target && target !== main ? 'Skip to the picture' : 'Skip to the main content';
    });
    document.body.insertBefore(link, document.body.firstChild);
  }
  skipLink();
  var pending = null;
  function soon() {
    if (pending) return;
    pending = setTimeout(function () { pending = null; mark(); describe(); }, 100);
  }
  new MutationObserver(soon).observe(document.body, { childList: true, subtree: true });
  window.addEventListener('resize', soon);
  // a formula widens without a change to the page's elements (its fonts load, an expander opens): looked at again
  setInterval(mark, 1000);
  mark();
  describe();
})();
