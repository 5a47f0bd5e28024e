"""What the "Adapt & serve" page shows, computed here (the page only draws it).

Quick views (well under a second on the shipped GPT) are functions the page caches; long work
(LoRA vs full fine-tuning, quantization-aware training, the three fine-tuning modes) is built here
as picklable trainers the page hands to the job system.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import torch

from llmviz.adapt import finetune, lora, memory, quantize
from llmviz.errors import ConfigError
from llmviz.generation import serving
from llmviz.generation.sampling import generate_text
from llmviz.lessons import words
from llmviz.lessons.quiz import Question
from llmviz.models.gpt import GPT
from llmviz.tokenizers.base import Tokenizer
from llmviz.tokenizers.ids import encode
from llmviz.training import footprint
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import prepare_data
from llmviz.training.trainer import Trainer

QUICK_PARAMETERS = 5_000_000  # above this, training demos run as lab runs only
#: what each of the page's computations holds besides the worker's copy of the model, in copies of its weights: a
#: LoRA demo's adapted copy; a quantized and a dequantized copy; PTQ vs QAT's two models and their copies; a
#: measured training step's gradients and AdamW's two moments; generation only (prompting, batching)
TASK_COPIES = {"lora_demo": 2.0, "quantize": 2.0, "ptq_vs_qat": 4.0, "memory": 3.0, "prompting": 0.0, "batching": 0.0}


def task_footprint(kind: str, what: str, model: GPT) -> footprint.Footprint:
    """The memory one of the page's computations (``kind``, a key of :data:`TASK_COPIES`) needs on ``model``: the
    worker's copy of the model, the copies it makes, and a training step's activations (8 windows of at most 64
    tokens, as the demos take), admitted before the task starts.

    >>> from llmviz.models.presets import PRESETS
    >>> small, big = GPT(PRESETS["gpt-nano"]), GPT(PRESETS["gpt-micro"])
    >>> task_footprint("memory", "x", small).preparing_bytes < task_footprint("memory", "x", big).preparing_bytes
    True
    """
    config = model.config
    activations = 4 * footprint.gpt_activation_floats(config, 8, min(64, config.context_length))
    return footprint.model_task(what, model, TASK_COPIES[kind], activations)


MAX_TEXT = 200_000  # characters of the corpus the page's quick views read


def require_gpt(model) -> GPT:
    if not isinstance(model, GPT):
        raise ConfigError("This page adapts GPT models: pick the shipped GPT, GPT-2 or one of your GPT runs.")
    return model


def held_out_ids(tokenizer: Tokenizer, text: str, model: GPT, windows: int = 8) -> torch.Tensor:
    """Windows from the last tenth of the text (the part training runs keep for validation)."""
    text = text[-MAX_TEXT:]
    ids = encode(tokenizer, text[int(len(text) * 0.9) :])  # a character vocabulary skips what it lacks
    context = min(model.config.context_length, 128)
    return quantize.held_out_windows(ids, min(context, max(1, len(ids) - 1)), windows)


def _config(model: GPT, steps: int, lr: float, seed: int, batch_size: int = 8) -> TrainConfig:
    return TrainConfig(
        model="gpt-micro",
        tokenizer="bpe",
        context_length=min(64, model.config.context_length),
        batch_size=batch_size,
        steps=steps,
        lr=lr,
        warmup_steps=max(1, steps // 10),
        eval_interval=max(1, steps // 10),
        eval_batches=2,
        seed=seed,
        device="cpu",
        grad_clip=1.0,
    )


# ---------------------------------------------------------------------------- LoRA


@dataclass(frozen=True)
class LoRADemo:
    """A short LoRA run done on the spot: its losses, the merge check and ΔW of each adapted matrix."""

    losses: list[float]
    max_logit_difference: float  # |logits(merged) − logits(adapter)|, largest over a held-out window
    deltas: dict[str, torch.Tensor]  # ΔW = (α/r)·BA per adapted matrix (d_out, d_in)
    trained: int
    total: int


def lora_demo_steps(
    should_stop: Callable[[], bool],
    model: GPT,
    tokenizer: Tokenizer,
    text: str,
    config: lora.LoRAConfig,
    steps: int = 20,
    seed: int = 0,
) -> Generator[tuple[int, float], None, LoRADemo | None]:
    """Train adapters for a few steps on ``text`` (a copy of ``model``; the original is not touched), yielding
    ``(step, loss)``; returns the :class:`LoRADemo` (None when stopped first). A task loop for
    :meth:`llmviz.jobs.manager.JobManager.submit_task`: the page never trains in its own script run."""
    model = require_gpt(model)
    if model.num_parameters() > QUICK_PARAMETERS:
        raise ConfigError("This model is too large to train on the spot: start a LoRA lab run below instead.")
    # only the training losses are shown: one validation pass at the end, not one every steps // 10 (half the time)
    train_config = _config(model, steps, 3e-3, seed).replace(eval_interval=steps)
    trainer = lora.LoRATrainer(
        train_config, prepare_data(text[:MAX_TEXT], train_config, tokenizer), initial_model=model, lora=config
    )
    losses = []
    for metrics in trainer.run():
        losses.append(metrics.train_loss)
        yield metrics.step, metrics.train_loss
        if should_stop():
            return None
    window = trainer.dataset.val_ids[: train_config.context_length][None]  # (1, T)
    trainer.adapted.eval()
    trainer.model.eval()
    with torch.no_grad():
        difference = (trainer.adapted(window)[0] - lora.merged_copy(trainer.adapted)(window)[0]).abs().max()
    deltas = {
        f"{name}.weight": adapter.delta_weight().detach() for name, adapter in lora.adapters(trainer.adapted).items()
    }
    return LoRADemo(
        losses, float(difference), deltas, lora.trainable_parameters(trainer.adapted), trainer.adapted.num_parameters()
    )


def run_to_end(loop: Generator[tuple[int, float], None, Any]) -> Any:
    """Run a task loop in this thread and return what it returns (for the CLI, tests and notebooks).

    >>> def loop():
    ...     yield 1, 0.5
    ...     return "made"
    >>> run_to_end(loop())
    'made'
    """
    while True:
        try:
            next(loop)
        except StopIteration as end:
            return end.value


def lora_demo(
    model: GPT, tokenizer: Tokenizer, text: str, config: lora.LoRAConfig, steps: int = 20, seed: int = 0
) -> LoRADemo:
    """:func:`lora_demo_steps` run to its end in this thread."""
    return run_to_end(lora_demo_steps(lambda: False, model, tokenizer, text, config, steps, seed))


def delta_rank_bound(name: str, config: lora.LoRAConfig) -> int:
    """The largest rank ΔW of the adapted matrix ``name`` can have: r for each block of rows an adapter of rank r
    writes. W_Q, W_K and W_V share one fused matrix (``attn.qkv``), and each of them adapted there adds its own
    r rows of B A: the default W_Q + W_V adapters reach 2r, all three 3r; every other matrix has one adapter.

    >>> config = lora.LoRAConfig(rank=4, targets=("q", "v"))
    >>> delta_rank_bound("blocks.0.attn.qkv.weight", config), delta_rank_bound("blocks.0.attn.proj.weight", config)
    (8, 4)
    """
    if name.endswith("attn.qkv.weight"):
        return config.rank * sum(1 for target in ("q", "k", "v") if target in config.targets)
    return config.rank


def lora_run(
    model: GPT, tokenizer: Tokenizer, text: str, config: lora.LoRAConfig, steps: int, seed: int, lr: float = 3e-3
) -> lora.LoRATrainer:
    """A LoRA lab run on ``text`` (hand it to the job system)."""
    train_config = _config(require_gpt(model), steps, lr, seed)
    return lora.LoRATrainer(
        train_config, prepare_data(text[:MAX_TEXT], train_config, tokenizer), initial_model=model, lora=config
    )


def full_run(model: GPT, tokenizer: Tokenizer, text: str, steps: int, seed: int, lr: float = 3e-4) -> Trainer:
    """Full fine-tuning on the same text (every weight trains)."""
    train_config = _config(require_gpt(model), steps, lr, seed)
    return Trainer(train_config, prepare_data(text[:MAX_TEXT], train_config, tokenizer), initial_model=model)


def qat_run(
    model: GPT, tokenizer: Tokenizer, text: str, spec: quantize.QuantSpec, steps: int, seed: int, lr: float = 3e-4
) -> quantize.QATTrainer:
    train_config = _config(require_gpt(model), steps, lr, seed)
    return quantize.QATTrainer(
        train_config, prepare_data(text[:MAX_TEXT], train_config, tokenizer), initial_model=model, quant=spec
    )


def memory_run(
    model: GPT,
    tokenizer: Tokenizer,
    text: str,
    steps: int,
    seed: int,
    checkpointing: bool,
    bf16: bool,
    lr: float = 3e-4,
    fp16: bool = False,
) -> memory.MemoryTrainer:
    """Fine-tuning on ``text`` with gradient checkpointing and/or bf16 (or fp16) autocast (same data and seed as
    full_run)."""
    train_config = _config(require_gpt(model), steps, lr, seed)
    return memory.MemoryTrainer(
        train_config,
        prepare_data(text[:MAX_TEXT], train_config, tokenizer),
        initial_model=model,
        checkpointing=checkpointing,
        bf16=bf16,
        fp16=fp16,
    )


def memory_settings(model: GPT) -> list[tuple[str, bool, bool, bool]]:
    """The memory switches a run compares here, ``(name, checkpointing, bf16, fp16)``: bf16 autocast everywhere,
    fp16 too where the model is on CUDA (float16 matrix products are fast there, slow on a CPU)."""
    settings = [
        ("plain", False, False, False),
        ("checkpointing", True, False, False),
        ("checkpointing + bf16", True, True, False),
    ]
    if next(model.parameters()).device.type == "cuda":
        settings.append(("checkpointing + fp16", True, False, True))
    return settings


def delta_between(before: GPT, after: GPT) -> dict[str, torch.Tensor]:
    """ΔW of every matrix that changed between two snapshots of one run (step 0 → step N)."""
    return lora.delta_weights(before.state_dict(), after.state_dict())


@dataclass(frozen=True)
class Spectrum:
    """The singular values of a weight change ΔW (largest first, at most ``limit``), its numerical rank, and how
    many singular values it has in all (min of its two sizes)."""

    values: list[float]
    rank: int
    total: int

    def title(self, name: str) -> str:
        """The chart's title; it says when only the largest values are drawn.

        >>> Spectrum([3.0, 2.0], rank=64, total=64).title("W_Q")
        'W_Q: the 2 largest of 64 singular values of ΔW (numerical rank 64)'
        >>> Spectrum([3.0, 0.0], rank=1, total=2).title("W_Q")
        'W_Q: singular values of ΔW (numerical rank 1)'
        """
        shown = (
            f"the {len(self.values)} largest of {self.total} singular values"
            if len(self.values) < self.total
            else "singular values"
        )
        return f"{name}: {shown} of ΔW (numerical rank {self.rank})"


def spectrum(delta: torch.Tensor, limit: int = 32) -> Spectrum:
    values = lora.singular_values(delta)
    return Spectrum(values[:limit].tolist(), lora.numerical_rank(values), len(values))


# ---------------------------------------------------------------------------- quantization


@dataclass(frozen=True)
class QuantReport:
    """A model quantized with one spec: each layer's error, the bytes before and after, the loss comparison on
    held-out text, and a prompt's greedy continuation from both models."""

    spec: quantize.QuantSpec
    layers: list[quantize.LayerError]
    float_bytes: int
    quantized_bytes: int
    comparison: quantize.Comparison
    text_before: str
    text_after: str


