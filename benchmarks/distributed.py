"""Data-parallel training throughput: one process vs ``torchrun`` with 2 (and, when CUDA is there, one GPU).

    python benchmarks/distributed.py [--steps 40] [--model gpt-mini]

Every row trains the same configuration (the same global batch of windows per step) through the command line and
reports training tokens per second, the median over the steps after a warm-up. The reference is one process with
one thread; the scaling efficiency of N processes is their tokens/s over N × the reference's. On a CPU, one process
with as many threads as the processes have cores together is printed too: it is the fair single-process
competitor (intra-op threading instead of data parallelism). All processes talk over 127.0.0.1 only.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-mini")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--context", type=int, default=128)
    args = parser.parse_args()

    from pydoc_data.topics import topics

    import torch

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "python-docs.txt"
        corpus.write_text("".join(topics.values()), encoding="utf-8")
        rows = []  # (setup, processes, tokens/s, efficiency or None)
        reference = train(corpus, Path(folder) / "ref", args, 1, 1, "cpu")
        rows.append(("1 process, 1 thread (reference)", 1, reference, 1.0))
        for processes in (2,):
            speed = train(corpus, Path(folder) / f"p{processes}", args, processes, 1, "cpu")
            rows.append(
                (
                    f"torchrun, {processes} processes × 1 thread (gloo)",
                    processes,
                    speed,
                    speed / (processes * reference),
                )
            )
        speed = train(corpus, Path(folder) / "threads", args, 1, min(2, cores), "cpu")
        rows.append((f"1 process, {min(2, cores)} threads", 1, speed, None))
        if torch.cuda.is_available():
            speed = train(corpus, Path(folder) / "gpu", args, 1, 1, "cuda")
            rows.append((f"1 GPU ({torch.cuda.get_device_name(0)})", 1, speed, None))

    print(
        f"{args.model}, context {args.context}, global batch {args.batch} windows, {args.steps} steps, char tokenizer, "
        f"python-docs; {platform.processor() or platform.machine()}, {cores} CPU cores, torch {torch.__version__}\n"
    )
    print("| setup | processes | training tokens/s | × reference | scaling efficiency |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for setup, processes, speed, efficiency in rows:
        shown = f"{efficiency:.0%}" if efficiency is not None and processes > 1 else ("—" if efficiency is None else "")
        print(f"| {setup} | {processes} | {speed:,.0f} | {speed / reference:.2f}× | {shown} |")


if __name__ == "__main__":
    main()
