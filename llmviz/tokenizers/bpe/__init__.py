"""Byte-level BPE (minbpe's style): the pieces (:mod:`~llmviz.tokenizers.bpe.merging`), the tokenizer and its
fast trainer (:mod:`~llmviz.tokenizers.bpe.tokenizer`), GPT-2's and cl100k's own encodings offline
(:mod:`~llmviz.tokenizers.bpe.reference`) and how compression grows with the vocabulary
(:mod:`~llmviz.tokenizers.bpe.compression`).

Byte-pair encoding in one worked example. Text ``"aaabdaaabac"`` as bytes
(a=97, b=98, c=99, d=100); the most frequent pair (97, 97) "aa" becomes token 256, then
(256, 97) "aaa" becomes 257 (ties go to the pair seen first in the text):

>>> from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
>>> bpe = BPETokenizer.train("aaabdaaabac", vocab_size=258, split_pattern=None, special_tokens=())
>>> bpe.merges
[((97, 97), 256), ((256, 97), 257)]
>>> bpe.encode("aaabdaaabac")
[257, 98, 100, 257, 98, 97, 99]
>>> bpe.decode([257, 98])
'aaab'
"""
