"""The texts pages start from, chosen from the shipped GPT's own corpus (the Python reference manual).

A default must show the lesson with the shipped GPT of today (a 1,024-token BPE that still splits many words) and
with a retrained one that keeps common words whole: a sentence of the manual, cut where the next word is a common
one, not where the manual breaks a line (after the heading 'The "for" statement' the manual's next character is a
newline, and the model rightly says so).
"""

from __future__ import annotations

from llmviz.errors import LlmvizError

#: The prompt of the Sampling page (and of the Adapting and Serving pages' generated text): the manual's sentence
#: 'The "for" statement is used to iterate over the elements of a sequence', cut before "iterate".
DEFAULT_PROMPT = 'The "for" statement is used to'

#: The Embeddings page's tokens to compare: tokens of the manual the shipped GPT reads whole (function words, modal
#: verbs and Python's nouns, which its table groups: is, are, be; must, can; class, instance; list, tuple), and the
#: token whose neighbours it looks up (are, was, be, then, will, must)
DEFAULT_WORDS = " the a is are be must can will class instance function method list tuple value name"
DEFAULT_QUERY = " is"
#: what a character model (of first names: no space) compares instead: the letters, vowels first, and "a"
LETTERS, LETTER_QUERY = "aeiouybcdfghjklmnprstvwz", "a"
#: the Embeddings page's token + position sentence: a line of Python
POSITIONS_TEXT = "for x in range(10):"

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
        return tokenizer.decode(encode(tokenizer, text)) == text  # (the empty text is read: nothing is lost)
    except (LlmvizError, ValueError, KeyError, IndexError):  # a tokenizer's refusal: it does not read the text
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
    return first_read(tokenizer, *openings(sentence))


def openings(sentence: str) -> tuple[str, ...]:
    """The texts :func:`opening_sentence` chooses from for ``sentence``, in its order.

    >>> openings("The cat.")
    ('The cat.', 'the cat.', 'charlotte')
    """
    return sentence, sentence.lower(), NAMES_SENTENCE
