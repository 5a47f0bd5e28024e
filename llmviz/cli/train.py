"""``python -m llmviz train …`` and ``python -m llmviz sample …``."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def parse_switches(pairs: list[str]) -> dict:
    """``["positions=rope", "n_kv_heads=1", "bias=false"]`` → ``{"positions": "rope", "n_kv_heads": 1, "bias": False}``,
    each value converted to the type of the ``GPTConfig`` field.

    >>> parse_switches(["positions=rope", "n_kv_heads=1", "bias=false", "rope_theta=5e5"])
    {'positions': 'rope', 'n_kv_heads': 1, 'bias': False, 'rope_theta': 500000.0}
    """
    from llmviz.errors import ConfigError
    from llmviz.models.gpt import SWITCHES, GPTConfig

    defaults = GPTConfig()
    switches: dict[str, bool | float | int | str | None] = {}
    for pair in pairs:
        name, _, text = pair.partition("=")
        name = name.strip().replace("-", "_")
        if name not in SWITCHES or not text:
            raise ConfigError(f"--arch takes SWITCH=VALUE with SWITCH among {', '.join(SWITCHES)} (got {pair!r}).")
        default = getattr(defaults, name)
        value: bool | float | int | str | None
        try:
            if isinstance(default, bool):
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(text)
                value = text.lower() in ("true", "1", "yes")
            elif isinstance(default, float):
                value = float(text)
            elif isinstance(default, int) or name in ("n_kv_heads", "d_mlp"):
                value = None if text.lower() == "none" else int(text)
            else:
                value = text
        except ValueError:
            raise ConfigError(f"--arch {pair}: {text!r} is not a value {name} can take.") from None
        switches[name] = value
    return switches


MAX_SAMPLE_TOKENS = 100_000  # a CLI sample keeps every step's record: a bound well past any text worth reading


def count_between(low: int, high: int):
    """An argparse ``type`` for a whole number in ``[low, high]``; anything else is a usage error that says the
    range (not a traceback, and not a run that never ends).

    >>> count_between(1, 10)("7")
    7
    >>> count_between(1, 10)("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '0' is not a whole number from 1 to 10
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low:,} to {high:,}")
        return value

    return parse


def step_list(text: str) -> tuple[int, ...]:
    """``--keep-steps``: snapshot steps, comma-separated (argparse says a bad one in one line).

    >>> step_list("0,10, 50")
    (0, 10, 50)
    >>> step_list("0,30")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 30 is not a snapshot step: the steps kept are 0 and 1, 2, 5 times a power of ten
    """
    from llmviz.training.checkpoint_steps import MAX_KEPT_STEPS
    from llmviz.training.snapshots import is_snapshot_step

    parts = text.split(",")[: MAX_KEPT_STEPS + 1]
    if len(parts) > MAX_KEPT_STEPS:
        raise argparse.ArgumentTypeError(f"at most {MAX_KEPT_STEPS} steps")
    steps = []
    for part in parts:
        if not part.strip().isdigit() or len(part.strip()) > 12:
            raise argparse.ArgumentTypeError(f"{part.strip()[:20]!r} is not a step")
        step = int(part)
        if not is_snapshot_step(step):
            raise argparse.ArgumentTypeError(
                f"{step} is not a snapshot step: the steps kept are 0 and 1, 2, 5 times a power of ten"
            )
        steps.append(step)
    return tuple(sorted(set(steps)))


