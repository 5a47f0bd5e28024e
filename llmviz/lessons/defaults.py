"""The texts pages start from, chosen from the shipped GPT's own corpus (the Python reference manual).

A default must show the lesson with the shipped GPT of today (a 1,024-token BPE that still splits many words) and
with a retrained one that keeps common words whole: a sentence of the manual, cut where the next word is a common
one, not where the manual breaks a line (after the heading 'The "for" statement' the manual's next character is a
newline, and the model rightly says so).
"""

from __future__ import annotations

#: The prompt of the Sampling page (and of the Adapting and Serving pages' generated text): the manual's sentence
#: 'The "for" statement is used to iterate over the elements of a sequence', cut before "iterate".
DEFAULT_PROMPT = 'The "for" statement is used to'

#: The Model page's sentence for a model of the names corpus: one of its names (a character model of lowercase names
#: has no capital, space or full stop: the Python manual's sentence reached it as "heresultisthenboundtotheclassname").
NAMES_SENTENCE = "charlotte"


def trained_on_names(meta: dict, key: str) -> bool:
    """Was the model ``key`` (a picker key, or its content key) trained on the names corpus (its checkpoint says so,
    or it is one of the shipped names models)? Pages start such a model from a name, not from the manual's text.

    >>> trained_on_names({"corpus": "names"}, "run:ab12"), trained_on_names({}, "shipped:names-gru")
    (True, True)
    >>> trained_on_names({"corpus": "python-docs"}, "shipped:gpt-python-docs")
    False
    """
    return meta.get("corpus") == "names" or "names" in key


def opening_sentence(meta: dict, key: str, sentence: str) -> str:
    """The sentence a page opens with for the model ``key``: ``sentence`` (the manual's), or a name for a model of the
    names corpus.

    >>> opening_sentence({"corpus": "names"}, "run:ab12", "The result is then bound to the class name.")
    'charlotte'
    """
    return NAMES_SENTENCE if trained_on_names(meta, key) else sentence
