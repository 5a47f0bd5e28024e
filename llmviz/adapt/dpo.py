"""Direct preference optimization (DPO): prefer the chosen answer to the rejected one, staying near a reference.

For a prompt x with a chosen answer y_w and a rejected one y_l, the policy π (the model that trains, started from
the SFT model) and the frozen reference π_ref (the SFT model itself) each give the summed log-probability of each
answer. The log-probability ratios r_w = log π(y_w|x) − log π_ref(y_w|x) and r_l likewise are the implicit rewards
(times β); the loss is

    ℓ = −log σ(β · (r_w − r_l))

(Rafailov et al. 2023; TRL's ``sigmoid`` loss). β sets how far the policy may move from the reference: a small β
needs a large ratio before the loss is satisfied. The metrics a student watches: r_w and r_l (the chosen answer's
ratio rises, the rejected one's falls), the reward margin β(r_w − r_l), and the preference accuracy, the share of
pairs where β r_w > β r_l.

>>> losses, chosen, rejected = dpo_loss(torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]),
... torch.tensor([-2.0]), beta=0.5)
>>> round(float(losses[0]), 4), float(chosen[0]), float(rejected[0])   # −log σ(0.5 · (1 − (−1)))
(0.3133, 0.5, -0.5)
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field
from typing import ClassVar

import torch
import torch.nn.functional as F

from llmviz.adapt.sft import (
    Encoded,
    TuningMetrics,
    TuningRunner,
    batch_examples,
    copy_model,
    encode_example,
    response_log_probs,
)
from llmviz.device import isolated_rng
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT
from llmviz.tokenizers.base import Tokenizer


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    reference_chosen: torch.Tensor,
    reference_rejected: torch.Tensor,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per pair: the loss −log σ(β((π_w − ref_w) − (π_l − ref_l))), and the rewards β(π_w − ref_w), β(π_l − ref_l).
    Every argument is (B,) summed answer log-probabilities."""
    chosen_ratio = policy_chosen - reference_chosen  # (B,)
    rejected_ratio = policy_rejected - reference_rejected  # (B,)
    losses = -F.logsigmoid(beta * (chosen_ratio - rejected_ratio))  # (B,)
    return losses, beta * chosen_ratio.detach(), beta * rejected_ratio.detach()


@dataclass(frozen=True)
class Pair:
    """A preference pair encoded: the chosen and the rejected example (the same prompt)."""

    chosen: Encoded
    rejected: Encoded


def encode_pairs(tokenizer: Tokenizer, rows: list[dict], context: int) -> list[Pair]:
    return [
        Pair(
            encode_example(tokenizer, row["prompt"], row["chosen"], context),
            encode_example(tokenizer, row["prompt"], row["rejected"], context),
        )
        for row in rows
    ]


