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

#: The sentence for a character model of first names (lowercase letters and a newline: the Python manual's
#: sentence reached one as "heresultisthenboundtotheclassname", with no capital, space or full stop).
NAMES_SENTENCE = "charlotte"


def reads(tokenizer, text: str) -> bool:
    """Does ``tokenizer`` give ``text`` back from its ids (no character it lacks, none skipped)?

    >>> from llmviz.tokenizers.char_word import CharTokenizer
    >>> names = CharTokenizer.train("emma\\nolivia\\ncharlotte\\n")
    >>> reads(names, "charlotte"), reads(names, "The result.")
    (True, False)
    """
    from llmviz.tokenizers.ids import encode

    try:
        ids = encode(tokenizer, text)
        return bool(ids) and tokenizer.decode(ids) == text
    except Exception:  # noqa: BLE001 - any tokenizer's refusal: it does not read the text
        return False


def first_read(tokenizer, *texts: str) -> str:
    """The first of ``texts`` that ``tokenizer`` reads whole (:func:`reads`), else the first.

    >>> from llmviz.tokenizers.char_word import CharTokenizer
    >>> first_read(CharTokenizer.train("abc"), " is", "a")
    'a'
    """
    return next((text for text in texts if reads(tokenizer, text)), texts[0])


def opening_sentence(tokenizer, sentence: str) -> str:
    """The sentence a page opens with for a model: ``sentence`` where its tokenizer reads it whole, else the same in
    lower case, else a first name (a character model of the names corpus), else ``sentence`` as it is.

    >>> from llmviz.tokenizers.char_word import CharTokenizer
    >>> opening_sentence(CharTokenizer.train("emma\\ncharlotte\\nliam\\n"), "The result is then bound.")
    'charlotte'
    >>> opening_sentence(CharTokenizer.train("the cat sat on the mat. then it ran."), "Then the cat sat.")
    'then the cat sat.'
    """
    return first_read(tokenizer, sentence, sentence.lower(), NAMES_SENTENCE)


def openings(sentence: str) -> frozenset[str]:
    """The texts :func:`opening_sentence` may give for ``sentence``: a box still holding one of them holds no text of
    the student's, so it follows the picked model (``ui.state.follow_default``).

    >>> sorted(openings("The cat."))
    ['The cat.', 'charlotte', 'the cat.']
    """
    return frozenset((sentence, sentence.lower(), NAMES_SENTENCE))