def add_train_commands(commands) -> None:
    from llmviz.device import MAX_SEED
    from llmviz.training.config import MODEL_CHOICES, OPTIMIZERS

    train = commands.add_parser("train", help="train a model on a corpus and save a safetensors checkpoint")
    train.add_argument(
        "--corpus", default="python-docs", help="a registered corpus name, or a path to a UTF-8 text file"
    )
    train.add_argument("--model", default="gpt-micro", choices=MODEL_CHOICES)
    train.add_argument(
        "--tokenizer", default=None, choices=["char", "bpe"], help="default: bpe for GPTs, char otherwise"
    )
    train.add_argument("--vocab-size", type=int, default=512, help="BPE vocabulary size")
    train.add_argument("--context", type=int, default=64)
    train.add_argument(
        "--stride",
        type=int,
        default=1,
        help="tokens between window starts: 1 (default) = a window at every position; the context size = windows "
        "side by side, which a long run soon learns by heart",
    )
    train.add_argument(
        "--batch",
        type=int,
        default=16,
        help="windows per optimizer step, over all processes together (torchrun splits it)",
    )
    train.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="windows per forward pass in each process; smaller than its share → gradient accumulation",
    )
    train.add_argument(
        "--steps", type=int, default=None, help="default: 500; with --resume, the saved run's (the total, not more)"
    )
    train.add_argument("--optimizer", default="adamw", choices=OPTIMIZERS)
    train.add_argument("--lr", type=float, default=None, help="default: 3e-3, or 1e-4 when fine-tuning (--init)")
    train.add_argument("--warmup", type=int, default=20)
    train.add_argument("--dropout", type=float, default=0.0)
    train.add_argument("--weight-decay", type=float, default=0.01)
    train.add_argument("--d-model", type=int, default=None)
    train.add_argument("--layers", type=int, default=None)
    train.add_argument("--heads", type=int, default=None)
    train.add_argument(
        "--arch",
        action="append",
        default=[],
        metavar="SWITCH=VALUE",
        help="an architecture switch over the preset's, repeatable: positions=rope, norm=rmsnorm, "
        "mlp_kind=swiglu, n_kv_heads=1, n_experts=4, bias=false, tie_weights=true, …",
    )
    train.add_argument("--eval-interval", type=int, default=50)
    train.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "float32", "bf16", "fp16"],
        help="auto (default): bf16 autocast on a CUDA GPU that has it, else float32 (TF32 matmuls on CUDA); fp16 "
        "autocast with a gradient scaler is for CUDA (slow on CPUs: docs/training.md). Saved in the checkpoint",
    )
    train.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the model (off by default: the first steps wait for the compiler, later ones run "
        "faster; for long runs); where it cannot work here, the run stops with a one-line message",
    )
    train.add_argument("--seed", type=count_between(0, MAX_SEED), default=1337)
    train.add_argument(
        "--device",
        default="auto",
        help="auto (CUDA, else MPS, else CPU), cuda, cuda:N, mps or cpu; one that is not available here is an error",
    )
    train.add_argument(
        "--init",
        default=None,
        metavar="MODEL",
        help="fine-tune instead of starting from random weights: gpt2 (or gpt2-medium, …: downloaded "
        "once), a Hugging Face GPT-2 folder, or an llmviz checkpoint folder such as "
        "data/gpt-python-docs; the model, its sizes and its tokenizer come from there",
    )
    train.add_argument("--out", required=True, help="output folder for the checkpoint")
    train.add_argument(
        "--overwrite", action="store_true", help="replace the run already saved in --out (refused otherwise)"
    )
    train.add_argument(
        "--resume",
        default=None,
        metavar="CHECKPOINT",
        help="continue a saved run (up to --steps in all; on any number of processes)",
    )
    train.add_argument(
        "--fsdp",
        action="store_true",
        help="under torchrun, shard the GPT with FSDP (torch.distributed.fsdp.fully_shard) instead of "
        "copying it into every process: each keeps 1/N of the parameters, gradients and "
        "optimizer states",
    )
    train.add_argument(
        "--weights-only",
        action="store_true",
        help="leave out the optimizer and RNG state (smaller; the run cannot be resumed)",
    )
    train.add_argument(
        "--keep-steps",
        type=step_list,
        default=(),
        help="also keep the weights at these snapshot steps (0, 1, 2, 5, 10, 20, 50, … up to --steps), e.g. "
        "0,10,50,200, in float16 in OUT/steps/: the app's step slider replays the model at each",
    )
    train.set_defaults(func=cmd_train)

    sample = commands.add_parser("sample", help="generate text from a checkpoint or GPT-2")
    source = sample.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", help="an llmviz checkpoint folder (or .safetensors file)")
    source.add_argument("--model", help="a Hugging Face GPT-2: gpt2, gpt2-medium, … (downloaded once) or a folder")
    sample.add_argument("--prompt", default="")
    sample.add_argument(
        "--tokens",
        type=count_between(1, MAX_SAMPLE_TOKENS),
        default=100,
        help=f"new tokens to generate (1 to {MAX_SAMPLE_TOKENS:,})",
    )
    sample.add_argument("--temperature", type=float, default=0.8)
    sample.add_argument("--top-k", type=int, default=0)
    sample.add_argument("--top-p", type=float, default=1.0)
    sample.add_argument("--seed", type=count_between(0, MAX_SEED), default=0)
    sample.set_defaults(func=cmd_sample)

    hub = commands.add_parser("gpt2", help="OpenAI's GPT-2 from the Hugging Face Hub: download once, check the cache")
    hub_commands = hub.add_subparsers(dest="gpt2_command", required=True)
    get = hub_commands.add_parser("download", help="download a GPT-2 into huggingface_hub's cache (once)")
    get.add_argument("name", nargs="?", default="gpt2", help="gpt2 (548 MB), gpt2-medium, gpt2-large, gpt2-xl, …")
    get.set_defaults(func=cmd_gpt2_download)
    hub_commands.add_parser("status", help="which GPT-2s are in the cache").set_defaults(func=cmd_gpt2_status)

    family = commands.add_parser("hf", help="Llama-family models (SmolLM2, Qwen2, …) from the Hugging Face Hub")
    family_commands = family.add_subparsers(dest="hf_command", required=True)
    fetch = family_commands.add_parser("download", help="fetch a model once into huggingface_hub's cache")
    fetch.add_argument(
        "name",
        nargs="?",
        default="HuggingFaceTB/SmolLM2-135M",
        help="a Hub id such as HuggingFaceTB/SmolLM2-135M (269 MB)",
    )
    fetch.set_defaults(func=cmd_hf_download)


