"""User and model text, shown literally: never read as Markdown, HTML or LaTeX.

Streamlit renders ``st.markdown``, ``st.caption``, ``st.error`` … as Markdown with ``$…$`` as LaTeX, so a file
called ``__init__.py`` shows as bold "init.py" and a generated ``$x$`` as maths. Inside an HTML block that
``unsafe_allow_html`` lets through, a blank line ends the block and Markdown parsing resumes. These two functions
make any string safe for each context.
"""

from __future__ import annotations

import math
import string

import numpy as np
import pandas as pd

# every ASCII punctuation character may be backslash-escaped in CommonMark; Streamlit also honours \\$
_PUNCTUATION = frozenset(string.punctuation)

# characters that mean something to HTML, Markdown or KaTeX, as entities; one table, applied in one pass (escaping
# HTML first and then "#" would turn the apostrophe's &#x27; into the visible text "&#x27;")
_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&#39;",
    "$": "&#36;",
    "*": "&#42;",
    "_": "&#95;",
    "`": "&#96;",
    "\\": "&#92;",
    "~": "&#126;",
    "[": "&#91;",
    "]": "&#93;",
    "#": "&#35;",
    "|": "&#124;",
    "\n": "&#10;",
    "\r": "&#13;",
    "{": "&#123;",
    "}": "&#125;",
}
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


def shortest_number(value: float) -> str:
    """A float with the fewest digits that give it back: a float32 value (a loss read from a tensor) as float32
    prints it, anything else as Python prints it. No float noise, nothing lost.

    >>> float(np.float32(0.43)), shortest_number(float(np.float32(0.43)))
    (0.4300000071525574, '0.43')
    >>> shortest_number(0.1 + 0.2), shortest_number(3e-4), shortest_number(float("nan"))
    ('0.30000000000000004', '0.0003', 'nan')
    """
    if not math.isfinite(value):
        return str(value)
    single = np.float32(value)
    if math.isfinite(single) and float(single) == value:
        text = np.format_float_positional(single, unique=True, trim="-")
        return text if len(text) <= 16 else np.format_float_scientific(single, unique=True, trim="-")
    return repr(value)


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV, every float written by :func:`shortest_number` (what the page shows, never 0.4300000071525574).

    >>> csv_text(pd.DataFrame({"step": [1], "loss": [float(np.float32(0.43))]}))
    'step,loss\\n1,0.43\\n'
    """
    shown = frame.copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = [
                "" if math.isnan(value) else shortest_number(float(value))  # empty, as pandas writes NaN
                for value in shown[column]
            ]
    return shown.to_csv(index=False)


def spreadsheet_safe(text: str) -> str:
    """What a student typed, for a CSV a teacher opens in a spreadsheet: a cell that starts as a formula would
    (``=``, ``+``, ``-``, ``@``, a tab or a carriage return) starts with an apostrophe instead, so that it reads as text
    and never runs (OWASP's CSV injection).

    >>> spreadsheet_safe("=1+1"), spreadsheet_safe("@SUM(A1)"), spreadsheet_safe("Ada")
    ("'=1+1", "'@SUM(A1)", 'Ada')
    """
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def fixed(digits: int):
    """A table formatter: a number with ``digits`` decimals, and no minus sign on a number that shows as zero (a
    LayerNorm's mean of −3e-9 reads 0.0000, not −0.0000).

    >>> f = fixed(4)
    >>> f(-3e-9), f(-0.00016), f(0.25), f(float("nan"))
    ('0.0000', '-0.0002', '0.2500', '—')
    """

    def format_number(value: float) -> str:
        if value != value:  # NaN
            return "—"
        text = f"{value:.{digits}f}"
        return text[1:] if text.startswith("-") and not text.strip("-0.") else text

    return format_number


def tidy_floats(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every float as the number it reads as: a float32 value such as 0.4300000071525574 (0.43 read from
    a tensor) becomes the float 0.43, so a table's "Download as CSV" writes what the page shows. Tables given to
    ``st.dataframe`` go through this.

    >>> tidy_floats(pd.DataFrame({"x": np.array([0.43, 0.15], dtype=np.float32)}))["x"].tolist()
    [0.43, 0.15]
    """
    floats = [column for column, dtype in frame.dtypes.items() if pd.api.types.is_float_dtype(dtype)]
    if not floats:
        return frame.copy()
    if not frame.columns.is_unique:  # (never in llmviz's tables) one column at a time
        shown = frame.copy()
        for number in range(frame.shape[1]):
            if pd.api.types.is_float_dtype(frame.iloc[:, number]):
                shown.isetitem(number, [_tidy(v) for v in frame.iloc[:, number].astype("float64")])
        return shown
    # all float columns at once, in numpy: a value a float32 holds exactly is read back from float32's shortest
    # digits (what shortest_number prints), any other stays as it is; column by column in pandas this was most of
    # the server's time for a page of tables (150 ms for a 12 × 64 matrix, now under 10)
    values = frame[floats].to_numpy(np.float64, copy=True)
    single = values.astype(np.float32)
    exact = single.astype(np.float64) == values  # NaN is never exact: it stays NaN
    values[exact] = single[exact].astype(str).astype(np.float64)
    tidied = pd.DataFrame(values, index=frame.index, columns=floats)
    if len(floats) == frame.shape[1]:
        return tidied
    return pd.concat([tidied, frame.drop(columns=floats)], axis=1)[list(frame.columns)]


def _tidy(value: float) -> float:
    return value if math.isnan(value) else float(shortest_number(value))
