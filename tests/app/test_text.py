"""User and model text is escaped for Markdown and for HTML blocks (the browser side is in the browser tests)."""

import html
import re

from ui.text import literal_html, literal_markdown

HOSTILE = [
    "__dict__",
    "**bold**",
    "$x^2$",
    "</span><span title=x>",
    "line one\n\nline two",
    "`code`",
    "a\\b",
    "[link](http://127.0.0.1)",
    "# heading",
    "| a | b |",
    "~~gone~~",
    "<script>alert(1)</script>",
    "{x}",
    "don't",
    'say "hi"',
    "it's #1 & <2>",
    "&#x27; &amp;",
]


def test_markdown_escape_leaves_no_active_character_unescaped():
    for text in HOSTILE:
        escaped = literal_markdown(text)
        # removing every backslash escape gives the text back: each punctuation mark is escaped once
        assert re.sub(r"\\(.)", r"\1", escaped) == text
        assert not re.search(r"(?<!\\)[*_$`<>\[\]#|~]", escaped), escaped


def test_html_escape_has_no_blank_line_and_no_markdown_characters():
    for text in HOSTILE:
        escaped = literal_html(text)
        assert "\n" not in escaped and "<" not in escaped and ">" not in escaped
        outside_entities = re.sub(r"&#?\w+;", "", escaped)
        assert not set("*_$`[]#|~\\{}") & set(outside_entities), escaped
        assert html.unescape(escaped) == text  # the browser shows exactly the text


def test_plain_words_are_unchanged():
    assert literal_html("Every effort moves you") == "Every effort moves you"
    assert literal_markdown("Every effort moves you") == "Every effort moves you"


def test_wide_worked_equations_are_broken_into_lines_that_fit_the_page():
    """A worked equation wider than the page scrolled sideways in its box: a student read 'd = 0' for
    'd = √(…) = 0.1732'. ui.equations.fit_equation breaks it at its top-level '=' (then '+') into aligned rows,
    never inside braces or a \\left … \\right pair, and keeps every symbol of the original in order."""
    import re

    from ui.equations import EQUATION_WIDTH, _top_level_cuts, fit_equation, visible_length

    squares = " + ".join(f"({a} - {b})^2" for a, b in [(0.2, 0.1), (0.4, 0.5), (0.9, 0.8)] * 3)
    lines = [
        rf"d(v_1, v_2) = \sqrt{{{squares}}} = 0.1732",
        r"\text{loss} = -\frac{1}{6}\Big["
        + " + ".join(f"({-v:.3f})" for v in (7.766, 6.234, 7.279, 4.231, 7.316, 3.592))
        + r"\Big] = -(-6.0697) = 6.0697",
        r"q \cdot k = " + " + ".join(r"0.5300\cdot0.3000" for _ in range(6)) + r" = 0.5093\;\Rightarrow\; 0.2547",
    ]
    for line in lines:
        fitted = fit_equation(line)
        assert fitted.startswith(r"\begin{aligned}") and fitted.endswith(r"\end{aligned}")
        rows = fitted[len(r"\begin{aligned}") : -len(r"\end{aligned}")].split(r" \\ ")
        assert len(rows) >= 2
        assert rows[-1].strip().endswith(line.rsplit(" ", 1)[-1])  # the result stands on a row of its own line
        for row in rows:  # braces balance in every row: no cut inside \sqrt{…} or \frac{…}{…}
            assert row.count("{") == row.count("}"), row
            assert row.count(r"\left") == row.count(r"\right"), row
            if len(_top_level_cuts(row, ("+",))) < 2:
                continue  # one term (a square root of a long sum, say) may be wider: nothing to break it at
            assert visible_length(row) <= EQUATION_WIDTH, row
        strip = lambda text: re.sub(r"\\begin\{aligned\}|\\end\{aligned\}|\\\\|&|\\quad|\s", "", text)  # noqa: E731
        assert strip(fitted) == strip(line)
    assert fit_equation("a = b") == "a = b"


def test_heatmaps_keep_every_token_label_but_thin_an_index_axis():
    """Tokens must all be readable (every label drawn); 64 dimension numbers forced onto one axis overlapped
    into a black smear (a student's walk), so an index range is left to Plotly to thin."""
    from ui.charts import heatmap

    dimensions = heatmap([[0.0] * 64] * 3, x_labels=list(range(64)), y_labels=["The", "cat", "sat"])
    assert "dtick" not in dimensions.layout.xaxis.to_plotly_json() and dimensions.layout.yaxis.dtick == 1
    tokens = heatmap([[0.0] * 20] * 3, x_labels=[f"w{i}" for i in range(20)], y_labels=list(range(3)))
    assert tokens.layout.xaxis.dtick == 1 and tokens.layout.xaxis.tickangle == -90
