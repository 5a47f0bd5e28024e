"""Supervised fine-tuning (SFT) on instructions: the loss only on the answer's tokens.

An example is the prompt template and the answer (:mod:`llmviz.adapt.instructions`). The model reads the whole
text, but only the positions that predict an answer token (and the end token after it) count in the loss: every
other label is ``-100``, the index cross-entropy ignores (LLMs-from-scratch chapter 7; TRL's completion-only loss).
The prompt is context, never a target, so the model learns to answer, not to write questions.

>>> ids, labels = batch_examples([Encoded([5, 6, 7, 8], 2)])
>>> ids.tolist(), labels.tolist()       # position t predicts ids[t + 1]; the prompt's one target is masked
([[5, 6, 7]], [[-100, 7, 8]])
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import InitVar, dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from llmviz.adapt import instructions
from llmviz.device import isolated_rng
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT
from llmviz.tokenizers.base import Tokenizer
from llmviz.tokenizers.ids import encode
from llmviz.training.trainer import StepMetrics

IGNORE = -100  # the label cross-entropy skips: prompt positions and padding


@dataclass(frozen=True)
class Encoded:
    """An example's token ids (prompt then answer then end token) and how many of them are the prompt."""

    ids: list[int]
    prompt_tokens: int

    @property
    def response_tokens(self) -> int:
        return len(self.ids) - self.prompt_tokens


def end_ids(tokenizer: Tokenizer) -> list[int]:
    """The end token's ids: ``<|endoftext|>`` as the special token where the tokenizer has it (the shipped GPT: one
    id), else its text in the tokenizer's own pieces."""
    return encode(tokenizer, instructions.END, allowed_special="all")


def encode_example(tokenizer: Tokenizer, prompt: str, response: str, context: int) -> Encoded:
    """The template's ids, cut to ``context + 1`` tokens (inputs and the last target): the answer is cut at its end
    first (keeping the end token off when it does not fit), then the prompt at its start; at least one answer token
    is kept."""
    if context < 2:
        raise ConfigError("An instruction example needs a context of at least 2 tokens.")
    prompt_ids = encode(tokenizer, instructions.prompt_text(prompt))
    answer_ids = encode(tokenizer, response) + end_ids(tokenizer)
    if not answer_ids:
        raise ConfigError(f"The tokenizer turns the answer {response[:40]!r} into no tokens.")
    room = context + 1
    answer_ids = answer_ids[: max(1, room - len(prompt_ids))]
    prompt_ids = prompt_ids[max(0, len(prompt_ids) + len(answer_ids) - room) :]
    if not prompt_ids:
        raise ConfigError("The prompt's template turned into no tokens: this tokenizer cannot read it.")
    return Encoded(prompt_ids + answer_ids, len(prompt_ids))


