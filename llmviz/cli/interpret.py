"""``python -m llmviz interpret names | ablate | patch | steer | sae``: the Inside page's interventions on any GPT
checkpoint.

- ``names``: every hook point of the model, with TransformerLens's name for it;
- ``ablate``: the loss on a text with heads knocked out (``--heads 1.0,3.2``), or every head alone (the layer × head
  table, without ``--heads``);
- ``patch``: activation patching from a clean into a corrupted prompt: the share of the logit difference each patch
  restores, layer × position (or layer × head for ``--component attn.z``);
- ``steer``: a continuation with and without α × a direction added to the residual stream at a layer;
- ``sae train | features | steer | knockout``: sparse autoencoders (:mod:`llmviz.cli.sae`).

``--model`` is an llmviz checkpoint folder (such as data/gpt-python-docs), a Hugging Face GPT-2 or Llama-family folder,
or ``gpt2`` when cached. Tables go to standard output (``--format table``, ``csv`` or ``json``); a bad request is one
line on standard error and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from llmviz.errors import ConfigError


def add_interpret_commands(commands) -> tuple:
    """The ``interpret`` commands; returns its subcommands and their common options, for ``interpret sae``."""
    from llmviz.cli.train import count_between
    from llmviz.device import MAX_SEED
    from llmviz.interpret import ablation, patching

    group = commands.add_parser(
        "interpret",
        help="intervene inside a GPT: hook points, head ablation, activation patching, steering",
        description="Intervene inside a GPT checkpoint (the Inside page's interventions, without the page).",
    )
    sub = group.add_subparsers(dest="interpret_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--model",
        default="data/gpt-python-docs",
        help="an llmviz checkpoint folder, a Hugging Face GPT-2 or Llama-family folder, or gpt2 when cached "
        "(default: data/gpt-python-docs)",
    )
    common.add_argument("--format", choices=["table", "csv", "json"], default="table")

    names = sub.add_parser("names", parents=[common], help="list the model's hook points and TransformerLens's names")
    names.set_defaults(func=cmd_names)

    ablate = sub.add_parser("ablate", parents=[common], help="the loss on a text with attention heads knocked out")
    ablate.add_argument("--text", required=True, help="the text whose loss is measured")
    ablate.add_argument(
        "--heads",
        default=None,
        help="layer.head pairs knocked out together, e.g. 1.0,3.2 (default: every head alone, as a layer × head table)",
    )
    ablate.add_argument(
        "--mode",
        choices=ablation.MODES,
        default="zero",
        help="zero, or mean: the head's average output over the text (default: zero)",
    )
    ablate.set_defaults(func=cmd_ablate)

    patch = sub.add_parser("patch", parents=[common], help="activation patching from a clean into a corrupted prompt")
    patch.add_argument("--clean", required=True, help="the clean prompt")
    patch.add_argument("--corrupted", required=True, help="the corrupted prompt (the same number of tokens)")
    patch.add_argument("--answer", default=None, help="the right next token (default: the clean run's top token)")
    patch.add_argument("--wrong", default=None, help="the wrong next token (default: the corrupted run's top token)")
    patch.add_argument("--component", choices=patching.COMPONENTS, default="resid_pre")
    patch.set_defaults(func=cmd_patch)

    steer = sub.add_parser("steer", parents=[common], help="generate with and without a direction added at a layer")
    steer.add_argument("--prompt", required=True)
    steer.add_argument("--layer", type=int, required=True, help="the block whose incoming residual stream is steered")
    steer.add_argument("--alpha", type=float, required=True, help="how much of the direction is added")
    steer.add_argument("--positive", action="append", default=[], help="a prompt of the first set (repeatable)")
    steer.add_argument("--negative", action="append", default=[], help="a prompt of the second set (repeatable)")
    steer.add_argument("--token", default=None, help="steer along this token's embedding instead (one token)")
    steer.add_argument("--tokens", type=int, default=30, help="tokens to generate (default: 30)")
    steer.add_argument("--temperature", type=float, default=0.8)
    steer.add_argument("--seed", type=count_between(0, MAX_SEED), default=0)
    steer.set_defaults(func=cmd_steer)

    return sub, common


def load_model(name: str):
    """``(GPT, tokenizer)`` for ``--model``."""
    from llmviz.hub import gpt2, llama
    from llmviz.lessons.adapting import require_gpt
    from llmviz.training.checkpoint import META_FILE, load_checkpoint

    path = Path(name)
    if (path / META_FILE).exists() or path.suffix == ".safetensors":
        model, tokenizer, _ = load_checkpoint(path)
    elif (path / "config.json").exists() and llama.read_config(path).get("model_type") != "gpt2":
        model, tokenizer, _ = llama.load(path)
    else:
        model, tokenizer, _ = gpt2.load(name, allow_download=True)
    try:
        return require_gpt(model).eval(), tokenizer
    except ConfigError:
        raise ConfigError(f"{name} is not a GPT: the interventions read a GPT's attention heads.") from None


MAX_PROMPT_CHARS = 20_000  # a prompt longer than any context a model here has, refused before it is tokenized


def encode(tokenizer, text: str, what: str, limit: int = MAX_PROMPT_CHARS) -> list[int]:
    from llmviz.tokenizers.char_word import CharTokenizer

    if len(text) > limit:
        raise ConfigError(f"The {what} is {len(text):,} characters; at most {limit:,} are read.")
    if isinstance(tokenizer, CharTokenizer):
        unknown = tokenizer.unknown_characters(text)
        if unknown:
            raise ConfigError(f"The {what} has characters this model never saw: {''.join(unknown)!r}.")
    return tokenizer.encode(text)


def one_token(tokenizer, text: str, what: str) -> int:
    ids = encode(tokenizer, text, what)
    if len(ids) != 1:
        shown = " + ".join(repr(tokenizer.printable(i)) for i in ids) or "nothing"
        raise ConfigError(f"The {what} must be one token; {text!r} is {shown}.")
    return ids[0]


def parse_heads(text: str) -> list[tuple[int, int]]:
    """``"1.0,3.2"`` → ``[(1, 0), (3, 2)]``.

    >>> parse_heads("1.0, 3.2")
    [(1, 0), (3, 2)]
    """
    heads = []
    for part in (p.strip() for p in text.split(",")):
        layer, dot, head = part.partition(".")
        if not (dot and layer.isdigit() and head.isdigit()):
            raise ConfigError(f"Give heads as layer.head pairs separated by commas, such as 1.0,3.2 (got {part!r}).")
        heads.append((int(layer), int(head)))
    return heads


def show(header: list[str], rows: list[list], fmt: str, extra: dict | None = None) -> None:
    if fmt == "json":
        print(json.dumps({**(extra or {}), "rows": [dict(zip(header, row)) for row in rows]}, ensure_ascii=False))
    elif fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(header)
        writer.writerows(rows)
    else:
        import pandas as pd

        cells = [[f"{c:.4f}" if isinstance(c, float) else str(c) for c in row] for row in rows]
        print(pd.DataFrame(cells, columns=header).to_string(index=False))


def cmd_names(args: argparse.Namespace) -> int:
    from llmviz.interpret.interventions import transformer_lens_name
    from llmviz.models.gpt import cache_names

    model, _ = load_model(args.model)
    rows = []
    for name in cache_names(model.config):
        try:
            lens = transformer_lens_name(name)
        except ConfigError:
            lens = "-"
        rows.append([name, lens])
    show(["llmviz", "TransformerLens"], rows, args.format)
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    from llmviz.interpret import ablation

    model, tokenizer = load_model(args.model)
    ids = encode(tokenizer, args.text, "text")
    if args.heads is not None:
        result = ablation.ablate(model, ids, parse_heads(args.heads), args.mode)
        heads = " ".join(f"{layer}.{head}" for layer, head in result.heads)
        show(
            ["heads", "mode", "loss before", "loss after", "change"],
            [[heads, result.mode, result.loss_before, result.loss_after, result.change]],
            args.format,
        )
        return 0
    grid = ablation.head_effects(model, ids, args.mode, progress=lambda done, total: _progress(done, total, "heads"))
    rows = [
        [layer, head, float(grid.losses[layer, head]), float(grid.effects[layer, head])]
        for layer in range(grid.losses.shape[0])
        for head in range(grid.losses.shape[1])
    ]
    show(["layer", "head", "loss without it", "change"], rows, args.format, {"clean_loss": grid.clean_loss})
    if args.format == "table":
        print(f"\nloss with every head: {grid.clean_loss:.4f} ({len(ids)} tokens, {grid.mode} ablation)")
    return 0


def cmd_patch(args: argparse.Namespace) -> int:
    from llmviz.interpret import patching

    model, tokenizer = load_model(args.model)
    clean, corrupted = (
        encode(tokenizer, args.clean, "clean prompt"),
        encode(tokenizer, args.corrupted, "corrupted prompt"),
    )
    patching.check_pair(model, clean, corrupted)
    answer, wrong = patching.default_answers(model, clean, corrupted)
    if args.answer is not None:
        answer = one_token(tokenizer, args.answer, "answer")
    if args.wrong is not None:
        wrong = one_token(tokenizer, args.wrong, "wrong token")
    result = patching.patching(
        model, clean, corrupted, answer, wrong, args.component, progress=lambda d, t: _progress(d, t, "patches")
    )
    restored = result.restored
    column = "head" if args.component == "attn.z" else "position"
    label = (lambda i: str(i)) if args.component == "attn.z" else (lambda i: f"{i} {tokenizer.printable(corrupted[i])}")
    rows = [
        [layer, label(index), float(result.differences[layer, index]), float(restored[layer, index])]
        for layer in range(restored.shape[0])
        for index in range(restored.shape[1])
    ]
    extra = {
        "answer": tokenizer.printable(answer),
        "wrong": tokenizer.printable(wrong),
        "clean_difference": result.clean_difference,
        "corrupted_difference": result.corrupted_difference,
        "component": args.component,
    }
    show(["layer", column, "logit difference", "share restored"], rows, args.format, extra)
    if args.format == "table":
        print(
            f"\nlogit({tokenizer.printable(answer)!r}) − logit({tokenizer.printable(wrong)!r}): clean "
            f"{result.clean_difference:.4f}, corrupted {result.corrupted_difference:.4f}; share restored = "
            "(patched − corrupted) / (clean − corrupted)"
        )
    return 0


def cmd_steer(args: argparse.Namespace) -> int:
    from llmviz.interpret import steering

    model, tokenizer = load_model(args.model)
    if args.token is not None:
        if args.positive or args.negative:
            raise ConfigError("Steer along a token (--token) or a mean difference (--positive/--negative), not both.")
        direction = steering.token_direction(model, one_token(tokenizer, args.token, "token"))
        kind = f"the direction of token {args.token!r}"
    elif args.positive and args.negative:
        if max(len(args.positive), len(args.negative)) > steering.MAX_PROMPTS:  # before anything is tokenized
            raise ConfigError(
                f"Give at most {steering.MAX_PROMPTS} --positive and {steering.MAX_PROMPTS} --negative prompts "
                f"(got {len(args.positive):,} and {len(args.negative):,})."
            )
        positive = [encode(tokenizer, text, "positive prompt") for text in args.positive]
        negative = [encode(tokenizer, text, "negative prompt") for text in args.negative]
        direction = steering.mean_difference(model, positive, negative, args.layer)
        kind = f"the mean difference of {len(positive)} and {len(negative)} prompts"
    else:
        raise ConfigError("Give a direction: --token TOKEN, or --positive TEXT and --negative TEXT (each repeatable).")
    ids = encode(tokenizer, args.prompt, "prompt")
    pair = steering.steered_pair(
        model, ids, args.layer, direction, args.alpha, args.tokens, args.temperature, args.seed
    )
    plain, steered = tokenizer.decode(pair.plain), tokenizer.decode(pair.steered)
    norm = steering.stream_norm(model, ids, args.layer)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "plain": plain,
                    "steered": steered,
                    "layer": args.layer,
                    "alpha": args.alpha,
                    "direction_norm": pair.direction_norm,
                    "stream_norm": norm,
                },
                ensure_ascii=False,
            )
        )
        return 0
    if args.format == "csv":
        show(["run", "text"], [["plain", args.prompt + plain], ["steered", args.prompt + steered]], "csv")
        return 0
    print(f"without steering:\n{args.prompt}{plain}\n")
    print(f"with α = {args.alpha:g} × {kind} added at layer {args.layer}:\n{args.prompt}{steered}\n")
    print(
        f"|α·direction| = {abs(args.alpha) * pair.direction_norm:.3f}; the residual stream entering layer "
        f"{args.layer} is {norm:.3f} long on average over the prompt"
    )
    return 0


def _progress(done: int, total: int, what: str) -> None:
    """A counter on a terminal's standard error (nothing when it is a file or a pipe)."""
    if not sys.stderr.isatty():
        return
    print(f"\r{done}/{total} {what}", end="\n" if done == total else "", file=sys.stderr, flush=True)
