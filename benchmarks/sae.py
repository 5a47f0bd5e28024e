"""Sparse autoencoder training: llmviz's SaeTrainer vs SAELens's own SAETrainer on the same activations, in one run.

The activations are gathered once (the shipped GPT's ``blocks.2.resid_post`` over the Python manual, as the shipped
autoencoder's); then each trainer lives in a child process of its own (so each one's peak memory is its own: the child
loads the activations, then resets its peak resident memory before training, through /proc/self/clear_refs), on the
same activations, with the same size (1,024 features, TopK k = 16), batch, learning rate, steps and sampler (random
tokens, seeded). The two train in alternating rounds (``--round-steps`` steps each, the side that goes first
alternating: ``benchmarks/_rounds.py``), one side at a time, so that a change in the machine's load falls on both; the
speed is the median of the per-round ratios, with its spread, beside the load average (run one after the other, the
same code once gave 1.26× and then 1.69×).
SAELens: ``TopKTrainingSAE`` with its defaults (decoder-norm rescaling, the AuxK loss for dead features) and
``SAETrainer.fit()``'s loop, a round's steps at a time (constant learning rate, Adam). llmviz:
:class:`llmviz.interpret.sae.SaeTrainer` without the spliced-in loss (SAELens measures none while training).

Columns: tokens/s (activations trained on per second of training, over the compared rounds: all but the first,
which holds each side's first steps), peak (the child's peak resident memory above its size when training began),
variance explained on every gathered activation at the end.

    python benchmarks/sae.py [--steps 400] [--tokens 32768] [--round-steps 20]
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
from _peak import peak_since, reset_peak  # this folder is on sys.path (the benchmarks' shared helpers)
from _rounds import child_rounds, load_average

ROOT = Path(__file__).resolve().parent.parent


def batches(acts: torch.Tensor, batch: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield acts[torch.randint(len(acts), (batch,), generator=generator)]  # (B, D)


def ours(acts: torch.Tensor, args):
    """llmviz's trainer, and a function that trains it ``n`` more steps."""
    from llmviz.interpret import sae

    config = sae.SaeConfig(
        d_sae=args.d_sae, k=args.k, lr=args.lr, steps=args.steps, batch=args.batch, tokens=len(acts), eval_every=0
    )
    trainer = sae.SaeTrainer(config, acts, None, torch.zeros(0, 2, dtype=torch.long))
    steps = trainer.run()

    def train(n: int) -> None:
        for _ in range(n):
            next(steps)

    return trainer.model, train


def theirs(acts: torch.Tensor, args):
    """SAELens's SAETrainer, and a function that trains it ``n`` more steps as its ``fit()`` loop does (fit's own
    set-up, a no-op here, and its progress bar left out)."""
    from sae_lens.config import SAETrainerConfig
    from sae_lens.saes.topk_sae import TopKTrainingSAE, TopKTrainingSAEConfig
    from sae_lens.training.sae_trainer import SAETrainer

    torch.manual_seed(0)
    model = TopKTrainingSAE(TopKTrainingSAEConfig(d_in=acts.shape[1], d_sae=args.d_sae, k=args.k))
    config = SAETrainerConfig(
        total_training_samples=args.steps * args.batch, train_batch_size_samples=args.batch, lr=args.lr, lr_end=args.lr
    )
    provider = batches(acts, args.batch, 0)
    trainer = SAETrainer(config, model, provider)

    def train(n: int) -> None:
        for _ in range(n):
            trainer.maybe_reset_sparsity()
            trainer.step(next(provider))
            trainer.n_training_steps += 1

    return model, train


def child(which: str, path: str, args, connection) -> None:
    """One side in a process of its own: builds its trainer, then trains as many steps as each message says and
    answers each with the round's wall-clock and CPU seconds; at ``None``, its peak memory and variance explained."""
    import sae_lens.training.sae_trainer  # noqa: F401 - both libraries' imports before the peak is reset
    from safetensors.torch import load_file

    from llmviz.interpret.sae import variance_explained

    torch.set_num_threads(args.threads)
    acts = load_file(path)["acts"]
    before = reset_peak()
    model, train = (ours if which == "llmviz" else theirs)(acts, args)
    while (count := connection.recv()) is not None:
        start, cpu = time.perf_counter(), time.process_time()
        train(count)
        connection.send((time.perf_counter() - start, time.process_time() - cpu))
    with torch.no_grad():
        recon = model.decode(model.encode(acts))
    connection.send((peak_since(before), variance_explained(acts, recon)))


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
    parser.add_argument("--round-steps", type=int, default=20, help="steps of each side in one round")
    args = parser.parse_args()
    from safetensors.torch import save_file

    acts = gather(args)
    load_before = load_average()
    context = multiprocessing.get_context("spawn")  # a forked child of a process that ran torch's threads can hang
    sides = ("SAELens", "llmviz")
    ends: dict = {}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "acts.safetensors")
        save_file({"acts": acts}, path)
        pipes = {name: context.Pipe() for name in sides}
        processes = [context.Process(target=child, args=(name, path, args, pipes[name][1])) for name in sides]
        for process in processes:
            process.start()
        # rounds: both sides train the same steps, the side that goes first alternating (the first not compared)
        wall, cpu = child_rounds(pipes, sides, args.steps, args.round_steps)
        for name in sides:
            pipes[name][0].send(None)
            ends[name] = pipes[name][0].recv()
        for process in processes:
            process.join()
    tokens = (args.steps - min(args.round_steps, args.steps)) * args.batch  # the compared rounds'
    print(
        f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · torch {torch.__version__}, "
        f"{args.threads} threads · {len(acts):,} activations of {acts.shape[1]} "
        f"(shipped GPT, blocks.2.resid_post) · {args.d_sae} features, TopK k={args.k}, batch {args.batch}, "
        f"{args.steps} steps in rounds of {args.round_steps}, lr {args.lr:g}\n"
        f"load average: {load_before} before, {load_average()} after\n"
    )
    print(f"{'trainer':<10}| {'tokens/s':>10} | {'peak (MB)':>10} | {'variance explained':>18}")
    print("-" * 58)
    for name in sides:
        peak, share = ends[name]
        print(f"{name:<10}| {tokens / sum(wall.seconds[name]):>10,.0f} | {peak / 2**20:>10.1f} | {share:>18.4f}")
    speed = wall.median("SAELens", "llmviz")
    peak_ratio = ends["llmviz"][0] / max(ends["SAELens"][0], 1)
    explained = ends["llmviz"][1] - ends["SAELens"][1]
    passed = speed >= 1 and peak_ratio <= 1 and abs(explained) <= 0.01
    print(
        f"\nllmviz / SAELens tokens/s, per round (SAELens's seconds over llmviz's): {wall.summary('SAELens', 'llmviz')}"
        f"\n  by CPU time: {cpu.summary('SAELens', 'llmviz')}"
        f"\nllmviz / SAELens: {peak_ratio:.2f}× the peak memory, variance explained {explained:+.4f}"
        f"\nbudget (≥ 1× tokens/s by the median round, ≤ 1× peak, variance explained within 0.01): "
        f"{'PASS' if passed else 'FAIL'}"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
