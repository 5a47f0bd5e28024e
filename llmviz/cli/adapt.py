"""``python -m llmviz lora …``, ``finetune …`` and ``quantize …``: each writes an ordinary checkpoint folder.

- ``lora``: adapters trained on a corpus, then merged: the checkpoint is a plain GPT (W + ΔW).
- ``finetune``: the names classifier (head only, head + last block, or everything); the GPT goes in
  ``model.safetensors`` as usual and the head in ``classifier_head.safetensors``
  (:func:`llmviz.adapt.finetune.load_classifier` reads both back).
- ``quantize``: post-training quantization (optionally after quantization-aware training); the
  checkpoint holds the dequantized weights ŵ, so every page and the picker load it as usual.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

MAX_QAT_STEPS = 100_000  # quantization-aware fine-tuning steps: a bound well past any run worth waiting for


def add_adapt_commands(commands) -> None:
    from llmviz.adapt import finetune, lora
    from llmviz.cli.train import count_between
    from llmviz.device import MAX_SEED

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--init",
        required=True,
        metavar="CHECKPOINT",
        help="the model to start from: an llmviz checkpoint folder (such as data/gpt-python-docs), "
        "a Hugging Face GPT-2 folder, or gpt2 when cached",
    )
    common.add_argument("--out", required=True, help="output folder for the checkpoint")
    common.add_argument(
        "--overwrite", action="store_true", help="replace the run already saved in --out (refused otherwise)"
    )
    common.add_argument("--seed", type=count_between(0, MAX_SEED), default=1337)

    adapters = commands.add_parser("lora", parents=[common], help="train LoRA adapters, merge them, save a checkpoint")
    adapters.add_argument("--corpus", default="python-docs", help="a registered corpus name or a UTF-8 text file")
    adapters.add_argument("--rank", type=int, default=4)
    adapters.add_argument("--alpha", type=float, default=8.0)
    adapters.add_argument("--targets", default="q,v", help=f"comma-separated, from {','.join(lora.TARGETS)}")
    adapters.add_argument("--steps", type=int, default=200)
    adapters.add_argument("--lr", type=float, default=3e-3)
    adapters.set_defaults(func=cmd_lora)

    task = commands.add_parser(
        "finetune", parents=[common], help="fine-tune a classifier: first names → the male or the female list"
    )
    task.add_argument("--mode", default="head", choices=finetune.MODES)
    task.add_argument("--steps", type=int, default=150)
    task.add_argument("--lr", type=float, default=None, help="default: 1e-2 for the head only, else 1e-3")
    task.set_defaults(func=cmd_finetune)

    shrink = commands.add_parser(
        "quantize", parents=[common], help="quantize every weight matrix to int8 or int4 and save the result"
    )
    shrink.add_argument("--bits", type=int, default=8, choices=[8, 4])
    shrink.add_argument("--per-tensor", action="store_true", help="one scale per matrix (default: per output row)")
    shrink.add_argument("--zero-point", action="store_true", help="asymmetric: unsigned integers and a zero point")
    shrink.add_argument("--corpus", default="python-docs", help="held-out text for the report (and QAT's training)")
    shrink.add_argument(
        "--qat-steps",
        type=count_between(0, MAX_QAT_STEPS),
        default=0,
        help="first fine-tune this many steps with fake quantization in the forward pass (QAT)",
    )
    shrink.add_argument("--lr", type=float, default=3e-4, help="QAT's learning rate")
    shrink.set_defaults(func=cmd_quantize)


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def _train_showing(trainer, steps: int) -> None:
    """Train ``trainer`` to its end with the step bar ``train``, ``sft`` and ``dpo`` show on stderr (steps, their
    rate, the time left, the newest loss); Ctrl-C stops after the current step."""
    from llmviz.cli.train import step_bar
    from llmviz.jobs.blocking import train_blocking

    progress, show = step_bar(steps)
    try:
        train_blocking(trainer, on_step=show)
    finally:
        progress.close()


def _initial(name: str):
    """The GPT to adapt and its tokenizer; weights that are NaN or infinite anywhere are refused (every number of
    the run or the report would be NaN)."""
    from llmviz.errors import CheckpointError
    from llmviz.hub.initial import load_initial
    from llmviz.lessons.adapting import require_gpt
    from llmviz.training.checkpoint import weights_problem

    model, tokenizer = load_initial(name, "cpu")
    problem = weights_problem(model.state_dict())
    if problem is not None:
        raise CheckpointError(f"The model {name} {problem}: it cannot be adapted.")
    return require_gpt(model), tokenizer


def write_checkpoint(
    directory: str | Path, model, tokenizer, train_config: dict, extra: dict, metrics: list | None = None, step: int = 0
) -> Path:
    """A checkpoint folder like :func:`llmviz.training.checkpoint.save_checkpoint` writes (weights and description; no
    optimizer state), for a model that did not come from a :class:`~llmviz.training.trainer.Trainer`."""
    from safetensors.torch import save_file

    from llmviz.training.checkpoint import META_FILE, MODEL_FILE, model_description, model_state

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(model_state(model), str(directory / MODEL_FILE))
    metrics = metrics or []
    meta = {
        "format": "llmviz-checkpoint",
        "version": 1,
        "step": step,
        "train_config": train_config,
        "model": model_description(model),
        "tokenizer": tokenizer.to_dict(),
        "optimizer_param_groups": [],
        "metrics": metrics,
        "final": {
            "train_loss": metrics[-1]["train_loss"] if metrics else None,
            "val_loss": next((m["val_loss"] for m in reversed(metrics) if m.get("val_loss") is not None), None),
        },
        **extra,
    }
    (directory / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return directory


def cmd_lora(args: argparse.Namespace) -> int:
    from llmviz.adapt import lora
    from llmviz.cli.train import _load_text, check_out
    from llmviz.lessons import adapting
    from llmviz.training.checkpoint import save_checkpoint, write_or_keep

    check_out(args.out, overwrite=args.overwrite)
    config = lora.LoRAConfig(args.rank, args.alpha, tuple(t.strip() for t in args.targets.split(",") if t.strip()))
    model, tokenizer = _initial(args.init)
    text = _load_text(args.corpus)
    trainer = adapting.lora_run(model, tokenizer, text, config, args.steps, args.seed, lr=args.lr)
    trainer.config = trainer.config.replace(init=args.init)
    trained = lora.trainable_parameters(trainer.adapted)
    _say(
        f"LoRA r={config.rank}, α={config.alpha:g} on {', '.join(config.targets)}: {trained:,} parameters train "
        f"of {model.num_parameters():,}"
    )
    _train_showing(trainer, args.steps)
    write_or_keep(
        args.out,
        lambda folder: save_checkpoint(
            folder,
            trainer,
            trainer_state=False,
            extra={"corpus": args.corpus, "lora": {**asdict(config), "trained_parameters": trained, "merged": True}},
        ),
    )
    final = trainer.history[-1]
    print(
        json.dumps(
            {
                "out": args.out,
                "step": trainer.step,
                "trained_parameters": trained,
                "train_loss": round(final.train_loss, 4),
                "val_loss": round(final.val_loss, 4) if final.val_loss is not None else None,
            }
        )
    )
    return 0


def cmd_finetune(args: argparse.Namespace) -> int:
    from llmviz.adapt import finetune
    from llmviz.cli.train import check_out
    from llmviz.training.checkpoint import write_or_keep

    check_out(args.out, overwrite=args.overwrite)
    model, tokenizer = _initial(args.init)
    lr = args.lr if args.lr is not None else (1e-2 if args.mode == "head" else 1e-3)
    config = finetune.FineTuneConfig(mode=args.mode, steps=args.steps, lr=lr, seed=args.seed)
    trainer = finetune.FineTuneTrainer(config, tokenizer, model)
    trained, total = trainer.parameter_counts()
    _say(
        f"names classifier, {finetune.MODE_TITLES[args.mode]}: {trained:,} of {total:,} parameters train; "
        f"held-out accuracy before: {trainer.accuracy_before:.3f}"
    )
    _train_showing(trainer, config.steps)
    after = trainer.held_out_accuracy()

    def write(folder: Path) -> None:
        write_checkpoint(
            folder,
            trainer.model,
            tokenizer,
            {"init": args.init, **asdict(config)},
            {
                "task": {
                    "name": "names: male or female list",
                    "labels": list(finetune.LABELS),
                    "accuracy_before": trainer.accuracy_before,
                    "accuracy_after": after,
                    "head_file": finetune.HEAD_FILE,
                }
            },
            metrics=[asdict(m) for m in trainer.history],
            step=trainer.step,
        )
        finetune.save_head(trainer.classifier, folder)

    write_or_keep(args.out, write)
    print(
        json.dumps(
            {
                "out": args.out,
                "mode": args.mode,
                "trained_parameters": trained,
                "accuracy_before": round(trainer.accuracy_before, 4),
                "accuracy_after": round(after, 4),
            }
        )
    )
    return 0


def cmd_quantize(args: argparse.Namespace) -> int:
    from llmviz.adapt import quantize
    from llmviz.cli.train import _load_text, check_out
    from llmviz.errors import ConfigError
    from llmviz.lessons import adapting
    from llmviz.training.checkpoint import write_or_keep

    check_out(args.out, overwrite=args.overwrite)
    spec = quantize.QuantSpec(args.bits, per_channel=not args.per_tensor, symmetric=not args.zero_point)
    model, tokenizer = _initial(args.init)
    text = _load_text(args.corpus)
    source = model
    if args.qat_steps > 0:
        trainer = adapting.qat_run(model, tokenizer, text, spec, args.qat_steps, args.seed, lr=args.lr)
        _say(f"quantization-aware training, {spec.title}: {args.qat_steps} steps …")
        _train_showing(trainer, args.qat_steps)
        source = quantize.remove_fake_quant(trainer.model).eval()
    result = quantize.quantize_model(source, spec)
    comparison = quantize.compare(model, result.model, adapting.held_out_ids(tokenizer, text, model))
    report = {
        "bits": spec.bits,
        "per_channel": spec.per_channel,
        "symmetric": spec.symmetric,
        "qat_steps": args.qat_steps,
        "float_bytes": result.float_bytes,
        "quantized_bytes": result.total_bytes,
        "loss_before": comparison.loss_before,
        "loss_after": comparison.loss_after,
        "kl": comparison.kl,
        "top1_agreement": comparison.top1_agreement,
    }
    broken = [name for name, value in report.items() if isinstance(value, float) and not math.isfinite(value)]
    if broken:
        raise ConfigError(f"The quantization report has no finite value for {', '.join(broken)}: nothing was saved.")
    write_or_keep(
        args.out,
        lambda folder: write_checkpoint(
            folder, result.model, tokenizer, {"init": args.init}, {"quantization": report, "corpus": args.corpus}
        ),
    )
    print(json.dumps({"out": args.out, **{k: round(v, 4) if isinstance(v, float) else v for k, v in report.items()}}))
    return 0
