"""``python -m llmviz interpret sae train | features | steer | knockout``: sparse autoencoders on any GPT checkpoint.

- ``train``: gather activations at a hook point from a corpus and train an autoencoder as a job (the lab's worker
  loop, in a thread), then save it (``sae.safetensors`` + ``sae.json``) in ``--out``;
- ``features``: the features by firing frequency; ``--feature N`` one feature's top contexts, histogram and the
  tokens it promotes and suppresses; ``--search TEXT`` the features that fire on a text; ``--label N=TEXT`` names
  a feature (kept in the autoencoder's folder, labels.json; for an autoencoder shipped in the repository's data/, in
  the runs folder instead, ``<runs>/sae-labels/<name>/labels.json``: a command never writes into the repository);
- ``steer``: a continuation with and without α × a feature's decoder direction added at the hook point;
- ``knockout``: the loss on every token of a text with features removed.

Bad input is one line on standard error and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from llmviz.errors import ConfigError

MAX_CORPUS_BYTES = 20 * 2**20
MAX_TEXT_CHARS = 20_000


def add_sae_commands(sub, common: argparse.ArgumentParser) -> None:
    from llmviz.cli.train import count_between
    from llmviz.device import MAX_SEED
    from llmviz.interpret import features, sae

    group = sub.add_parser("sae", help="sparse autoencoders: train one, browse its features, steer with one")
    commands = group.add_subparsers(dest="sae_command", required=True)
    defaults = sae.SaeConfig()

    train = commands.add_parser("train", parents=[common], help="train a sparse autoencoder at a hook point")
    train.add_argument("--corpus", default="data/python-manual.txt", help="a UTF-8 text file (≤ 20 MB)")
    train.add_argument("--layer", type=int, default=defaults.layer)
    train.add_argument("--point", choices=sae.POINTS, default=defaults.point)
    train.add_argument("--d-sae", type=int, default=defaults.d_sae, help="dictionary size (features)")
    train.add_argument("--k", type=int, default=defaults.k, help="TopK's k (0: ReLU with --l1)")
    train.add_argument("--l1", type=float, default=0.0, help="the L1 coefficient when --k 0")
    train.add_argument("--lr", type=float, default=defaults.lr)
    train.add_argument("--steps", type=int, default=defaults.steps)
    train.add_argument("--batch", type=int, default=defaults.batch, help="tokens per step")
    train.add_argument("--tokens", type=int, default=defaults.tokens, help="activations gathered from the corpus")
    train.add_argument("--eval-every", type=int, default=defaults.eval_every, help="spliced-in loss every N steps")
    train.add_argument("--seed", type=count_between(0, MAX_SEED), default=0)
    train.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    train.add_argument("--out", required=True, help="the folder the autoencoder is saved in")
    train.set_defaults(func=cmd_train)

    browse = commands.add_parser("features", parents=[common], help="what the features of an autoencoder fire on")
    browse.add_argument("--sae", required=True, help="a folder saved by `interpret sae train`")
    browse.add_argument("--corpus", default="data/python-manual.txt")
    browse.add_argument("--tokens", type=int, default=16_384, help="corpus tokens read for the contexts")
    browse.add_argument("--top", type=int, default=20, help="features listed (most frequent first)")
    browse.add_argument("--feature", type=int, default=None, help="one feature: contexts, histogram, logits")
    browse.add_argument("--search", default=None, help="which features fire on this text")
    browse.add_argument("--label", action="append", default=[], help="N=TEXT: name feature N (repeatable)")
    browse.set_defaults(func=cmd_features)

    steer = commands.add_parser("steer", parents=[common], help="generate with a feature's direction added")
    steer.add_argument("--sae", required=True)
    steer.add_argument("--prompt", required=True)
    steer.add_argument("--feature", type=int, required=True)
    steer.add_argument("--alpha", type=float, required=True, help="how much of the (unit) direction is added")
    steer.add_argument("--tokens", type=int, default=30)
    steer.add_argument("--temperature", type=float, default=0.8)
    steer.add_argument("--seed", type=count_between(0, MAX_SEED), default=0)
    steer.set_defaults(func=cmd_steer)

    knock = commands.add_parser("knockout", parents=[common], help="the loss per token with features knocked out")
    knock.add_argument("--sae", required=True)
    knock.add_argument("--text", required=True)
    knock.add_argument("--features", required=True, help="feature numbers, e.g. 3,17")
    knock.add_argument("--mode", choices=features.MODES, default="subtract")
    knock.set_defaults(func=cmd_knockout)


def read_corpus(path: str) -> str:
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"No corpus file {path}.")
    if file.stat().st_size > MAX_CORPUS_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_CORPUS_BYTES // 2**20} MB: use a shorter corpus.")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text.") from None


def bounded(text: str, what: str) -> str:
    if len(text) > MAX_TEXT_CHARS:
        raise ConfigError(f"The {what} is longer than {MAX_TEXT_CHARS:,} characters.")
    return text


def corpus_ids(tokenizer, path: str, tokens: int) -> list[int]:
    """The corpus's token ids; only about as much text as ``tokens`` needs is tokenized (≤ 8 characters a token)."""
    from llmviz.cli.interpret import encode

    text = read_corpus(path)
    corpus = text[: 8 * tokens + 8192]  # bounded by the tokens asked for (SaeConfig: at most MAX_TOKENS)
    return encode(tokenizer, corpus, "corpus", limit=len(corpus))


