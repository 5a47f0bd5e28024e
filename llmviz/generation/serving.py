"""Serving a model: the KV cache's size, paged attention's block table, static vs continuous batching.

- **KV cache**: every layer keeps a key and a value vector (kv_heads · head_dim numbers each: d_model, or
  fewer with grouped-query attention) for every token already seen, so it grows by
  ``2 · n_layers · kv_heads · head_dim · bytes`` per token (:func:`kv_bytes_per_token`).
- **Paged attention** (vLLM, Kwon et al., 2023): the cache is cut into fixed blocks of ``block_size``
  tokens; each request has a *block table* listing which physical blocks hold its tokens, so
  requests grow without reserving their longest length up front (:class:`PagedKVCache`).
- **Batching**: a static batch starts together and ends with its longest request; continuous
  batching puts a waiting request into a slot as soon as one is free (:func:`serve`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal

import torch

from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT

Policy = Literal["static", "continuous"]  # how a batch's slots are refilled (serve)


def kv_bytes_per_token(model: GPT, bytes_per_value: int | None = None) -> int:
    """2 (key and value) · layers · kv_heads · head_dim · bytes per number (kv_heads · head_dim = d_model, or
    less with grouped-query attention: the cache keeps only the shared key/value heads).

    >>> from llmviz.models.presets import PRESETS
    >>> kv_bytes_per_token(GPT(PRESETS["gpt-nano"]))   # 2 · 2 layers · (2 heads · 16) · 4 bytes
    512
    >>> kv_bytes_per_token(GPT(PRESETS["llama-style"]))   # 2 · 4 layers · (2 of 4 heads · 32) · 4 bytes
    2048
    """
    return model.config.kv_cache_values_per_token * kv_bytes_per_value(model, bytes_per_value)


def kv_bytes_per_value(model: GPT, bytes_per_value: int | None = None) -> int:
    """Bytes per cached number: the model's own (4 for float32) unless given."""
    return next(model.parameters()).element_size() if bytes_per_value is None else bytes_per_value


@dataclass(frozen=True)
class KVGrowth:
    """The KV cache measured after every step of a greedy generation: tokens held, bytes, new token ids."""

    tokens: list[int]  # tokens in the cache after each step (prompt first, then one per new token)
    cache_bytes: list[int]  # bytes of every key and value tensor held then
    generated: list[int]  # the new token ids


@torch.no_grad()
def kv_growth(model: GPT, ids: list[int], new_tokens: int) -> KVGrowth:
    """Generate greedily with the KV cache and measure the cache's real tensors after every step."""
    if not ids:
        raise ConfigError("Give at least one prompt token.")
    room = model.config.context_length - len(ids)
    new_tokens = max(0, min(new_tokens, room))
    device = next(model.parameters()).device
    logits, past = model.forward_with_kv_cache(torch.tensor([ids], device=device))
    tokens, sizes, generated = [], [], []

    def measure() -> None:
        tokens.append(past[0][0].shape[2])
        sizes.append(sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in past))

    measure()
    for _ in range(new_tokens):
        generated.append(int(logits[0, -1].argmax()))
        logits, past = model.forward_with_kv_cache(torch.tensor([[generated[-1]]], device=device), past)
        measure()
    return KVGrowth(tokens, sizes, generated)


# ---------------------------------------------------------------------------- paged attention


class PagedKVCache:
    """Physical blocks of ``block_size`` token slots, handed out one at a time as requests grow.

    >>> cache = PagedKVCache(block_size=4, num_blocks=8)
    >>> for _ in range(5): cache.append("a")
    >>> for _ in range(3): cache.append("b")
    >>> cache.tables, cache.wasted_slots()   # "a" needs 2 blocks (5 tokens), "b" 1; 3 + 1 slots unused
    ({'a': [0, 1], 'b': [2]}, 4)
    """

    def __init__(self, block_size: int = 16, num_blocks: int = 64):
        if block_size < 1 or num_blocks < 1:
            raise ConfigError("The block size and the number of blocks must be at least 1.")
        self.block_size = block_size
        self.num_blocks = num_blocks
        self.free: list[int] = list(range(num_blocks))
        self.tables: dict[str, list[int]] = {}
        self.lengths: dict[str, int] = {}

    def append(self, request: str) -> None:
        """One more token for ``request``: a new block when its last one is full."""
        length = self.lengths.get(request, 0)
        if length % self.block_size == 0:
            if not self.free:
                raise ConfigError("The KV cache is out of blocks: a request must wait until another finishes.")
            self.tables.setdefault(request, []).append(self.free.pop(0))
        self.lengths[request] = length + 1

    def release(self, request: str) -> None:
        """A finished request gives its blocks back."""
        self.free = sorted(self.free + self.tables.pop(request, []))
        self.lengths.pop(request, None)

    def wasted_slots(self) -> int:
        return sum(len(t) * self.block_size - self.lengths[r] for r, t in self.tables.items())


def paged_tables(lengths: dict[str, int], block_size: int) -> PagedKVCache:
    """The block tables after the requests grew together, one token each per step, to their lengths."""
    cache = PagedKVCache(block_size, sum(math.ceil(n / block_size) for n in lengths.values()) or 1)
    for step in range(max(lengths.values(), default=0)):
        for request, length in lengths.items():
            if step < length:
                cache.append(request)
    return cache


# ---------------------------------------------------------------------------- batching


