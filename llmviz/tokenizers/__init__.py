"""Tokenizers a student can read: characters, words, and byte-level BPE (minbpe's style).

One interface for all (:mod:`llmviz.tokenizers.base`): ``encode(text) -> list[int]``, ``decode(ids) -> str``,
``vocab_size``, and ``token_bytes(id)`` / ``printable(id)`` to show a token.

- :mod:`llmviz.tokenizers.char_word` — one id per character, one per word;
- :mod:`llmviz.tokenizers.bpe` — byte-level BPE: merging, the fast trainer, GPT-2's and cl100k's encodings,
  compression;
- :mod:`llmviz.tokenizers.saved` — a tokenizer rebuilt from its saved form;
- :mod:`llmviz.tokenizers.ids` — the ids of any text by any of them (:func:`~llmviz.tokenizers.ids.encode`);
- :mod:`llmviz.tokenizers.windows` — (input, target) windows for next-token prediction;
- :mod:`llmviz.tokenizers.zipf` — counts by rank and Zipf's line.
"""
