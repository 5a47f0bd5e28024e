"""A preset run that grows an induction head: a 2-layer attention-only GPT on text where random sequences repeat.

An induction head continues a pattern it has seen earlier in its context: after ``… A B … A`` it attends
to the ``B`` that followed the earlier ``A`` and predicts ``B``. It needs two heads working together: a
*previous-token head* in layer 0 writes "the token before me was A" into every position, and the induction
head in layer 1 looks for the position whose previous token equals the current one. Olsson et al. (2022,
"In-context Learning and Induction Heads") saw such heads appear suddenly during training, together with a
drop in the loss on repeated text: a phase change. This module makes that happen on a laptop CPU:

- :func:`repeated_text`: lines of random characters in which one random stretch (8–16 characters) appears
  twice, at a random place and distance, so only "find the earlier copy and continue it" predicts it
  (a fixed distance would let a single head cheat by position);
- :class:`InductionPreset`: the model and training settings (a regular llmviz training run);
- :func:`probe`: on fixed test lines (a random half repeated twice) the four head scores of
  :mod:`llmviz.interpret.lens` and the loss on the first and on the repeated half;
- :func:`phase_curve`: :func:`probe` at every kept snapshot of a run;
- :func:`knockout`: the two losses with heads knocked out (:mod:`llmviz.interpret.ablation`): without its induction
  head a trained model is back to the loss on the repeated half it had before the phase change.
"""

from __future__ import annotations

import math
import random
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from llmviz.interpret import ablation, heads
from llmviz.models.gpt import GPT, cache_name
from llmviz.tokenizers.char_word import CharTokenizer
from llmviz.training.config import TrainConfig
from llmviz.training.trainer import Trainer

ALPHABET = string.ascii_letters + string.digits  # 62 characters; "\n" ends every line (63 tokens in all)
FORMED = 0.3  # an induction score from which a head counts as an induction head (attention spread evenly: 0.04)


