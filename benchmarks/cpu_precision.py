"""Training on the CPU in float32, bf16 and fp16: one GPT training step's time in each, on this machine's CPU.

    python benchmarks/cpu_precision.py [--steps 5] [--threads 2] [--quick]

The shipped GPT's shape (L4 H4 d128 T128 B16 V1024), AdamW; bf16 and fp16 under ``torch.autocast("cpu")``, fp16 with
``torch.amp.GradScaler("cpu")`` as on CUDA. The three precisions step in alternating rounds (one step of each a round,
after two warm-up steps each, the order reversed every other round: ``benchmarks/_rounds.py``), so that a change in the
load falls on all three; reported: each one's median step time and, against float32 (the reference), the median
per-round ratio with its spread, beside the load average. ``--quick`` (5 rounds, batch 2) is the tests' smoke run.
Also: the CPU's model name and whether it has native 16-bit float instructions (``avx512_bf16``, ``avx512_fp16``,
``amx_fp16``): where float16 has none, its matrix products fall back to a slow path (why ``fp16`` is refused on the
CPU: see docs/training.md). Results: docs/benchmarks/cpu_precision.md.
"""

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from _rounds import alternate, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.models.gpt import GPT, GPTConfig  # noqa: E402

SHAPE = GPTConfig(vocab_size=1024, context_length=128, d_model=128, n_heads=4, n_layers=4, dropout=0.0)
PRECISIONS = ("float32", "bf16", "fp16")


def cpu_flags() -> tuple[str, list[str]]:
    """The CPU's model name and which 16-bit float instruction sets /proc/cpuinfo lists (Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown", []
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    return name, sorted(flags & {"avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16"})


def stepper(precision: str, batch: int) -> tuple[Callable[[], None], list[float]]:
    """One training step of a fresh model in ``precision`` per call, and the list its losses go to."""
    torch.manual_seed(0)
    model = GPT(SHAPE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler("cpu", enabled=precision == "fp16")
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(SHAPE.vocab_size, (batch, SHAPE.context_length + 1), generator=generator)  # (B, T + 1)
    losses: list[float] = []

    def step() -> None:
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            _, loss = model(ids[:, :-1], ids[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(float(loss.detach()))

    return step, losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="rounds of one step of each precision")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="5 rounds, batch 2: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.batch = 5, 2
    torch.set_num_threads(args.threads)
    name, flags = cpu_flags()
    print(
        f"CPU: {name}; 16-bit float instructions: {', '.join(flags) or 'none'}; torch {torch.__version__}, "
        f"{args.threads} threads, batch {args.batch}, {args.steps} rounds of one step each\n"
        f"load average: {load_average()} before"
    )
    steps = {precision: stepper(precision, args.batch) for precision in PRECISIONS}
    for _ in range(2):
        for step, _ in steps.values():
            step()  # warm-up: the first steps allocate the optimizer's state and the kernels' buffers
    rounds = alternate({precision: step for precision, (step, _) in steps.items()}, args.steps)
    for precision in PRECISIONS:
        median = statistics.median(rounds.seconds[precision])
        ratio = rounds.median(precision, "float32")
        print(
            f"{precision:8s} median step {median * 1e3:8.1f} ms  ({ratio:5.2f}× float32)  "
            f"last loss {steps[precision][1][-1]:.4f}"
        )
    for precision in PRECISIONS[1:]:
        print(f"{precision} / float32 step time, per round: {rounds.summary(precision, 'float32')}")
    print(f"load average: {load_average()} after")


if __name__ == "__main__":
    main()
