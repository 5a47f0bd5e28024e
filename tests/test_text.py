"""User and model text is escaped for Markdown and for HTML blocks (the browser side is in the browser tests)."""

import html
import re

from ui.text import literal_html, literal_markdown

HOSTILE = ["__dict__", "**bold**", "$x^2$", "</span><span title=x>", "line one\n\nline two", "`code`", "a\\b",
           "[link](http://127.0.0.1)", "# heading", "| a | b |", "~~gone~~", "<script>alert(1)</script>", "{x}",
           "don't", 'say "hi"', "it's #1 & <2>", "&#x27; &amp;"]


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
