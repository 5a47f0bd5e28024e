"""Fine-tuning a pretrained GPT for a task: is a first name on the male or the female list?

The labelled data come from what ships with the app: the ``names`` package's own lists of first
names (the US 1990 census lists it generates names from). A name on both lists is labelled by the
list where it is far more frequent, or left out when it is not (Jordan); the
most common names of each list are kept in equal numbers, and a fixed hash of the name puts one in
five into the held-out set, so the split never changes.

The classifier reads the model's last hidden state (after the final LayerNorm) at the name's last
token and maps it to one logit z; P(female) = σ(z), and the loss is binary cross-entropy:

    ℓ = −[y·log σ(z) + (1 − y)·log(1 − σ(z))] = max(z, 0) − z·y + log(1 + e^(−|z|))

Three ways to train it on the same data: only the head (transfer learning, the GPT frozen as a
feature extractor), the head and the last block, or everything (full fine-tuning). And one way
with no training at all: prompting with 0, 1 or k labelled examples and reading the next-token
probabilities of the label words.

>>> train, held_out = name_examples(per_class=40)
>>> len(train) + len(held_out), sum(e.label for e in train + held_out)
(80, 40)
"""

from __future__ import annotations

import functools
import math
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.device import isolated_rng
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT
from llmviz.tokenizers.base import Tokenizer
from llmviz.tokenizers.ids import encode
from llmviz.training.trainer import StepMetrics

LABELS = ("male", "female")  # label 0, label 1
MODES = ("head", "last block", "all")
MODE_TITLES = {
    "head": "head only (transfer learning)",
    "last block": "head + last block",
    "all": "everything (full fine-tuning)",
}


@dataclass(frozen=True)
class Example:
    """A first name and its label (0: from the male list, 1: from the female list)."""

    text: str
    label: int  # 0 = male list, 1 = female list


def _names_file(kind: str) -> Path:
    import names

    return Path(names.__file__).parent / f"dist.{kind}.first"


def read_names_list(kind: str) -> dict[str, float]:
    """One of the package's lists (``male`` or ``female``): name ("Mary") → its frequency in percent, most common
    first."""
    lines = _names_file(kind).read_text(encoding="utf-8").splitlines()
    return {line.split()[0].capitalize(): float(line.split()[1]) for line in lines if line.strip()}


CLEAR_MAJORITY = 10.0  # a name on both lists keeps the label of the list where it is 10 times as frequent


def held_out(name: str, every: int = 5) -> bool:
    """One name in ``every`` is held out, chosen by a fixed hash of the name (the same on every machine)."""
    return zlib.crc32(name.encode("utf-8")) % every == 0


def name_examples(per_class: int = 300) -> tuple[list[Example], list[Example]]:
    """``(train, held_out)``: the ``per_class`` most common names of each list.

    A name on both lists (James is on the female list too, rarely) is labelled by the list where it is at
    least 10 times as frequent; a name without such a majority (Jordan, Jean) is left out."""
    if per_class < 2:
        raise ConfigError("Take at least 2 names per class.")
    male, female = read_names_list("male"), read_names_list("female")

    def clear(name: str, mine: dict[str, float], other: dict[str, float]) -> bool:
        return mine[name] >= CLEAR_MAJORITY * other.get(name, 0.0)

    chosen = [Example(n, 0) for n in [n for n in male if clear(n, male, female)][:per_class]]
    chosen += [Example(n, 1) for n in [n for n in female if clear(n, female, male)][:per_class]]
    chosen.sort(key=lambda e: e.text)
    return [e for e in chosen if not held_out(e.text)], [e for e in chosen if held_out(e.text)]


def listed_as(name: str) -> str:
    """Which list of the task a first name is on ("female", "male", with " (held out)" for a held-out one), or
    "not among the names used"; any capitalisation.

    >>> listed_as("mary"), listed_as("John"), listed_as("Zzyzx")
    ('female', 'male (held out)', 'not among the names used')
    """
    return _listing().get(name.strip().capitalize(), "not among the names used")


@functools.lru_cache(maxsize=1)
def _listing() -> dict[str, str]:
    train, held = name_examples()
    return {e.text: LABELS[e.label] + note for examples, note in ((train, ""), (held, " (held out)")) for e in examples}


# ---------------------------------------------------------------------------- the classifier


