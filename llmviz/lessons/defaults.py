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
