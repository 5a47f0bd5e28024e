// Adds an "SVG" button next to Plotly's camera in every chart's toolbar: it asks Plotly's own download for format
// svg (the camera keeps PNG at 2x). Installed once per page by app.py.
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
      button.style.cssText = 'font:bold 9px sans-serif;line-height:18px;padding:3px 4px;cursor:pointer;'
        + 'color:#5c5f6a;border:0;background:none';
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