def encode_names(tokenizer: Tokenizer, texts: list[str], context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids padded on the right with 0 (B, T) and each text's last position (B,).

    The GPT is causal, so padding after the last token never changes the state read there."""
    encoded = []
    for text in texts:
        ids = encode(tokenizer, " " + text)[-context:]  # a character vocabulary skips what it lacks
        if not ids:
            raise ConfigError(f"The tokenizer turns {text!r} into no tokens.")
        encoded.append(ids)
    longest = max(len(ids) for ids in encoded)
    batch = torch.zeros(len(encoded), longest, dtype=torch.long)
    for row, ids in enumerate(encoded):
        batch[row, : len(ids)] = torch.tensor(ids)
    return batch, torch.tensor([len(ids) - 1 for ids in encoded])


class NameClassifier(nn.Module):
    """A GPT with a one-logit head on the final hidden state of the last token."""

    def __init__(self, backbone: GPT, seed: int = 0):
        super().__init__()
        if not isinstance(backbone, GPT):
            raise ConfigError("The classifier reads a GPT's hidden states: pick a GPT (shipped, GPT-2 or a GPT run).")
        self.backbone = backbone
        generator = torch.Generator().manual_seed(seed)
        d = backbone.config.d_model
        self.head = nn.Linear(d, 1)
        with torch.no_grad():
            self.head.weight.copy_(torch.randn(1, d, generator=generator) * 0.02)
            self.head.bias.zero_()

    def hidden(self, idx: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        """The final hidden state at each text's last token: ``idx`` (B, T), ``last`` (B,) → (B, C). No hook on
        the shared backbone, so sessions classifying at the same time never read each other's states."""
        states = self.backbone.final_hidden(idx)  # (B, T, C)
        return states[torch.arange(idx.shape[0], device=idx.device), last]  # (B, C)

    def forward(self, idx: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden(idx, last)).squeeze(-1)  # (B,) logits z


def set_trainable(classifier: NameClassifier, mode: str) -> list[nn.Parameter]:
    """Freeze what ``mode`` does not train; return the parameters that train."""
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)} (got {mode!r})")
    for parameter in classifier.backbone.parameters():
        parameter.requires_grad_(mode == "all")
    if mode == "last block":
        for parameter in [*classifier.backbone.blocks[-1].parameters(), *classifier.backbone.ln_f.parameters()]:
            parameter.requires_grad_(True)
    for parameter in classifier.head.parameters():
        parameter.requires_grad_(True)
    return [p for p in classifier.parameters() if p.requires_grad]


@dataclass(frozen=True)
class BCESteps:
    """Binary cross-entropy written out, one example per row."""

    logits: list[float]
    labels: list[int]
    probabilities: list[float]  # σ(z)
    losses: list[float]  # −[y log σ(z) + (1 − y) log(1 − σ(z))]
    mean: float


def bce_steps(logits: torch.Tensor, labels: torch.Tensor) -> BCESteps:
    """Each step of the loss, in the stable form max(z, 0) − z·y + log(1 + e^(−|z|)).

    >>> steps = bce_steps(torch.tensor([0.0, 2.0]), torch.tensor([1, 0]))
    >>> [round(v, 4) for v in steps.losses], round(steps.mean, 4)   # log 2, and 2 + log(1 + e⁻²)
    ([0.6931, 2.1269], 1.41)
    """
    z, y = logits.detach().double(), labels.double()
    losses = torch.clamp(z, min=0) - z * y + torch.log1p(torch.exp(-z.abs()))
    return BCESteps(z.tolist(), labels.tolist(), torch.sigmoid(z).tolist(), losses.tolist(), float(losses.mean()))


@torch.no_grad()
def accuracy(classifier: NameClassifier, tokenizer: Tokenizer, examples: list[Example]) -> float:
    was_training = classifier.training
    classifier.eval()
    device = next(classifier.parameters()).device
    idx, last = encode_names(tokenizer, [e.text for e in examples], classifier.backbone.config.context_length)
    predictions = (classifier(idx.to(device), last.to(device)) > 0).long().cpu()  # (B,)
    classifier.train(was_training)
    return float((predictions == torch.tensor([e.label for e in examples])).float().mean())


HEAD_FILE = "classifier_head.safetensors"  # next to model.safetensors in a fine-tuned checkpoint folder


def save_head(classifier: NameClassifier, directory: str | Path) -> Path:
    """Write the classifier's head (``weight`` (1, C), ``bias`` (1,)) as ``classifier_head.safetensors``."""
    from safetensors.torch import save_file

    path = Path(directory) / HEAD_FILE
    save_file({k: v.detach().contiguous().cpu() for k, v in classifier.head.state_dict().items()}, str(path))
    return path


