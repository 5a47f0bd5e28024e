"""The numbers the Serving page shows (``stages/serving.py``, drawn by ``ui/panels/serving.py``): the KV cache growing
while the model writes, paged attention's block tables and the batching comparison, with the page's own settings,
from :mod:`llmviz.generation.serving` (batching's repeated runs: :func:`batching_steps`, a lab task).

>>> parse_lengths("13, 5, 22")
[13, 5, 22]
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Generator
from dataclasses import dataclass

from llmviz.adapt import finetune
from llmviz.generation import serving
from llmviz.generation.serving import KVGrowth, PagedKVCache
from llmviz.lessons import adapting, words
from llmviz.lessons.quiz import Question
from llmviz.models.gpt import GPT
from llmviz.tokenizers.base import Tokenizer
from llmviz.tokenizers.ids import encode

GROWTH_TOKENS = 60  # written while the KV cache is measured
WANTED = (24, 4, 16, 6, 10, 4)  # new tokens each of the six requests wants
BLOCKS_PER_ROW = 16  # physical blocks drawn in one row
MAX_REQUESTS = 12
MAX_LENGTH = 4096


def questions(model: GPT, tokenizer, prompt: str) -> list[Question]:
    """The KV-cache question of the adapting questions (the Serving page asks it; the Adapt page the others)."""
    return [q for q in adapting.adapt_questions(model, tokenizer, prompt) if q.kind == "kv-bytes"]


def growth(model: GPT, tokenizer, prompt: str, new_tokens: int = GROWTH_TOKENS) -> KVGrowth:
    """The KV cache measured after every step of a greedy generation from ``prompt`` (its last half-context)."""
    ids = encode(tokenizer, prompt) or [0]
    return serving.kv_growth(model, ids[-model.config.context_length // 2 :], new_tokens)


def bytes_per_token(model: GPT) -> int:
    """2 (key and value) · layers · key/value heads · head size · bytes per number."""
    return serving.kv_bytes_per_token(model)


def bytes_per_value(model: GPT) -> int:
    return serving.kv_bytes_per_value(model)


GROWTH_RANGE = (10, 120)  # tokens a student may have the model write while the cache is measured
#: Other ways to store the same cache, drawn beside the measured one: what each would keep per token.
VARIANTS = {
    "bf16": "bfloat16 (2 bytes a number)",
    "mqa": "one key/value head (multi-query)",
}


def variant_bytes_per_token(model: GPT, variant: str) -> int:
    """What the KV cache of ``model`` would keep per token stored another way (:data:`VARIANTS`): 2 · layers ·
    key/value heads · head size · bytes per number, with one factor changed.

    >>> from llmviz.models.gpt import GPT, GPTConfig
    >>> model = GPT(GPTConfig(vocab_size=10, context_length=8, d_model=16, n_heads=4, n_layers=2))
    >>> bytes_per_token(model), variant_bytes_per_token(model, "bf16"), variant_bytes_per_token(model, "mqa")
    (256, 128, 64)
    """
    config = model.config
    if variant == "bf16":
        return 2 * config.n_layers * config.kv_heads * config.head_dim * 2
    if variant == "mqa":
        return 2 * config.n_layers * 1 * config.head_dim * bytes_per_value(model)
    raise ValueError(f"no such variant: {variant!r} (one of {', '.join(VARIANTS)})")


def parse_lengths(text: str) -> list[int]:
    """Request lengths typed as comma-separated whole numbers: 1 to :data:`MAX_REQUESTS` of them, each from 1 to
    :data:`MAX_LENGTH`; anything else is a ValueError.

    >>> parse_lengths("4,0")
    Traceback (most recent call last):
    ...
    ValueError: Give 1 to 12 whole numbers from 1 to 4096, separated by commas.
    """
    message = f"Give 1 to {MAX_REQUESTS} whole numbers from 1 to {MAX_LENGTH}, separated by commas."
    try:
        lengths = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise ValueError(message) from None
    if not lengths or any(n < 1 or n > MAX_LENGTH for n in lengths) or len(lengths) > MAX_REQUESTS:
        raise ValueError(message)
    return lengths


def paged(lengths: list[int], block_size: int) -> PagedKVCache:
    """The block tables of requests named "request 1", "request 2", … grown together to ``lengths``."""
    return serving.paged_tables({f"request {i + 1}": n for i, n in enumerate(lengths)}, block_size)


def table_rows(cache: PagedKVCache) -> list[dict]:
    """Each request's tokens, block table and unused slots (only ever in its last block).

    >>> table_rows(paged([5], 4))
    [{'request': 'request 1', 'tokens': 5, 'block table': [0, 1], 'unused slots': 3}]
    """
    return [
        {
            "request": name,
            "tokens": cache.lengths[name],
            "block table": table,
            "unused slots": len(table) * cache.block_size - cache.lengths[name],
        }
        for name, table in cache.tables.items()
    ]


def block_grid(cache: PagedKVCache, width: int = BLOCKS_PER_ROW) -> tuple[list[list[int | None]], list[list[str]]]:
    """The physical blocks ``width`` to a row: the number (1, 2, …) of the request owning each (None: free), and the
    label written in it.

    >>> grid, labels = block_grid(paged([5, 2], 4), width=4)
    >>> grid, labels
    ([[1, 2, 1, None]], [['1', '2', '1', '']])
    """
    names = list(cache.tables)
    owner = {block: names[i] for i, table in enumerate(cache.tables.values()) for block in table}
    rows = -(-cache.num_blocks // width)
    blocks = [[r * width + c for c in range(width)] for r in range(rows)]
    grid = [[names.index(owner[b]) + 1 if b in owner else None for b in row] for row in blocks]
    labels = [[owner[b].split()[-1] if b in owner else "" for b in row] for row in blocks]
    return grid, labels


def is_quick(model: GPT) -> bool:
    """A model small enough to serve the six requests in the page's run (a larger one waits for a button)."""
    return model.num_parameters() <= adapting.QUICK_PARAMETERS