def pair_batch(pairs: list[Pair]) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch of 2B rows, the chosen answers then the rejected ones (as TRL's trainer concatenates them)."""
    return batch_examples([p.chosen for p in pairs] + [p.rejected for p in pairs])  # (2B, T), (2B, T)


@dataclass(frozen=True)
class PairScores:
    """The four summed log-probabilities of a batch of pairs, each (B,)."""

    policy_chosen: torch.Tensor
    policy_rejected: torch.Tensor
    reference_chosen: torch.Tensor
    reference_rejected: torch.Tensor


def pair_scores(policy: GPT, reference: GPT, inputs: torch.Tensor, labels: torch.Tensor) -> PairScores:
    """Both models on a :func:`pair_batch`: the policy with gradients, the reference without."""
    policy_logps = response_log_probs(policy, inputs, labels)  # (2B,)
    with torch.no_grad():
        reference_logps = response_log_probs(reference, inputs, labels)  # (2B,)
    chosen, rejected = policy_logps.chunk(2)
    reference_chosen, reference_rejected = reference_logps.chunk(2)
    return PairScores(chosen, rejected, reference_chosen, reference_rejected)


@dataclass(frozen=True)
class PreferenceSummary:
    """A batch's DPO numbers (means over the pairs)."""

    loss: float
    chosen_ratio: float  # log π(y_w|x) − log π_ref(y_w|x)
    rejected_ratio: float
    margin: float  # β(r_w − r_l)
    accuracy: float  # share of pairs with β r_w > β r_l


def summarise(scores: PairScores, beta: float) -> tuple[torch.Tensor, PreferenceSummary]:
    losses, chosen, rejected = dpo_loss(
        scores.policy_chosen, scores.policy_rejected, scores.reference_chosen, scores.reference_rejected, beta
    )
    loss = losses.mean()
    summary = PreferenceSummary(
        loss=float(loss.detach()),
        chosen_ratio=float(chosen.mean()) / beta,
        rejected_ratio=float(rejected.mean()) / beta,
        margin=float((chosen - rejected).mean()),
        accuracy=float((chosen > rejected).float().mean()),
    )
    return loss, summary


@torch.no_grad()
def evaluate_pairs(policy: GPT, reference: GPT, pairs: list[Pair], beta: float, chunk: int = 16) -> PreferenceSummary:
    """The DPO numbers over every pair of ``pairs`` (held-out pairs: the accuracy that says it generalises)."""
    device = next(policy.parameters()).device
    was_training = policy.training
    policy.eval()
    parts = []
    for start in range(0, len(pairs), chunk):
        inputs, labels = pair_batch(pairs[start : start + chunk])
        parts.append(pair_scores(policy, reference, inputs.to(device), labels.to(device)))
    policy.train(was_training)
    joined = PairScores(*(torch.cat([getattr(p, name) for p in parts]) for name in PairScores.__dataclass_fields__))
    return summarise(joined, beta)[1]


@dataclass(frozen=True)
class DpoConfig:
    """A DPO run's settings: β, and the usual ones (the job system reads ``steps``)."""

    beta: float = 0.1
    steps: int = 100
    batch_size: int = 8  # pairs per step: 2 × batch_size rows
    lr: float = 5e-4
    eval_interval: int = 10
    seed: int = 1337
    device: str = "cpu"
    init: str | None = None

    def __post_init__(self):
        problems = []
        for name in ("steps", "batch_size", "eval_interval"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                problems.append(f"{name} must be a whole number of at least 1")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append("the learning rate must be a positive number")
        if not (0 < self.beta <= 10 and math.isfinite(self.beta)):
            problems.append("β must be a number in (0, 10]")
        if problems:
            raise ConfigError("This DPO configuration cannot work: " + "; ".join(problems) + ".")


@dataclass
class DpoMetrics(TuningMetrics):
    """A DPO step's metrics: the batch's ratios, margin and accuracy; the held-out ones when measured."""

    # what the lab keeps with each curve point (llmviz.jobs.kept_rows.measures_of): the Tuning page's DPO chart
    SERIES: ClassVar[tuple[str, ...]] = (
        "chosen_ratio",
        "rejected_ratio",
        "margin",
        "accuracy",
        "val_accuracy",
        "val_margin",
    )

    chosen_ratio: float = 0.0
    rejected_ratio: float = 0.0
    margin: float = 0.0
    accuracy: float = 0.0
    val_accuracy: float | None = None
    val_margin: float | None = None


@dataclass
class DpoRunner(TuningRunner):
    """Preference-tune a GPT (the SFT model) with DPO against a frozen copy of itself (a lab run of kind ``"dpo"``,
    trained by :class:`~llmviz.adapt.sft.TuningRunner`'s loop). ``model`` is the policy (what snapshots and the picker
    see); ``reference`` never trains."""

    kind: ClassVar[str] = "dpo"
    DIVERGED: ClassVar[str] = "The DPO loss became {loss} at step {step}: lower the learning rate."

    config: DpoConfig
    tokenizer: Tokenizer
    initial_model: InitVar[GPT]
    train_rows: list[dict]
    val_rows: list[dict]
    step: int = 0
    history: list[DpoMetrics] = field(default_factory=list)

    def __post_init__(self, initial_model: GPT):
        with isolated_rng(self.config.seed):
            self.model = copy_model(initial_model, self.config.device)
            self.reference = copy_model(initial_model, self.config.device).eval()
        for parameter in self.reference.parameters():
            parameter.requires_grad_(False)
        context = self.model.config.context_length
        self.train_pairs = encode_pairs(self.tokenizer, self.train_rows, context)
        self.val_pairs = encode_pairs(self.tokenizer, self.val_rows, context)
        self.start(
            [p.chosen.ids + p.rejected.ids for p in self.train_pairs],
            [p.chosen.ids + p.rejected.ids for p in self.val_pairs],
            refusal="A DPO run needs training and validation pairs.",
        )
        self.before = evaluate_pairs(self.model, self.reference, self.val_pairs, self.config.beta)

    def train_step(self) -> tuple[PreferenceSummary, int, float]:
        rows = torch.randint(len(self.train_pairs), (self.config.batch_size,), generator=self.generator)
        inputs, labels = pair_batch([self.train_pairs[int(i)] for i in rows])  # (2B, T), (2B, T)
        device = self.config.device
        scores = pair_scores(self.model, self.reference, inputs.to(device), labels.to(device))
        loss, summary = summarise(scores, self.config.beta)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return summary, int((labels != -100).sum()), float(norm)

    def loss_of(self, summary: PreferenceSummary) -> float:
        return summary.loss

    def held_out(self) -> PreferenceSummary:
        return evaluate_pairs(self.model, self.reference, self.val_pairs, self.config.beta)

    def step_metrics(self, summary: PreferenceSummary, held: PreferenceSummary | None, common: dict) -> DpoMetrics:
        return DpoMetrics(
            val_loss=held.loss if held else None,
            chosen_ratio=summary.chosen_ratio,
            rejected_ratio=summary.rejected_ratio,
            margin=summary.margin,
            accuracy=summary.accuracy,
            val_accuracy=held.accuracy if held else None,
            val_margin=held.margin if held else None,
            **common,
        )

    def describe(self) -> dict:
        return {**super().describe(), "copies": 1}  # the frozen reference: a second copy of the weights