def check_memory(model, config) -> None:
    """Refuse a run whose estimate does not fit half of this machine's free memory, before anything is gathered."""
    import psutil

    from llmviz.interpret import sae
    from llmviz.training import footprint

    found = footprint.sparse_autoencoder(model.config, config, sae.input_width(model, config))
    share = psutil.virtual_memory().available // 2
    if found.peak_bytes > share:
        raise ConfigError(
            f"{found.what} needs about {footprint.size_text(found.peak_bytes)}; "
            f"{footprint.size_text(share)} is this run's share "
            "of the free memory: use fewer features, a smaller batch or fewer tokens."
        )


def cmd_train(args: argparse.Namespace) -> int:
    import torch

    from llmviz.cli.interpret import load_model
    from llmviz.interpret import sae
    from llmviz.jobs.manager import JobManager
    from llmviz.lab.live_status import JobState

    config = sae.SaeConfig(
        layer=args.layer,
        point=args.point,
        d_sae=args.d_sae,
        k=args.k,
        l1=args.l1,
        lr=args.lr,
        steps=args.steps,
        batch=args.batch,
        tokens=args.tokens,
        seed=args.seed,
        eval_every=args.eval_every,
    )
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = load_model(args.model)
    check_memory(model, config)
    ids = corpus_ids(tokenizer, args.corpus, config.tokens + config.eval_windows * model.config.context_length)
    trainer = sae.build_trainer(model, ids, config, sae.model_identity(model, args.model), tokenizer)
    manager = JobManager(max_running=1, workers="thread")
    try:
        job = manager.submit_training("cli", trainer, label="sae", snapshots=False, checkpoint=False)
        try:
            while not job.wait(0.5):
                _progress(job.status().describe())
        except KeyboardInterrupt:
            job.stop()
            job.wait()
        status = job.status()
    finally:
        manager.shutdown()
    if status.state == JobState.FAILED:
        raise ConfigError(status.error or "the autoencoder's training failed")
    trainer.save(args.out)
    report(trainer, args)
    return 0


def report(trainer, args: argparse.Namespace) -> None:
    last = trainer.history[-1] if trainer.history else None
    spliced = next((m.spliced for m in reversed(trainer.history) if m.spliced is not None), None)
    values = {
        "out": args.out,
        "hook": trainer.config.hook,
        "steps": trainer.step,
        "variance_explained": last.variance_explained if last else None,
        "l0": last.l0 if last else None,
        "dead": last.dead if last else None,
        "clean_loss": spliced.clean if spliced else None,
        "spliced_loss": spliced.spliced if spliced else None,
        "zero_ablated_loss": spliced.zeroed if spliced else None,
        "loss_recovered": spliced.recovered if spliced else None,
    }
    if args.format == "json":
        print(json.dumps(values))
        return
    for name, value in values.items():
        print(f"{name}: {value:.4f}" if isinstance(value, float) else f"{name}: {value}")


SHIPPED = Path(__file__).resolve().parent.parent.parent / "data"  # the repository's own files: never written


