"""llmviz.tokenizers.base: how a token's bytes are printed."""

from llmviz.tokenizers.base import printable


def test_printable():
    assert printable(b" a\n\t") == "␣a↵⇥"
    assert printable(bytes([0xF0, 0x9F])) == "\\xf0\\x9f"
