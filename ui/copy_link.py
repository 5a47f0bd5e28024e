"""The "Copy link to this view" button above every page (``ui.share.links`` draws it).

The address holds the page's settings (the widgets bound to link parameters keep it up to date), so the button
copies the browser's current address: with the clipboard where the page is a secure context, else through a
hidden text box, else in a prompt the student copies from.
"""

from __future__ import annotations

import streamlit as st


def copy_button() -> None:
    """A button that copies the browser's current address (kept up to date by the bound widgets)."""
    st.html(
        """
<div style="display:flex;justify-content:flex-end">
<button class="llmviz-copy-link" type="button" title="The address holds this page's settings: paste it in a
message or on a slide, and it opens the same view."
 style="border:1px solid #ced4da;border-radius:6px;background:white;padding:2px 10px;font-size:0.85rem;cursor:pointer">
Copy link to this view</button></div>
<script>
(function () {
  document.querySelectorAll("button.llmviz-copy-link:not([data-ready])").forEach(function (button) {
    button.dataset.ready = "1";
    button.addEventListener("click", function () {
      var url = window.location.href;
      window.__llmvizCopiedLink = url;
      var done = function () { button.textContent = "✓ Link copied"; setTimeout(function () {
        button.textContent = "Copy link to this view"; }, 2000); };
      var fallback = function () {
        var area = document.createElement("textarea");
        area.value = url; document.body.appendChild(area); area.select();
        var ok = false; try { ok = document.execCommand("copy"); } catch (e) {}
        document.body.removeChild(area);
        if (ok) { done(); } else { window.prompt("Copy this link:", url); }
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(url).then(done, fallback);
      } else { fallback(); }
    });
  });
})();
</script>""",
        unsafe_allow_javascript=True,
    )