def _load_text(name: str) -> str:
    from pathlib import Path

    from llmviz.data import corpus

    if name in corpus.REGISTRY:
        return corpus.load(name)
    from llmviz.errors import CorpusUnavailable

    path = Path(name)
    if not path.exists():
        raise CorpusUnavailable(f"{name!r} is neither a registered corpus nor a file.")
    if path.is_dir():
        raise CorpusUnavailable(f"{name!r} is a folder: give a UTF-8 text file (or a registered corpus name).")
    if not path.is_file():  # a device or a pipe would be read for ever
        raise CorpusUnavailable(f"{name!r} is not a regular file (a device or a pipe): give a UTF-8 text file.")
    data = path.read_bytes()
    # the app's 20 MB upload cap protects a shared server; a corpus on your own machine may be as big as it is
    return corpus.validate_upload(path.name, data, max_bytes=max(len(data), 1))


def check_out(out: str, needed: int = 0, overwrite: bool = False, continuing: str | None = None) -> None:
    """``--out`` can take the checkpoint (a folder that can be written, with ``needed`` bytes free on its disk, that
    holds no earlier run unless ``overwrite`` or it is the run being ``continuing``-ed), or a :class:`CheckpointError`
    that says why, before any training."""
    from llmviz.errors import CheckpointError
    from llmviz.training.checkpoint import free_space_problem, output_folder_problem

    problem = output_folder_problem(out) or (free_space_problem(out, needed) if needed else None)
    if problem is None and not overwrite and earlier_run(out, continuing):
        problem = f"{out} already holds a run (its checkpoint.json); give another folder, or --overwrite to replace it"
    if problem is not None:
        raise CheckpointError(f"--out: {problem}. Nothing was trained.")


def earlier_run(out: str, continuing: str | None = None) -> bool:
    """Whether the folder ``out`` holds a saved run other than ``continuing`` (the run a --resume continues in place).

    >>> earlier_run("/no/such/folder")
    False
    """
    folder = Path(out)
    if not (folder / "checkpoint.json").is_file():
        return False
    return continuing is None or folder.resolve() != Path(continuing).resolve()