def batch_examples(examples: list[Encoded], pad: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (B, T) padded on the right with ``pad``, and labels (B, T): ``labels[b, t]`` is the token that follows
    position t when it is an answer token, else :data:`IGNORE` (the prompt and the padding)."""
    if not examples:
        raise ConfigError("A batch needs at least one example.")
    width = max(len(e.ids) for e in examples) - 1
    inputs = torch.full((len(examples), width), pad, dtype=torch.long)  # (B, T)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)  # (B, T)
    for row, example in enumerate(examples):
        ids = torch.tensor(example.ids)
        inputs[row, : len(ids) - 1] = ids[:-1]
        first = example.prompt_tokens - 1  # the position that predicts the answer's first token
        labels[row, first : len(ids) - 1] = ids[example.prompt_tokens :]
    return inputs, labels


def response_mask(labels: torch.Tensor) -> torch.Tensor:
    """True where a position's target is an answer token (B, T)."""
    return labels != IGNORE


def masked_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the answer tokens only: logits (B, T, V), labels (B, T) with :data:`IGNORE`."""
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE)  # scalar


def token_log_probs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """log p(label) at every answer position, 0 elsewhere: logits (B, T, V), labels (B, T) → (B, T)."""
    mask = response_mask(labels)  # (B, T)
    picked = labels.masked_fill(~mask, 0)  # (B, T) any id where masked: multiplied by 0 below
    log_probs = F.log_softmax(logits.float(), dim=-1).gather(-1, picked[..., None]).squeeze(-1)  # (B, T)
    return log_probs * mask


def response_log_probs(model: GPT, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The summed log-probability of each example's answer under ``model`` (B,): log π(answer | prompt)."""
    logits, _ = model(inputs)  # (B, T, V)
    return token_log_probs(logits, labels).sum(-1)  # (B,)


def encode_rows(tokenizer: Tokenizer, rows: list[dict], context: int) -> list[Encoded]:
    return [encode_example(tokenizer, row["prompt"], row["response"], context) for row in rows]


@torch.no_grad()
def answer_loss(model: GPT, examples: list[Encoded], chunk: int = 32) -> float:
    """The mean cross-entropy over every answer token of ``examples`` (the validation loss an SFT run reports)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(examples), chunk):
        inputs, labels = batch_examples(examples[start : start + chunk])
        logits, _ = model(inputs.to(device))  # (B, T, V)
        labels = labels.to(device)
        total += float(-token_log_probs(logits, labels).sum())
        count += int(response_mask(labels).sum())
    model.train(was_training)
    return total / max(count, 1)


# ---------------------------------------------------------------------------- a lab run


@dataclass(frozen=True)
class SftConfig:
    """An SFT run's settings (the job system reads ``steps``)."""

    steps: int = 200
    batch_size: int = 16
    lr: float = 1e-3
    eval_interval: int = 20
    seed: int = 1337
    device: str = "cpu"
    init: str | None = None  # where the starting model came from (a checkpoint's path), for the record

    def __post_init__(self):
        problems = []
        for name in ("steps", "batch_size", "eval_interval"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                problems.append(f"{name} must be a whole number of at least 1")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append("the learning rate must be a positive number")
        if problems:
            raise ConfigError("This tuning configuration cannot work: " + "; ".join(problems) + ".")


@dataclass
class TuningMetrics(StepMetrics):
    """A tuning step's metrics (``val_loss``: the answer tokens' loss on the validation set, when measured)."""

    response_tokens: int = 0  # answer tokens in this step's batch (the only ones with a loss)


def copy_model(model: GPT, device: str) -> GPT:
    """A private float32 copy of a GPT with dropout off (the shared original is never changed)."""
    if not isinstance(model, GPT):
        raise ConfigError("Instruction tuning here trains a GPT: pick the shipped GPT, GPT-2 or a GPT run.")
    copied = GPT(model.config.replace(dropout=0.0), initialise=False)
    copied.load_state_dict(copy.deepcopy(model.state_dict()))
    return copied.float().to(device)


class TuningRunner:
    """What an SFT run and a DPO run share: the runner contract (:mod:`llmviz.jobs.runners`: ``kind``, ``step``,
    ``model``, ``history``, ``config.steps``, ``run``, ``describe``) and the one training loop. A run says how it
    takes a step (:meth:`train_step`: the batch's summary, its answer tokens, the gradient norm), what its loss is
    (:meth:`loss_of`), how it is measured on the held-out set (:meth:`held_out`) and what its metrics are
    (:meth:`step_metrics`); :meth:`start` gives it its optimizer and batches."""

    kind: ClassVar[str]
    DIVERGED: ClassVar[str] = "The loss became {loss} at step {step}: lower the learning rate."
    config: Any
    tokenizer: Tokenizer
    model: GPT
    step: int
    history: list

    def start(self, train_ids: list[list[int]], held_ids: list[list[int]], refusal: str) -> None:
        """The run's optimizer (AdamW at the run's ``lr``, no weight decay) and the generator its batches are drawn
        from (seeded with its ``seed``); ``train_ids``, ``held_ids``: each example's token ids (what :meth:`describe`
        counts); ``refusal`` (a ConfigError) when either set of examples is empty."""
        if not train_ids or not held_ids:
            raise ConfigError(refusal)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.config.lr, weight_decay=0.0)
        self.generator = torch.Generator().manual_seed(self.config.seed)
        self.tokens = (sum(map(len, train_ids)), sum(map(len, held_ids)))  # the examples' tokens: train, held out

    @property
    def sharded(self) -> bool:
        return False

    def train_step(self) -> tuple[Any, int, float]:
        raise NotImplementedError

    def loss_of(self, summary: Any) -> float:
        return float(summary)

    def held_out(self) -> Any:
        raise NotImplementedError

    def step_metrics(self, summary: Any, held: Any, common: dict) -> TuningMetrics:
        raise NotImplementedError

    def run(
        self,
        steps: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        report_at: Callable[[int], bool] | None = None,  # every step is reported here
    ) -> Iterator[TuningMetrics]:
        """Train to ``config.steps`` (or ``steps`` more), one metrics object per step; measured on the held-out set
        every ``eval_interval`` steps and at the last; ``should_stop()`` is asked between steps."""
        end = self.config.steps if steps is None else self.step + steps
        self.model.train()
        start = time.perf_counter()
        while self.step < end:
            if should_stop is not None and should_stop():
                return
            began = time.perf_counter()
            summary, tokens, norm = self.train_step()
            loss = self.loss_of(summary)
            self.step += 1
            if not math.isfinite(loss):
                raise ConfigError(self.DIVERGED.format(loss=loss, step=self.step))
            measured = self.step % self.config.eval_interval == 0 or self.step == end
            held = self.held_out() if measured else None
            common = dict(
                step=self.step,
                train_loss=loss,
                perplexity=math.exp(min(loss, 50.0)),
                lr=self.config.lr,
                tokens_per_s=tokens / max(time.perf_counter() - began, 1e-9),
                grad_norm=norm,
                elapsed_s=time.perf_counter() - start,
                response_tokens=tokens,
            )
            metrics = self.step_metrics(summary, held, common)
            self.history.append(metrics)
            yield metrics

    def describe(self) -> dict:
        """What a page and the memory estimate need of the run (:class:`llmviz.jobs.events.RunInfo`'s fields): its
        model's description, settings, tokenizer, and the tokens of its examples."""
        from llmviz.training.checkpoint import run_facts

        return run_facts(self.model, self.config, self.tokenizer, self.tokens, copies=0)

    def generate_sample(self, prompt: str = "", max_new_tokens: int = 60, **options) -> str:
        return answer(self.model, self.tokenizer, prompt or SAMPLE_PROMPT, max_new_tokens).text


@dataclass
class SftRunner(TuningRunner):
    """Fine-tune a GPT on instruction examples, the loss on the answers only (a lab run of kind ``"sft"``)."""

    kind: ClassVar[str] = "sft"

    config: SftConfig
    tokenizer: Tokenizer
    initial_model: InitVar[GPT]
    train_rows: list[dict]
    val_rows: list[dict]
    step: int = 0
    history: list[TuningMetrics] = field(default_factory=list)

    def __post_init__(self, initial_model: GPT):
        with isolated_rng(self.config.seed):
            self.model = copy_model(initial_model, self.config.device)
        context = self.model.config.context_length
        self.train_examples = encode_rows(self.tokenizer, self.train_rows, context)
        self.val_examples = encode_rows(self.tokenizer, self.val_rows, context)
        self.start(
            [e.ids for e in self.train_examples],
            [e.ids for e in self.val_examples],
            refusal="An SFT run needs training and validation examples.",
        )
        self.val_loss_before = answer_loss(self.model, self.val_examples)

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.randint(len(self.train_examples), (self.config.batch_size,), generator=self.generator)
        inputs, labels = batch_examples([self.train_examples[int(i)] for i in rows])
        return inputs.to(self.config.device), labels.to(self.config.device)

    def train_step(self) -> tuple[float, int, float]:
        """One step; returns (the answers' loss, their token count, the gradient norm)."""
        inputs, labels = self.batch()  # (B, T), (B, T)
        logits, _ = self.model(inputs)  # (B, T, V)
        loss = masked_loss(logits, labels)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return float(loss.detach()), int(response_mask(labels).sum()), float(norm)

    def held_out(self) -> float:
        return answer_loss(self.model, self.val_examples)

    def step_metrics(self, summary: float, held: float | None, common: dict) -> TuningMetrics:
        return TuningMetrics(val_loss=held, **common)


SAMPLE_PROMPT = "What is the `for` statement?"


# ---------------------------------------------------------------------------- answering


@dataclass(frozen=True)
class Answer:
    """What a model answered to a prompt in the template: its tokens, each one's probability under the model, its
    text (without the end token), and whether it ended with the end token."""

    ids: list[int]
    probabilities: list[float]
    text: str
    ended: bool


def answer(
    model: GPT, tokenizer: Tokenizer, prompt: str, max_new_tokens: int = 60, temperature: float = 0.0, seed: int = 0
) -> Answer:
    """The model's answer to ``prompt`` put in the template: greedy at ``temperature`` 0, else sampled from a
    generator seeded with ``seed`` (the same draws for every model given the same seed); it stops at the end
    token."""
    from llmviz.generation.sampling import generate

    stop = end_ids(tokenizer)
    ids = encode(tokenizer, instructions.prompt_text(prompt))[-(model.config.context_length - 1) :]
    tokens: list[int] = []
    probabilities: list[float] = []
    for record in generate(model, ids, max_new_tokens, temperature, seed=seed):
        tokens.append(record.token)
        probabilities.append(record.probability)
        if stop and tokens[-len(stop) :] == stop:
            return Answer(tokens, probabilities, tokenizer.decode(tokens[: -len(stop)]), True)
    return Answer(tokens, probabilities, tokenizer.decode(tokens), False)
