"""Worked equations laid out for the page: pure text functions from a LaTeX line to the lines KaTeX draws without
scrolling (:func:`display_math`), which :func:`ui.charts.equation` and :func:`ui.charts.latex` show. No Streamlit:
the layout is tested as text (``tests/app/test_text.py``).

>>> display_math("n = 1,048,576")
'n = 1{,}048{,}576'
"""

from __future__ import annotations

import re

EQUATION_WIDTH = 60  # characters a page's main column shows of a display equation at 1280 px before it scrolls


def _brace_group(line: str, start: int) -> tuple[str, int]:
    """The content of the brace group opening at ``line[start]`` and the index after it."""
    depth = 0
    for i in range(start, len(line)):
        if line[i] == "{" and (i == 0 or line[i - 1] != "\\"):
            depth += 1
        elif line[i] == "}" and line[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return line[start + 1 : i], i + 1
    return line[start + 1 :], len(line)


def visible_length(line: str) -> int:
    """About how many characters KaTeX draws for ``line`` side by side: commands count as one symbol, braces and
    scripts' markers as nothing, a fraction as the wider of its two parts (they are stacked).

    >>> visible_length(r"\\alpha_{1} = \\frac{e^{2}}{3}")
    7
    >>> visible_length(r"p = \\frac{e^{z_i/T}}{\\sum_j e^{z_j/T}}")  # 'p = ' and the denominator, 8 wide
    12
    """
    while (start := line.find("\\frac{")) >= 0:  # \frac{a}{b} -> the wider of a and b
        numerator, after = _brace_group(line, start + 5)
        denominator, end = _brace_group(line, after) if line[after : after + 1] == "{" else ("", after)
        wider = max(numerator, denominator, key=visible_length)
        line = line[:start] + wider + line[end:]
    return len(re.sub(r"\\[A-Za-z]+|[{}^_]|\\[,;:! ]", lambda m: "x" if m.group(0)[1:].isalpha() else "", line))


def _command_at(line: str, i: int, text: str) -> bool:
    """Does ``text`` stand at ``line[i]`` as a whole: a command ending in a letter is not the start of a longer one?

    >>> _command_at(r"\\left(", 0, r"\\left"), _command_at(r"\\leftarrow", 0, r"\\left"), _command_at("a=b", 1, "=")
    (True, False, True)
    """
    end = i + len(text)
    return line.startswith(text, i) and not (text[-1].isalpha() and line[end : end + 1].isalpha())


def _top_level_cuts(line: str, marks: tuple[str, ...], after: bool = False) -> list[str]:
    """``line`` cut at each of ``marks`` that stands outside every brace and ``\\left … \\right`` pair: before the
    mark (``after``: behind it, the mark ending its piece).

    >>> _top_level_cuts(r"a = \\frac{b = c}{2} = d", ("=",))
    ['a ', '= \\\\frac{b = c}{2} ', '= d']
    >>> _top_level_cuts(r"a = 1,\\; b = 2", (r",\\;",), after=True)
    ['a = 1,\\\\;', ' b = 2']
    """
    pieces, start, depth, i = [], 0, 0, 0
    while i < len(line):
        if _command_at(line, i, "\\left"):
            depth, i = depth + 1, i + 5
            continue
        if _command_at(line, i, "\\right"):
            depth, i = depth - 1, i + 6
            continue
        mark = next((m for m in marks if _command_at(line, i, m)), None) if depth == 0 else None
        if mark:
            cut = i + len(mark) if after else i
            if cut > start:
                pieces.append(line[start:cut])
                start = cut
            i += len(mark)
            continue
        if line[i] == "\\":  # an escaped character or a command that is no mark
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(line[i], 0)
        i += 1
    if line[start:] or not pieces:
        pieces.append(line[start:])
    return pieces


STATEMENT_BREAKS = (r"\qquad", r"\quad", r",\;", r";\;")  # between two statements of one line


def fit_equation(line: str, width: int = EQUATION_WIDTH) -> str:
    """A worked equation too wide for the page, broken into lines. A line of several statements (``a = 1,\\;
    b = 2``) is packed statement by statement, never cut inside one; one long chain is aligned at its top-level
    ``=`` (and ``\\Rightarrow``, ``\\approx``), then a piece still too wide at its top-level ``+``. A wide
    equation scrolled sideways inside its box, so a student read ``d = 0`` where the page said ``d = … = 0.1732``.

    >>> fit_equation("a = b")
    'a = b'
    >>> print(fit_equation("x = 1.25 + 2.5 + 3.75 = 7.5", width=20))
    \\begin{aligned}x &= 1.25 + 2.5 + 3.75 \\\\ &= 7.5\\end{aligned}
    >>> print(fit_equation("s = 1.25 + 2.5 + 3.75 + 5.0", width=13))
    \\begin{aligned}s &= 1.25 + 2.5 \\\\ &\\quad + 3.75 + 5.0\\end{aligned}
    >>> fit_equation(r"y = \\left(a + b + c + d + e\\right) + f", width=6)  # never inside a \\left … \\right
    '\\\\begin{aligned}y &= \\\\left(a + b + c + d + e\\\\right) \\\\\\\\ &\\\\quad + f\\\\end{aligned}'
    >>> print(fit_equation(r"a = 1.25,\\; b = 2.50,\\; c = 3.75", width=20))  # statements: packed, not chained
    \\begin{gathered}a = 1.25,\\; b = 2.50,\\; \\\\ c = 3.75\\end{gathered}
    """
    if visible_length(line) <= width or "\\begin" in line or "\\\\" in line:
        return line
    statements = [piece for piece in _top_level_cuts(line, STATEMENT_BREAKS, after=True) if piece.strip()]
    if len(statements) > 1:  # pack whole statements into rows; a statement too wide on its own is fitted alone
        rows = _packed([statement.strip() for statement in statements], width)
        return "\\begin{gathered}" + " \\\\ ".join(fit_equation(row, width) for row in rows) + "\\end{gathered}"
    return _fitted_chain(line, width)


def _fitted_chain(line: str, width: int) -> str:
    """One long chain aligned at its top-level relations, a piece still too wide cut at its top-level ``+``; a line
    with neither is left as it is (:func:`fit_equation`)."""
    pieces = _top_level_cuts(line, RELATIONS)
    if len(pieces) < 2 and len(_top_level_cuts(line, ("+",))) < 2:
        return line
    head, rest = pieces[0].rstrip(), [piece.strip() for piece in pieces[1:]]
    if not rest:  # no relation to align on: the whole line is the right-hand side of an empty left
        head, rest = "", [pieces[0].strip()]
    room = max(width // 3, width - visible_length(head))  # every row starts in the column after the left side
    chain = [row for piece in rest for row in _aligned_rows(piece, room)]
    return "\\begin{aligned}" + head + " " + " \\\\ ".join(chain) + "\\end{aligned}"


RELATIONS = ("=", "\\Rightarrow", "\\approx")  # where a long chain is aligned


def _packed(parts: list[str], width: int, joiner: str = " ") -> list[str]:
    """``parts`` packed into as few rows as fit ``width`` (a part too wide alone is a row of its own).

    >>> _packed(["a = 1,", "b = 2,", "c = 3"], 13)
    ['a = 1, b = 2,', 'c = 3']
    """
    rows: list[str] = []
    for part in parts:
        joined = part if not rows else rows[-1] + joiner + part
        if rows and visible_length(joined) <= width:
            rows[-1] = joined
        else:
            rows.append(part)
    return rows


def _aligned_rows(piece: str, room: int) -> list[str]:
    """One relation of a chain (``= a + b + c``) as aligned rows: the relation on the first, then ``\\quad +`` rows,
    each at most ``room`` wide, cut at top-level ``+``.

    >>> _aligned_rows("= 1 + 2 + 3", 6)
    ['&= 1 + 2', '&\\\\quad + 3']
    """
    relation = next((m for m in RELATIONS if piece.startswith(m)), "")
    terms = [term.strip() for term in _top_level_cuts(piece[len(relation) :].strip(), ("+",))]
    rows = _packed(terms, room)
    return [("&" + relation + " " if number == 0 else "&\\quad ") + row for number, row in enumerate(rows)]


def tex_thousands(line: str) -> str:
    """Thousands separators of a formula as ``{,}``: math mode puts a space after a bare comma (``10, 000``). Only a
    comma between a digit and exactly three digits is one; ``\\omega_{1,0}`` and ``(0.2, 0.4)`` stay.

    >>> tex_thousands(r"2 \\times 24 \\times 8,192 = 1,048,576\\ \\text{bytes},\\ \\omega_{1,0}")
    '2 \\\\times 24 \\\\times 8{,}192 = 1{,}048{,}576\\\\ \\\\text{bytes},\\\\ \\\\omega_{1,0}'
    """
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "{,}", line)


def display_math(line: str) -> str:
    """What a page shows of a formula: thousands separators that math mode leaves alone, then broken into aligned
    lines when wider than the page."""
    return fit_equation(tex_thousands(line))