def load_classifier(directory: str | Path, device: str = "cpu") -> tuple[NameClassifier, Tokenizer, dict]:
    """The fine-tuned classifier of a checkpoint folder written by ``python -m llmviz finetune``: the GPT from
    ``model.safetensors`` and the head from ``classifier_head.safetensors`` (safetensors only, shapes checked).
    Returns ``(classifier, tokenizer, task)`` where ``task`` is what the checkpoint says about the task."""
    from llmviz.errors import CheckpointError
    from llmviz.training.checkpoint import load_checkpoint
    from llmviz.training.safetensors_file import read_safetensors, regular_file

    if not Path(directory).is_dir():
        raise CheckpointError(
            f"{Path(directory).name} is a single file: a fine-tuned classifier is a folder "
            f"with {HEAD_FILE} next to the GPT."
        )
    model, tokenizer, meta = load_checkpoint(directory, device)
    task = meta.get("task")
    if not isinstance(task, dict) or task.get("head_file") != HEAD_FILE:
        raise CheckpointError(
            f"{Path(directory).name} has no classifier head: it was not written by `python -m llmviz finetune`."
        )
    if not isinstance(model, GPT):
        raise CheckpointError("A classifier head sits on a GPT; this checkpoint holds another kind of model.")
    d = model.config.d_model
    path = Path(directory) / HEAD_FILE
    if not path.exists():
        raise CheckpointError(f"{Path(directory).name} says it has a classifier head, but {HEAD_FILE} is missing.")
    if regular_file(path).st_size > 65_536 + 8 * (d + 1):  # a JSON header and d + 1 numbers: nothing larger is read
        raise CheckpointError(f"{HEAD_FILE} is far larger than a head of {d + 1} numbers: refused unread.")
    head = read_safetensors(path)
    expected = {"weight": (1, d), "bias": (1,)}
    found = {name: tuple(tensor.shape) for name, tensor in head.items()}
    if found != expected:
        raise CheckpointError(f"{HEAD_FILE} holds {found}; a head on this GPT needs {expected}.")
    if not all(bool(torch.isfinite(tensor).all()) for tensor in head.values()):
        raise CheckpointError(f"{HEAD_FILE} holds NaN or infinite numbers.")

    def accuracy_or_none(value) -> float | None:  # what the folder's JSON says: a number in [0, 1], or unknown
        return (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1 else None
        )

    task = {
        **task,
        "accuracy_before": accuracy_or_none(task.get("accuracy_before")),
        "accuracy_after": accuracy_or_none(task.get("accuracy_after")),
    }
    classifier = NameClassifier(model)
    classifier.head.load_state_dict(head)
    classifier.to(device).eval()
    for parameter in classifier.parameters():
        parameter.requires_grad_(False)
    return classifier, tokenizer, task


@torch.no_grad()
def female_probabilities(classifier: NameClassifier, tokenizer: Tokenizer, texts: list[str]) -> list[float]:
    """σ(z) = P(label 1, the female list) for each text, read from the classifier's one logit z."""
    if not texts:
        return []
    device = next(classifier.parameters()).device
    idx, last = encode_names(tokenizer, texts, classifier.backbone.config.context_length)  # (B, T), (B,)
    return torch.sigmoid(classifier(idx.to(device), last.to(device)).double()).tolist()  # (B,)


# ---------------------------------------------------------------------------- a lab run