@dataclass
class Request:
    """One request to the serving engine, with its progress (slot, tokens generated, cache) as it runs."""

    name: str
    prompt: list[int]
    max_new_tokens: int
    generated: list[int] = field(default_factory=list)
    started: int | None = None  # engine step at which it got a slot
    finished: int | None = None  # engine step after which it was done
    started_s: float | None = None
    finished_s: float | None = None
    past: list | None = None

    @property
    def done(self) -> bool:
        return len(self.generated) >= self.max_new_tokens

    def result(self) -> RequestResult:
        """What the request got, once :func:`serve` has finished it."""
        if self.started is None or self.finished is None or self.started_s is None or self.finished_s is None:
            raise RuntimeError(f"request {self.name!r} has not finished")
        return RequestResult(self.name, self.generated, self.started, self.finished, self.started_s, self.finished_s)


@dataclass(frozen=True)
class RequestResult:
    """What one request got from :func:`serve`: its tokens, and when it started and finished (steps, seconds)."""

    name: str
    tokens: list[int]
    wait_steps: int  # steps before it got a slot (all requests arrive at step 0)
    finish_step: int
    wait_s: float
    finish_s: float

    @property
    def tokens_per_s(self) -> float:
        """What the request saw: its tokens over the time from its arrival (all arrive at 0) to its last token.

        >>> RequestResult("r", [5, 6, 7, 8], 1, 4, 0.5, 2.0).tokens_per_s
        2.0
        """
        return len(self.tokens) / max(self.finish_s, 1e-9)


@dataclass(frozen=True)
class ServeResult:
    """One :func:`serve` run: the policy, the slots, every request's result, steps, time and useful tokens."""

    policy: str
    slots: int
    requests: list[RequestResult]
    steps: int  # engine steps until every request finished
    busy_slot_steps: int  # slot-steps that produced a wanted token
    seconds: float
    useful_tokens: int

    @property
    def tokens_per_s(self) -> float:
        return self.useful_tokens / max(self.seconds, 1e-9)

    @property
    def utilisation(self) -> float:
        return self.busy_slot_steps / max(1, self.steps * self.slots)


@torch.no_grad()
def _advance(model: GPT, request: Request, device) -> None:
    """One real forward pass for ``request``: its prompt the first time, then its last token."""
    if request.past is None:
        ids = torch.tensor([request.prompt[-model.config.context_length :]], device=device)
        logits, request.past = model.forward_with_kv_cache(ids)
    else:
        ids = torch.tensor([[request.generated[-1]]], device=device)
        logits, request.past = model.forward_with_kv_cache(ids, request.past)
    request.generated.append(int(logits[0, -1].argmax()))


def serve(
    model: GPT, prompts: dict[str, list[int]], new_tokens: dict[str, int], slots: int, policy: Policy = "continuous"
) -> ServeResult:
    """Generate greedily for every request with ``slots`` slots, under a ``static`` or ``continuous`` policy.

    Every engine step runs one real forward pass per occupied slot. In a static batch a finished request
    keeps its slot (padding: the batch still computes it) until the whole batch is done.
    """
    _check_requests(model, prompts, new_tokens, slots, policy)
    device = next(model.parameters()).device
    waiting = [Request(name, prompts[name], new_tokens[name]) for name in prompts]
    running: list[Request] = []
    finished: list[Request] = []
    step, busy = 0, 0
    start = time.perf_counter()
    while waiting or running:
        running = _fill_slots(running, waiting, slots, policy)
        for request in running:
            if request.started is None:
                request.started, request.started_s = step, time.perf_counter() - start
            if request.done:  # padding in a static batch: a decode step computed, then thrown away
                model.forward_with_kv_cache(torch.tensor([[request.generated[-1]]], device=device), request.past)
                continue
            _advance(model, request, device)
            busy += 1
            if request.done:
                request.finished, request.finished_s = step + 1, time.perf_counter() - start
                finished.append(request)
        step += 1
        running = _release_slots(running, policy)
    seconds = time.perf_counter() - start
    order = {name: i for i, name in enumerate(prompts)}
    results = [r.result() for r in sorted(finished, key=lambda r: order[r.name])]
    return ServeResult(policy, slots, results, step, busy, seconds, sum(len(r.tokens) for r in results))


def _check_requests(model: GPT, prompts: dict[str, list[int]], new_tokens: dict[str, int], slots: int, policy: str):
    if policy not in ("static", "continuous"):
        raise ConfigError("policy must be 'static' or 'continuous'")
    if slots < 1:
        raise ConfigError("There must be at least one slot.")
    for name, prompt in prompts.items():
        room = model.config.context_length - len(prompt[-model.config.context_length :])
        if not prompt or new_tokens[name] < 1 or new_tokens[name] > room:
            raise ConfigError(f"Request {name}: it needs a prompt and 1 to {room} new tokens.")


def _fill_slots(running: list[Request], waiting: list[Request], slots: int, policy: str) -> list[Request]:
    """Continuous: a free slot takes the next waiting request at once. Static: a new batch starts only when the whole
    batch before it is done."""
    if policy == "continuous":
        running = [r for r in running if not r.done]
    elif not all(r.done for r in running):
        return running
    elif running:
        running = []
    while waiting and len(running) < slots:
        running.append(waiting.pop(0))
    return running


def _release_slots(running: list[Request], policy: str) -> list[Request]:
    """After an engine step: continuous batching frees a finished request's slot and its cache at once; a static
    batch gives its slots back only when every request in it is done."""
    if policy == "continuous":
        for request in running:
            if request.done:
                request.past = None  # its cache is freed at once
        return [r for r in running if not r.done]
    return [] if all(r.done for r in running) else running