def quant_report_steps(
    should_stop: Callable[[], bool],
    model: GPT,
    tokenizer: Tokenizer,
    text: str,
    spec: quantize.QuantSpec,
    prompt: str,
    new_tokens: int = 40,
) -> Generator[tuple[int, float], None, QuantReport | None]:
    """:func:`quant_report` as a task loop (four steps: quantize, compare on held-out text, two generations)."""
    model = require_gpt(model)
    result = quantize.quantize_model(model, spec)
    yield 1, float("nan")
    if should_stop():
        return None
    comparison = quantize.compare(model, result.model, held_out_ids(tokenizer, text, model))
    yield 2, comparison.loss_after
    if should_stop():
        return None
    before = generate_text(model, tokenizer, prompt, max_new_tokens=new_tokens, temperature=0.0)
    yield 3, float("nan")
    after = generate_text(result.model, tokenizer, prompt, max_new_tokens=new_tokens, temperature=0.0)
    yield 4, float("nan")
    return QuantReport(spec, result.layers, result.float_bytes, result.total_bytes, comparison, before, after)


QUANT_REPORT_STEPS = 4


def quant_report(
    model: GPT, tokenizer: Tokenizer, text: str, spec: quantize.QuantSpec, prompt: str, new_tokens: int = 40
) -> QuantReport:
    return run_to_end(quant_report_steps(lambda: False, model, tokenizer, text, spec, prompt, new_tokens))


