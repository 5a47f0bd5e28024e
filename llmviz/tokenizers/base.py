"""What every llmviz tokenizer is: the :class:`Tokenizer` interface, its error, and how a token is shown.

One interface for all: ``encode(text) -> list[int]``, ``decode(ids) -> str``, ``vocab_size``,
and ``token_bytes(id)`` / ``printable(id)`` to show a token.
"""

from __future__ import annotations

from collections.abc import Iterable

from llmviz.errors import LlmvizError

ENDOFTEXT = "<|endoftext|>"


class TokenizerError(LlmvizError):
    """Text a tokenizer cannot handle, or a training request that cannot work."""


_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def printable(token: bytes) -> str:
    r"""A token's bytes as a student should see them: whitespace made visible, broken UTF-8 as hex.

    >>> printable(b" the\n")
    '␣the↵'
    >>> printable("é".encode()[:1])
    '\\xc3'
    """
    text = token.decode("utf-8", errors="backslashreplace")
    out = []
    for character in text:
        if character in _VISIBLE:
            out.append(_VISIBLE[character])
        elif not character.isprintable():
            out.append(character.encode("unicode_escape").decode("ascii"))
        else:
            out.append(character)
    return "".join(out)


class Tokenizer:
    """The interface every tokenizer here has."""

    name = "tokenizer"

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def decode(self, ids: Iterable[int]) -> str:
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def token_bytes(self, token_id: int) -> bytes:
        raise NotImplementedError

    def printable(self, token_id: int) -> str:
        return printable(self.token_bytes(token_id))

    def to_dict(self) -> dict:
        """The tokenizer as JSON data that :func:`llmviz.tokenizers.saved.tokenizer_from_dict` rebuilds (checkpoints
        store it); a tokenizer that cannot be saved says so."""
        raise TokenizerError(f"The {self.name} tokenizer cannot be saved with a checkpoint.")
