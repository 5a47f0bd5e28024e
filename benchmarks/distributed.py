"""Data-parallel training throughput: one process vs ``torchrun`` with 2 (and, when CUDA is there, one GPU).

    python benchmarks/distributed.py [--steps 40] [--model gpt-mini] [--rounds 3] [--quick]

Every row trains the same configuration (the same global batch of windows per step) through the command line and
reports training tokens per second, the median over the steps after a warm-up. The reference is one process with
one thread; the scaling efficiency of N processes is their tokens/s over N × the reference's. On a CPU, one process
with as many threads as the processes have cores together is printed too: it is the fair single-process
competitor (intra-op threading instead of data parallelism). All processes talk over 127.0.0.1 only.

The setups train in alternating rounds (one whole run of each a round, the order reversed every other round:
``benchmarks/_rounds.py``), so that a change in the load falls on all of them; "× reference" is the median of the
per-round ratios, with its spread under the table beside the load average. ``--quick`` (2 rounds of 12-step runs,
batch 8 × 32, the reference and 2 processes only) is the tests' smoke run.
"""

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _rounds import Rounds, load_average  # this folder is on sys.path (the benchmarks' shared helpers)

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def train(corpus: Path, out: Path, args, processes: int, threads: int, device: str) -> float:
    """Train once; the median tokens/s over the steps after the first quarter."""
    common = [
        "--corpus",
        str(corpus),
        "--model",
        args.model,
        "--tokenizer",
        "char",
        "--context",
        str(args.context),
        "--batch",
        str(args.batch),
        "--steps",
        str(args.steps),
        "--eval-interval",
        str(args.steps),
        "--device",
        device,
        "--out",
        str(out),
        "--weights-only",
    ]
    if processes == 1:
        command = [sys.executable, "-m", "llmviz", "train", *common]
    else:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={processes}",
            "--nnodes=1",
            "--master_addr=127.0.0.1",
            f"--master_port={_free_port()}",
            "-m",
            "llmviz",
            "train",
            *common,
        ]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads), "GLOO_SOCKET_IFNAME": "lo"}
    subprocess.run(command, cwd=ROOT, env=environment, check=True, capture_output=True, timeout=1800)
    metrics = json.loads((out / "checkpoint.json").read_text())["metrics"]
    return statistics.median(m["tokens_per_s"] for m in metrics[len(metrics) // 4 :])


def setups(cores: int, quick: bool) -> dict[str, tuple[int, int, str]]:
    """The setups each round trains, by name: (processes, threads, device); the reference first."""
    found = {"1 process, 1 thread (reference)": (1, 1, "cpu"), "torchrun, 2 processes × 1 thread (gloo)": (2, 1, "cpu")}
    if not quick:
        found[f"1 process, {min(2, cores)} threads"] = (1, min(2, cores), "cpu")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-mini")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of one training run by each setup")
    parser.add_argument(
        "--quick", action="store_true", help="2 rounds of 12 steps, batch 8 × 32, the two compared setups: a smoke run"
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps, args.batch, args.context = 2, 12, 8, 32

    from pydoc_data.topics import topics

    import torch

    cores = os.cpu_count() or 1
    runs = setups(cores, args.quick)
    if torch.cuda.is_available() and not args.quick:
        runs[f"1 GPU ({torch.cuda.get_device_name(0)})"] = (1, 1, "cuda")
    load_before = load_average()
    per_token = Rounds()  # seconds per training token, each setup's run in each round: its ratios are speed-ups
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "python-docs.txt"
        corpus.write_text("".join(topics.values()), encoding="utf-8")
        order = list(runs)
        for index in range(args.rounds):  # rounds: one run of each setup, the order reversed every other round
            for setup in order if index % 2 == 0 else order[::-1]:
                processes, threads, device = runs[setup]
                speed = train(corpus, Path(folder) / f"r{index}-{order.index(setup)}", args, processes, threads, device)
                per_token.add(setup, 1 / speed)

    reference = order[0]
    print(
        f"{args.model}, context {args.context}, global batch {args.batch} windows, {args.steps} steps, char tokenizer, "
        f"python-docs; {platform.processor() or platform.machine()}, {cores} CPU cores, torch {torch.__version__}; "
        f"{args.rounds} rounds of one run per setup\nload average: {load_before} before, {load_average()} after\n"
    )
    print("| setup | processes | training tokens/s | × reference | scaling efficiency |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for setup in order:
        processes = runs[setup][0]
        speed = 1 / statistics.median(per_token.seconds[setup])
        ratio = per_token.median(reference, setup)
        shown = f"{ratio / processes:.0%}" if processes > 1 else ("" if setup == reference else "—")
        print(f"| {setup} | {processes} | {speed:,.0f} | {ratio:.2f}× | {shown} |")
    print(
        "\ntokens/s: each setup's median run (each run's median over its steps after the first quarter); × reference: "
        "the median per-round ratio of the setup's tokens/s to the reference's. Per round:"
    )
    for setup in order[1:]:
        print(f"  {setup}: {per_token.summary(reference, setup)}")


if __name__ == "__main__":
    main()