@dataclass(frozen=True)
class InductionPreset:
    """Settings of the induction-head run (the defaults show the phase change in a few hundred steps)."""

    context: int = 32  # characters per line (= the model's context); a line is one training window
    min_repeat: int = 8  # length range of the stretch that appears twice
    max_repeat: int = 16
    lines: int = 4000
    steps: int = 600
    batch_size: int = 32
    lr: float = 1e-3
    d_model: int = 128
    n_heads: int = 2
    seed: int = 0
    snapshot_every: int = 20  # steps between the snapshots the chart reads (besides 0, 1, 2, 5, 10, …)

    def __post_init__(self):
        if not (2 <= self.min_repeat <= self.max_repeat and 2 * self.max_repeat <= self.context):
            raise ValueError("need 2 ≤ min_repeat ≤ max_repeat and two copies of max_repeat within the context")

    def train_config(self) -> TrainConfig:
        """A regular llmviz training configuration: windows are exactly the lines (stride = line length)."""
        return TrainConfig(
            model="attn-only-2l",
            tokenizer="char",
            context_length=self.context,
            stride=self.context + 1,
            batch_size=self.batch_size,
            steps=self.steps,
            lr=self.lr,
            schedule="constant",
            warmup_steps=10,
            eval_interval=max(1, self.steps // 10),
            seed=self.seed,
            d_model=self.d_model,
            n_heads=self.n_heads,
        )


PRESET = InductionPreset()


def tokenizer() -> CharTokenizer:
    return CharTokenizer(ALPHABET + "\n")


def repeated_line(rng: random.Random, context: int, min_repeat: int, max_repeat: int) -> str:
    """``context`` random characters in which one stretch of ``min_repeat``–``max_repeat`` appears twice.

    >>> line = repeated_line(random.Random(0), 16, 4, 4)
    >>> len(line), any(line[i:i + 4] == line[i + 4:i + 8] for i in range(9))
    (16, True)
    """
    length = rng.randint(min_repeat, max_repeat)
    start = rng.randint(0, context - 2 * length)
    line = [rng.choice(ALPHABET) for _ in range(context)]
    line[start + length : start + 2 * length] = line[start : start + length]
    return "".join(line)


def repeated_text(preset: InductionPreset = PRESET) -> str:
    """The training text: ``preset.lines`` lines of :func:`repeated_line`, each ending in a newline."""
    rng = random.Random(preset.seed)
    return "".join(
        repeated_line(rng, preset.context, preset.min_repeat, preset.max_repeat) + "\n" for _ in range(preset.lines)
    )


def make_trainer(preset: InductionPreset = PRESET) -> Trainer:
    """The preset run's trainer (data, attention-only GPT, optimizer), ready for ``run()`` or a job."""
    return Trainer.from_text(repeated_text(preset), preset.train_config(), tokenizer=tokenizer())


def probe_lines(preset: InductionPreset = PRESET, count: int = 16, seed: int = 1234) -> torch.Tensor:
    """(count, context) token ids: each a random half of distinct characters, repeated twice."""
    chars = tokenizer()
    half = preset.context // 2
    rows = []
    for index in range(count):
        ids = heads.diagnostic_tokens(len(ALPHABET), half, seed=seed + index)
        rows.append(chars.encode("".join(ALPHABET[i] for i in ids)))
    return torch.tensor(rows, dtype=torch.long)


@dataclass(frozen=True)
class ProbeResult:
    """What :func:`probe` measures at one step: head scores (layers, heads) and two losses (nats)."""

    step: int
    scores: dict[str, torch.Tensor]
    first_half_loss: float  # predicting characters of the first copy: nothing to copy from
    repeated_half_loss: float  # predicting characters of the second copy: an induction head gets them right
    vocab_size: int = len(ALPHABET) + 1  # the model's vocabulary (62 characters and the newline)
    test_lines: int = 16  # how many test lines the attention patterns were averaged over
    half_length: int = PRESET.context // 2  # characters of each line's half (the line is it twice)

    @property
    def measured_on(self) -> str:
        """What the scores and losses were measured on, in words (so they are not read as another section's).

        >>> ProbeResult(0, {}, 4.2, 4.2).measured_on
        'the 16 test lines (16 random characters, repeated), their attention averaged'
        """
        lines = "the test line" if self.test_lines == 1 else f"the {self.test_lines} test lines"
        return f"{lines} ({self.half_length} random characters, repeated), their attention averaged"

    @property
    def uniform_loss(self) -> float:
        """The loss of uniform guessing over the model's whole vocabulary: ln V (ln 63 ≈ 4.143 for the preset)."""
        return math.log(self.vocab_size)


@torch.no_grad()
def probe(model: nn.Module, lines: torch.Tensor, step: int = 0) -> ProbeResult:
    """Head scores and the loss on both halves of ``lines`` (each a half repeated twice).

    Positions 0 … h − 2 predict the rest of the first copy; positions h … 2h − 2 predict the second copy's
    characters 1 … h − 1 (position h − 1 predicts the start of the copy, which nothing announces).
    """
    model = cast(GPT, model)  # the probe reads GPT's named cache and config (a snapshot comes back as nn.Module)
    _, _, cache = model.run_with_cache(lines)
    return _measure(cache, lines, step, model.config.n_layers)


def _measure(cache: dict[str, torch.Tensor], lines: torch.Tensor, step: int, n_layers: int) -> ProbeResult:
    half = lines.shape[1] // 2
    patterns = torch.stack(
        [cache[cache_name(layer, "attn.pattern")].mean(0) for layer in range(n_layers)]
    )  # (L, H, T, T), mean over lines
    scores = heads.head_scores(patterns, lines[0].tolist())  # every line has the same repeat structure
    logits = cache["logits"]  # (B, T, V)
    losses = F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), lines[:, 1:].reshape(-1), reduction="none"
    ).view(lines.shape[0], -1)  # (B, T-1)
    return ProbeResult(
        step,
        scores,
        float(losses[:, : half - 1].mean()),
        float(losses[:, half:].mean()),
        vocab_size=logits.shape[-1],
        test_lines=lines.shape[0],
        half_length=half,
    )


def knockout(model: nn.Module, lines: torch.Tensor, knocked: list[tuple[int, int]], mode: str = "zero") -> ProbeResult:
    """:func:`probe`'s two losses on ``lines`` with the heads ``knocked`` (layer, head) knocked out together (zero or
    mean ablation, :mod:`llmviz.interpret.ablation`); its head scores are those of the ablated run."""
    model = cast(GPT, model)
    knocked = ablation.check_heads(model, knocked)
    means = ablation.head_means(model, lines) if mode == "mean" else None
    hooks = ablation.ablation_hooks(model, [knocked] * lines.shape[0], ablation.check_mode(mode), means)
    names = [cache_name(layer, "attn.pattern") for layer in range(model.config.n_layers)] + ["logits"]
    _, _, cache = model.run_with_hooks(lines, hooks=hooks, keep=names)
    return _measure(cache, lines, 0, model.config.n_layers)


