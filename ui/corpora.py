"""The corpora the sidebar offers: their names, and the title its box shows for each (which a link carries: a bound
select box reads its option's title from the address). Kept apart from :mod:`ui.shared_sidebar`, which draws the box,
so that :mod:`ui.share` reads a link's corpus by its name too without importing the sidebar, which imports it."""

from __future__ import annotations

from llmviz.data import corpus

UPLOAD = "upload"  # the student's own text, uploaded in the sidebar (or one of their kept texts)


def corpus_labels() -> dict[str, str]:
    """The sidebar's corpora, name → the title its box shows (and a link carries), the upload last.

    >>> corpus_labels()["names"], corpus_labels()[UPLOAD]
    ('US census first names', 'Your own text (upload)')
    """
    return {entry.name: entry.title for entry in corpus.list_corpora()} | {UPLOAD: "Your own text (upload)"}
