"""What the Training page offers: the models a student trains (named from their presets), the learning rates, the
races' line-ups, and a run's result in one line.

The page only draws these; they are derived here from the presets and the trainer's options, so a preset that
changes changes its label and no page holds a list of its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from llmviz.errors import ConfigError
from llmviz.lessons import words
from llmviz.lessons.architectures import SWITCH_RACES
from llmviz.models.charlevel import CHAR_MODEL_TITLES
from llmviz.models.gpt import GPTConfig
from llmviz.models.presets import PRESETS, PresetName
from llmviz.training.config import OPTIMIZER_TITLES, ModelName, Optimizer, TrainConfig

#: The GPT presets a student trains on the Training page, with the name each goes by.
GPT_TITLES = {
    "gpt-nano": "GPT nano",
    "gpt-micro": "GPT micro",
    "gpt-mini": "GPT mini",
    "llama-style": "Llama-style",
    "qwen-style": "Qwen-style",
    "moe-tiny": "Mixture of experts",
}
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)
SWITCH_RACE_CONTEXT = 32  # the context an architecture race trains at; its GPT micros read up to 64
DEFAULT_BATCH_TEXT = 'Every object has an identity, a type and a value.\nThe "for" statement is used to iterate'


LLAMA = ["RoPE", "RMSNorm", "SwiGLU", "grouped-query"]  # Llama's choices, in the order a label names them


def _choices(config: GPTConfig) -> list[str]:
    """The architecture choices of a preset that differ from GPT-2's, in words."""
    if config.n_experts:
        return [f"{config.n_experts} experts", f"top-{config.experts_top_k}"]
    choices = []
    if config.positions == "rope":
        choices.append("RoPE")
    if config.norm == "rmsnorm":
        choices.append("RMSNorm")
    if config.mlp_kind == "swiglu":
        choices.append("SwiGLU")
    if config.kv_heads < config.n_heads:
        choices.append("grouped-query")
    if config.qkv_bias:
        choices.append("biased W_Q/W_K/W_V")
    if config.tie_weights:
        choices.append("tied head")
    return choices


def preset_label(name: str) -> str:
    """A preset's name with its size and architecture, from the preset itself.

    >>> preset_label("gpt-micro")
    'GPT micro (2 layers, d 64)'
    >>> preset_label("llama-style")
    'Llama-style (4 layers, d 128: RoPE, RMSNorm, SwiGLU, grouped-query)'
    >>> preset_label("qwen-style")
    'Qwen-style (4 layers, d 128: like Llama, biased W_Q/W_K/W_V, tied head)'
    >>> preset_label("moe-tiny")
    'Mixture of experts (2 layers, d 64, 4 experts, top-2)'
    """
    config = PRESETS[cast(PresetName, name)]
    size = f"{config.n_layers} layers, d {config.d_model}"
    choices = _choices(config)
    if name != "llama-style" and choices[: len(LLAMA)] == LLAMA and len(choices) > len(LLAMA):
        choices = ["like Llama"] + choices[len(LLAMA) :]
    if config.n_experts:
        return f"{GPT_TITLES[name]} ({size}, {', '.join(choices)})"
    return f"{GPT_TITLES[name]} ({size}{': ' + ', '.join(choices) if choices else ''})"


GPT_SIZES = {name: preset_label(name) for name in GPT_TITLES}
MODEL_LABELS = GPT_SIZES | {name: f"char · {title}" for name, title in CHAR_MODEL_TITLES.items()}


@dataclass(frozen=True)
class Runner:
    """One runner of a race: its model, optimizer and learning rate, and the name it goes by on the chart."""

    model: str
    optimizer: str
    lr: float
    title: str


def names_race() -> list[Runner]:
    """Every character-level model on the names, with Adam (the neural bigram at a learning rate that lets it
    reach the count table's loss in a few hundred steps).

    >>> [(r.model, r.lr) for r in names_race()][:3]
    [('bigram-counts', 0.003), ('bigram-neural', 0.1), ('mlp', 0.003)]
    """
    return [
        Runner(name, "adam", 1e-1 if name == "bigram-neural" else 3e-3, title)
        for name, title in CHAR_MODEL_TITLES.items()
    ]