def before_phase_change(curve: list[ProbeResult]) -> ProbeResult | None:
    """The last probed step before the phase change begins — before the first step at which some head's induction
    score reaches half of :data:`FORMED` (on the preset run: step 340, score 0.13; at 360 it is 0.19 and the
    loss on the repeated half is already falling) — or None when no head ever gets there (or one was there from
    the first probe).

    >>> scores = lambda value: {"induction": torch.tensor([[0.0, 0.0], [value, 0.0]])}
    >>> points = [(0, 0.04, 4.2), (20, 0.1, 3.0), (40, 0.2, 2.0), (60, 0.5, 1.0)]  # step, score, repeated-half loss
    >>> curve = [ProbeResult(step, scores(value), 4.2, loss) for step, value, loss in points]
    >>> before_phase_change(curve).step
    20
    """
    for index, point in enumerate(curve):
        if strongest_induction_head(point)[2] >= FORMED / 2:
            return curve[index - 1] if index else None
    return None


def phase_curve(
    snapshots: Iterable[tuple[int, nn.Module]], lines: torch.Tensor, progress: Callable[[int], None] | None = None
) -> list[ProbeResult]:
    """:func:`probe` at every ``(step, model)`` of a run, in step order."""
    results = []
    for step, model in sorted(snapshots, key=lambda pair: pair[0]):
        results.append(probe(model, lines, step))
        if progress is not None:
            progress(step)
    return results


def strongest_induction_head(result: ProbeResult) -> tuple[int, int, float]:
    """``(layer, head, score)`` of the head with the highest induction score in layer 1 or later.

    A layer-0 head cannot be an induction head: it needs a previous-token head in an earlier layer to tell
    it where the earlier copy continues (early in training a layer-0 head can still score highest by chance).
    """
    values = result.scores["induction"][1:]  # (L - 1, H)
    if values.numel() == 0:
        raise ValueError("an induction head needs at least two layers")
    layer, head = divmod(int(values.argmax()), values.shape[1])
    return layer + 1, head, float(values[layer, head])


def describe(result: ProbeResult) -> str:
    """One Markdown paragraph on ``result``: whether an induction head has formed, and both losses against
    uniform guessing (the gap shown, not hidden in a rounded label)."""
    layer, head, score = strongest_induction_head(result)
    if score >= FORMED:
        heads = f"At step {result.step} **layer {layer}, head {head}** is an induction head (score {score:.2f})."
    else:
        heads = (
            f"At step {result.step} no head is an induction head yet: the best candidate, layer {layer} "
            f"head {head}, scores {score:.2f} (a head counts from {FORMED:.2f})."
        )
    uniform = result.uniform_loss
    gap = result.first_half_loss - uniform
    where = "above" if gap >= 0 else "below"
    return (
        f"{heads} The loss on the repeated half is {result.repeated_half_loss:.2f} nats; on the first half, "
        f"where nothing can be copied, {result.first_half_loss:.2f} nats: {abs(gap):.2f} {where} uniform "
        f"guessing over the model's {result.vocab_size} tokens (ln {result.vocab_size} = {uniform:.2f}). Scores "
        f"and losses are measured on {result.measured_on}."
    )


def snapshot_models(store, description: dict) -> list[tuple[int, nn.Module]]:
    """``(step, model)`` for every snapshot a run kept (``store``: its
    :class:`llmviz.training.snapshots.SnapshotStore`)."""
    from llmviz.training.checkpoint import model_from_description
    from llmviz.training.snapshots import load_into

    return [(step, load_into(model_from_description(description), store.get(step))) for step in store.steps()]


def probe_snapshot(store, description: dict, step: int, lines: torch.Tensor) -> ProbeResult:
    """:func:`probe` of one kept snapshot (a fresh model: the run's live model is never touched)."""
    from llmviz.training.checkpoint import model_from_description
    from llmviz.training.snapshots import load_into

    return probe(load_into(model_from_description(description), store.get(step)), lines, step)


def chart_steps(store, finished: bool) -> list[int]:
    """The kept snapshot steps on the run's schedule; the newest step too once the run has ended (while it
    trains, a newest snapshot off the schedule is replaced within seconds, so it is not worth probing)."""
    steps = store.steps()
    return [step for step in steps if store.keeps(step) or (finished and step == steps[-1])]