def cmd_train(args: argparse.Namespace) -> int:
    """Train in this process, or as one rank of a ``torchrun`` job (only rank 0 prints and saves)."""
    from llmviz.device import pick_device
    from llmviz.training import distributed

    # before anything trains: a run is never lost to a folder it cannot be written to, nor an earlier run to this one
    check_out(args.out, overwrite=args.overwrite, continuing=args.resume)
    if args.keep_steps and args.fsdp:
        from llmviz.errors import ConfigError

        raise ConfigError(
            "--keep-steps cannot be used with --fsdp: each process holds only its shard of a step's weights. "
            "Train without --fsdp to keep steps."
        )
    # an unavailable --device (cuda on a CPU-only machine, a typo) is an error naming the available ones, in
    # every process, before torch.distributed is touched
    group, device = distributed.join(pick_device(args.device), fully_sharded=args.fsdp)
    try:
        code = _train(args, group, device)
    except BaseException:
        distributed.leave(group)
        raise
    distributed.finish(group, code)  # a rank of a torchrun job ends here (its teardown skipped: see finish)
    return code


def step_bar(total: int, initial: int = 0, disable: bool = False):
    """A progress bar of training steps on stderr (tqdm: steps, steps a second, the time left, the newest loss and
    validation loss) and the ``on_step`` that moves it (:func:`llmviz.jobs.blocking.train_blocking`'s); stdout stays
    the command's one line of JSON. Close the bar when the run ends. ``train``, ``sft``, ``dpo``, ``lora``,
    ``finetune`` and ``quantize --qat-steps`` show it."""
    from tqdm import tqdm

    progress = tqdm(total=total, initial=initial, unit="step", disable=disable)

    def show(status) -> None:
        progress.update(status.step - progress.n)
        postfix = {"loss": f"{status.losses[-1][1]:.3f}"} if status.losses else {}
        if status.last_val_loss is not None:
            postfix["val"] = f"{status.last_val_loss:.3f}"
        progress.set_postfix(postfix)

    return progress, show


def _train(args: argparse.Namespace, group, device: str) -> int:
    from llmviz.jobs.blocking import train_blocking

    say = (lambda message: print(message, file=sys.stderr)) if group.is_main else (lambda message: None)
    text = _load_text(args.corpus)
    if args.resume:
        trainer = _resumed_trainer(args, text, group, device, say)
    else:
        trainer = _new_trainer(args, text, group, device, say)
    trainer.claim_process()  # this process is the run's: fused dropout, TF32 on CUDA (Trainer.claim_process)
    parameters = sum(p.numel() for p in trainer.model.parameters())
    say(_describe_run(trainer, parameters, group, device))  # --device auto on a CPU-only machine: said, not silent
    if args.fsdp and not group.distributed:
        say("--fsdp shards the model over the processes torchrun starts; in one process it trains as usual")
    if group.is_main:  # the disk must hold the checkpoint before the run trains for it
        from llmviz.training.checkpoint import checkpoint_bytes
        from llmviz.training.config import OPTIMIZER_STATE

        state = 0 if args.weights_only else OPTIMIZER_STATE.get(trainer.config.optimizer, 2)
        needed = checkpoint_bytes(parameters, state, trainer.config.steps, trainer.dataset.vocab_size)
        check_out(args.out, needed, overwrite=args.overwrite, continuing=args.resume)
    progress, show = step_bar(trainer.config.steps, initial=trainer.step, disable=not group.is_main)

    keep = _StepKeeper(args.keep_steps) if args.keep_steps else None
    # the same job API as the app; Ctrl-C stops after this step
    if keep is None:
        job = train_blocking(trainer, on_step=show)
    else:
        job = train_blocking(
            trainer, on_step=show, snapshots=True, manager=_keeping_manager(parameters), poll_s=0.05, on_poll=keep
        )
    progress.close()
    trainer.unshard()  # FSDP: every process sends its shards, rank 0 gathers the full weights to save
    if group.is_main:
        if not _in_place(args):  # an earlier run's steps in --out (--overwrite) are not this run's
            _drop_earlier_steps(args.out, say)
        _save_and_report(trainer, args, text, group, say)
        if keep is not None:
            keep.save(job.status().step, args.out, say)
    return 0