def optimizer_race(model: str) -> list[Runner]:
    """One model trained with SGD, momentum, RMSprop and Adam, each at a learning rate that suits it.

    >>> [r.title for r in optimizer_race("mlp")]
    ['SGD (lr 0.3)', 'SGD with momentum (lr 0.03)', 'RMSprop (lr 0.003)', 'Adam (lr 0.003)']
    """
    rates = (("sgd", 0.3), ("momentum", 0.03), ("rmsprop", 3e-3), ("adam", 3e-3))
    return [Runner(model, name, lr, f"{OPTIMIZER_TITLES[name]} (lr {lr:g})") for name, lr in rates]


def switch_race_configs(switch: str, steps: int, seed: int, device: str = "cpu") -> list[tuple[str, TrainConfig]]:
    """An architecture race's two runners (``(title, config)``): the same GPT micro, seed and batches at a context of
    :data:`SWITCH_RACE_CONTEXT` (it reads up to 64), differing in one switch (llmviz.lessons.architectures).

    >>> [(title, config.architecture) for title, config in switch_race_configs("positions", 50, seed=1)]
    [('learned positions', {'positions': 'learned'}), ('RoPE', {'positions': 'rope'})]
    """
    return [
        (
            title,
            TrainConfig(
                model="gpt-micro",
                tokenizer="char",
                context_length=SWITCH_RACE_CONTEXT,
                model_context=64,
                batch_size=16,
                steps=steps,
                architecture=switches or None,
                eval_interval=max(1, steps // 10),
                seed=seed,
                device=device,
            ),
        )
        for title, switches in SWITCH_RACES[switch]
    ]


def lineup_configs(
    lineup: Sequence[Runner], steps: int, seed: int, device: str = "cpu"
) -> list[tuple[str, TrainConfig]]:
    """A names or optimizer race's runners (``(title, config)``): characters, a context of 16, batches of 32 and a
    constant learning rate without warmup, one seed for every runner (a fair race).

    >>> [(title, config.optimizer, config.lr) for title, config in lineup_configs(names_race()[:1], 50, seed=1)]
    [('Bigram (count table)', 'adam', 0.003)]
    """
    return [
        (
            runner.title,
            TrainConfig(
                model=cast(ModelName, runner.model),
                tokenizer="char",
                context_length=16,
                batch_size=32,
                steps=steps,
                optimizer=cast(Optimizer, runner.optimizer),
                lr=runner.lr,
                eval_interval=max(1, steps // 10),
                seed=seed,
                device=device,
                warmup_steps=0,
                schedule="constant",
            ),
        )
        for runner in lineup
    ]


@dataclass(frozen=True)
class RunResult:
    """Where a run ended: its steps, its final training loss (the mean of its last steps), its last validation loss
    and the measure of the section that started it (validation perplexity, held-out accuracy, tokens/s)."""

    steps: int
    total: int
    state: str
    train_loss: float | None
    val_loss: float | None
    measure: str | None = None  # "validation perplexity 14.2"

    def line(self, label: str) -> str:
        """The run's final line.

        >>> RunResult(100, 100, "finished", 2.6041, 2.71, "validation perplexity 15.0").line("LoRA r4")
        'LoRA r4 · finished after 100 steps · training loss 2.604 · validation loss 2.710 · validation perplexity 15.0'
        >>> RunResult(40, 100, "stopped", 3.0, None).line("full")
        'full · stopped at step 40 of 100 · training loss 3.000'
        """
        where = f"finished after {self.steps} steps" if self.state == "finished" else f"{self.state} at step"
        if self.state != "finished":
            where += f" {self.steps} of {self.total}"
        parts = [label, where]
        if self.train_loss is not None:
            parts.append(f"training loss {self.train_loss:.3f}")
        if self.val_loss is not None:
            parts.append(f"validation loss {self.val_loss:.3f}")
        if self.measure:
            parts.append(self.measure)
        return " · ".join(parts)


def final_train_loss(losses: Sequence[float], last: int = 10) -> float | None:
    """The mean training loss of the last ``last`` steps (one step's loss is one batch's: noisy).

    >>> final_train_loss([5.0, 3.0, 2.0, 1.0], last=2)
    1.5
    >>> final_train_loss([]) is None
    True
    """
    finite = [value for value in losses[-last:] if math.isfinite(value)]
    return sum(finite) / len(finite) if finite else None


def perplexity_measure(val_loss: float | None) -> str | None:
    """The language-model measure of a run: e^(validation loss).

    >>> perplexity_measure(math.log(20.0))
    'validation perplexity 20.00'
    """
    return None if val_loss is None else f"validation perplexity {math.exp(val_loss):,.2f}"


def smooth(values: list[float], weight: float = 0.9) -> list[float]:
    """Exponential moving average with bias correction (as TensorBoard's smoothing slider).

    >>> smooth([1.0, 3.0], weight=0.5)
    [1.0, 2.3333333333333335]
    """
    if not 0.0 <= weight < 1.0:
        raise ConfigError("The smoothing weight must be in [0, 1).")
    out, average = [], 0.0
    for step, value in enumerate(values, start=1):
        average = weight * average + (1 - weight) * value
        out.append(average / (1 - weight**step))
    return out


@dataclass(frozen=True)
class RecordedCurve:
    """A checkpoint's recorded losses (what its training wrote down): every step's training loss, the validation
    loss where it was measured, and the vocabulary a uniform guess spreads over."""

    steps: list[int]
    train_loss: list[float]
    val_steps: list[int]
    val_loss: list[float]
    vocab_size: int


def recorded_curve(meta: dict) -> RecordedCurve | None:
    """The losses a checkpoint recorded while it trained (its ``metrics``), or None when it kept none.

    >>> meta = {"metrics": [{"step": 1, "train_loss": 8.3, "val_loss": None}, {"step": 2, "train_loss": 7.9,
    ...         "val_loss": 8.0}], "model": {"config": {"vocab_size": 4096}}}
    >>> curve = recorded_curve(meta)
    >>> curve.steps, curve.val_steps, curve.val_loss, curve.vocab_size
    ([1, 2], [2], [8.0], 4096)
    """
    metrics = [m for m in meta.get("metrics") or [] if isinstance(m, dict) and m.get("train_loss") is not None]
    if not metrics:
        return None
    measured = [m for m in metrics if m.get("val_loss") is not None]
    return RecordedCurve(
        steps=[int(m["step"]) for m in metrics],
        train_loss=[float(m["train_loss"]) for m in metrics],
        val_steps=[int(m["step"]) for m in measured],
        val_loss=[float(m["val_loss"]) for m in measured],
        vocab_size=int(meta.get("model", {}).get("config", {}).get("vocab_size", 0)),
    )


def loss_words(curves: dict[str, tuple[Sequence[float], Sequence[float]]]) -> str:
    """Loss curves in words: for each named curve (its steps and values), the loss now, where it started and its
    trend over the last quarter of the steps (:func:`llmviz.lessons.words.trend`); at most four curves.

    >>> loss_words({"loss": ([0, 10, 20, 30], [4.0, 3.0, 2.5, 2.0])})
    'Loss now 2 at step 30, from 4 at step 0; over the last quarter of the steps it fell by 0.5.'
    """
    said = [words.trend(steps, values, name) for name, (steps, values) in list(curves.items())[:4]]
    text = "; ".join(said) + "." if said else "No curve yet."
    return text[0].upper() + text[1:]


def backprop_words(labels: list[str], probabilities: list[float], target: int = 0) -> str:
    """The output layer's gradient bars in words (``labels[target]`` the target, then the likeliest other tokens):
    the target's p and its gradient p − 1, and the likeliest other token's p, which is its gradient.

    >>> backprop_words(['"a" (target)', '"b"', '"c"'], [0.25, 0.5, 0.125])
    'The target "a" (target) has p 0.25: its logit\\'s gradient is p - 1 = -0.75, pushed up. The likeliest other, \
"b", has p 0.5 = its gradient, pushed down.'
    """
    others = [i for i in range(len(labels)) if i != target]
    said = (
        f"The target {labels[target]} has p {words.number(probabilities[target])}: its logit's gradient is p - 1 = "
        f"{words.number(probabilities[target] - 1)}, pushed up."
    )
    if others:
        top = max(others, key=lambda i: probabilities[i])
        said += (
            f" The likeliest other, {labels[top]}, has p {words.number(probabilities[top])} = its gradient, pushed "
            "down."
        )
    return said


def extrapolation_words(trained: int, context: int, within: dict[str, float], beyond: dict[str, float]) -> str:
    """The loss at each position, past the context a run trained at, in words: each run's mean loss within the
    trained positions and beyond them.

    >>> extrapolation_words(32, 64, {"learned": 1.9, "RoPE": 1.95}, {"learned": 3.1, "RoPE": 2.2})
    'Mean loss at positions 1-32 (trained) and 33-64 (beyond): learned 1.9 and 3.1; RoPE 1.95 and 2.2.'
    """
    runs = "; ".join(f"{name} {words.number(within[name])} and {words.number(beyond[name])}" for name in within)
    return f"Mean loss at positions 1-{trained} (trained) and {trained + 1}-{context} (beyond): {runs}."