def layer_values(model: GPT, name: str, spec: quantize.QuantSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """One matrix's weights before and after quantization (for the histograms)."""
    weight = dict(require_gpt(model).named_parameters())[name].detach()
    return weight.flatten(), quantize.round_trip(weight, spec).flatten()


@dataclass(frozen=True)
class WeightHistograms:
    """One matrix's weights before and after quantization, counted in the same bins (for an overlaid chart)."""

    edges: torch.Tensor  # (bins + 1,)
    before: torch.Tensor  # (bins,) counts of the float weights
    after: torch.Tensor  # (bins,) counts of the quantized-then-dequantized weights

    @property
    def centers(self) -> torch.Tensor:
        return (self.edges[:-1] + self.edges[1:]) / 2  # (bins,)


def weight_histograms(model: GPT, name: str, spec: quantize.QuantSpec, bins: int = 200) -> WeightHistograms:
    """Histograms of one matrix before and after quantization, over the range both cover, every weight counted
    (a chart then draws ``bins`` bars, not a million points).

    >>> from llmviz.models.presets import PRESETS
    >>> spec = quantize.QuantSpec(4, False, True)
    >>> h = weight_histograms(GPT(PRESETS["gpt-nano"]), "blocks.0.attn.qkv.weight", spec, 10)
    >>> int(h.before.sum()) == int(h.after.sum()) == GPT(PRESETS["gpt-nano"]).blocks[0].attn.qkv.weight.numel()
    True
    """
    before, after = layer_values(model, name, spec)
    low = float(torch.minimum(before.min(), after.min()))
    high = float(torch.maximum(before.max(), after.max()))
    if high <= low:  # a constant matrix: one bin around its value
        low, high = low - 0.5, high + 0.5
    edges = torch.linspace(low, high, bins + 1, dtype=torch.float64)  # (bins + 1,)
    return WeightHistograms(
        edges,
        torch.histogram(before.double(), bins=edges).hist,  # (bins,)
        torch.histogram(after.double(), bins=edges).hist,
    )


def ptq_vs_qat_steps(
    should_stop: Callable[[], bool],
    original: GPT,
    qat_trained: GPT,
    float_trained: GPT | None,
    tokenizer: Tokenizer,
    text: str,
    spec: quantize.QuantSpec,
) -> Generator[tuple[int, float], None, dict[str, float] | None]:
    """Held-out loss: the float model, post-training quantization of it, quantization after QAT and (with
    ``float_trained``) after the same training in float: a task loop, one model per yield."""
    windows = held_out_ids(tokenizer, text, original)
    models = {
        "float (original)": None,
        f"post-training {spec.title}": original,
        f"QAT, then {spec.title}": qat_trained,
    }
    if float_trained is not None:
        models[f"float fine-tuned, then {spec.title}"] = float_trained
    rows: dict[str, float] = {}
    for name, trained in models.items():
        if trained is None:
            rows[name] = quantize.compare(original, original, windows).loss_before
        else:
            rows[name] = quantize.compare(original, quantize.quantize_model(trained, spec).model, windows).loss_after
        yield len(rows), rows[name]
        if should_stop():
            return None
    return rows


PTQ_VS_QAT_STEPS = 4


def ptq_vs_qat(
    original: GPT,
    qat_trained: GPT,
    float_trained: GPT | None,
    tokenizer: Tokenizer,
    text: str,
    spec: quantize.QuantSpec,
) -> dict[str, float]:
    """Held-out loss: the float model, post-training quantization of it, and quantization after QAT."""
    return run_to_end(ptq_vs_qat_steps(lambda: False, original, qat_trained, float_trained, tokenizer, text, spec))


# ---------------------------------------------------------------------------- fine-tuning for a task


@dataclass(frozen=True)
class BCEExample:
    """Binary cross-entropy written out on a few held-out names, with torch's value for the same logits."""

    names: list[str]
    steps: finetune.BCESteps
    torch_value: float  # F.binary_cross_entropy_with_logits on the same logits

    def caption(self) -> str:
        """What the untrained head's mean loss says, against ln 2 (the loss of a head that always answers 50 %): a
        name whose random logit leans the wrong way costs more than ln 2, one that leans the right way less.

        >>> steps = finetune.bce_steps(torch.tensor([2.0, -1.0]), torch.tensor([0, 0]))  # 2.1269 and 0.3133
        >>> BCEExample(["Ada", "Bo"], steps, steps.mean).caption()
        'The head is untrained (random weights): the mean loss on these 2 names is 1.220, above ln 2 = 0.693, the \
loss of a head that always answers 50 % (a coin flip). Its random logits lean the wrong way for 1 of the 2 names: \
each of those costs more than ln 2, each of the others less.'
        """
        mean, coin = self.steps.mean, math.log(2)
        wrong = sum(1 for z, y in zip(self.steps.logits, self.steps.labels, strict=True) if (z > 0) != (y == 1))
        return (
            f"The head is untrained (random weights): the mean loss on these {len(self.names)} names is {mean:.3f}, "
            f"{'above' if mean >= coin else 'below'} ln 2 = {coin:.3f}, the loss of a head that always answers 50 % "
            f"(a coin flip). Its random logits lean the wrong way for {wrong} of the {len(self.names)} names: each of "
            "those costs more than ln 2, each of the others less."
        )


def bce_example(model: GPT, tokenizer: Tokenizer, count: int = 6, seed: int = 0) -> BCEExample:
    """The untrained head's logits on a few held-out names, and the loss written out."""
    classifier = finetune.NameClassifier(copy.deepcopy(require_gpt(model)), seed=seed).eval()
    _, held = finetune.name_examples()
    chosen = held[:: max(1, len(held) // count)][:count]
    idx, last = finetune.encode_names(tokenizer, [e.text for e in chosen], model.config.context_length)
    labels = torch.tensor([e.label for e in chosen])
    with torch.no_grad():
        logits = classifier(idx, last)
    value = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.float())
    return BCEExample([e.text for e in chosen], finetune.bce_steps(logits, labels), float(value))


def finetune_runs(model: GPT, tokenizer: Tokenizer, steps: int, seed: int) -> dict[str, finetune.FineTuneTrainer]:
    """One run per mode (head, last block, everything), same data, same seed."""
    return {mode: finetune_run(model, tokenizer, steps, seed, mode) for mode in finetune.MODES}


def finetune_run(model: GPT, tokenizer: Tokenizer, steps: int, seed: int, mode: str) -> finetune.FineTuneTrainer:
    """The names classifier fine-tuned in one mode (head, last block, everything)."""
    require_gpt(model)
    config = finetune.FineTuneConfig(mode=mode, steps=steps, seed=seed, lr=1e-2 if mode == "head" else 1e-3)
    return finetune.FineTuneTrainer(config, tokenizer, model)


def lab_footprint(
    model: GPT,
    text_bytes: int,
    steps: int,
    what: str,
    *,
    trainable: int | None = None,
    copies: int = 0,
    precision: str = "float32",
    batch_size: int = 8,
    context: int | None = None,
) -> footprint.Footprint:
    """What a lab run on ``model`` needs in its worker, estimated before it is built: the page sends the picked model
    with the run, the worker copies it and trains as :func:`lora_run` and the others do (``trainable``: the numbers
    that train, default all; ``copies``: other copies of the weights it keeps, LoRA's adapted model; ``context``: the
    tokens a window holds when it is not the lab's 64, the names classifier's short names)."""
    config = _config(require_gpt(model), steps, 3e-4, 0, batch_size)
    if context is not None:
        config = config.replace(context_length=context)
    return footprint.fine_tuning(
        model.config,
        config,
        what=f"{what} on the picked model ({footprint.parameters_text(model.num_parameters())})",
        text_bytes=min(text_bytes, 4 * MAX_TEXT),  # the runs read the first MAX_TEXT characters
        trainable=trainable,
        copies=copies,
        precision=precision,
    )


PROMPTING_SHOTS = (0, 1, 4)


def prompting_steps(
    should_stop: Callable[[], bool],
    model: GPT,
    tokenizer: Tokenizer,
    shots: tuple[int, ...] = PROMPTING_SHOTS,
    limit: int | None = None,
) -> Generator[tuple[int, float], None, list[finetune.PromptingResult] | None]:
    """Zero-/few-shot accuracy on the held-out names the fine-tuned classifiers are measured on (all of them, or
    the first ``limit``): a task loop, one number of examples per yield."""
    train, held = finetune.name_examples()
    held = held[:limit]
    results = []
    for k in shots:
        results.append(finetune.prompting_accuracy(require_gpt(model), tokenizer, k, held, train))
        yield len(results), float("nan")
        if should_stop():
            return None
    return results


def prompting(
    model: GPT, tokenizer: Tokenizer, shots: tuple[int, ...] = PROMPTING_SHOTS, limit: int | None = None
) -> list[finetune.PromptingResult]:
    """:func:`prompting_steps` run to its end in this thread."""
    return run_to_end(prompting_steps(lambda: False, model, tokenizer, shots, limit))


# ---------------------------------------------------------------------------- memory and serving


def memory_table_steps(
    should_stop: Callable[[], bool], model: GPT, tokenizer: Tokenizer, text: str, batch: int = 4
) -> Generator[tuple[int, float], None, list[memory.StepMeasure] | None]:
    """One training step of the model on held-out windows, with and without checkpointing and bf16 autocast
    (and fp16 autocast too when the model is on CUDA): a task loop, one measured step per yield."""
    model = require_gpt(model)
    context = min(64, model.config.context_length)
    windows = held_out_ids(tokenizer, text, model, windows=batch)
    inputs, targets = windows[:, :context], windows[:, 1 : context + 1]
    measures = []
    for c in (False, True):
        for b, f in memory_precisions(model):
            measures.append(memory.measure_step(model, inputs, targets, checkpointing=c, bf16=b, fp16=f))
            yield len(measures), measures[-1].loss
            if should_stop():
                return None
    return measures


def memory_table(model: GPT, tokenizer: Tokenizer, text: str, batch: int = 4) -> list[memory.StepMeasure]:
    """:func:`memory_table_steps` run to its end in this thread."""
    return run_to_end(memory_table_steps(lambda: False, model, tokenizer, text, batch))


def memory_precisions(model: GPT) -> list[tuple[bool, bool]]:
    """The (bf16, fp16) autocast settings :func:`memory_table` measures: off and bf16, and fp16 too on CUDA."""
    precisions = [(False, False), (True, False)]
    if next(model.parameters()).device.type == "cuda":
        precisions.append((False, True))
    return precisions


# ---------------------------------------------------------------------------- predict, then reveal


def _numbers_question(kind: str, prompt: str, right: int, wrong: list[int], explanation: str) -> Question:
    options = sorted({right, *[w for w in wrong if w > 0 and w != right]})
    text = [f"{o:,}" for o in options]
    return Question(kind, prompt, tuple(text), options.index(right), explanation)


def adapt_questions(model: GPT, tokenizer: Tokenizer, prompt: str) -> list[Question]:
    """LoRA's trained parameters, whether int4 changes the top token, the KV cache's bytes."""
    model = require_gpt(model)
    d, layers = model.config.d_model, model.config.n_layers
    config = lora.LoRAConfig(rank=4, targets=("q", "v"))
    trained = lora.adapter_count(model, config)
    shapes = lora.adapted_matrices(model, config.targets)
    each = " and ".join(
        f"{m.title}: A (4 × {m.d_in}) and B ({m.d_out} × 4), 4·({m.d_in} + {m.d_out}) = {m.adapter_parameters(4):,}"
        for m in shapes
    )
    questions = [
        _numbers_question(
            "lora-count",
            f"LoRA with rank 4 on W_Q and W_V of this model (d_model = {d}, {layers} layers): how many "
            "parameters train?",
            trained,
            [4 * d * layers, 2 * d * d * layers, trained * 2, 4 * 4 * layers],
            f"Each adapted matrix gets A (4 × d_in) and B (d_out × 4): {each} numbers; in each of {layers} layers: "
            f"**{trained:,}**, against {model.num_parameters():,} in the whole model "
            f"({trained / model.num_parameters():.2%}).",
        )
    ]
    ids = encode(tokenizer, prompt)[-model.config.context_length :] or [0]
    int4_spec = quantize.QuantSpec(bits=4, per_channel=False, symmetric=True)
    int4 = quantize.quantize_model(model, int4_spec).model
    with torch.no_grad():
        before = model(torch.tensor([ids]))[0][0, -1]
        after = int4(torch.tensor([ids]))[0][0, -1]
    same = int(before.argmax()) == int(after.argmax())
    answer = "the same top token" if same else "a different top token"
    questions.append(
        Question(
            "int4-top",
            f"Quantize every weight of this model to int4 (one scale per matrix). After the prompt "
            f"“{prompt[-40:]}”, will it predict the same most likely next token?",
            ("the same top token", "a different top token"),
            0 if same else 1,
            f"Float32: {tokenizer.printable(int(before.argmax()))!r} (logit {float(before.max()):.3f}); int4: "
            f"{tokenizer.printable(int(after.argmax()))!r} (logit {float(after.max()):.3f}) — **{answer}**. The "
            f"symmetric int4 grid has {int4_spec.levels} levels per matrix ({int4_spec.qmin} … {int4_spec.qmax}: "
            "−8 is left out so that the grid is symmetric around 0); rounding moves every weight by up to half "
            "a step, and whether the winner changes depends on how close the top two logits were.",
        )
    )
    tokens = 100
    per_token = serving.kv_bytes_per_token(model)
    kv_width = model.config.kv_heads * model.config.head_dim  # d_model, or less with grouped-query attention
    size = serving.kv_bytes_per_value(model)
    questions.append(
        _numbers_question(
            "kv-bytes",
            f"How many bytes does this model's KV cache hold after {tokens} tokens (float32)?",
            per_token * tokens,
            [per_token * tokens // 2, per_token * tokens // layers, d * tokens * 4, per_token * tokens * 2],
            f"Per token, each of {layers} layers keeps a key and a value of {kv_width} numbers "
            f"({model.config.kv_heads} key/value heads × {model.config.head_dim}) of {size} bytes: "
            f"2·{layers}·{kv_width}·{size} = {per_token:,} bytes; after {tokens} tokens **{per_token * tokens:,}** "
            f"bytes.",
        )
    )
    return questions


def memory_words(columns: list[str], parts: dict[str, list[float]], unit: str = "MiB") -> str:
    """A stacked bar chart of memory in words: each column's total and its parts, and the last column's total as a
    share of the first's (``parts``: part → its value in each column).

    >>> memory_words(["full", "LoRA"], {"weights": [4.0, 4.0], "AdamW states": [8.0, 0.5]})
    'full 12 MiB (weights 4, AdamW states 8); LoRA 4.5 MiB (weights 4, AdamW states 0.5). LoRA needs 37.5% of full.'
    """
    totals = [sum(values[i] for values in parts.values()) for i in range(len(columns))]
    said = [
        f"{column} {words.number(totals[i])} {unit} ("
        + ", ".join(f"{part} {words.number(values[i])}" for part, values in parts.items())
        + ")"
        for i, column in enumerate(columns)
    ]
    share = f" {columns[-1]} needs {totals[-1] / totals[0]:.1%} of {columns[0]}." if totals[0] > 0 else ""
    return "; ".join(said) + "." + share


def quant_error_words(bits: str, matrices: list[str], errors: list[float]) -> str:
    """The rounding error per matrix in words (``errors``: each matrix's ‖ŵ − w‖ / ‖w‖): the mean, the largest and the
    smallest, with their matrices.

    >>> quant_error_words("int8", ["a", "b", "c"], [0.01, 0.04, 0.004])
    'Quantized to int8, the relative rounding error is 0.018 on average over 3 matrices: largest 0.04 (b), \
smallest 0.004 (c).'
    """
    if not errors:
        return "No matrix quantized."
    top, low = words.extremes(errors)
    return (
        f"Quantized to {bits}, the relative rounding error is {words.number(sum(errors) / len(errors))} on average "
        f"over {len(errors)} matrices: largest {words.number(errors[top])} ({matrices[top]}), smallest "
        f"{words.number(errors[low])} ({matrices[low]})."
    )


def weight_histogram_words(name: str, quantized: str, centres: list[float], before: list[float], after: list[float]):
    """The weights' histogram before and after quantization in words: how many weights, their range (the centres of
    the first and last bins that hold one), and how many of the shared bins each version fills (rounding puts every
    weight on a few levels).

    >>> weight_histogram_words("W", "int4", [-0.1, 0.0, 0.1, 0.2], [2, 5, 3, 0], [0, 10, 0, 0])
    '10 weights of W, from -0.1 to 0.1: float32 fills 3 of the 4 bins, int4 fills 1.'
    """
    held = [i for i, count in enumerate(before) if count > 0]
    if not held:
        return f"No weight of {name}."
    return (
        f"{words.number(sum(before))} weights of {name}, from {words.number(centres[held[0]])} to "
        f"{words.number(centres[held[-1]])}: float32 fills {len(held)} of the {len(centres)} bins, {quantized} fills "
        f"{sum(1 for count in after if count > 0)}."
    )


def spectrum_words(values: list[float], rank: int, most: int = 3) -> str:
    """A weight change's singular values in words (largest first): the ``most`` largest, and the share of the squared
    values drawn that the first ``rank`` (the numerical rank) hold.

    >>> spectrum_words([3.0, 1.0, 0.01, 0.0], 2)
    'The largest singular values are 3, 1 and 0.01; the first 2 (the numerical rank) hold 100.0% of the sum of \
their squares.'
    """
    if not values:
        return "No singular value."
    squares = [v * v for v in values]
    share = sum(squares[:rank]) / sum(squares) if sum(squares) > 0 else 0.0
    return (
        f"The largest singular values are {words.listed([words.number(v) for v in values[:most]])}; the first {rank} "
        f"(the numerical rank) hold {share:.1%} of the sum of their squares."
    )


def accuracy_words(bars: list[str], accuracies: list[float]) -> str:
    """Held-out accuracy bars in words: each bar's accuracy as drawn (a percentage), then the best.

    >>> accuracy_words(["prompt, 0 examples", "run A"], [0.5, 0.875])
    'Held-out accuracy: prompt, 0 examples 50.0%; run A 87.5%. The best: run A.'
    """
    if not bars:
        return "No accuracy measured yet."
    best = max(range(len(bars)), key=lambda i: accuracies[i])
    said = "; ".join(f"{bar} {value:.1%}" for bar, value in zip(bars, accuracies, strict=True))
    return f"Held-out accuracy: {said}. The best: {bars[best]}."


def saved_words(settings: list[str], mib: list[float]) -> str:
    """The activations saved for the backward pass in words: each setting's MiB, and the least as a share of the
    first (no checkpointing, no autocast).

    >>> saved_words(["ckpt off, autocast off", "ckpt on, autocast off"], [12.0, 3.0])
    'Saved for the backward pass: ckpt off, autocast off 12 MiB; ckpt on, autocast off 3 MiB. The least, ckpt on, \
autocast off, is 25.0% of the first.'
    """
    if not settings:
        return "Nothing measured yet."
    least = min(range(len(mib)), key=lambda i: mib[i])
    said = "; ".join(f"{setting} {words.number(value)} MiB" for setting, value in zip(settings, mib, strict=True))
    share = f" The least, {settings[least]}, is {mib[least] / mib[0]:.1%} of the first." if mib[0] > 0 else ""
    return f"Saved for the backward pass: {said}.{share}"


def delta_words(rows: list[list[float]], total: tuple[int, int]) -> str:
    """ΔW's drawn corner in words (``rows``: its first rows and columns; ``total``: ΔW's whole shape): the range of
    its entries and their mean size.

    >>> delta_words([[0.01, -0.02], [0.0, 0.03]], (8, 8))
    "The first 2 × 2 of ΔW's 8 × 8 entries run from -0.02 to 0.03; their mean size is 0.015."
    """
    cells = [v for row in rows for v in row]
    if not cells:
        return "ΔW is empty."
    return (
        f"The first {len(rows)} × {len(rows[0])} of ΔW's {total[0]} × {total[1]} entries run from "
        f"{words.number(min(cells))} to {words.number(max(cells))}; their mean size is "
        f"{words.number(sum(abs(v) for v in cells) / len(cells))}."
    )
