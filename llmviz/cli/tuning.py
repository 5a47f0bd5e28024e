"""``python -m llmviz sft …`` and ``dpo …``: instruction tuning and preference tuning, each writing an ordinary
checkpoint folder (a plain GPT the picker loads; under ``runs/`` it appears there like every run).

- ``sft``: the loss only on the answers' tokens, on the shipped instruction set or a JSON Lines file
  (``{"prompt": …, "response": …}`` per line).
- ``dpo``: from the SFT model, against a frozen copy of it, on the shipped preference set or a JSON Lines file
  (``{"prompt": …, "chosen": …, "rejected": …}`` per line).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

MAX_STEPS = 100_000
SHIPPED_BASE = "data/gpt-python-docs"
SHIPPED_SFT = "data/gpt-python-docs-sft"


def _positive_float(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def add_tuning_commands(commands) -> None:
    from llmviz.cli.train import count_between
    from llmviz.device import MAX_SEED

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", required=True, help="output folder for the checkpoint (under runs/: in the picker)")
    common.add_argument("--data", default=None, metavar="JSONL", help="your own JSON Lines set (default: the shipped)")
    common.add_argument("--overwrite", action="store_true", help="replace the run already saved in --out")
    common.add_argument("--seed", type=count_between(0, MAX_SEED), default=1337)
    common.add_argument("--lr", type=_positive_float, default=None)
    common.add_argument("--eval-interval", type=count_between(1, MAX_STEPS), default=10)
    common.add_argument("--half", action="store_true", help="save the weights as float16 (the shipped checkpoints)")

    sft_parser = commands.add_parser(
        "sft", parents=[common], help="instruction-tune a GPT: the loss only on the answers' tokens"
    )
    sft_parser.add_argument("--init", default=SHIPPED_BASE, metavar="CHECKPOINT", help="the model to tune")
    sft_parser.add_argument("--steps", type=count_between(1, MAX_STEPS), default=60)
    sft_parser.add_argument("--batch", type=count_between(1, 512), default=16, help="examples per step")
    sft_parser.set_defaults(func=cmd_sft)

    dpo_parser = commands.add_parser(
        "dpo", parents=[common], help="preference-tune the SFT model with DPO against a frozen copy of it"
    )
    dpo_parser.add_argument(
        "--init", default=SHIPPED_SFT, metavar="CHECKPOINT", help="the SFT model (policy and reference)"
    )
    dpo_parser.add_argument(
        "--beta", type=_positive_float, default=0.1, help="β: how far the policy may leave the reference"
    )
    dpo_parser.add_argument("--steps", type=count_between(1, MAX_STEPS), default=40)
    dpo_parser.add_argument("--batch", type=count_between(1, 256), default=8, help="preference pairs per step")
    dpo_parser.set_defaults(func=cmd_dpo)


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def _save(args: argparse.Namespace, trainer, train_config: dict, tuning: dict) -> None:
    from llmviz.cli.adapt import write_checkpoint
    from llmviz.training.checkpoint import write_or_keep

    def write(folder: Path) -> None:
        write_checkpoint(
            folder,
            trainer.model,
            trainer.tokenizer,
            train_config,
            {"tuning": tuning},
            metrics=[asdict(m) for m in trainer.history],
            step=trainer.step,
        )
        if args.half:
            from safetensors.torch import save_file

            from llmviz.training.checkpoint import MODEL_FILE, model_state

            halves = {name: tensor.half().contiguous() for name, tensor in model_state(trainer.model).items()}
            save_file(halves, str(folder / MODEL_FILE))

    write_or_keep(args.out, write)


def cmd_sft(args: argparse.Namespace) -> int:
    from llmviz.adapt import instructions, sft
    from llmviz.cli.adapt import _initial
    from llmviz.cli.train import check_out, step_bar
    from llmviz.jobs.blocking import train_blocking

    check_out(args.out, overwrite=args.overwrite)
    train_rows, val_rows, where = instructions.training_sets("sft", args.data)
    model, tokenizer = _initial(args.init)
    config = sft.SftConfig(
        steps=args.steps,
        batch_size=args.batch,
        lr=args.lr or 1e-3,
        eval_interval=args.eval_interval,
        seed=args.seed,
        init=args.init,
    )
    trainer = sft.SftRunner(config, tokenizer, model, train_rows, val_rows)
    _say(
        f"SFT on {len(train_rows)} {where} examples ({len(val_rows)} held out): the answers' loss on the held-out "
        f"set before: {trainer.val_loss_before:.4f}"
    )
    progress, show = step_bar(config.steps)
    train_blocking(trainer, on_step=show)
    progress.close()
    after = sft.answer_loss(trainer.model, trainer.val_examples)
    tuning = {
        "kind": "sft",
        "data": where,
        "train_examples": len(train_rows),
        "val_examples": len(val_rows),
        "val_loss_before": trainer.val_loss_before,
        "val_loss_after": after,
    }
    _save(args, trainer, asdict(config), tuning)
    print(json.dumps({"out": args.out, **{k: round(v, 4) if isinstance(v, float) else v for k, v in tuning.items()}}))
    return 0


def cmd_dpo(args: argparse.Namespace) -> int:
    from llmviz.adapt import dpo, instructions
    from llmviz.cli.adapt import _initial
    from llmviz.cli.train import check_out, step_bar
    from llmviz.jobs.blocking import train_blocking

    check_out(args.out, overwrite=args.overwrite)
    train_rows, val_rows, where = instructions.training_sets("dpo", args.data)
    model, tokenizer = _initial(args.init)
    config = dpo.DpoConfig(
        beta=args.beta,
        steps=args.steps,
        batch_size=args.batch,
        lr=args.lr or 1e-4,
        eval_interval=args.eval_interval,
        seed=args.seed,
        init=args.init,
    )
    trainer = dpo.DpoRunner(config, tokenizer, model, train_rows, val_rows)
    _say(f"DPO, β={config.beta:g}, on {len(train_rows)} {where} pairs ({len(val_rows)} held out)")
    progress, show = step_bar(config.steps)
    train_blocking(trainer, on_step=show)
    progress.close()
    held = trainer.held_out()
    tuning = {
        "kind": "dpo",
        "data": where,
        "beta": config.beta,
        "train_pairs": len(train_rows),
        "val_pairs": len(val_rows),
        "val_accuracy_after": held.accuracy,
        "val_margin_after": held.margin,
        "val_chosen_ratio_after": held.chosen_ratio,
        "val_rejected_ratio_after": held.rejected_ratio,
    }
    _save(args, trainer, asdict(config), tuning)
    print(json.dumps({"out": args.out, **{k: round(v, 4) if isinstance(v, float) else v for k, v in tuning.items()}}))
    return 0
