"""llmviz.lessons.tokens: the Tokens page's numbers against references written here (collections.Counter, the BPE
trained in one call, tiktoken's own encoding of the exported BPE)."""

from collections import Counter

from llmviz.lessons import tokens
from llmviz.tokenizers.base import ENDOFTEXT
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.tokenizers.zipf import ZipfFit

TEXT = "the cat sat on the mat. the cat ate the rat. " * 20


def test_the_corpus_vocabularies_are_its_characters_and_words():
    chars, words = tokens.corpus_tokenizers(TEXT)
    assert chars.vocab_size == len(set(TEXT))
    assert words.vocab_size == len(Counter(words.split(TEXT))) + 1  # every piece, and [UNK]
    assert tokens.corpus_tokenizers("")[0].vocab_size == 1  # an empty corpus: the vocabulary of "a"


def test_the_training_task_learns_what_training_in_one_call_learns():
    task, merges, footprint = tokens.bpe_training(TEXT, 256 + 1 + 12, "gpt4")
    assert merges == 12 and footprint.what
    steps = task(lambda: False)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        history = done.value
    learned = tokens.bpe_from_job(history, "gpt4")
    direct = BPETokenizer.train(TEXT, 256 + 1 + 12, "gpt4", [ENDOFTEXT])
    assert learned.merges == direct.merges and learned.encode(TEXT) == direct.encode(TEXT)
    assert tokens.bpe_key(learned) == tokens.bpe_key(direct) != tokens.bpe_key(tokens.bpe_from_job(history[:5], "gpt4"))


def test_the_zipf_counts_are_tiktokens_counts_and_the_verdict_follows_r_squared():
    bpe = BPETokenizer.train(TEXT, 256 + 1 + 12, "gpt4", [ENDOFTEXT])
    curve, counts = tokens.bpe_measures(bpe, TEXT)
    assert counts == sorted(Counter(bpe.to_tiktoken().encode(TEXT)).values(), reverse=True)
    assert curve[-1][0] == bpe.vocab_size and curve[-1][1] == len(TEXT) / len(bpe.encode(TEXT))
    assert "close to a straight line" in tokens.zipf_verdict(ZipfFit(-1.0, 5.0, 0.97))
    assert "roughly" in tokens.zipf_verdict(ZipfFit(-1.0, 5.0, 0.9))
    assert "not a straight line" in tokens.zipf_verdict(ZipfFit(-1.0, 5.0, 0.5))


def test_split_characters_is_its_definition_on_texts_that_byte_tokenizers_cut():
    """The note's character is one that no token holds whole, checked here by its definition (the character's UTF-8
    bytes inside no token's bytes), on GPT-2's and cl100k's cuts of texts full of emoji, kanji and accents; the
    library finds it in one pass (it had checked every character of a 100,000-character paste against every token:
    20 s for each tokenizer card)."""
    import random

    alphabet = "ab é日本語東京🙂🚀\x00\x07ïß—"
    rng = random.Random(0)
    for name in ("gpt2", "cl100k"):
        tokenizer = tokens.reference(name)
        for _ in range(30):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
            pieces = [tokenizer.token_bytes(i) for i in tokenizer.encode(text)]
            partial = [i for i, piece in enumerate(pieces) if not _decodes(piece)]
            several = [c for c in text if len(c.encode("utf-8")) > 1]
            cut = [c for c in several if not any(c.encode("utf-8") in piece for piece in pieces)]
            expected = None if not partial else (len(partial), partial[0], (cut or several or ["é"])[0])
            assert tokens.split_characters(pieces, text) == expected, (name, text)


def _decodes(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