def labels_folder(directory: str | Path) -> Path:
    """Where ``--label`` keeps an autoencoder's labels: beside its weights, except for an autoencoder shipped with
    llmviz (under the repository's data/), whose labels go to the runs folder (``LLMVIZ_RUNS_DIR``, else runs/),
    in ``sae-labels/<its folder's name>``.

    >>> labels_folder("/tmp/my-sae") == Path("/tmp/my-sae")
    True
    >>> labels_folder(SHIPPED / "gpt-python-docs-sae").parts[-2:]
    ('sae-labels', 'gpt-python-docs-sae')
    """
    from llmviz.lab.service import runs_folder

    folder = Path(directory).resolve()
    if folder.is_relative_to(SHIPPED.resolve()):
        return runs_folder() / "sae-labels" / folder.name
    return Path(directory)


def load_pair(args: argparse.Namespace):
    import dataclasses

    from llmviz.cli.interpret import load_model
    from llmviz.interpret import sae

    model, tokenizer = load_model(args.model)
    loaded = sae.load(args.sae, model)
    kept = labels_folder(args.sae)
    if kept != Path(args.sae):  # a shipped autoencoder: its labels from the runs folder over the shipped ones
        loaded = dataclasses.replace(loaded, labels={**loaded.labels, **sae.load_labels(kept)})
    return model, tokenizer, loaded


def parse_labels(items: list[str]) -> dict[int, str]:
    """``["3=a keyword"]`` → ``{3: "a keyword"}``.

    >>> parse_labels(["3=a keyword", "10=quotes"])
    {3: 'a keyword', 10: 'quotes'}
    """
    labels = {}
    for item in items:
        number, equals, text = item.partition("=")
        if not (equals and number.strip().isdigit() and text.strip()):
            raise ConfigError(f"Label a feature as N=TEXT, such as 3=a keyword (got {item!r}).")
        labels[int(number)] = bounded(text.strip(), "label")[:200]
    return labels


def cmd_features(args: argparse.Namespace) -> int:
    import dataclasses

    from llmviz.interpret import sae

    model, tokenizer, loaded = load_pair(args)
    if args.label:
        labels = {**loaded.labels, **parse_labels(args.label)}
        for number in labels:
            if not 0 <= number < loaded.sae.d_sae:
                raise ConfigError(f"Feature {number} does not exist: features are 0–{loaded.sae.d_sae - 1}.")
        kept = labels_folder(args.sae)
        kept.mkdir(parents=True, exist_ok=True)
        sae.save_labels(kept, labels)
        print(f"labels saved in {kept / sae.LABELS_FILE}", file=sys.stderr)
        loaded = dataclasses.replace(loaded, labels=sae.load_labels(kept))
    if args.search is not None:
        return show_search(model, tokenizer, loaded, args)
    if not 1 <= args.tokens <= sae.MAX_TOKENS:
        raise ConfigError(f"Read 1–{sae.MAX_TOKENS:,} corpus tokens (got {args.tokens}).")
    context = model.config.context_length
    windows = sae.corpus_windows(corpus_ids(tokenizer, args.corpus, args.tokens), context, args.tokens)  # (W, T)
    acts = sae.gather_activations(model, windows, loaded.hook).reshape(-1, loaded.sae.d_in)  # (N, D)
    if args.feature is not None:
        return show_feature(model, tokenizer, loaded, acts, windows.reshape(-1), args)
    return show_frequent(loaded, acts, args)


def show_frequent(loaded, acts, args: argparse.Namespace) -> int:
    from llmviz.cli.interpret import show
    from llmviz.interpret import features

    index = features.feature_index(loaded.sae, acts, top=1)
    rows = [
        [f, float(index.frequency[f]), float(index.mean[f]), float(index.top_values[f, 0]), loaded.labels.get(f, "")]
        for f in index.order[: max(1, args.top)]
    ]
    extra = {"tokens": index.tokens, "dead": index.dead, "hook": loaded.hook}
    show(["feature", "frequency", "mean when firing", "max", "label"], rows, args.format, extra)
    if args.format == "table":
        print(f"\n{index.tokens:,} tokens at {loaded.hook}; {index.dead} of {loaded.sae.d_sae} features never fired")
    return 0


