"""Choosing the next token, one transform at a time, and generating text with it.

The steps, in the order ``next_token_distribution`` applies them:

1. ``softmax(logits)`` — the model's raw distribution.
2. ``apply_temperature(logits, T)`` — divide logits by T. T < 1 sharpens, T > 1 flattens;
   **T = 0 means greedy**: all probability on the most likely token (the first one on a tie).
   Temperatures below ``GREEDY_BELOW`` (0.001) are greedy too: dividing by a smaller number
   overflows float32 logits to infinity.
3. ``top_k_filter(logits, k)`` — keep the k largest logits. **k = 0 means off**, and k at or
   above the vocabulary size cuts nothing. Ties at the boundary: every token whose logit
   equals the k-th largest is kept, so a tie can leave more than k tokens.
4. ``top_p_filter(logits, p)`` — keep the smallest set of most likely tokens whose
   probabilities add up to at least p (nucleus sampling). p must be in (0, 1]; **p = 1 means
   off**; the most likely token is always kept.

Negative, NaN or infinite temperatures, and NaN or infinite logits, are errors with a clear
message: nothing NaN ever reaches the sampler.

>>> import torch
>>> logits = torch.tensor([2.0, 1.0, 0.0])
>>> softmax(logits).round(decimals=4)
tensor([0.6652, 0.2447, 0.0900])
>>> softmax(apply_temperature(logits, 0.0)).tolist()
[1.0, 0.0, 0.0]
>>> top_k_filter(logits, 2).tolist()
[2.0, 1.0, -inf]
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

import torch
import torch.nn as nn

from llmviz.device import fresh_seed
from llmviz.errors import LlmvizError
from llmviz.tokenizers.base import ENDOFTEXT, Tokenizer
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.tokenizers.char_word import CharTokenizer


class SamplingError(LlmvizError, ValueError):
    """An argument the sampler cannot use."""


GREEDY_BELOW = 1e-3  # temperatures below this are greedy (T = 0)
MAX_BEAM_WIDTH = 64  # beam search runs one forward pass per beam per token: wider is minutes of work
MAX_VISIBLE_TOKENS = 512  # the most tokens any model is shown, even one without a fixed context (an RNN)


# ---------------------------------------------------------------------------- the pure steps


def check_logits(logits: torch.Tensor) -> torch.Tensor:
    if not torch.isfinite(logits).all():
        bad = int((~torch.isfinite(logits)).sum())
        raise SamplingError(f"{bad} logit(s) are NaN or infinite: the model's output is broken, nothing was sampled.")
    return logits


def check_temperature(temperature: float) -> float:
    if not isinstance(temperature, int | float) or math.isnan(temperature) or math.isinf(temperature):
        raise SamplingError(f"The temperature must be a finite number ≥ 0 (got {temperature}).")
    if temperature < 0:
        raise SamplingError(f"The temperature cannot be negative (got {temperature}); 0 means greedy.")
    return float(temperature)


def is_greedy(temperature: float) -> bool:
    """T = 0, or any temperature below :data:`GREEDY_BELOW`, picks the most likely token.

    >>> is_greedy(0.0), is_greedy(1e-45), is_greedy(0.05)
    (True, True, False)
    """
    return check_temperature(temperature) < GREEDY_BELOW


def softmax(logits: torch.Tensor) -> torch.Tensor:
    """Probabilities from logits; ``-inf`` logits get exactly 0."""
    return torch.softmax(logits.double(), dim=-1).to(logits.dtype)


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logits / T``; for T = 0 (or below :data:`GREEDY_BELOW`), ``-inf`` everywhere but the
    (first) largest logit.

    >>> apply_temperature(torch.tensor([1.0, 3.0]), 1e-45).tolist()
    [-inf, 3.0]
    """
    check_logits(logits)
    if is_greedy(temperature):
        best = logits.argmax(dim=-1, keepdim=True)
        return torch.full_like(logits, float("-inf")).scatter(-1, best, logits.gather(-1, best))
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` largest logits (and any tied with the k-th); 0 or k ≥ vocabulary = no cut."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise SamplingError(f"top-k must be a whole number ≥ 0 (got {k}); 0 turns it off.")
    if k == 0 or k >= logits.shape[-1]:
        return logits
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth_largest, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the most likely tokens until their probabilities reach ``p``; p = 1 = no cut.

    The most likely token is always kept, however small ``p`` is:

    >>> top_p_filter(torch.tensor([0.0, 2.0, 1.0]), 1e-300).tolist()
    [-inf, 2.0, -inf]
    """
    if not isinstance(p, int | float) or math.isnan(p) or not (0.0 < p <= 1.0):
        raise SamplingError(f"top-p must be in (0, 1] (got {p}); 1 turns it off.")
    if p >= 1.0:
        return logits
    probabilities = torch.softmax(logits.double(), dim=-1)  # float64: a p as small as 1e-300 stays above 0
    # ordered by logit, not by a float32 probability: nearly equal tokens (a high temperature) keep their order,
    # so the kept tokens are always the most likely ones; tied logits keep their vocabulary order
    order = torch.argsort(logits, dim=-1, descending=True, stable=True)
    sorted_probs = probabilities.gather(-1, order)
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # probability of the tokens ahead
    remove_sorted = mass_before >= p
    remove_sorted[..., 0] = False  # the most likely token always stays (HF's min_tokens_to_keep=1), whatever p is
    remove = torch.zeros_like(remove_sorted).scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, float("-inf"))


def entropy(probabilities: torch.Tensor) -> float:
    """Shannon entropy in nats: −Σ p·ln p (0·ln 0 counts as 0)."""
    p = probabilities.double()
    return float(-(p * torch.where(p > 0, p.log(), torch.zeros_like(p))).sum(-1))


def greedy(probabilities: torch.Tensor) -> int:
    return int(probabilities.argmax(dim=-1))


def sample(probabilities: torch.Tensor, generator: torch.Generator | None = None) -> int:
    return int(torch.multinomial(probabilities.double(), 1, generator=generator))


@dataclass
class Distribution:
    """Every stage of turning logits into the distribution that is sampled from."""

    logits: torch.Tensor
    raw_probs: torch.Tensor
    temperature_logits: torch.Tensor
    temperature_probs: torch.Tensor
    top_k_logits: torch.Tensor
    top_k_probs: torch.Tensor
    final_logits: torch.Tensor
    final_probs: torch.Tensor
    temperature: float
    top_k: int
    top_p: float

    @property
    def entropies(self) -> dict[str, float]:
        return {
            "raw softmax": entropy(self.raw_probs),
            "after temperature": entropy(self.temperature_probs),
            "after top-k": entropy(self.top_k_probs),
            "after top-p": entropy(self.final_probs),
        }

    @property
    def kept(self) -> int:
        return int((self.final_probs > 0).sum())


def next_token_distribution(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0
) -> Distribution:
    """Chain temperature → top-k → top-p on a 1-D logits vector, keeping every intermediate."""
    logits = check_logits(logits.detach().float().cpu())
    scaled = apply_temperature(logits, temperature)
    after_k = top_k_filter(scaled, top_k)
    final = top_p_filter(after_k, top_p)
    return Distribution(
        logits=logits,
        raw_probs=softmax(logits),
        temperature_logits=scaled,
        temperature_probs=softmax(scaled),
        top_k_logits=after_k,
        top_k_probs=softmax(after_k),
        final_logits=final,
        final_probs=softmax(final),
        temperature=float(temperature),
        top_k=top_k,
        top_p=float(top_p),
    )


# ---------------------------------------------------------------------------- generation


def context_length(model: nn.Module) -> int:
    """How many tokens the model was built to see (its context length, or window)."""
    return int(getattr(model, "context_length", 256) or 256)


def visible_tokens(model: nn.Module) -> int:
    """How many tokens the model is shown, at most: its context, capped at :data:`MAX_VISIBLE_TOKENS`.

    The one rule for prompts, generation, beam search and the next-token bars.
    """
    return max(1, min(context_length(model), MAX_VISIBLE_TOKENS))


def shift_keep(model: nn.Module) -> int:
    """How many tokens the window keeps when the text outgrows :func:`visible_tokens`.

    Models with a KV cache (attention) keep the last half, so the cache is rebuilt once and
    then reused for half a context ("context shift"); every other model slides by one token,
    so it always sees the last ``visible_tokens`` tokens.
    """
    limit = visible_tokens(model)
    return max(1, limit // 2) if _supports_kv_cache(model) else limit


def crop(ids: list[int], model: nn.Module) -> list[int]:
    """The last tokens the model can see (:func:`visible_tokens`)."""
    return list(ids)[-visible_tokens(model) :]


@dataclass
class PromptEncoding:
    """A prompt as the model receives it, with what was dropped, cropped or added on the way."""

    ids: list[int]  # what the model is given (after dropping, the start token, and cropping)
    dropped: list[str] = field(default_factory=list)  # characters the tokenizer could not encode
    cropped: int = 0  # tokens cut from the front to fit the context
    start_token: str | None = None  # the token used when the prompt was empty
    kept_text: str = ""  # the prompt without the dropped characters (what generation echoes)


def encode_prompt(tokenizer: Tokenizer, prompt: str, model: nn.Module | None = None) -> PromptEncoding:
    """Encode a prompt, dropping (and reporting) characters a character vocabulary lacks,
    starting from the boundary token when nothing is left, and cropping to what the model
    sees (:func:`crop`)."""
    dropped: list[str] = []
    kept_text = prompt
    if isinstance(tokenizer, CharTokenizer):
        dropped = tokenizer.unknown_characters(prompt)
        ids = tokenizer.encode(prompt, errors="skip")
        kept_text = "".join(c for c in prompt if c not in set(dropped))
    else:
        ids = tokenizer.encode(prompt)
    start = None
    if not ids:
        ids, start = boundary_token(tokenizer)
        kept_text = ""
    cropped = 0
    if model is not None:
        visible = crop(ids, model)
        cropped, ids = len(ids) - len(visible), visible
    return PromptEncoding(ids=ids, dropped=dropped, cropped=cropped, start_token=start, kept_text=kept_text)


def boundary_token(tokenizer: Tokenizer) -> tuple[list[int], str]:
    if isinstance(tokenizer, BPETokenizer) and ENDOFTEXT in tokenizer.special_tokens:
        return [tokenizer.special_tokens[ENDOFTEXT]], ENDOFTEXT
    if isinstance(tokenizer, CharTokenizer) and "\n" in tokenizer.stoi:
        return [tokenizer.stoi["\n"]], "↵ (newline)"
    encoding = getattr(tokenizer, "encoding", None)  # GPT-2's own tokenizer (tiktoken) starts texts with <|endoftext|>
    if encoding is not None and ENDOFTEXT in encoding.special_tokens_set:
        return [encoding.encode_single_token(ENDOFTEXT)], ENDOFTEXT
    return [0], tokenizer.printable(0)


@dataclass
class StepRecord:
    """One generated token: the step, the token and its probability, the whole distribution, and the ten most likely."""

    step: int
    token: int
    probability: float  # of the chosen token under the model's own distribution (softmax of the logits, T = 1)
    distribution: Distribution
    top: list[tuple[int, float]]  # the model's 10 most likely tokens (T = 1), those of ≥ TOP_FLOOR probability
    drawn_probability: float = 1.0  # of the chosen token under the final distribution it was drawn from

    @property
    def runner_ups(self) -> list[tuple[int, float]]:
        """The model's most likely tokens other than the chosen one (``top`` less the token itself)."""
        return [(token, p) for token, p in self.top if token != self.token]


TOP_FLOOR = 0.005  # a runner-up shown beside a token has at least this probability (it rounds to 0.01, not 0.00)


def most_likely(probabilities: torch.Tensor, count: int = 10, floor: float = TOP_FLOOR) -> list[tuple[int, float]]:
    """The ``count`` most likely tokens of a (V,) distribution with at least ``floor`` probability: greedy decoding
    once listed control bytes at p = 0.00 as "top alternatives".

    >>> most_likely(torch.tensor([0.5, 0.001, 0.3, 0.199]), count=3)
    [(0, 0.5), (2, 0.30000001192092896), (3, 0.19900000095367432)]
    >>> most_likely(torch.tensor([0.998, 0.001, 0.001]))
    [(0, 0.9980000257492065)]
    """
    values, indices = torch.topk(probabilities, min(count, probabilities.shape[-1]))
    return [(token, p) for token, p in zip(indices.tolist(), values.tolist()) if p >= floor]


def _supports_kv_cache(model: nn.Module) -> bool:
    return hasattr(model, "forward_with_kv_cache")


@torch.no_grad()
def generate(
    model: nn.Module,
    ids: list[int],
    max_new_tokens: int = 50,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = 0,
    use_kv_cache: bool = True,
    forced: dict[int, int] | None = None,
    generator: torch.Generator | None = None,
) -> Iterator[StepRecord]:
    """Yield one record per generated token. ``forced`` maps a step to a token to take instead.

    Sampling draws from ``generator`` when given (a view's own stream, which it advances), else from a fresh
    one seeded with ``seed`` (``None``: unseeded). Never from torch's global generator, which every session of
    the server shares.

    The model sees at most :func:`visible_tokens`. When the text outgrows that, the window
    keeps :func:`shift_keep` tokens: the last half for models with a KV cache (a "context
    shift", the same with or without the cache, so both give the same tokens; after a shift the
    cache is rebuilt once and reused again), the last ``visible_tokens`` for every other model
    (a fixed-window model such as the MLP always gets its full window).
    """
    check_temperature(temperature)
    top_k_filter(torch.zeros(2), top_k)
    top_p_filter(torch.zeros(2), top_p)
    was_training = model.training
    model.eval()
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    if generator is None:
        generator = torch.Generator().manual_seed(fresh_seed() if seed is None else seed)
    sequence = list(ids)
    limit, keep = visible_tokens(model), shift_keep(model)
    start = max(0, len(sequence) - limit)  # the window the model sees is sequence[start:]
    cached = use_kv_cache and _supports_kv_cache(model)
    past = None
    try:
        for step in range(max_new_tokens):
            if len(sequence) - start > limit:
                # context shift: the same rule with or without the cache, so both paths always
                # see the same tokens
                start = len(sequence) - keep
                past = None
            window = sequence[start:]
            if cached:
                new = window if past is None else window[-1:]
                logits, past = model.forward_with_kv_cache(  # type: ignore[operator]  # a GPT (checked above)
                    torch.tensor([new], device=device), past
                )
            else:
                logits, _ = model(torch.tensor([window], device=device))
            distribution = next_token_distribution(logits[0, -1], temperature, top_k, top_p)
            probs = distribution.final_probs
            if forced and step in forced:
                token = forced[step]
            elif is_greedy(temperature):
                token = greedy(probs)
            else:
                token = sample(probs, generator)
            model_probs = distribution.raw_probs  # (V,) the model's own distribution, whatever was drawn from
            yield StepRecord(
                step=step,
                token=token,
                probability=float(model_probs[token]),
                distribution=distribution,
                top=most_likely(model_probs),
                drawn_probability=float(probs[token]),
            )
            sequence.append(token)
    finally:
        model.train(was_training)


@dataclass
class GeneratedText:
    """The result of :func:`generate_from_prompt`: the prompt as the model got it, and what it wrote."""

    prompt: PromptEncoding
    new_text: str
    records: list[StepRecord]

    @property
    def text(self) -> str:
        """The prompt (without characters the model lacks) followed by the generated text."""
        return self.prompt.kept_text + self.new_text

    def notes(self) -> list[str]:
        """What a reader should know about the prompt: dropped characters, a cut, the start token."""
        notes = []
        if self.prompt.dropped:
            notes.append(
                "The model's vocabulary has no "
                + ", ".join(repr(c) for c in self.prompt.dropped)
                + ": left out of the prompt."
            )
        if self.prompt.cropped:
            notes.append(
                f"The prompt's first {self.prompt.cropped} token(s) were cut: the model sees at most "
                f"{len(self.prompt.ids)}."
            )
        if self.prompt.start_token is not None:
            notes.append(f"Nothing of the prompt was left: generation started from {self.prompt.start_token}.")
        return notes


def generate_from_prompt(
    model: nn.Module,
    tokenizer: Tokenizer,
    prompt: str = "",
    max_new_tokens: int = 100,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = 0,
    generator: torch.Generator | None = None,
) -> GeneratedText:
    """Encode ``prompt`` (:func:`encode_prompt`), generate, and keep both for display."""
    encoded = encode_prompt(tokenizer, prompt, model)
    records = list(generate(model, encoded.ids, max_new_tokens, temperature, top_k, top_p, seed, generator=generator))
    return GeneratedText(prompt=encoded, new_text=tokenizer.decode([r.token for r in records]), records=records)


def generate_text(
    model: nn.Module,
    tokenizer: Tokenizer,
    prompt: str = "",
    max_new_tokens: int = 100,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = 0,
    generator: torch.Generator | None = None,
) -> str:
    """The prompt (without characters the model lacks) and its continuation, as one string."""
    return generate_from_prompt(
        model, tokenizer, prompt, max_new_tokens, temperature, top_k, top_p, seed, generator=generator
    ).text


@dataclass
class NextTokenView:
    """What the Sampling page draws for the next token: the prompt as the model got it, every
    stage of the distribution, and the ids of the tokens the raw model likes most."""

    prompt: PromptEncoding
    distribution: Distribution
    shown: list[int]  # the ``count`` most likely ids under the raw softmax, best first


@torch.no_grad()
def next_token_view(
    model: nn.Module,
    tokenizer: Tokenizer,
    prompt: str,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    count: int = 15,
) -> NextTokenView:
    """One forward pass on the model's own device: the distribution of the token after ``prompt``."""
    encoded = encode_prompt(tokenizer, prompt, model)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    was_training = model.training
    model.eval()
    try:
        logits, _ = model(torch.tensor([encoded.ids], device=device))  # (1, T, V)
    finally:
        model.train(was_training)
    distribution = next_token_distribution(logits[0, -1], temperature, top_k, top_p)
    shown = torch.topk(distribution.raw_probs, min(count, distribution.raw_probs.shape[-1])).indices.tolist()
    return NextTokenView(prompt=encoded, distribution=distribution, shown=shown)


# ---------------------------------------------------------------------------- beam search


@dataclass
class BeamNode:
    """A node of the beam-search tree: its token, parent, log-probabilities and whether it survived the cut."""

    node_id: int
    parent: int | None
    token: int | None
    log_prob: float  # of this token given its parent
    score: float  # cumulative log-probability of the path
    depth: int
    kept: bool = False  # survived the cut to the beam width at its depth


@dataclass
class BeamResult:
    """Beam search's answer: the best continuation, its score, and every node of the tree it explored."""

    tokens: list[int]  # the best continuation (without the prompt)
    score: float
    nodes: list[BeamNode]


@torch.no_grad()
def beam_search(model: nn.Module, ids: list[int], width: int = 3, max_new_tokens: int = 10) -> BeamResult:
    """Keep the ``width`` most likely continuations at every depth (scored by summed log-probability).

    Returns the best one and the explored tree: every expanded candidate, with ``kept`` telling
    which survived. Width 1 is greedy decoding.
    """
    if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= MAX_BEAM_WIDTH:
        raise SamplingError(
            f"The beam width must be a whole number from 1 to {MAX_BEAM_WIDTH} (got {width}): "
            "every beam costs one forward pass per new token."
        )
    was_training = model.training
    model.eval()
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    nodes = [BeamNode(0, None, None, 0.0, 0.0, 0, kept=True)]
    beams: list[tuple[float, list[int], int]] = [(0.0, [], 0)]  # (score, tokens, node_id)
    try:
        for depth in range(1, max_new_tokens + 1):
            candidates = []
            for score, tokens, node_id in beams:
                window = crop(list(ids) + tokens, model)
                logits, _ = model(torch.tensor([window], device=device))
                log_probs = torch.log_softmax(check_logits(logits[0, -1].double()), dim=-1)
                values, indices = torch.topk(log_probs, min(width, log_probs.shape[-1]))
                for value, index in zip(values.tolist(), indices.tolist()):
                    node = BeamNode(len(nodes), node_id, index, value, score + value, depth)
                    nodes.append(node)
                    candidates.append((score + value, tokens + [index], node.node_id))
            candidates.sort(key=lambda c: (-c[0], c[2]))
            beams = candidates[:width]
            for _, _, node_id in beams:
                nodes[node_id].kept = True
    finally:
        model.train(was_training)
    best_score, best_tokens, _ = beams[0]
    return BeamResult(tokens=best_tokens, score=best_score, nodes=nodes)


# ---------------------------------------------------------------------------- step mode and the KV cache


def raw_top(distribution: Distribution, count: int = 10) -> list[tuple[int, float, bool]]:
    """The ``count`` tokens the raw model likes most: ``(id, raw probability, still allowed)``.

    Top-k and top-p may cut some of them (``still allowed`` is then False): step mode offers
    these, so a student can force the model's real runner-ups, never tokens of probability 0.

    >>> d = next_token_distribution(torch.tensor([3.0, 2.0, 1.0, 0.0]), top_k=2)
    >>> [(i, round(p, 3), ok) for i, p, ok in raw_top(d, 3)]
    [(0, 0.644, True), (1, 0.237, True), (2, 0.087, False)]
    """
    values, indices = torch.topk(distribution.raw_probs, min(count, distribution.raw_probs.shape[-1]))
    return [(i, p, bool(distribution.final_probs[i] > 0)) for i, p in zip(indices.tolist(), values.tolist())]


@dataclass(frozen=True)
class KVCacheComparison:
    """The same generation run twice, with and without the KV cache: its tokens and wall time each."""

    tokens_with_cache: list[int]
    tokens_without_cache: list[int]
    seconds_with_cache: float
    seconds_without_cache: float
    cache_supported: bool

    @property
    def identical(self) -> bool:
        return self.tokens_with_cache == self.tokens_without_cache

    @property
    def speedup(self) -> float:
        return self.seconds_without_cache / max(self.seconds_with_cache, 1e-9)


def compare_kv_cache(
    model: nn.Module,
    ids: list[int],
    max_new_tokens: int = 60,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = 0,
) -> KVCacheComparison:
    """Generate ``max_new_tokens`` after ``ids`` with the KV cache and again without it (same seed).

    Without the cache every new token runs the model over the whole window again; with it, only
    the new position runs and the keys and values of the earlier ones are reused. Same seed, same
    context-shift rule: the two must give the same tokens; only the time differs.
    """
    import time

    timings, outputs = {}, {}
    for use_cache in (True, False):
        start = time.perf_counter()
        outputs[use_cache] = [
            record.token
            for record in generate(
                model, ids, max_new_tokens, temperature, top_k, top_p, seed=seed, use_kv_cache=use_cache
            )
        ]
        timings[use_cache] = time.perf_counter() - start
    return KVCacheComparison(
        outputs[True], outputs[False], timings[True], timings[False], cache_supported=_supports_kv_cache(model)
    )


def beam_path(result: BeamResult) -> list[int]:
    """The node ids of the winning path, root first: follow ``result.tokens`` down the tree."""
    children: dict[int | None, list[BeamNode]] = {}
    for node in result.nodes:
        children.setdefault(node.parent, []).append(node)
    path = [result.nodes[0].node_id]
    for token in result.tokens:
        step = next((n for n in children.get(path[-1], []) if n.token == token), None)
        if step is None:
            break
        path.append(step.node_id)
    return path


def beam_layout(result: BeamResult) -> dict[int, tuple[int, float]]:
    """``node_id → (depth, row)`` for drawing the tree with no crossing edges.

    At each depth the nodes are ordered by their parent's row, then by path score (best first),
    so each parent's children sit together in the order of its own rank and no two edges cross.
    Rows are centred on 0.
    """
    rows: dict[int, float] = {result.nodes[0].node_id: 0.0}
    by_depth: dict[int, list[BeamNode]] = {}
    for node in result.nodes[1:]:
        by_depth.setdefault(node.depth, []).append(node)
    for depth in sorted(by_depth):
        ordered = sorted(by_depth[depth], key=lambda n: (rows[cast(int, n.parent)], -n.score, n.node_id))
        for order, node in enumerate(ordered):
            rows[node.node_id] = order - (len(ordered) - 1) / 2
    return {node.node_id: (node.depth, rows[node.node_id]) for node in result.nodes}
