"""Predict, then reveal: questions built from the live model and the student's own text.

Every answer is computed here, from the same tokenizers, attention patterns, losses and
distributions the pages show — never written down in advance. A student picks an option; the
page then reveals the right one with the computation behind it (``Question.explanation``).

A question is plain data, so it is easy to test with a model whose answer is known:

>>> import torch
>>> question = greedy_next_token(torch.tensor([0.1, 2.0, -1.0, 0.5, 0.0]), ["a", "b", "c", "d", "e"])
>>> question.options[question.answer]
'b'
>>> question.check(question.options.index("b"))
True
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch

from llmviz.errors import ConfigError, LlmvizError
from llmviz.generation.sampling import next_token_distribution
from llmviz.lessons.architectures import rope_scores
from llmviz.models.gpt import GPTConfig, cache_name, count_parameters_without_building

if TYPE_CHECKING:  # the trainer is imported where a run is made
    from llmviz.training.config import ModelName, Optimizer

__all__ = [
    "Question",
    "token_count",
    "fewer_tokens",
    "word_pieces",
    "most_attended",
    "visible_keys",
    "focused_head",
    "learning_rate_times_ten",
    "uniform_loss",
    "position_loss",
    "greedy_next_token",
    "tokens_kept",
    "temperature_entropy",
    "tokens_questions",
    "attention_questions",
    "kv_cache_question",
    "norm_question",
    "experts_question",
    "rope_question",
    "training_questions",
    "sampling_questions",
]


@dataclass(frozen=True)
class Question:
    """One predict-then-reveal question: what is asked, the choices, the right one, and why.

    ``key`` is stable for the same question on the same inputs (pages use it to remember a
    student's answer across reruns); ``explanation`` is Markdown with the computation.
    """

    kind: str
    prompt: str
    options: tuple[str, ...]
    answer: int
    explanation: str

    @property
    def key(self) -> str:
        return f"{self.kind}-{zlib.crc32((self.prompt + '|'.join(self.options)).encode()):08x}"

    def check(self, choice: int) -> bool:
        return choice == self.answer


def _question(
    kind: str, prompt: str, right: str, wrong: Sequence[str], explanation: str, order: str = "shuffle"
) -> Question:
    """Build a question from its right option and distractors (duplicates dropped).

    ``order``: "shuffle" (the same shuffle every time for the same question), "sort" (numbers in
    increasing order) or "keep".

    >>> _question("demo", "2 + 2?", "4", ["3", "4", "5"], "", order="sort").options
    ('3', '4', '5')
    """
    options = [right] + [w for i, w in enumerate(wrong) if w != right and w not in wrong[:i]]
    if order == "sort":
        options.sort(key=float)
    elif order == "shuffle":
        random.Random(zlib.crc32(prompt.encode())).shuffle(options)
    return Question(kind, prompt, tuple(options), options.index(right), explanation)


def markdown_literal(text: str) -> str:
    r"""Text that Markdown (and KaTeX's ``$``) shows exactly as written: tokens can be ``**`` or ``$``.

    >>> markdown_literal("__dict__ costs $5")
    '\\_\\_dict\\_\\_ costs \\$5'
    """
    return "".join("\\" + ch if ch in "\\`*_{}[]<>()#+-.!|$~" else ch for ch in text)


def _quote(piece: str) -> str:
    return "“" + markdown_literal(piece.replace("\n", "↵")) + "”"


def _pieces(tokenizer, ids: Sequence[int], limit: int = 24) -> str:
    shown = " | ".join(tokenizer.printable(i) for i in ids[:limit]).replace("`", "ˋ")
    return f"`{shown}`" + (f" … ({len(ids) - limit} more)" if len(ids) > limit else "")


def _count_options(true: int, others: Sequence[int]) -> list[str]:
    """Three distinct positive distractors near ``true``, preferring the ``others`` given."""
    wrong: list[int] = []
    for candidate in [*others, round(true * 1.5), max(1, round(true * 0.6)), true + 1, true - 1, true + 2, true * 2]:
        if candidate >= 1 and candidate != true and candidate not in wrong:
            wrong.append(candidate)
        if len(wrong) == 3:
            break
    return [str(w) for w in wrong]


# ---------------------------------------------------------------------------- tokens


def token_count(text: str, tokenizer, name: str) -> Question:
    """How many tokens does ``tokenizer`` make of ``text``? (distractors: words, characters, bytes)

    >>> from llmviz.tokenizers.char_word import CharTokenizer
    >>> tok = CharTokenizer.train("abc ")
    >>> q = token_count("abc cab", tok, "characters")
    >>> q.options[q.answer]
    '7'
    """
    ids = tokenizer.encode(text)
    words = len(text.split())
    wrong = _count_options(len(ids), [words, len(text), len(text.encode())])
    return _question(
        "token-count",
        f"How many tokens will {name} make of your text?",
        str(len(ids)),
        wrong,
        f"{name} cuts your text ({len(text):,} characters, {len(text.encode()):,} bytes, {words:,} words "
        f"separated by spaces) into **{len(ids):,} tokens**: {_pieces(tokenizer, ids)}",
        order="sort",
    )


def fewer_tokens(text: str, first, first_name: str, second, second_name: str) -> Question:
    """Which of two tokenizers needs fewer tokens for ``text``?"""
    a, b = len(first.encode(text)), len(second.encode(text))
    right = first_name if a < b else second_name if b < a else "the same number"
    return _question(
        "fewer-tokens",
        f"Which tokenizer needs fewer tokens for your text: {first_name} or {second_name}?",
        right,
        [first_name, second_name, "the same number"],
        f"{first_name}: **{a:,}** tokens. {second_name}: **{b:,}** tokens. A larger vocabulary holds longer "
        "pieces (whole words, common word pairs), so each token covers more text.",
        order="keep",
    )


def word_pieces(text: str, tokenizer, name: str) -> Question:
    """Into how many tokens does ``tokenizer`` cut the longest word of ``text`` (with its leading space)?

    >>> from llmviz.tokenizers.char_word import CharTokenizer
    >>> q = word_pieces("a tokenizer", CharTokenizer.train("a tokenizer"), "characters")
    >>> q.options[q.answer]  # " tokenizer": a space and 9 letters
    '10'
    """
    words = [w for w in text.split() if w.isalpha()] or text.split() or [text]
    word = max(words, key=lambda w: (len(w), w))
    piece = (" " + word) if (" " + word) in text else word
    ids = tokenizer.encode(piece)
    wrong = _count_options(len(ids), [1, len(word), max(1, len(word) // 3)])
    return _question(
        "word-pieces",
        f"Into how many tokens does {name} cut the word {_quote(piece)} from your text?",
        str(len(ids)),
        wrong,
        f"{name} encodes {_quote(piece)} as **{len(ids)}** token{'s' if len(ids) != 1 else ''}: "
        f"{_pieces(tokenizer, ids)}. Common words are one token; rare or long words are cut into pieces "
        "that the vocabulary has.",
        order="sort",
    )


def tokens_questions(text: str, tokenizers: Mapping[str, object]) -> list[Question]:
    """Questions for the Tokens page: ``tokenizers`` maps a display name to a tokenizer (two or more)."""
    if not text.strip():
        raise LlmvizError("Type some text first: the questions are about your text.")
    names = list(tokenizers)
    if not names:
        raise LlmvizError("The questions need at least one tokenizer.")
    questions = [token_count(text, tokenizers[names[0]], names[0]), word_pieces(text, tokenizers[names[0]], names[0])]
    if len(names) > 1:
        questions.append(fewer_tokens(text, tokenizers[names[0]], names[0], tokenizers[names[-1]], names[-1]))
        questions.append(token_count(text, tokenizers[names[-1]], names[-1]))
    return questions


# ---------------------------------------------------------------------------- attention


HookName = Callable[[int, str], str]  #: a model's hook names: (layer, point) → name (GPT's cache_name, the encoder's)


def _pattern(cache: Mapping[str, torch.Tensor], name: HookName, layer: int) -> torch.Tensor:
    return cache[name(layer, "attn.pattern")][0].detach().float()  # (heads, T, T)


def most_attended(
    cache: Mapping[str, torch.Tensor],
    labels: Sequence[str],
    layer: int,
    head: int,
    query: int,
    name: HookName = cache_name,
) -> Question:
    """Which token does token ``query`` attend to most in ``layer``, ``head``?"""
    row = _pattern(cache, name, layer)[head, query]  # (T,)
    order = torch.argsort(row, descending=True, stable=True).tolist()
    visible = [j for j in order if row[j] > 0] or order
    choices = visible[:4] if len(visible) >= 2 else order[:4]
    names = [f"{labels[j]} (position {j})" for j in choices]
    table = ", ".join(f"{_quote(labels[j])} {float(row[j]):.3f}" for j in order[:6])
    return _question(
        "most-attended",
        f"In layer {layer}, head {head}: which token will {_quote(labels[query])} (position {query}) attend to most?",
        names[0],
        names[1:],
        f"The attention weights of {_quote(labels[query])} in layer {layer}, head {head} (the row of softmax "
        f"weights, largest first): {table}. The largest is **{float(row[choices[0]]):.3f}** on "
        f"{_quote(labels[choices[0]])}.",
    )


def visible_keys(
    cache: Mapping[str, torch.Tensor], labels: Sequence[str], query: int, name: HookName = cache_name
) -> Question:
    """How many tokens can token ``query`` attend to? (counted from the pattern: weights above 0)"""
    row = _pattern(cache, name, 0)[0, query]
    count = int((row > 0).sum())
    total = row.shape[0]
    wrong = _count_options(count, [total, query, 1])
    return _question(
        "visible-keys",
        f"Your sentence has {total} tokens. How many of them can {_quote(labels[query])} (position {query}) attend to?",
        str(count),
        wrong,
        f"Counting the weights above zero in its row: **{count}**. "
        + (
            f"The causal mask hides the {total - count} tokens after it (their scores are −∞, so softmax "
            f"gives them weight 0): positions 0 to {query}, itself included."
            if count == query + 1 and count < total
            else "Every token is visible: this model's attention is bidirectional (no causal mask)."
            if count == total
            else ""
        ),
        order="sort",
    )


def focused_head(
    cache: Mapping[str, torch.Tensor], labels: Sequence[str], layer: int, query: int, name: HookName = cache_name
) -> Question:
    """Which head of ``layer`` puts the largest single weight on one token, for token ``query``?"""
    rows = _pattern(cache, name, layer)[:, query]  # (heads, T)
    peaks = rows.max(dim=-1)
    heads = list(range(min(4, rows.shape[0])))
    best = int(torch.argmax(peaks.values[: len(heads)]))
    lines = "; ".join(
        f"head {h}: {float(peaks.values[h]):.3f} on {_quote(labels[int(peaks.indices[h])])}" for h in heads
    )
    return _question(
        "focused-head",
        f"Layer {layer}, token {_quote(labels[query])}: which of heads {', '.join(map(str, heads))} is the most "
        "focused (puts the largest weight on a single token)?",
        f"head {best}",
        [f"head {h}" for h in heads],
        f"The largest weight in each head's row: {lines}. Head {best} is the most focused.",
        order="keep",
    )


def attention_questions(
    cache: Mapping[str, torch.Tensor], labels: Sequence[str], layer: int, head: int, name: HookName = cache_name
) -> list[Question]:
    """Questions for the Attention page, about the sentence the student sent through the model."""
    if len(labels) < 2:
        raise LlmvizError("The questions need a sentence of at least two tokens.")
    last = len(labels) - 1
    middle = len(labels) // 2
    return [
        most_attended(cache, labels, layer, head, last, name),
        visible_keys(cache, labels, middle, name),
        focused_head(cache, labels, layer, last, name),
    ]


# ---------------------------------------------------------------------------- training


def learning_rate_times_ten(final_loss: Callable[[float], float], lr: float, what: str) -> Question:
    """Will the loss after a short run be lower or higher with 10 × the learning rate?

    ``final_loss(lr)`` trains a fresh copy (same seed, same batches) and returns its loss at the end,
    or ``math.inf`` when the run diverged. The answer is what the two runs actually did.

    >>> q = learning_rate_times_ten(lambda lr: (lr - 0.3) ** 2, 0.01, "a parabola")
    >>> q.options[q.answer]  # 0.1 is closer to the minimum at 0.3 than 0.01 is
    'lower'
    """
    base, faster = final_loss(lr), final_loss(lr * 10)
    if not math.isfinite(faster) or faster > base * 1.01:
        right = "higher"
    elif faster < base * 0.99:
        right = "lower"
    else:
        right = "about the same (within 1%)"

    def show(value: float) -> str:
        return "diverged (the loss blew up)" if not math.isfinite(value) else f"{value:.4f}"

    return _question(
        "lr-times-ten",
        f"{what} at learning rate {lr:g}. If the learning rate were {lr * 10:g} (×10) instead, would the loss "
        "at the end be lower or higher?",
        right,
        ["lower", "higher", "about the same (within 1%)"],
        f"Both runs were just trained from the same initial weights on the same batches. Learning rate "
        f"{lr:g}: loss **{show(base)}**. Learning rate {lr * 10:g}: loss **{show(faster)}**. A larger step "
        "learns faster while the steps stay small enough; past that, each step overshoots and the loss rises.",
        order="keep",
    )


def uniform_loss(vocab_size: int) -> Question:
    """The loss of a model that spreads its probability evenly over the vocabulary: ln V.

    >>> q = uniform_loss(1000)
    >>> q.options[q.answer]
    '6.908'
    """
    right = f"{math.log(vocab_size):.3f}"
    wrong = [f"{math.log2(vocab_size):.3f}", f"{1 / vocab_size:.3f}", f"{math.log10(vocab_size):.3f}"]
    return _question(
        "uniform-loss",
        f"A model that has learned nothing gives each of its {vocab_size:,} tokens the same probability "
        f"1/{vocab_size:,}. What is its cross-entropy loss (natural log)?",
        right,
        wrong,
        f"Every target gets p = 1/{vocab_size:,}, so the loss is −ln(1/{vocab_size:,}) = ln {vocab_size:,} = "
        f"**{right}**. A freshly initialised model starts near this value.",
        order="sort",
    )


def position_loss(probability: float, target: str, context: str) -> Question:
    """The loss at one position, given the probability the model gave the right next token: −ln p."""
    p = min(max(float(probability), 1e-12), 1.0)
    right = f"{-math.log(p):.3f}"
    wrong = [f"{1 - p:.3f}", f"{-math.log10(p):.3f}", f"{p:.3f}", f"{-math.log2(p):.3f}"]
    return _question(
        "position-loss",
        f"After {_quote(context)} the model gives the right next token {_quote(target)} probability {p:.4f}. "
        "What is the loss at this position?",
        right,
        wrong[:3],
        f"Cross-entropy at one position is −ln p(target) = −ln {p:.4f} = **{right}**. A sure right answer "
        "(p = 1) costs 0; a tiny p costs a lot.",
        order="sort",
    )


def training_questions(
    model, tokenizer, text: str, final_loss: Callable[[float], float], lr: float, what: str
) -> list[Question]:
    """Questions for the Training page: the ×10 learning rate (from two short runs), the uniform loss,
    and the loss at one position of the student's text under ``model``."""
    questions = [learning_rate_times_ten(final_loss, lr, what), uniform_loss(tokenizer.vocab_size)]
    ids = tokenizer.encode(text)[:33]
    if len(ids) >= 2:
        with torch.no_grad():
            logits, _ = model(torch.tensor([ids[:-1]]))  # (1, T, V)
        probabilities = torch.softmax(logits[0].double(), dim=-1)  # (T, V)
        position = len(ids) - 2
        target = ids[position + 1]
        questions.append(
            position_loss(
                float(probabilities[position, target]),
                tokenizer.printable(target),
                tokenizer.decode(ids[: position + 1])[-40:],
            )
        )
    return questions


# ---------------------------------------------------------------------------- sampling


def greedy_next_token(logits: torch.Tensor, names: Sequence[str] | Callable[[int], str]) -> Question:
    """Which of the four most likely tokens comes next at temperature 0 (greedy)?

    ``names``: token id → its text (a list, or a function such as ``tokenizer.printable``)."""
    if callable(names):
        names = cast(Sequence[str], _Names(names))  # indexable like a list
    logits = logits.detach().float()
    top = torch.topk(logits, min(4, logits.shape[0]))
    choices = top.indices.tolist()
    probabilities = torch.softmax(logits, dim=-1)
    table = ", ".join(
        f"{_quote(names[i])} logit {float(logits[i]):.3f} (p {float(probabilities[i]):.3f})" for i in choices
    )
    return _question(
        "greedy-next",
        "At temperature 0, which of these tokens comes next?",
        names[choices[0]],
        [names[i] for i in choices[1:]],
        f"Temperature 0 means greedy: always the token with the largest logit. The four largest: {table}. "
        f"So the next token is **{_quote(names[choices[0]])}**, every time.",
    )


class _Names:
    def __init__(self, name: Callable[[int], str]):
        self.name = name

    def __getitem__(self, token_id: int) -> str:
        return self.name(int(token_id))


def tokens_kept(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> Question:
    """How many tokens can still be drawn after temperature, top-k and top-p?"""
    distribution = next_token_distribution(logits, temperature, top_k, top_p)
    kept = distribution.kept
    vocab = logits.shape[-1]
    wrong = _count_options(kept, [min(top_k, vocab) if top_k else vocab, 1, vocab])
    return _question(
        "tokens-kept",
        f"With temperature {temperature:g}, top-k {top_k or 'off'} and top-p {top_p:g}, how many of the "
        f"{vocab:,} tokens can still be drawn?",
        str(kept),
        wrong,
        f"Top-k keeps the {top_k or vocab:,} largest logits; top-p then keeps the most likely tokens until "
        f"their probabilities add up to {top_p:g}. **{kept:,}** token{'s' if kept != 1 else ''} remain"
        f"{'s' if kept == 1 else ''} with a probability above zero.",
        order="sort",
    )


def temperature_entropy(logits: torch.Tensor, temperature: float) -> Question:
    """Does the entropy of the next-token distribution go up or down when the temperature doubles?"""
    low = temperature if temperature > 0 else 0.5
    high = low * 2
    before = next_token_distribution(logits, low).entropies["after temperature"]
    after = next_token_distribution(logits, high).entropies["after temperature"]
    right = "up" if after > before + 1e-9 else "down" if after < before - 1e-9 else "it stays the same"
    return _question(
        "temperature-entropy",
        f"The temperature goes from {low:g} to {high:g}. Does the entropy (spread) of the next-token "
        "distribution go up or down?",
        right,
        ["up", "down", "it stays the same"],
        f"Entropy −Σ p ln p at T = {low:g}: **{before:.3f}** nats; at T = {high:g}: **{after:.3f}** nats. "
        "Dividing the logits by a larger T brings them closer together, so the distribution flattens.",
        order="keep",
    )


def sampling_questions(
    logits: torch.Tensor, names: Sequence[str] | Callable[[int], str], temperature: float, top_k: int, top_p: float
) -> list[Question]:
    """Questions for the Sampling page, from the model's logits after the student's prompt."""
    return [
        greedy_next_token(logits, names),
        tokens_kept(logits, temperature, top_k, top_p),
        temperature_entropy(logits, temperature),
    ]


def final_loss_after(make_trainer: Callable[[float], Any], steps: int) -> Callable[[float], float]:
    """``final_loss(lr)`` for :func:`learning_rate_times_ten`: train ``make_trainer(lr)`` for ``steps``
    steps and return the mean training loss of its last five steps (``inf`` when it diverged)."""

    def final_loss(lr: float) -> float:
        trainer = make_trainer(lr)
        losses = []
        try:
            for metrics in trainer.run(steps):
                losses.append(metrics.train_loss)
        except LlmvizError:
            return math.inf
        tail = losses[-5:]
        value = sum(tail) / len(tail) if tail else math.inf
        return value if math.isfinite(value) else math.inf

    return final_loss


def short_run_trainer(text: str, model: ModelName, optimizer: Optimizer, lr: float, seed: int, steps: int):
    """The fresh run the learning-rate question trains: character tokens, batch 8, 16 characters of context."""
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import prepare_data
    from llmviz.training.trainer import Trainer

    config = TrainConfig(
        model=model,
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=steps,
        optimizer=optimizer,
        lr=lr,
        grad_clip=None,
        warmup_steps=0,
        schedule="constant",
        eval_interval=steps,
        seed=seed,
    )
    return Trainer(config, prepare_data(text[:100_000], config))


def learning_rate_pair(
    should_stop, text: str, model: ModelName, optimizer: Optimizer, lr: float, seed: int, steps: int
):
    """The learning-rate question's two short runs (``lr`` and ``10 × lr``) as a job's task loop: yields
    ``(step, loss)`` over both runs (``2 × steps`` in all) and returns ``(loss at lr, loss at 10 lr)``, each the
    mean of the last five steps (``inf`` when the run diverged), as :func:`final_loss_after` computes them.
    Picklable with ``functools.partial``, so it runs in a worker process like any run.

    >>> loop = learning_rate_pair(lambda: False, "abcabcabd" * 30, "bigram-neural", "adam", 1e-2, 0, 6)
    >>> steps = []
    >>> try:
    ...     while True:
    ...         steps.append(next(loop)[0])
    ... except StopIteration as end:
    ...     pair = end.value
    >>> steps, pair[0] > pair[1]  # 10× the rate learns faster here
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], True)
    """
    results = []
    for number, rate in enumerate((lr, lr * 10)):
        trainer = short_run_trainer(text, model, optimizer, rate, seed, steps)
        losses = []
        try:
            for metrics in trainer.run(steps):
                losses.append(metrics.train_loss)
                yield number * steps + metrics.step, metrics.train_loss
        except LlmvizError:
            losses = [math.inf]
        tail = losses[-5:]
        value = sum(tail) / len(tail) if tail else math.inf
        results.append(value if math.isfinite(value) else math.inf)
    return tuple(results)


# ------------------------------------------------------------------- architectures (Attention, Embeddings, Model)


def kv_cache_question(n_heads: int, n_kv_heads: int, tokens: int, layers: int = 24, head_dim: int = 64):
    """How many MiB does the KV cache hold? (distractors: as many key/value heads as query heads, one, and the
    keys alone)."""

    def mib(kv: int, both: int = 2) -> str:
        return f"{both * layers * kv * head_dim * tokens * 2 / 2**20:,.1f} MiB"

    right = mib(n_kv_heads)
    options = sorted(
        {right, mib(n_heads), mib(1), mib(n_kv_heads, 1), mib(2 * n_kv_heads)},
        key=lambda text: float(text.split()[0].replace(",", "")),
    )
    prompt = (
        f"A model with {layers} layers, {n_heads} query heads and {n_kv_heads} key/value heads of {head_dim} "
        f"dimensions generates {tokens:,} tokens in bf16 (2 bytes a number). How big is its KV cache?"
    )
    explanation = (
        f"Keys **and** values, for every layer and every key/value head (not every query head): "
        f"2 × {layers} × {n_kv_heads} × {head_dim} × {tokens:,} × 2 bytes = {right}. With {n_heads} "
        f"key/value heads (multi-head) it would be {mib(n_heads)}."
    )
    return Question("kv-cache", prompt, tuple(options), options.index(right), explanation)


def norm_question(config: GPTConfig):
    """Every LayerNorm of ``config`` becomes an RMSNorm: how many parameters go? (distractors: none, all the
    norms' parameters, one per norm)."""
    layernorm = config.replace(norm="layernorm")
    before = count_parameters_without_building(layernorm)["LayerNorm"]
    after = count_parameters_without_building(layernorm.replace(norm="rmsnorm"))["RMSNorm"]
    norms = 2 * config.n_layers + 1  # two per block, and the final one
    right = f"{before - after:,}"
    options = sorted(
        {"none", right, f"{before:,}", f"{norms:,}"}, key=lambda t: -1 if t == "none" else int(t.replace(",", ""))
    )
    prompt = (
        f"A GPT with {config.n_layers} blocks of width {config.d_model} switches every LayerNorm to RMSNorm, "
        "as Llama does. How many parameters does it lose?"
    )
    explanation = (
        f"LayerNorm learns a scale γ and a shift β, {config.d_model} numbers each; RMSNorm divides by the "
        f"root mean square and keeps only the scale. {norms} norms (two per block and the final one) × "
        f"{config.d_model} shifts = {right}, out of {before:,}."
    )
    return Question("rmsnorm-parameters", prompt, tuple(options), options.index(right), explanation)


def experts_question(config: GPTConfig):
    """In a mixture-of-experts block, how many expert parameters does one token's pass use? (distractors: one
    expert, every expert, the experts it skips)."""
    if not config.n_experts:
        raise ConfigError("This question needs a mixture-of-experts configuration (n_experts > 0).")
    per_expert = count_parameters_without_building(config)["MLP"] // (config.n_layers * config.n_experts)
    experts, top_k = config.n_experts, config.experts_top_k
    right = f"{top_k * per_expert:,}"
    options = sorted(
        {f"{per_expert:,}", right, f"{experts * per_expert:,}", f"{(experts - top_k) * per_expert:,}"},
        key=lambda t: int(t.replace(",", "")),
    )
    prompt = (
        f"A block holds {experts} expert MLPs of {per_expert:,} parameters each, and its router sends each "
        f"token to its top {top_k}. How many expert parameters does one token's pass through the block use?"
    )
    explanation = (
        f"The router picks {top_k} of the {experts} experts for each token: {top_k} × {per_expert:,} = "
        f"{right}. The block holds {experts * per_expert:,}, and every expert learns from the tokens "
        "routed to it; a token only pays for the ones it visits (plus the small router)."
    )
    return Question("moe-active-parameters", prompt, tuple(options), options.index(right), explanation)


def rope_question(head_dim: int = 64, theta: float = 10000.0):
    """With RoPE, a query at 10 and a key at 7 give some score; what do the same vectors give at 30 and 27?"""
    scores = rope_scores(head_dim, theta, positions=31)
    near, far = float(scores.scores[10, 7]), float(scores.scores[30, 27])
    options = (
        "the same score",
        "a smaller score: they are further from the start",
        "a larger score: later positions turn further",
        "no way to tell without the words",
    )
    prompt = (
        f"With RoPE (head_dim {head_dim}, θ = {theta:,.0f}), the same query vector at position 10 and the same "
        "key vector at position 7 score q·k = s. Move both 20 positions later (query at 30, key at 27). "
        "What do they score?"
    )
    explanation = (
        f"Both are turned by 20 more positions, so the angle between them is unchanged: "
        f"s(10, 7) = {near:.4f} and s(30, 27) = {far:.4f}. Only the distance (3) counts."
    )
    return Question("rope-distance", prompt, options, 0, explanation)