def show_feature(model, tokenizer, loaded, acts, ids, args: argparse.Namespace) -> int:
    from llmviz.interpret import features

    feature = features.check_feature(loaded.sae, args.feature)
    index = features.feature_index(loaded.sae, acts, top=10)
    found = features.contexts(loaded.sae, acts, ids, index, feature)
    counts, edges = features.histogram(features.feature_values(loaded.sae, acts, feature), bins=20)
    effects = features.logit_effects(model, loaded.sae, loaded.hook, feature)
    values = {
        "feature": feature,
        "label": loaded.labels.get(feature, ""),
        "frequency": float(index.frequency[feature]),
        "contexts": [
            {"tokens": [tokenizer.printable(i) for i in c.ids], "activations": c.values, "peak": c.peak} for c in found
        ],
        "histogram": {"counts": counts.tolist(), "edges": edges.tolist()},
        "promoted": [[tokenizer.printable(t), v] for t, v in effects.promoted],
        "suppressed": [[tokenizer.printable(t), v] for t, v in effects.suppressed],
    }
    if args.format == "json":
        print(json.dumps(values, ensure_ascii=False))
        return 0
    print(f"feature {feature} {values['label']!r}: fires on {values['frequency']:.2%} of tokens")
    for c in found:
        marked = "".join(
            f"[{tokenizer.printable(i)}|{v:.2f}]" if v > 0 else tokenizer.printable(i) for i, v in zip(c.ids, c.values)
        )
        print(f"  {c.values[c.peak]:.3f}  {marked}")
    print("promotes: " + ", ".join(f"{t!r} {v:+.3f}" for t, v in values["promoted"]))
    print("suppresses: " + ", ".join(f"{t!r} {v:+.3f}" for t, v in values["suppressed"]))
    print("histogram (where it fires): " + " ".join(str(int(c)) for c in counts))
    return 0


def show_search(model, tokenizer, loaded, args: argparse.Namespace) -> int:
    from llmviz.cli.interpret import encode, show
    from llmviz.interpret import features

    ids = encode(tokenizer, bounded(args.search, "search text"), "search text")
    result = features.search(model, loaded.sae, loaded.hook, ids)
    rows = [
        [position, tokenizer.printable(token), " ".join(f"{f}:{v:.2f}" for f, v in found)]
        for position, (token, found) in enumerate(zip(ids, result.per_token))
    ]
    show(["position", "token", "features (feature:activation)"], rows, args.format, {"overall": result.overall})
    if args.format == "table":
        print("\nstrongest on the text: " + ", ".join(f"{f} ({v:.2f})" for f, v in result.overall[:10]))
    return 0


def cmd_steer(args: argparse.Namespace) -> int:
    from llmviz.cli.interpret import encode
    from llmviz.interpret import features

    model, tokenizer, loaded = load_pair(args)
    ids = encode(tokenizer, bounded(args.prompt, "prompt"), "prompt")
    pair = features.steer(
        model, loaded.sae, loaded.hook, ids, args.feature, args.alpha, args.tokens, args.temperature, args.seed
    )
    plain, steered = tokenizer.decode(pair.plain), tokenizer.decode(pair.steered)
    if args.format == "json":
        print(json.dumps({"plain": plain, "steered": steered, "feature": args.feature, "alpha": args.alpha}))
        return 0
    print(f"without steering:\n{args.prompt}{plain}\n")
    print(
        f"with α = {args.alpha:g} × feature {args.feature}'s direction added at {loaded.hook}:\n{args.prompt}{steered}"
    )
    return 0


def cmd_knockout(args: argparse.Namespace) -> int:
    from llmviz.cli.interpret import encode, show
    from llmviz.interpret import features

    model, tokenizer, loaded = load_pair(args)
    ids = encode(tokenizer, bounded(args.text, "text"), "text")
    try:
        numbers = [int(part) for part in args.features.split(",")]
    except ValueError:
        raise ConfigError(
            f"Give features as numbers separated by commas, such as 3,17 (got {args.features!r})."
        ) from None
    result = features.knock_out(model, loaded.sae, loaded.hook, ids, numbers, args.mode)
    rows = [
        [position + 1, tokenizer.printable(ids[position + 1]), float(b), float(a), float(a - b)]
        for position, (b, a) in enumerate(zip(result.before, result.after))
    ]
    extra = {"before": float(result.before.mean()), "after": float(result.after.mean()), "mode": result.mode}
    show(["position", "token", "loss before", "loss after", "change"], rows, args.format, extra)
    if args.format == "table":
        print(f"\nmean loss {extra['before']:.4f} → {extra['after']:.4f} ({result.mode}, features {result.features})")
    return 0


def _progress(line: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{line[:120]:<120}", end="", file=sys.stderr, flush=True)