@dataclass(frozen=True)
class FineTuneConfig:
    """The run's settings (the job system reads ``steps``)."""

    mode: str = "head"
    steps: int = 150
    batch_size: int = 32
    lr: float = 1e-3
    per_class: int = 300
    eval_interval: int = 10
    seed: int = 1337
    device: str = "cpu"

    def __post_init__(self):
        problems = []
        if self.mode not in MODES:
            problems.append(f"mode must be one of {', '.join(MODES)}")
        for name in ("steps", "batch_size", "eval_interval"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append("the learning rate must be a positive number")
        if problems:
            raise ConfigError("This fine-tuning configuration cannot work: " + "; ".join(problems) + ".")


@dataclass
class ClassifierMetrics(StepMetrics):
    """A step's metrics, plus the held-out accuracy when it was measured."""

    # what the lab keeps with each curve point (llmviz.jobs.kept_rows.measures_of): the Adapting page's accuracy
    # chart and final line, drawn from the record after a restart
    SERIES: ClassVar[tuple[str, ...]] = ("val_accuracy", "val_accuracy_before")

    val_accuracy: float | None = None
    val_accuracy_before: float | None = None  # on the first step's metrics: the untrained head's accuracy


@dataclass
class FineTuneTrainer:
    """Train a :class:`NameClassifier` on the names task; the Trainer interface the job system drives.

    ``model`` is the (fine-tuned) GPT itself, so the picker can show it; ``classifier`` holds it and the head.
    """

    kind: ClassVar[str] = "finetune"  # what the lab keeps its run as (llmviz.jobs.runners)
    config: FineTuneConfig
    tokenizer: Tokenizer
    initial_model: InitVar[GPT]  # copied into the classifier; the shared original is not kept (nor pickled)
    step: int = 0
    history: list[ClassifierMetrics] = field(default_factory=list)

    def __post_init__(self, initial_model: GPT):
        with isolated_rng(self.config.seed):  # construction draws from the global generator: never reseed it for good
            backbone = GPT(initial_model.config.replace(dropout=0.0))
            backbone.load_state_dict(initial_model.state_dict())
            self.classifier = NameClassifier(backbone, seed=self.config.seed).to(self.config.device)
        self.model = self.classifier.backbone
        self.trained = set_trainable(self.classifier, self.config.mode)
        self.optimizer = torch.optim.AdamW(self.trained, lr=self.config.lr, weight_decay=0.0)
        self.train_examples, self.val_examples = name_examples(self.config.per_class)
        context = backbone.config.context_length
        self.train_idx, self.train_last = encode_names(self.tokenizer, [e.text for e in self.train_examples], context)
        self.train_labels = torch.tensor([float(e.label) for e in self.train_examples])
        val_idx, _ = encode_names(self.tokenizer, [e.text for e in self.val_examples], context)
        self.tokens = (self.train_idx.numel(), val_idx.numel())  # the names' tokens: train, held out
        self.generator = torch.Generator().manual_seed(self.config.seed)
        self.accuracy_before = accuracy(self.classifier, self.tokenizer, self.val_examples)

    @property
    def sharded(self) -> bool:
        """Never: the classifier trains in one process (what the job system asks before it saves the run's file)."""
        return False

    def describe(self) -> dict:
        """What a page and the memory estimate need of the run (:mod:`llmviz.jobs.runners`)."""
        from llmviz.training.checkpoint import run_facts

        return run_facts(self.model, self.config, self.tokenizer, self.tokens)

    def parameter_counts(self) -> tuple[int, int]:
        """(trained, total) parameters."""
        return sum(p.numel() for p in self.trained), sum(p.numel() for p in self.classifier.parameters())

    def held_out_accuracy(self) -> float:
        return accuracy(self.classifier, self.tokenizer, self.val_examples)

    def train_step(self) -> float:
        rows = torch.randint(len(self.train_examples), (self.config.batch_size,), generator=self.generator)
        device = self.config.device
        logits = self.classifier(self.train_idx[rows].to(device), self.train_last[rows].to(device))  # (B,)
        loss = F.binary_cross_entropy_with_logits(logits, self.train_labels[rows].to(device))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def run(
        self,
        steps: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        report_at: Callable[[int], bool] | None = None,  # Trainer.run's: here every step is reported
    ) -> Iterator[ClassifierMetrics]:
        end = self.config.steps if steps is None else self.step + steps
        self.classifier.train()
        start = time.perf_counter()
        while self.step < end:
            if should_stop is not None and should_stop():
                return
            began = time.perf_counter()
            loss = self.train_step()
            self.step += 1
            if not math.isfinite(loss):
                raise ConfigError(f"The loss became {loss} at step {self.step}: lower the learning rate.")
            measured = self.step % self.config.eval_interval == 0 or self.step == end
            metrics = ClassifierMetrics(
                step=self.step,
                train_loss=loss,
                val_loss=None,
                perplexity=math.exp(min(loss, 50.0)),
                lr=self.config.lr,
                tokens_per_s=self.config.batch_size / max(time.perf_counter() - began, 1e-9),
                grad_norm=0.0,
                elapsed_s=time.perf_counter() - start,
                val_accuracy=self.held_out_accuracy() if measured else None,
                val_accuracy_before=self.accuracy_before if self.step == 1 else None,
            )
            self.history.append(metrics)
            yield metrics

    def generate_sample(self, prompt: str = "", max_new_tokens: int = 100, **options) -> str:
        from llmviz.generation.sampling import generate_text

        return generate_text(self.model, self.tokenizer, prompt, max_new_tokens=max_new_tokens, seed=self.config.seed)


# ---------------------------------------------------------------------------- prompting instead of training


def few_shot_prompt(examples: list[Example], name: str) -> str:
    """A prompt with labelled examples, then the name to label.

    >>> print(few_shot_prompt([Example("Mary", 1)], "James"))
    Name: Mary
    Gender: female
    <BLANKLINE>
    Name: James
    Gender:
    """
    shots = "".join(f"Name: {e.text}\nGender: {LABELS[e.label]}\n\n" for e in examples)
    return f"{shots}Name: {name}\nGender:"


@torch.no_grad()
def label_log_probabilities(model: GPT, tokenizer: Tokenizer, prompt: str) -> list[float]:
    """log P(" male" | prompt) and log P(" female" | prompt): the sum over each label's tokens."""
    context = model.config.context_length
    scores = []
    for word in LABELS:
        prompt_ids, word_ids = encode(tokenizer, prompt), encode(tokenizer, " " + word)
        ids = (prompt_ids + word_ids)[-context - 1 :]
        idx = torch.tensor(ids[:-1])[None]  # (1, T)
        log_probs = F.log_softmax(model(idx)[0][0], -1)  # (T, V)
        positions = range(len(ids) - 1 - len(word_ids), len(ids) - 1)
        scores.append(sum(float(log_probs[p, ids[p + 1]]) for p in positions))
    return scores


@torch.no_grad()
def label_log_probabilities_batch(
    model: GPT, tokenizer: Tokenizer, prompts: list[str], chunk: int = 32
) -> list[list[float]]:
    """:func:`label_log_probabilities` for many prompts: each label's text appended to every prompt, padded on the
    right (a causal model's states before the padding do not change), ``chunk`` prompts per forward pass, and the
    output head applied only where a label token is predicted. One ``[male, female]`` pair per prompt."""
    context = model.config.context_length
    device = next(model.parameters()).device
    scores = [[0.0] * len(LABELS) for _ in prompts]
    encoded = [encode(tokenizer, prompt) for prompt in prompts]
    for column, word in enumerate(LABELS):
        word_ids = encode(tokenizer, " " + word)
        for start in range(0, len(prompts), chunk):
            rows = [(ids + word_ids)[-context - 1 :] for ids in encoded[start : start + chunk]]
            idx = torch.zeros(len(rows), max(len(r) for r in rows) - 1, dtype=torch.long)  # (B, T)
            for row, ids in enumerate(rows):
                idx[row, : len(ids) - 1] = torch.tensor(ids[:-1])
            hidden = model.final_hidden(idx.to(device))  # (B, T, C)
            for row, ids in enumerate(rows):
                positions = torch.arange(len(ids) - 1 - len(word_ids), len(ids) - 1)  # (W,) where a label token is next
                log_probs = F.log_softmax(model.lm_head(hidden[row, positions.to(device)]).double(), -1)  # (W, V)
                targets = torch.tensor(ids[-len(word_ids) :], device=device)  # (W,)
                scores[start + row][column] = float(log_probs.gather(1, targets[:, None]).sum())
    return scores


@dataclass(frozen=True)
class PromptingResult:
    """How well prompting with ``shots`` labelled examples classifies the held-out names."""

    shots: int
    accuracy: float
    prompt_example: str
    female_share: float  # how often it answered "female" (1.0 or 0.0: it always gives the same answer)


def prompting_accuracy(
    model: GPT, tokenizer: Tokenizer, shots: int, held: list[Example], train: list[Example]
) -> PromptingResult:
    """Accuracy of prompting with ``shots`` labelled examples (alternating labels, from the training names)."""
    males, females = [e for e in train if e.label == 0], [e for e in train if e.label == 1]
    chosen = [(females if i % 2 == 0 else males)[i // 2] for i in range(shots)]
    right = females_said = 0
    prompts = [few_shot_prompt(chosen, example.text) for example in held]
    for example, (male, female) in zip(held, label_log_probabilities_batch(model, tokenizer, prompts), strict=True):
        right += int((female > male) == bool(example.label))
        females_said += int(female > male)
    return PromptingResult(
        shots, right / len(held), few_shot_prompt(chosen, held[0].text if held else "Alex"), females_said / len(held)
    )