def _resumed_trainer(args: argparse.Namespace, text: str, group, device: str, say):
    """``--resume``: the saved run, with the settings the command line changes (its --keep-steps checked against it)."""
    from llmviz.training.checkpoint_steps import saved_steps
    from llmviz.training.trainer import resume

    changes: dict = {"precision": args.precision} if args.precision != "auto" else {}  # else: the saved one
    changes |= {"steps": args.steps} if args.steps is not None else {}
    changes |= {"compile": True} if args.compile else {}
    trainer = resume(args.resume, text, device, group=group, **changes)
    kept = saved_steps(args.out) if _in_place(args) else []
    _check_kept_steps(args.keep_steps, trainer.step, trainer.config.steps, kept)
    say(f"resuming {args.resume} at step {trainer.step} of {trainer.config.steps}")
    return trainer


def _in_place(args: argparse.Namespace) -> bool:
    """Whether this run is saved into the folder it resumed from (its kept steps there stay its own)."""
    return bool(args.resume) and Path(args.out).resolve() == Path(args.resume).resolve()


class _StepKeeper:
    """``--keep-steps``: takes each asked step's weights (float16) from the run's snapshots as they arrive, before a
    later snapshot can push it out of the snapshot store, and writes them into OUT/steps/ once the run is saved."""

    def __init__(self, steps: tuple[int, ...]):
        self.steps = steps
        self.held: dict[int, dict] = {}

    def __call__(self, job) -> None:
        from llmviz.training.checkpoint_steps import STEP_DTYPE

        for step in set(self.steps).intersection(job.snapshots.steps()).difference(self.held):
            state = job.snapshots.get(step)
            if state is not None:
                self.held[step] = {n: t.to(STEP_DTYPE) if t.is_floating_point() else t for n, t in state.items()}

    def save(self, last: int, out: str, say) -> None:
        from llmviz.training.checkpoint_steps import save_steps, saved_steps

        already = set(saved_steps(out))  # a run resumed in place: the steps its first part kept
        states = {step: state for step, state in self.held.items() if step < last}
        missing = [step for step in self.steps if step < last and step not in states and step not in already]
        save_steps(out, states)
        if missing:
            say(f"warning: steps {', '.join(map(str, missing))} were not kept (the run's snapshots dropped them)")


def _keeping_manager(parameters: int):
    """The CLI's job manager when it keeps steps: a snapshot store for step 0, the newest and two more of this model
    (float32), at least the app's 128 MB, so that no asked step is refused or pushed out before it is taken."""
    from llmviz.jobs.manager import JobManager

    return JobManager(max_running=1, snapshot_cap_mb=max(128.0, 4 * 4 * parameters / 2**20 + 1))


def _drop_earlier_steps(out: str, say) -> None:
    from llmviz.training.checkpoint_steps import drop_steps

    try:
        drop_steps(out)
    except OSError as error:  # the run is saved all the same: only the earlier run's steps stay, said here
        say(f"warning: the earlier run's steps in {out}/steps could not be removed ({error.strerror})")


def _check_kept_steps(keep: tuple[int, ...], first: int, last: int, saved: list[int] | tuple[int, ...] = ()) -> None:
    """``--keep-steps`` within the run: none past its last step, and none before its first (a resumed run trains from
    its saved step on: a step before it can be kept only by the run that trained it, and one already in OUT/steps/
    stays there).

    >>> _check_kept_steps((0, 10), 0, 10)
    >>> _check_kept_steps((0, 10, 20), 10, 50, saved=[0])
    >>> _check_kept_steps((0, 100), 0, 50)
    Traceback (most recent call last):
    llmviz.errors.ConfigError: --keep-steps 100 is past the run's last step (50).
    >>> _check_kept_steps((5, 20), 10, 50)
    Traceback (most recent call last):
    llmviz.errors.ConfigError: --keep-steps 5 is before step 10, where the resumed run starts: ...
    """
    from llmviz.errors import ConfigError

    if keep and keep[-1] > last:
        raise ConfigError(f"--keep-steps {keep[-1]:,} is past the run's last step ({last:,}).")
    earlier = [step for step in keep if step < first and step not in saved]
    if earlier:
        raise ConfigError(
            f"--keep-steps {earlier[0]:,} is before step {first:,}, where the resumed run starts: only the run that "
            "trained it could have kept it."
        )


