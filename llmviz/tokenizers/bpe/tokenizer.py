"""Byte-level BPE as a tokenizer: the fast trainer (a heap of pair counts, updated in place), encoding with
special tokens, export to tiktoken, and files.
"""

from __future__ import annotations

import heapq
import json
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import regex

from llmviz.tokenizers.base import ENDOFTEXT, Tokenizer, TokenizerError, printable
from llmviz.tokenizers.bpe.merging import SPLIT_PATTERNS, MergeRecord, merge, split_chunks


def allowed_specials(allowed_special: str | Iterable[str], known: Iterable[str]) -> set[str]:
    """The special tokens ``allowed_special`` ("none", "all" or a collection) lets through."""
    if allowed_special == "all":
        return set(known)
    if allowed_special == "none" or not allowed_special:
        return set()
    if isinstance(allowed_special, str):
        raise TokenizerError(
            f"allowed_special must be 'none', 'all' or a set of special tokens, not {allowed_special!r}."
        )
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
    def from_history(
        cls,
        history: list[MergeRecord],
        split_pattern: str | None,
        special_tokens: Iterable[str],
        keep_history: bool = False,
        stopped_early: bool = False,
    ) -> BPETokenizer:
        merges = [(r.pair, r.new_id) for r in history]
        first_special = 256 + len(merges)
        specials = {token: first_special + i for i, token in enumerate(dict.fromkeys(special_tokens))}
        return cls(
            merges=merges,
            split_pattern=split_pattern,
            special_tokens=specials,
            merge_counts=[r.count for r in history],
            history=list(history) if keep_history else [],
            stopped_early=stopped_early,
        )

    @staticmethod
    # the one named exception to the complexity ceiling: the fast trainer is one algorithm, kept as one loop
    def train_steps(text: str, num_merges: int, split_pattern: str | None = "gpt4", record: bool = False):  # noqa: C901 - one loop
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

        heap = [(-count, where[0], pair) for pair, count, where in ((p, c, places[p]) for p, c in counts.items())]
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
            top: tuple[tuple[tuple[int, int], int], ...] = ()
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
            for i in places[pair][checked[pair] :]:  # ascending: left to right, like merge()
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
        allowed = allowed_specials(allowed_special, self.special_tokens)
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
        return tiktoken.Encoding(
            name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=dict(self.special_tokens)
        )

    def to_dict(self) -> dict:
        return {
            "type": "byte-bpe",
            "version": 1,
            "split_pattern": self.split_pattern,
            "special_tokens": self.special_tokens,
            "merges": [
                {
                    "rank": rank,
                    "pair": list(pair),
                    "new_id": new_id,
                    "count": self.merge_counts[rank] if rank < len(self.merge_counts) else None,
                    "token": printable(self.vocab[new_id]),
                }
                for rank, (pair, new_id) in enumerate(self.merges)
            ],
        }

    @classmethod
    def from_dict(cls, data: dict) -> BPETokenizer:
        if data.get("type") != "byte-bpe":
            raise TokenizerError("Not a byte-level BPE tokenizer file.")
        merges = [(tuple(m["pair"]), m["new_id"]) for m in data["merges"]]
        for rank, (pair, new_id) in enumerate(merges):
            if new_id != 256 + rank:
                raise TokenizerError(f"Merge {rank} creates id {new_id}; expected {256 + rank}.")
            if len(pair) != 2 or not all(type(part) is int and 0 <= part < new_id for part in pair):
                shown = ", ".join(map(str, pair))
                raise TokenizerError(
                    f"Merge {rank} joins tokens {shown}: a merge joins two tokens that exist before it "
                    f"(ids 0 to {new_id - 1:,})."
                )
        return cls(
            merges=merges,
            split_pattern=data.get("split_pattern"),
            special_tokens={k: int(v) for k, v in data.get("special_tokens", {}).items()},
            merge_counts=[m.get("count") or 0 for m in data["merges"]],
        )

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise TokenizerError(f"Cannot read tokenizer file {path}: {error}") from None
        return cls.from_dict(data)
