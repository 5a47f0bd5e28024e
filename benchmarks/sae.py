"""Sparse autoencoder training: llmviz's SaeTrainer vs SAELens's own SAETrainer on the same activations, in one run.

The activations are gathered once (the shipped GPT's ``blocks.2.resid_post`` over the Python manual, as the shipped
autoencoder's); then each trainer runs in a child process of its own (so each one's peak memory is its own: the child
loads the activations, then resets its peak resident memory before training, through /proc/self/clear_refs), on the
same activations, with the same size (1,024 features, TopK k = 16), batch, learning rate, steps and sampler (random
tokens, seeded).
SAELens: ``TopKTrainingSAE`` with its defaults (decoder-norm rescaling, the AuxK loss for dead features) and
``SAETrainer.fit()`` (constant learning rate, Adam). llmviz: :class:`llmviz.interpret.sae.SaeTrainer` without the
spliced-in loss (SAELens measures none while training).

Columns: tokens/s (activations trained on per second of training), peak (the child's peak resident memory above its
size when training began), variance explained on every gathered activation at the end.

    python benchmarks/sae.py [--steps 400] [--tokens 32768]
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> int:
    """Reset this process's peak resident memory (Linux) and return its resident memory now."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return _status("VmRSS")


def batches(acts: torch.Tensor, batch: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield acts[torch.randint(len(acts), (batch,), generator=generator)]  # (B, D)


def train_ours(acts: torch.Tensor, args) -> tuple[float, float]:
    from llmviz.interpret import sae

    config = sae.SaeConfig(
        d_sae=args.d_sae, k=args.k, lr=args.lr, steps=args.steps, batch=args.batch, tokens=len(acts), eval_every=0
    )
    trainer = sae.SaeTrainer(config, acts, None, torch.zeros(0, 2, dtype=torch.long))
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    with torch.no_grad():
        recon, _ = trainer.model(acts)
    return seconds, sae.variance_explained(acts, recon)


def train_theirs(acts: torch.Tensor, args) -> tuple[float, float]:
    from sae_lens.config import SAETrainerConfig
    from sae_lens.saes.topk_sae import TopKTrainingSAE, TopKTrainingSAEConfig
    from sae_lens.training.sae_trainer import SAETrainer

    from llmviz.interpret.sae import variance_explained

    torch.manual_seed(0)
    model = TopKTrainingSAE(TopKTrainingSAEConfig(d_in=acts.shape[1], d_sae=args.d_sae, k=args.k))
    config = SAETrainerConfig(
        total_training_samples=args.steps * args.batch, train_batch_size_samples=args.batch, lr=args.lr, lr_end=args.lr
    )
    trainer = SAETrainer(config, model, batches(acts, args.batch, 0))
    started = time.perf_counter()
    trainer.fit()
    seconds = time.perf_counter() - started
    with torch.no_grad():
        recon = model.decode(model.encode(acts))
    return seconds, variance_explained(acts, recon)


def child(which: str, path: str, args, results) -> None:
    import sae_lens.training.sae_trainer  # noqa: F401 - both libraries' imports before the peak is reset
    from safetensors.torch import load_file

    import llmviz.interpret.sae  # noqa: F401

    torch.set_num_threads(args.threads)
    acts = load_file(path)["acts"]
    before = reset_peak()
    seconds, explained = (train_ours if which == "llmviz" else train_theirs)(acts, args)
    results.put((which, seconds, _status("VmHWM") - before, explained))


def gather(args) -> torch.Tensor:
    from llmviz.interpret import sae
    from llmviz.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    text = (ROOT / "data" / "python-manual.txt").read_text(encoding="utf-8")
    windows = sae.corpus_windows(tokenizer.encode(text), model.config.context_length, args.tokens)  # (W, T)
    acts = sae.gather_activations(model.eval(), windows, "blocks.2.resid_post")  # (W, T, D)
    return acts.reshape(-1, acts.shape[-1])[: args.tokens].contiguous()  # (N, D)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--tokens", type=int, default=32_768)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--d-sae", type=int, default=1024)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per trainer (default 1: a shared CPU)")
    args = parser.parse_args()
    from safetensors.torch import save_file

    acts = gather(args)
    context = multiprocessing.get_context("spawn")  # a forked child of a process that ran torch's threads can hang
    results = context.Queue()
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "acts.safetensors")
        save_file({"acts": acts}, path)
        for which in ("SAELens", "llmviz"):
            process = context.Process(target=child, args=(which, path, args, results))
            process.start()
            name, seconds, peak, explained = results.get(timeout=900)
            process.join()
            rows[name] = (args.steps * args.batch / seconds, peak, explained)
    load = os.getloadavg()[0]
    print(
        f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · torch {torch.__version__}, "
        f"{args.threads} threads · load average {load:.1f} · {len(acts):,} activations of {acts.shape[1]} "
        f"(shipped GPT, blocks.2.resid_post) · {args.d_sae} features, TopK k={args.k}, batch {args.batch}, "
        f"{args.steps} steps, lr {args.lr:g}\n"
    )
    print(f"{'trainer':<10}| {'tokens/s':>10} | {'peak (MB)':>10} | {'variance explained':>18}")
    print("-" * 58)
    for name, (rate, peak, explained) in rows.items():
        print(f"{name:<10}| {rate:>10,.0f} | {peak / 2**20:>10.1f} | {explained:>18.4f}")
    ours, theirs = rows["llmviz"], rows["SAELens"]
    print(
        f"\nllmviz / SAELens: {ours[0] / theirs[0]:.2f}× the tokens/s, {ours[1] / max(theirs[1], 1):.2f}× the peak "
        f"memory, variance explained {ours[2] - theirs[2]:+.4f} (budget: ≥ 1× tokens/s, ≤ 1× peak, within 0.01)"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