def _new_trainer(args: argparse.Namespace, text: str, group, device: str, say):
    """A run from the command line's settings (``--init``: starting from that model and its tokenizer)."""
    from llmviz.errors import ConfigError
    from llmviz.hub.initial import load_initial
    from llmviz.models.presets import PRESETS
    from llmviz.training.config import TokenizerKind, TrainConfig
    from llmviz.training.trainer import Trainer

    _check_kept_steps(args.keep_steps, 0, 500 if args.steps is None else args.steps)
    if args.stride > args.context:  # one window, or tokens no window ever sees
        raise ConfigError(
            f"--stride {args.stride:,} is longer than the context ({args.context:,} tokens): the tokens between "
            "windows would never be trained on. Give at most the context (the context: windows side by side)."
        )
    tokenizer: TokenizerKind = args.tokenizer or ("bpe" if args.model in PRESETS else "char")
    lr = args.lr if args.lr is not None else (1e-4 if args.init else 3e-3)
    config = TrainConfig(
        model=args.model,
        tokenizer=tokenizer,
        bpe_vocab_size=args.vocab_size,
        context_length=args.context,
        stride=args.stride,
        batch_size=args.batch,
        micro_batch_size=args.micro_batch,
        steps=500 if args.steps is None else args.steps,
        optimizer=args.optimizer,
        lr=lr,
        warmup_steps=args.warmup,
        dropout=args.dropout,
        weight_decay=args.weight_decay,
        eval_interval=args.eval_interval,
        seed=args.seed,
        device=device,
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=args.heads,
        init=args.init,
        architecture=parse_switches(args.arch) or None,
        precision=args.precision,
        compile=args.compile,
    )
    initial_model = initial_tokenizer = None
    if args.init:
        say(f"loading {args.init} to fine-tune (learning rate {lr:g}) …")
        initial_model, initial_tokenizer = load_initial(args.init, "cpu")
    say(
        f"tokenizing {args.corpus} ({len(text):,} characters) with "
        f"{'the tokenizer of ' + args.init if args.init else tokenizer} …"
    )
    return Trainer.from_text(text, config, tokenizer=initial_tokenizer, group=group, initial_model=initial_model)


def _describe_run(trainer, parameters: int, group, device: str) -> str:
    """The line said before training: the model, its data, the processes and the device and precision."""
    from llmviz.device import describe_device

    processes = (
        f"; {group.world_size} processes × {trainer.config.batch_size // group.world_size} windows, "
        f"{trainer.accumulation} micro-batch(es) each"
        if group.distributed
        else ""
    )
    tf32 = trainer.config.precision == "float32" and device.startswith("cuda")
    return (
        f"{trainer.config.init or trainer.config.model}: {parameters:,} parameters, "
        f"vocabulary {trainer.dataset.vocab_size:,}, {len(trainer.dataset.train_ids):,} training tokens"
        + processes
        + (", the model sharded over them (FSDP)" if group.sharded else "")
        + f"; training on {describe_device(device)} in {trainer.config.precision}"
        + (" (TF32 matmuls)" if tf32 else "")
        + (", compiled" if trainer.config.compile else "")
    )


def _save_and_report(trainer, args: argparse.Namespace, text: str, group, say) -> None:
    """Save the checkpoint (with the command that made it), warn when the run overfits, print its one line of
    JSON."""
    from llmviz.data.corpus import sha256_hex
    from llmviz.training.overfitting import overfitting

    command = (
        "python -m llmviz " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["train"] else None
    )
    _save_with_command(trainer, args, command or "python -m llmviz train …", sha256_hex(text.encode("utf-8")))
    final = trainer.history[-1]
    overfits = overfitting(trainer.history, trainer.dataset.vocab_size)
    if overfits is not None:  # on stderr, beside the progress bar; stdout stays the one line of JSON
        say(f"warning: {overfits.message(flags=True)}")
    print(
        json.dumps(
            {
                "out": args.out,
                "step": trainer.step,
                "train_loss": round(final.train_loss, 4),
                "val_loss": round(final.val_loss, 4) if final.val_loss is not None else None,
                "processes": group.world_size,
                "overfits": overfits is not None,
            }
        )
    )