def policy_rows(found: Batching) -> list[dict]:
    """Each policy's steps, slot use, useful tokens and tokens/s (a median of the repeats, with its spread)."""
    return [
        {
            "policy": policy,
            "steps": result.steps,
            "slot use": f"{result.utilisation:.0%}",
            "tokens": result.useful_tokens,
            "tokens/s: median (lowest–highest)": found.rates[policy].text(),
        }
        for policy, result in found.results.items()
    ]


# ---------------------------------------------------------------------------- batching, measured


def batching_requests(
    model: GPT, tokenizer: Tokenizer, lengths: tuple[int, ...]
) -> tuple[dict[str, list[int]], dict[str, int]]:
    """The requests both policies serve: prompts from the held-out names ("Mary is"), and how many tokens each
    wants (at most what the model's context leaves)."""
    model = adapting.require_gpt(model)
    _, held = finetune.name_examples()
    prompts, wanted = {}, {}
    for i, length in enumerate(lengths):
        name = f"request {i + 1}"
        prompts[name] = encode(tokenizer, f"{held[i].text} is")[-model.config.context_length // 2 :]
        wanted[name] = max(1, min(length, model.config.context_length - len(prompts[name])))
    return prompts, wanted


def batching(model: GPT, tokenizer: Tokenizer, slots: int, lengths: tuple[int, ...]) -> dict[str, serving.ServeResult]:
    """The same requests (prompts from the held-out names, different lengths) under both policies."""
    prompts, wanted = batching_requests(model, tokenizer, lengths)
    return {policy: serving.serve(model, prompts, wanted, slots, policy) for policy in ("static", "continuous")}


@dataclass(frozen=True)
class Rate:
    """A speed measured several times: the median and the spread (lowest, highest) of the repeats."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def text(self) -> str:
        """The median with its spread.

        >>> Rate((310.0, 290.0, 305.4)).text()
        '305 (290–310, 3 runs)'
        """
        return f"{self.median:,.0f} ({self.low:,.0f}–{self.high:,.0f}, {len(self.values)} runs)"


@dataclass(frozen=True)
class Batching:
    """Both policies on the same requests: each policy's first run (its schedule: steps, waits, finishes, the same
    in every repeat) and its tokens/s over every repeat (wall-clock: it varies from run to run)."""

    results: dict[str, serving.ServeResult]
    rates: dict[str, Rate]
    repeats: int


BATCHING_REPEATS = 5


def batching_steps(
    should_stop: Callable[[], bool],
    model: GPT,
    tokenizer: Tokenizer,
    slots: int,
    lengths: tuple[int, ...],
    repeats: int = BATCHING_REPEATS,
) -> Generator[tuple[int, float], None, Batching | None]:
    """Serve the requests under both policies ``repeats`` times, alternating (so a busy moment of the machine
    slows both alike): a task loop, one repeat per yield. The schedule is the same every time (greedy decoding,
    the same slots); only the seconds differ, which is why the tokens/s are a median with their spread."""
    prompts, wanted = batching_requests(model, tokenizer, lengths)
    first: dict[str, serving.ServeResult] = {}
    seen: dict[str, list[float]] = {"static": [], "continuous": []}
    for repeat in range(1, repeats + 1):
        for policy in ("static", "continuous"):
            result = serving.serve(model, prompts, wanted, slots, policy)
            first.setdefault(policy, result)
            seen[policy].append(result.tokens_per_s)
        yield repeat, float("nan")
        if should_stop():
            return None
    return Batching(first, {policy: Rate(tuple(values)) for policy, values in seen.items()}, repeats)


def kv_growth_words(tokens: list[int], measured: list[int], per_token: int, others: dict[str, int]) -> str:
    """The KV cache's chart in words: what the cache holds after the last token, what the formula gives (its bytes a
    token times the tokens), and the same cache stored each other way (``others``: name → bytes a token).

    >>> kv_growth_words([5, 6, 7], [3_000, 3_600, 4_200], 600, {"bfloat16": 300}).split(". ")
    ['After 7 tokens the cache holds 4,200 bytes; the formula, 600 bytes a token, gives 4,200', \
'Stored as bfloat16: 2,100 bytes.']
    """
    said = (
        f"After {tokens[-1]} tokens the cache holds {words.number(measured[-1])} bytes; the formula, "
        f"{words.number(per_token)} bytes a token, gives {words.number(per_token * tokens[-1])}."
    )
    stored = [f"{name}: {words.number(each * tokens[-1])} bytes" for name, each in others.items()]
    return said + (f" Stored as {'; as '.join(stored)}." if stored else "")


def blocks_words(grid: list[list[int | None]], most: int = 6) -> str:
    """The physical blocks' chart in words (:func:`block_grid`'s grid: the number of the request owning each block,
    ``width`` to a row): how many blocks the requests hold, and each request's blocks (the first ``most`` requests),
    which need not be next to each other.

    >>> blocks_words([[1, 2, 1, None]])
    '3 blocks held by 2 requests: request 1 blocks 0 and 2; request 2 block 1.'
    """
    owned: dict[int, list[int]] = {}
    for index, owner in enumerate(cell for row in grid for cell in row):
        if owner is not None:
            owned.setdefault(int(owner), []).append(index)
    if not owned:
        return "No block is held."
    named = [
        f"request {owner} block{'s' if len(blocks) > 1 else ''} {words.listed([str(b) for b in blocks])}"
        for owner, blocks in sorted(owned.items())[:most]
    ]
    more = f"; and {len(owned) - most} more requests" if len(owned) > most else ""
    held = sum(len(blocks) for blocks in owned.values())
    return f"{held} blocks held by {len(owned)} requests: {'; '.join(named)}{more}."


def batching_words(policies: dict[str, tuple[list[int], list[int]]]) -> str:
    """The batching chart in words (``policies``: each policy's waits and finishing steps, one per request): for each
    policy the step its last request finished, its longest wait and its mean wait.

    >>> batching_words({"static": ([0, 0, 3, 3], [3, 2, 5, 6]), "continuous": ([0, 0, 2, 3], [3, 2, 4, 6])})
    'static: the last request finished at step 6, the longest wait 3 steps, the mean wait 1.5; continuous: the \
last request finished at step 6, the longest wait 3 steps, the mean wait 1.25.'
    """
    said = [
        f"{policy}: the last request finished at step {max(finishes)}, the longest wait {max(waits)} steps, "
        f"the mean wait {words.number(sum(waits) / len(waits))}"
        for policy, (waits, finishes) in policies.items()
        if waits
    ]
    return "; ".join(said) + "." if said else "No request served."
