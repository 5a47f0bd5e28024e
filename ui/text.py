"""User and model text, shown literally: never read as Markdown, HTML or LaTeX.

Streamlit renders ``st.markdown``, ``st.caption``, ``st.error`` … as Markdown with ``$…$`` as LaTeX, so a file
called ``__init__.py`` shows as bold "init.py" and a generated ``$x$`` as maths. Inside an HTML block that
``unsafe_allow_html`` lets through, a blank line ends the block and Markdown parsing resumes. These two functions
make any string safe for each context.
"""

from __future__ import annotations

import string

# every ASCII punctuation character may be backslash-escaped in CommonMark; Streamlit also honours \\$
_PUNCTUATION = frozenset(string.punctuation)

# characters that mean something to HTML, Markdown or KaTeX, as entities; one table, applied in one pass (escaping
# HTML first and then "#" would turn the apostrophe's &#x27; into the visible text "&#x27;")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
             "$": "&#36;", "*": "&#42;", "_": "&#95;", "`": "&#96;", "\\": "&#92;", "~": "&#126;", "[": "&#91;",
             "]": "&#93;", "#": "&#35;", "|": "&#124;", "\n": "&#10;", "\r": "&#13;", "{": "&#123;", "}": "&#125;"}
_ENTITY_TABLE = str.maketrans(_ENTITIES)


def literal_markdown(text: str) -> str:
    """``text`` escaped for any Markdown element: ``__dict__ $x$`` shows as typed."""
    return "".join("\\" + char if char in _PUNCTUATION else char for char in str(text))


def literal_html(text: str) -> str:
    """``text`` escaped for use inside HTML given to ``st.markdown(…, unsafe_allow_html=True)``.

    Newlines become ``&#10;`` (keep ``white-space: pre`` or ``pre-wrap`` on the element to show them), so the
    HTML never contains a blank line that would end the block.
    """
    return str(text).translate(_ENTITY_TABLE)