def _save_with_command(trainer, args, command: str, corpus_sha256: str) -> None:
    from llmviz.training.checkpoint import save_checkpoint, write_or_keep

    # the corpus digest says which text the recorded losses belong to: a built-in corpus such as python-docs
    # (Python's own manual) differs from one Python release to the next; a disk that fills up meanwhile gets the
    # checkpoint written to a temporary folder instead (write_or_keep says where)
    write_or_keep(
        args.out,
        lambda folder: save_checkpoint(
            folder,
            trainer,
            extra={"corpus": args.corpus, "corpus_sha256": corpus_sha256, "command": command},
            trainer_state=not args.weights_only,
        ),
    )


def cmd_sample(args: argparse.Namespace) -> int:
    from llmviz.errors import CheckpointError
    from llmviz.generation.sampling import generate_from_prompt
    from llmviz.training.checkpoint import load_checkpoint, weights_problem

    if args.model:
        from llmviz.hub import gpt2
        from llmviz.hub.download import HubUnavailable, cache_dir, hub_offline

        if not Path(args.model).is_dir() and not gpt2.FILES.is_cached(args.model):
            if hub_offline():
                raise HubUnavailable(gpt2.FILES.offline_note(args.model))
            print(f"downloading {args.model} once into {cache_dir()} …", file=sys.stderr)
        model, tokenizer, _ = gpt2.load(args.model, allow_download=True)
    else:
        model, tokenizer, _ = load_checkpoint(args.checkpoint)
    problem = weights_problem(model.state_dict())
    if problem is not None:  # every probability would be NaN: say why instead of sampling nothing
        raise CheckpointError(f"The model {args.checkpoint or args.model} {problem}: it cannot be sampled from.")
    result = generate_from_prompt(
        model,
        tokenizer,
        args.prompt,
        max_new_tokens=args.tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
    )
    for note in result.notes():  # dropped characters, a cut prompt: on stderr, so stdout stays the text
        print(f"note: {note}", file=sys.stderr)
    print(result.text)
    return 0


def _download(files, name: str) -> Path:
    """Fetch a Hub model into huggingface_hub's cache (once) with a progress bar on stderr; return its folder."""
    from tqdm import tqdm

    from llmviz.hub.download import HubUnavailable, by_repo_id, cache_dir, hub_offline

    folder = files.cached_folder(name)
    if folder is not None:
        print(f"{name} is already in the cache: {folder}")
        return folder
    if hub_offline():  # say so before promising a download
        raise HubUnavailable(files.offline_note(name))
    hub = by_repo_id(name)
    print(f"downloading {name}{f' ({hub.download})' if hub else ''} into {cache_dir()} …", file=sys.stderr)
    with tqdm(unit="B", unit_scale=True, file=sys.stderr) as bar:

        def show(done: int, total: int) -> None:
            bar.total = total or None
            bar.update(done - bar.n)

        folder = files.download(name, on_bytes=show)
    print(f"saved {folder}")
    return folder


def cmd_gpt2_download(args: argparse.Namespace) -> int:
    from llmviz.hub import gpt2

    gpt2.gpt_from_folder(_download(gpt2.FILES, args.name))  # check that it loads
    return 0


def cmd_hf_download(args: argparse.Namespace) -> int:
    from llmviz.hub import llama

    llama.load(_download(llama.FILES, args.name))  # check that it loads
    return 0


def cmd_gpt2_status(args: argparse.Namespace) -> int:
    from llmviz.hub import gpt2
    from llmviz.hub.download import MODELS, hub_offline

    for hub in MODELS.values():
        if hub.family == "gpt2":
            state = "cached" if gpt2.FILES.is_cached(hub.repo_id) else f"not downloaded ({hub.download})"
            print(f"{hub.repo_id:12} {hub.title:22} {state}")
    if hub_offline():
        print("HF_HUB_OFFLINE is set: nothing will be downloaded.")
    return 0
